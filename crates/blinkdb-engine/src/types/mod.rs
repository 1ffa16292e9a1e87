//! Value types stored in the keyspace beyond plain strings, one module each.

pub mod hll;
