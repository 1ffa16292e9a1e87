//! Errors of the kernel filter backend.
//!
//! Every `Display` text is written to be sent to a client as is, after the
//! `ERR ` prefix of a Redis error reply (the caller adds the prefix).

use std::io;
use std::path::{Path, PathBuf};

/// Why a kernel filter operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KernelError {
    /// The process may not create BPF maps.
    #[error("kernel filters unavailable: CAP_BPF missing ({call} failed: {source})")]
    CapBpfMissing {
        /// The syscall that was refused.
        call: &'static str,
        /// The kernel's answer (EPERM or EACCES).
        source: io::Error,
    },

    /// The running kernel has no bloom filter map type.
    #[error("kernel filters unavailable: kernel lacks BPF_MAP_TYPE_BLOOM_FILTER (needs Linux 5.16+; {call} failed: {source})")]
    BloomMapUnsupported {
        /// The syscall that failed.
        call: &'static str,
        /// The kernel's answer (EINVAL, or ENOSYS without bpf() at all).
        source: io::Error,
    },

    /// bpffs is not mounted where pins go, and mounting it failed.
    #[error("kernel filters unavailable: bpffs not mounted at {} and cannot mount: {reason}", .mount_point.display())]
    BpffsUnavailable {
        /// Where bpffs was expected (and a mount was tried).
        mount_point: PathBuf,
        /// What failed, naming the operation.
        reason: String,
    },

    /// A bpf() command failed for a reason other than the ones above.
    #[error("{call} failed on {}: {source}", .path.display())]
    Syscall {
        /// The syscall or bpf() command, e.g. `bpf(BPF_MAP_UPDATE_ELEM)`.
        call: &'static str,
        /// The pin path of the filter concerned.
        path: PathBuf,
        /// The kernel's answer.
        source: io::Error,
    },

    /// aya refused an operation for a reason that is not a syscall error.
    #[error("aya: {message} ({})", .path.display())]
    Aya {
        /// The pin path concerned.
        path: PathBuf,
        /// aya's description.
        message: String,
    },

    /// A filesystem operation on the pin tree failed.
    #[error("{op} {} failed: {source}", .path.display())]
    Io {
        /// The operation, e.g. `mkdir` or `unlink`.
        op: &'static str,
        /// The path concerned.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },

    /// An item given to a RAW filter does not have the filter's width.
    #[error("item is {actual} bytes but this kernel filter stores RAW {expected}-byte items")]
    ItemWidth {
        /// The filter's fixed item width.
        expected: u32,
        /// The length of the item given.
        actual: usize,
    },

    /// The requested spec cannot be made into a kernel map.
    #[error("{0}")]
    InvalidSpec(&'static str),

    /// Creating a filter where a pin already exists.
    #[error("a kernel filter is already pinned at {}", .path.display())]
    PinExists {
        /// The occupied pin path.
        path: PathBuf,
    },

    /// The pinned map is not the filter the caller described.
    #[error("pinned map at {} does not match: {detail}", .path.display())]
    PinMismatch {
        /// The pin path.
        path: PathBuf,
        /// Which property differs, expected and found.
        detail: String,
    },
}

impl KernelError {
    /// Wraps an aya map error, keeping the syscall name aya reports.
    pub(crate) fn from_aya_map(err: aya::maps::MapError, path: &Path) -> Self {
        match err {
            aya::maps::MapError::SyscallError(sys) => Self::from_aya_syscall(sys, path),
            other => KernelError::Aya {
                path: path.to_path_buf(),
                message: other.to_string(),
            },
        }
    }

    /// Wraps an aya pin error, keeping the syscall name aya reports.
    pub(crate) fn from_aya_pin(err: aya::pin::PinError, path: &Path) -> Self {
        match err {
            aya::pin::PinError::SyscallError(sys) => Self::from_aya_syscall(sys, path),
            other => KernelError::Aya {
                path: path.to_path_buf(),
                message: other.to_string(),
            },
        }
    }

    fn from_aya_syscall(sys: aya::sys::SyscallError, path: &Path) -> Self {
        KernelError::Syscall {
            call: sys.call,
            path: path.to_path_buf(),
            source: sys.io_error,
        }
    }
}

/// Shorthand for results of this module.
pub type KernelResult<T> = Result<T, KernelError>;
