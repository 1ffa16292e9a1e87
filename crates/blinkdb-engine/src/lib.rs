//! BlinkDB storage engine.

pub mod bloom;
pub mod filter;
