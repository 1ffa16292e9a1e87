//! Bloom filters owned by keys (the `Value::Bloom` of BF.* commands): which
//! backend holds the bits, the filter ids that name their files, and the log
//! records that rebuild them on replay.
//!
//! Replay rule: the log records only items that were *newly* added (the ones a
//! live add answered 1 for), so the n-th replayed item of a filter is the n-th
//! item it ever counted. A filter reopened from its file already holds the first
//! `card` of them (the count flushed with its bits); replay skips those and
//! re-applies the rest, counting each once. A rebuilt filter starts from zero and
//! re-applies everything after its binding record.

mod kernel_backed;
mod record;
mod side_log;
mod store;
mod value;

pub use record::{Binding, BIND_COMMAND, LOAD_HEADER_COMMAND};
pub use store::BloomStore;
pub use value::{rewrite_snapshot, BackendSpec, BloomValue, FilterRewrite, KeyFilterSpec};
