//! BlinkDB storage engine.
pub mod aof;
