//! Configuration of one AOF directory (Redis's appendonly / appendfsync / aof-* settings).

use std::path::PathBuf;

/// When written bytes are forced to stable storage (Redis `appendfsync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsyncPolicy {
    /// `wait_synced` resolves only after an fdatasync covering the record finished.
    Always,
    /// A background thread fdatasyncs once a second; never on the request path.
    EverySec,
    /// Never fsync; the kernel decides.
    No,
}

impl FsyncPolicy {
    pub(crate) fn to_u8(self) -> u8 {
        match self {
            FsyncPolicy::Always => 0,
            FsyncPolicy::EverySec => 1,
            FsyncPolicy::No => 2,
        }
    }

    pub(crate) fn from_u8(v: u8) -> FsyncPolicy {
        match v {
            0 => FsyncPolicy::Always,
            1 => FsyncPolicy::EverySec,
            _ => FsyncPolicy::No,
        }
    }
}

/// Options for [`super::Aof::open`].
#[derive(Debug, Clone)]
pub struct AofOptions {
    /// `<dir>/<appenddirname>`: the directory holding the manifest and the files.
    pub dir: PathBuf,
    /// Redis `appendfilename`; file names derive from it (`appendonly.aof.1.incr.aof`).
    pub basename: String,
    /// The policy at open; `Aof::set_fsync_policy` changes it while the log runs.
    pub fsync: FsyncPolicy,
    /// An incr file is closed and a new one started once it reaches this many bytes.
    pub segment_size: u64,
    /// Arguments at least this long are reported as [`super::Arg::Blob`] instead of bytes.
    pub blob_threshold: usize,
    /// Redis `aof-load-truncated`: cut a torn tail of the last file instead of refusing.
    pub load_truncated: bool,
    /// Operator opt-in: skip corrupt regions (logged) instead of refusing to start.
    pub allow_corrupt: bool,
    /// Close each group write with its `#BK` checksum line (the torn-write detection of
    /// loading); off, the files are plain RESP as Redis writes them, loaded as Redis's are.
    pub batch_checksums: bool,
}

impl AofOptions {
    /// Defaults matching Redis (`appendonly.aof`, everysec, load-truncated yes) with a
    /// 64 MiB segment size and a 16 KiB blob threshold.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        AofOptions {
            dir: dir.into(),
            basename: "appendonly.aof".to_string(),
            fsync: FsyncPolicy::EverySec,
            segment_size: 64 << 20,
            blob_threshold: 16 << 10,
            load_truncated: true,
            allow_corrupt: false,
            batch_checksums: true,
        }
    }
}
