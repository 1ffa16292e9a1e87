//! Whether this process can use kernel filters, and if not, why.

use std::io;
use std::path::{Path, PathBuf};

use super::error::{KernelError, KernelResult};
use super::pin::{create_dirs, ensure_bpffs};
use super::sys;

/// Capability bits (linux/capability.h).
const CAP_SYS_ADMIN: u32 = 21;
const CAP_BPF: u32 = 39;

/// Checks everything the kernel backend needs, in the order it is needed:
/// bloom map creation (CAP_BPF, Linux 5.16+), bpffs at `pin_root` (mounted
/// here if missing and we are root), and pinning under `pin_root`.
///
/// `Ok(())` means filters can be created under `pin_root`; the error's text
/// says exactly what is missing and is fit for an `ERR` reply.
pub fn probe(pin_root: &Path) -> KernelResult<()> {
    let map = sys::create_bloom_map(4, 1, 1)
        .map_err(|err| create_error(err, PathBuf::from("(probe map)")))?;
    ensure_bpffs(pin_root)?;
    create_dirs(pin_root)?;
    // bpffs refuses names containing '.', so no dot-file here.
    let probe_pin = pin_root.join(format!("_probe_{}", std::process::id()));
    let map = aya::maps::MapData::from_fd(map)
        .map_err(|err| KernelError::from_aya_map(err, &probe_pin))?;
    map.pin(&probe_pin)
        .map_err(|err| KernelError::from_aya_pin(err, &probe_pin))?;
    std::fs::remove_file(&probe_pin).map_err(|source| KernelError::Io {
        op: "unlink",
        path: probe_pin,
        source,
    })
}

/// Turns a failed `bpf(BPF_MAP_CREATE)` into the most precise error.
pub(crate) fn create_error(err: io::Error, path: PathBuf) -> KernelError {
    const CALL: &str = "bpf(BPF_MAP_CREATE)";
    match err.raw_os_error() {
        Some(libc::EPERM | libc::EACCES) if !has_bpf_capability() => KernelError::CapBpfMissing {
            call: CALL,
            source: err,
        },
        // EINVAL: unknown map type; E2BIG: a kernel that predates map_extra
        // refuses the non-zero attribute tail; ENOSYS: no bpf() at all.
        Some(libc::EINVAL | libc::E2BIG | libc::ENOSYS) if !bloom_maps_known() => {
            KernelError::BloomMapUnsupported {
                call: CALL,
                source: err,
            }
        }
        _ => KernelError::Syscall {
            call: CALL,
            path,
            source: err,
        },
    }
}

/// Whether the effective capability set holds CAP_BPF or CAP_SYS_ADMIN
/// (either lets a process create bloom maps).
pub fn has_bpf_capability() -> bool {
    effective_caps().is_some_and(|caps| caps & (1 << CAP_BPF | 1 << CAP_SYS_ADMIN) != 0)
}

fn effective_caps() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let hex = status
        .lines()
        .find_map(|line| line.strip_prefix("CapEff:"))?
        .trim();
    u64::from_str_radix(hex, 16).ok()
}

/// Whether a known-good bloom map can be created at all; used to tell an
/// old kernel from a bad argument when creation fails with EINVAL.
fn bloom_maps_known() -> bool {
    sys::create_bloom_map(4, 1, 1).is_ok()
}
