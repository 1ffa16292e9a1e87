//! BlinkDB storage engine.
