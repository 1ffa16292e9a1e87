//! BlinkDB storage engine.

pub mod kernel;
