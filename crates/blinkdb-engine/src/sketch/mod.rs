//! The probabilistic structures besides Bloom filters, RedisBloom-identical.

pub mod tdigest;
