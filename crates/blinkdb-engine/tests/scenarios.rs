//! The engine's scenario tests in one test binary (each module was a binary of
//! its own, and each of the 18 was linked with thin LTO: a minute apiece on a busy 2-core box).
//! AOF crash-safety and Redis interop, kernel Bloom filters, cache eviction.

mod common;
mod kernel_support;

mod aof_corrupt_middle;
mod aof_fsync_change;
mod aof_group_commit;
mod aof_inline_sync;
mod aof_loads_redis;
mod aof_redis_check;
mod aof_redis_loads_ours;
mod aof_rewrite_crash;
mod aof_round_trip;
mod aof_tmpfs_full;
mod aof_torn_tail;
mod aof_write_failure;
mod cache_eviction_labels;
mod kernel_accuracy;
mod kernel_environment;
mod kernel_interop;
mod kernel_items;
mod kernel_lifecycle;
mod rewrite_during_writes;
