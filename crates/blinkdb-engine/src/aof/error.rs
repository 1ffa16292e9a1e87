//! Errors of the AOF layer. Each variant names the file, offset or syscall involved so an
//! operator can act on the message alone.

use std::io;
use std::path::PathBuf;

/// Result alias for the AOF layer.
pub type Result<T, E = AofError> = std::result::Result<T, E>;

/// Everything that can go wrong in the AOF layer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AofError {
    /// A syscall on a log, base or manifest file failed.
    #[error("{op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The AOF is refusing writes because the last write() failed (disk full, EIO).
    /// Display is Redis 7's exact reply text (without the leading '-').
    #[error("MISCONF Errors writing to the AOF file: {reason}")]
    WriteFailed { reason: String },
    /// An fdatasync failed; nothing after the last good sync may be acknowledged.
    #[error("MISCONF Errors writing to the AOF file: fsync failed: {reason}")]
    SyncFailed { reason: String },
    /// The manifest cannot be parsed; mirrors Redis's fatal manifest errors.
    #[error("Bad AOF manifest {path} line {line}: {reason}")]
    Manifest {
        path: PathBuf,
        line: usize,
        reason: &'static str,
    },
    /// A file body is corrupt somewhere other than a tolerated torn tail.
    #[error("Corrupt AOF file {file} at offset {offset}: {reason}")]
    Corrupt {
        file: String,
        offset: u64,
        reason: String,
    },
    /// A blob's bytes do not hash to the checksum recorded when it was written.
    #[error("Blob checksum mismatch in {file} at offset {offset} (len {len})")]
    BlobChecksum { file: String, offset: u64, len: u64 },
    /// A blob reference names a file that is no longer part of the log (dropped by rewrite).
    #[error("AOF file {0} is no longer part of the log")]
    FileGone(String),
    /// `append` was called before `load`: the tail of the last file is not validated yet.
    #[error("AOF must be loaded before appending")]
    NotLoaded,
    /// `load` was called a second time.
    #[error("AOF was already loaded")]
    AlreadyLoaded,
    /// `begin_rewrite` while another rewrite is running.
    #[error("Background append only file rewriting already in progress")]
    RewriteInProgress,
    /// The background threads are gone (Aof dropped while a waiter was pending).
    #[error("AOF is closed")]
    Closed,
}

impl AofError {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        AofError::Io {
            op,
            path: path.into(),
            source,
        }
    }
}
