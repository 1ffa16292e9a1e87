//! Where filters are pinned in bpffs, and making sure bpffs is there.
//!
//! Layout: `<pin_root>/<db>/<file name>`, e.g.
//! `/sys/fs/bpf/blinkdb/0/k7573657273` for key `users` in db 0.

use std::ffi::CString;
use std::fmt::Write as _;
use std::io;
use std::mem;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::error::{KernelError, KernelResult};

/// Where pins go unless configured otherwise (`bpf-pin-root`).
pub const DEFAULT_PIN_ROOT: &str = "/sys/fs/bpf/blinkdb";

/// The conventional bpffs mount point.
const SYSTEM_BPFFS: &str = "/sys/fs/bpf";

/// `f_type` of bpffs in statfs(2).
const BPF_FS_MAGIC: libc::c_long = 0xcafe_4a11;

/// Keys up to this many bytes are spelled out in hex (2 chars per byte),
/// which stays under the 255-byte file name limit with room to spare.
const MAX_HEX_KEY_LEN: usize = 120;

/// A file name for `key` that is safe in any filesystem and never collides:
/// `k` + lowercase hex of the key bytes for keys up to 120 bytes, otherwise
/// `h` + hex of the key's xxh3-128 (little-endian).
pub fn pin_file_name(key: &[u8]) -> String {
    if key.len() <= MAX_HEX_KEY_LEN {
        prefixed_hex('k', key)
    } else {
        prefixed_hex('h', &xxhash_rust::xxh3::xxh3_128(key).to_le_bytes())
    }
}

fn prefixed_hex(prefix: char, bytes: &[u8]) -> String {
    let mut name = String::with_capacity(1 + 2 * bytes.len());
    name.push(prefix);
    for byte in bytes {
        // Writing to a String cannot fail.
        let _ = write!(name, "{byte:02x}");
    }
    name
}

/// The pin path of one filter: `<root>/<db>/<name>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinLocation {
    root: PathBuf,
    db: u32,
    name: String,
}

impl PinLocation {
    /// A location for a caller-chosen file name, which must be one plain
    /// path component of at most 255 bytes without `/`, NUL or `.` (bpffs
    /// refuses any name containing a dot).
    pub fn new(root: impl Into<PathBuf>, db: u32, name: impl Into<String>) -> KernelResult<Self> {
        let name = name.into();
        let plain = !name.is_empty() && name.len() <= 255 && !name.contains(['/', '\0', '.']);
        if !plain {
            return Err(KernelError::InvalidSpec(
                "kernel filter pin name must be one plain file name",
            ));
        }
        Ok(PinLocation {
            root: root.into(),
            db,
            name,
        })
    }

    /// The location for a Redis key, named with [`pin_file_name`].
    pub fn for_key(root: impl Into<PathBuf>, db: u32, key: &[u8]) -> Self {
        PinLocation {
            root: root.into(),
            db,
            name: pin_file_name(key),
        }
    }

    /// The pin root this location lives under.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The database number.
    pub fn db(&self) -> u32 {
        self.db
    }

    /// The file name inside the db directory.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The db directory: `<root>/<db>`.
    pub fn dir(&self) -> PathBuf {
        self.root.join(self.db.to_string())
    }

    /// The full pin path: `<root>/<db>/<name>`.
    pub fn path(&self) -> PathBuf {
        self.dir().join(&self.name)
    }
}

/// Makes sure `pin_root` is on bpffs and exists.
///
/// If it is not on bpffs, bpffs is mounted: at `/sys/fs/bpf` when the root
/// lies under it (as `mount -t bpf bpf /sys/fs/bpf` would), otherwise on the
/// root directory itself, so nothing else gets shadowed. Mounting needs root
/// (CAP_SYS_ADMIN); without it the error says so.
pub fn ensure_bpffs(pin_root: &Path) -> KernelResult<()> {
    let existing = nearest_existing(pin_root);
    if is_bpffs(&existing).unwrap_or(false) {
        return create_dirs(pin_root);
    }
    let mount_point = if pin_root.starts_with(SYSTEM_BPFFS) {
        PathBuf::from(SYSTEM_BPFFS)
    } else {
        create_dirs(pin_root)?;
        pin_root.to_path_buf()
    };
    mount_bpffs(&mount_point).map_err(|reason| KernelError::BpffsUnavailable {
        mount_point: mount_point.clone(),
        reason,
    })?;
    create_dirs(pin_root)
}

/// Whether `path` is on a bpffs mount, by statfs(2).
pub fn is_bpffs(path: &Path) -> io::Result<bool> {
    let c_path = c_path(path)?;
    // SAFETY: statfs is plain integers; zero is a valid value.
    let mut stat: libc::statfs = unsafe { mem::zeroed() };
    // SAFETY: c_path is NUL-terminated and stat is a valid out pointer.
    if unsafe { libc::statfs(c_path.as_ptr(), &mut stat) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(stat.f_type as libc::c_long == BPF_FS_MAGIC)
}

fn mount_bpffs(mount_point: &Path) -> Result<(), String> {
    let target = c_path(mount_point).map_err(|err| err.to_string())?;
    // SAFETY: all strings are NUL-terminated and outlive the call; no data.
    let rc = unsafe {
        libc::mount(
            c"bpf".as_ptr(),
            target.as_ptr(),
            c"bpf".as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        let err = io::Error::last_os_error();
        let hint = if err.raw_os_error() == Some(libc::EPERM) {
            " (needs root: CAP_SYS_ADMIN)"
        } else {
            ""
        };
        return Err(format!(
            "mount(\"bpf\", \"{}\", \"bpf\") failed: {err}{hint}",
            mount_point.display()
        ));
    }
    Ok(())
}

fn nearest_existing(path: &Path) -> PathBuf {
    path.ancestors()
        .find(|ancestor| ancestor.exists())
        .unwrap_or(Path::new("/"))
        .to_path_buf()
}

pub(crate) fn create_dirs(dir: &Path) -> KernelResult<()> {
    std::fs::create_dir_all(dir).map_err(|source| KernelError::Io {
        op: "mkdir",
        path: dir.to_path_buf(),
        source,
    })
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_keys_are_hex_with_prefix() {
        assert_eq!(pin_file_name(b""), "k");
        assert_eq!(pin_file_name(b"users"), "k7573657273");
        assert_eq!(pin_file_name(b"a/../b\0"), "k612f2e2e2f6200");
    }

    #[test]
    fn long_keys_are_hashed_and_bounded() {
        let long = vec![b'x'; 121];
        let name = pin_file_name(&long);
        assert!(name.starts_with('h'));
        assert_eq!(name.len(), 33);
        assert_ne!(name, pin_file_name(&long[..120]));
        assert!(pin_file_name(&long[..120]).len() <= 255);
    }

    #[test]
    fn location_layout_and_name_checks() {
        let loc = PinLocation::for_key("/sys/fs/bpf/blinkdb", 3, b"k1");
        assert_eq!(loc.path(), Path::new("/sys/fs/bpf/blinkdb/3/k6b31"));
        assert!(PinLocation::new("/r", 0, "a/b").is_err());
        assert!(PinLocation::new("/r", 0, "..").is_err());
        assert!(PinLocation::new("/r", 0, "a.b").is_err());
        assert!(PinLocation::new("/r", 0, "").is_err());
        assert!(PinLocation::new("/r", 0, "ok_name").is_ok());
    }
}
