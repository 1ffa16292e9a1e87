//! The file operations the AOF needs, behind a trait so tests can inject ENOSPC, EIO and
//! torn writes (see [`super::fault::FaultStorage`]).

use std::fs::{self, File, OpenOptions};
use std::io;
use std::mem::MaybeUninit;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

/// One open base, incr or manifest file. Positional I/O only, so readers need no lock.
pub trait LogFile: Send + Sync {
    /// One pwrite() at `offset`; may be short.
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize>;
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;
    /// One read into uninitialised memory (a large value read straight into a
    /// reply buffer, which zeroing first would cost a memset per GET); returns
    /// the filled prefix of `buf`. The default zeroes `buf`, then `read_at`.
    fn read_at_uninit<'a>(
        &self,
        buf: &'a mut [MaybeUninit<u8>],
        offset: u64,
    ) -> io::Result<&'a mut [u8]> {
        buf.fill(MaybeUninit::new(0));
        // SAFETY: every byte of `buf` was just initialised to 0.
        let buf =
            unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast::<u8>(), buf.len()) };
        let n = self.read_at(buf, offset)?;
        Ok(&mut buf[..n])
    }
    /// Like `read_at_uninit`, but only what the page cache holds (preadv2 with
    /// RWF_NOWAIT): `WouldBlock` when the first bytes would have to come from the
    /// disk. The default always answers `WouldBlock`.
    fn read_cached_uninit<'a>(
        &self,
        _buf: &'a mut [MaybeUninit<u8>],
        _offset: u64,
    ) -> io::Result<&'a mut [u8]> {
        Err(io::ErrorKind::WouldBlock.into())
    }
    fn set_len(&self, len: u64) -> io::Result<()>;
    /// fdatasync(2).
    fn sync_data(&self) -> io::Result<()>;
    fn size(&self) -> io::Result<u64>;
}

/// Directory-level operations plus file opening.
pub trait Storage: Send + Sync {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// Opens read+write, creating the file if missing, keeping its contents.
    fn open(&self, path: &Path) -> io::Result<Arc<dyn LogFile>>;
    /// Creates the file or truncates it to zero length.
    fn create(&self, path: &Path) -> io::Result<Arc<dyn LogFile>>;
    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn LogFile>>;
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// fsync of the directory so renames and new names survive a crash.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    fn exists(&self, path: &Path) -> bool;
}

/// The real file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct OsStorage;

struct OsFile(File);

impl OsFile {
    /// One preadv2(2) into `buf` with `flags` (0: the same as pread); returns the
    /// filled prefix.
    fn preadv2<'a>(
        &self,
        buf: &'a mut [MaybeUninit<u8>],
        offset: u64,
        flags: libc::c_int,
    ) -> io::Result<&'a mut [u8]> {
        let offset = libc::off_t::try_from(offset)
            .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        let iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        // SAFETY: one iovec over `buf`, valid for writes of its length; preadv2
        // writes at most that many bytes and returns how many it wrote.
        let n = unsafe {
            libc::preadv2(
                std::os::fd::AsRawFd::as_raw_fd(&self.0),
                &iov,
                1,
                offset,
                flags,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: preadv2 just initialised the first `n` (<= buf.len()) bytes.
        Ok(unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast::<u8>(), n as usize) })
    }
}

impl LogFile for OsFile {
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        self.0.write_at(buf, offset)
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.0.read_at(buf, offset)
    }
    fn read_at_uninit<'a>(
        &self,
        buf: &'a mut [MaybeUninit<u8>],
        offset: u64,
    ) -> io::Result<&'a mut [u8]> {
        self.preadv2(buf, offset, 0)
    }
    fn read_cached_uninit<'a>(
        &self,
        buf: &'a mut [MaybeUninit<u8>],
        offset: u64,
    ) -> io::Result<&'a mut [u8]> {
        // EOPNOTSUPP: a file system without RWF_NOWAIT; the caller reads where
        // waiting is fine, as for data that is not cached.
        self.preadv2(buf, offset, libc::RWF_NOWAIT)
            .map_err(|e| match e.raw_os_error() {
                Some(libc::EAGAIN | libc::EOPNOTSUPP) => io::ErrorKind::WouldBlock.into(),
                _ => e,
            })
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.0.sync_data()
    }
    fn size(&self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }
}

impl Storage for OsStorage {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        fs::create_dir_all(dir)
    }
    fn open(&self, path: &Path) -> io::Result<Arc<dyn LogFile>> {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        Ok(Arc::new(OsFile(f)))
    }
    fn create(&self, path: &Path) -> io::Result<Arc<dyn LogFile>> {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        Ok(Arc::new(OsFile(f)))
    }
    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn LogFile>> {
        Ok(Arc::new(OsFile(File::open(path)?)))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }
    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }
}

/// Writes all of `buf` at `offset`, retrying short writes like Redis's aofWrite().
/// On error returns how many bytes did land, so the caller can truncate them away.
pub(crate) fn write_all_at(
    file: &dyn LogFile,
    mut buf: &[u8],
    mut offset: u64,
) -> Result<(), (usize, io::Error)> {
    let mut done = 0;
    while !buf.is_empty() {
        match file.write_at(buf, offset) {
            Ok(0) => return Err((done, io::Error::from_raw_os_error(libc::ENOSPC))),
            Ok(n) => {
                done += n;
                buf = &buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err((done, e)),
        }
    }
    Ok(())
}

/// `read_full_at` into uninitialised memory; returns the filled prefix (all of
/// `buf` unless the file ended first).
pub(crate) fn read_full_at_uninit<'a>(
    file: &dyn LogFile,
    buf: &'a mut [MaybeUninit<u8>],
    offset: u64,
) -> io::Result<&'a mut [u8]> {
    let mut done = 0;
    while done < buf.len() {
        let tail = &mut buf[done..];
        let start = tail.as_ptr().cast::<u8>();
        match file.read_at_uninit(tail, offset + done as u64) {
            Ok([]) => break,
            Ok(filled) => {
                // What makes the bytes below initialised: each step handed back a
                // `&mut [u8]` over the start of the part it was given.
                assert_eq!(
                    filled.as_ptr(),
                    start,
                    "read_at_uninit returned other memory"
                );
                done += filled.len();
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    // SAFETY: the first `done` bytes were returned as initialised `&mut [u8]`
    // prefixes of consecutive parts of `buf` (checked above).
    Ok(unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast::<u8>(), done) })
}

/// Reads exactly `buf.len()` bytes unless EOF comes first; returns the count read.
pub(crate) fn read_full_at(file: &dyn LogFile, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}
