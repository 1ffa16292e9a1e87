//! One kernel Bloom filter: a pinned `BPF_MAP_TYPE_BLOOM_FILTER` map.

use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use aya::maps::MapData;
use aya_obj::generated::{bpf_map_info, bpf_map_type};

use super::error::{KernelError, KernelResult};
use super::pin::{create_dirs, ensure_bpffs, PinLocation};
use super::probe::create_error;
use super::spec::{element_value, FilterSpec, ValueFormat};
use super::sys;

/// How [`KernelFilter::open_or_create`] got its map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenOutcome {
    /// An existing pin was reopened: the same kernel map, with its contents.
    Reopened,
    /// No pin existed, so a new empty map was created and pinned; the caller
    /// must replay the filter's items from its log.
    Created,
}

/// What the pin path currently holds, compared with this filter's map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PinStatus {
    /// The pin serves this filter's map.
    Pinned,
    /// Nothing is pinned at the path (someone removed it).
    Missing,
    /// Another map is pinned at the path.
    Replaced {
        /// The id of the map now pinned there.
        map_id: u32,
    },
}

/// The facts BF.INFO reports about a kernel filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelFilterInfo {
    /// The kernel's id of the map (as in `bpftool map show id N`).
    pub map_id: u32,
    /// Where the map is pinned.
    pub pin_path: PathBuf,
    /// Hash functions per item, as read back from the kernel (`map_extra`).
    pub hash_count: u32,
    /// The map's `max_entries` (the filter's capacity).
    pub max_entries: u32,
    /// Bytes per element (16 in digest mode, the width in RAW mode).
    pub value_size: u32,
    /// How items are stored.
    pub format: ValueFormat,
}

/// A Bloom filter held by the kernel and pinned in bpffs.
///
/// Operations take `&self`: the kernel serialises access to the map, so one
/// filter can be shared between threads. Dropping it closes the fd only;
/// the map lives on while it is pinned (see [`KernelFilter::delete`]).
#[derive(Debug)]
pub struct KernelFilter {
    map: MapData,
    location: PinLocation,
    info: KernelFilterInfo,
}

impl KernelFilter {
    /// Creates an empty filter for `spec` and pins it at `location`.
    /// Mounts bpffs first if needed (see [`ensure_bpffs`]).
    ///
    /// Fails with [`KernelError::PinExists`] if something is already pinned.
    pub fn create(location: &PinLocation, spec: &FilterSpec) -> KernelResult<Self> {
        spec.validate()?;
        let path = location.path();
        ensure_bpffs(location.root())?;
        create_dirs(&location.dir())?;
        if path.exists() {
            return Err(KernelError::PinExists { path });
        }
        let fd = sys::create_bloom_map(spec.format.value_size(), spec.capacity, spec.hash_count())
            .map_err(|err| create_error(err, path.clone()))?;
        let map = MapData::from_fd(fd).map_err(|err| KernelError::from_aya_map(err, &path))?;
        map.pin(&path)
            .map_err(|err| KernelError::from_aya_pin(err, &path))?;
        Self::checked(map, location, spec)
    }

    /// Reopens the map pinned at `location`, checking it matches `spec`.
    ///
    /// `Ok(None)` means no pin exists (first use, reboot, or someone removed
    /// it): the caller creates the filter and rebuilds it from its log.
    pub fn open(location: &PinLocation, spec: &FilterSpec) -> KernelResult<Option<Self>> {
        spec.validate()?;
        ensure_bpffs(location.root())?;
        let path = location.path();
        let map = match MapData::from_pin(&path) {
            Ok(map) => map,
            Err(aya::maps::MapError::SyscallError(sys))
                if sys.io_error.kind() == std::io::ErrorKind::NotFound =>
            {
                return Ok(None);
            }
            Err(err) => return Err(KernelError::from_aya_map(err, &path)),
        };
        Self::checked(map, location, spec).map(Some)
    }

    /// Reopens the pin if there is one, otherwise creates it; the outcome
    /// tells the caller whether it must replay items into the new map.
    pub fn open_or_create(
        location: &PinLocation,
        spec: &FilterSpec,
    ) -> KernelResult<(Self, OpenOutcome)> {
        match Self::open(location, spec)? {
            Some(filter) => Ok((filter, OpenOutcome::Reopened)),
            None => Ok((Self::create(location, spec)?, OpenOutcome::Created)),
        }
    }

    fn checked(map: MapData, location: &PinLocation, spec: &FilterSpec) -> KernelResult<Self> {
        let path = location.path();
        let raw = read_info(&map, &path)?;
        let expected_hashes = spec.hash_count();
        let mismatch = |what: &str, expected: u64, found: u64| KernelError::PinMismatch {
            path: path.clone(),
            detail: format!("{what} expected {expected}, found {found}"),
        };
        if raw.type_ != bpf_map_type::BPF_MAP_TYPE_BLOOM_FILTER as u32 {
            return Err(KernelError::PinMismatch {
                path: path.clone(),
                detail: format!("not a bloom filter map (map type {})", raw.type_),
            });
        }
        if raw.value_size != spec.format.value_size() {
            let (expected, found) = (spec.format.value_size(), raw.value_size);
            return Err(mismatch("value size", expected.into(), found.into()));
        }
        if raw.max_entries != spec.capacity {
            let (expected, found) = (spec.capacity, raw.max_entries);
            return Err(mismatch("max_entries", expected.into(), found.into()));
        }
        if raw.map_extra != u64::from(expected_hashes) {
            return Err(mismatch(
                "hash count (map_extra)",
                expected_hashes.into(),
                raw.map_extra,
            ));
        }
        let info = KernelFilterInfo {
            map_id: raw.id,
            pin_path: path,
            hash_count: raw.map_extra as u32,
            max_entries: raw.max_entries,
            value_size: raw.value_size,
            format: spec.format,
        };
        Ok(KernelFilter {
            map,
            location: location.clone(),
            info,
        })
    }

    /// Adds `item` and says whether it was new, with BF.ADD's meaning.
    ///
    /// A bloom map's push cannot report whether it changed any bit, so this
    /// peeks first: `false` when the filter already (possibly falsely)
    /// contained the item, and then nothing is pushed; `true` after a push.
    /// This is RedisBloom's meaning too (0 when all the item's bits were set).
    /// Another writer (an eBPF program) may add the item between the two
    /// calls; then both report it as new, which is harmless.
    pub fn add(&self, item: &[u8]) -> KernelResult<bool> {
        let value = element_value(self.info.format, item)?;
        if self.peek(value.as_bytes())? {
            return Ok(false);
        }
        self.push(value.as_bytes())?;
        Ok(true)
    }

    /// Adds `item` with a single push, without reporting whether it was new
    /// (one syscall instead of two; used for replay from the log).
    pub fn insert(&self, item: &[u8]) -> KernelResult<()> {
        let value = element_value(self.info.format, item)?;
        self.push(value.as_bytes())
    }

    /// Pushes an already encoded element (a stored digest, or a RAW item) of
    /// exactly the map's value size; used to rebuild a map from a side log.
    pub fn insert_value(&self, value: &[u8]) -> KernelResult<()> {
        if value.len() != self.info.value_size as usize {
            return Err(KernelError::ItemWidth {
                expected: self.info.value_size,
                actual: value.len(),
            });
        }
        self.push(value)
    }

    /// The element bytes `item` is stored as (its digest, or itself in RAW mode).
    pub fn encode_value(&self, item: &[u8]) -> KernelResult<Vec<u8>> {
        Ok(element_value(self.info.format, item)?.as_bytes().to_vec())
    }

    /// Whether `item` may be in the filter (`false` is definite).
    pub fn contains(&self, item: &[u8]) -> KernelResult<bool> {
        let value = element_value(self.info.format, item)?;
        self.peek(value.as_bytes())
    }

    /// [`add`](Self::add) for each item, in order. Every item's width is
    /// checked before anything is added, so a bad item changes nothing.
    /// Bloom maps have no batch syscall: this is one or two bpf() per item.
    pub fn add_many<T: AsRef<[u8]>>(&self, items: &[T]) -> KernelResult<Vec<bool>> {
        self.check_widths(items)?;
        items.iter().map(|item| self.add(item.as_ref())).collect()
    }

    /// [`insert`](Self::insert) for each item, widths checked first.
    pub fn insert_many<T: AsRef<[u8]>>(&self, items: &[T]) -> KernelResult<()> {
        self.check_widths(items)?;
        items.iter().try_for_each(|item| self.insert(item.as_ref()))
    }

    /// [`contains`](Self::contains) for each item, widths checked first.
    pub fn contains_many<T: AsRef<[u8]>>(&self, items: &[T]) -> KernelResult<Vec<bool>> {
        self.check_widths(items)?;
        items
            .iter()
            .map(|item| self.contains(item.as_ref()))
            .collect()
    }

    fn check_widths<T: AsRef<[u8]>>(&self, items: &[T]) -> KernelResult<()> {
        if let ValueFormat::Raw { width } = self.info.format {
            if let Some(bad) = items
                .iter()
                .find(|item| item.as_ref().len() != width as usize)
            {
                return Err(KernelError::ItemWidth {
                    expected: width,
                    actual: bad.as_ref().len(),
                });
            }
        }
        Ok(())
    }

    fn push(&self, value: &[u8]) -> KernelResult<()> {
        sys::push(self.map.fd().as_fd(), value).map_err(|source| KernelError::Syscall {
            call: "bpf(BPF_MAP_UPDATE_ELEM)",
            path: self.info.pin_path.clone(),
            source,
        })
    }

    fn peek(&self, value: &[u8]) -> KernelResult<bool> {
        sys::peek(self.map.fd().as_fd(), value).map_err(|source| KernelError::Syscall {
            call: "bpf(BPF_MAP_LOOKUP_ELEM)",
            path: self.info.pin_path.clone(),
            source,
        })
    }

    /// The facts for BF.INFO.
    pub fn info(&self) -> &KernelFilterInfo {
        &self.info
    }

    /// Where this filter is pinned.
    pub fn location(&self) -> &PinLocation {
        &self.location
    }

    /// Whether the pin still serves this map. A `Missing` pin while the
    /// process runs can be restored with [`repin`](Self::repin), since this
    /// handle keeps the map alive; after a restart it means a rebuild.
    pub fn pin_status(&self) -> KernelResult<PinStatus> {
        let path = &self.info.pin_path;
        let pinned = match MapData::from_pin(path) {
            Ok(map) => map,
            Err(aya::maps::MapError::SyscallError(sys))
                if sys.io_error.kind() == std::io::ErrorKind::NotFound =>
            {
                return Ok(PinStatus::Missing);
            }
            Err(err) => return Err(KernelError::from_aya_map(err, path)),
        };
        let pinned_id = read_info(&pinned, path)?.id;
        if pinned_id == self.info.map_id {
            Ok(PinStatus::Pinned)
        } else {
            Ok(PinStatus::Replaced { map_id: pinned_id })
        }
    }

    /// Pins this map again at its path (after the pin was removed).
    pub fn repin(&self) -> KernelResult<()> {
        let path = &self.info.pin_path;
        create_dirs(&self.location.dir())?;
        self.map
            .pin(path)
            .map_err(|err| KernelError::from_aya_pin(err, path))
    }

    /// Moves the pin to `to` (the owning key was renamed or moved): the same
    /// map, served at the new path and no longer at the old one. A pin already
    /// at `to` is replaced (rename(2) on bpffs is atomic); if this map's pin was
    /// removed meanwhile, it is pinned anew at `to`.
    pub fn move_pin(&mut self, to: &PinLocation) -> KernelResult<()> {
        if *to == self.location {
            return Ok(());
        }
        let path = to.path();
        create_dirs(&to.dir())?;
        if self.pin_status()? == PinStatus::Pinned {
            std::fs::rename(&self.info.pin_path, &path).map_err(|source| KernelError::Io {
                op: "rename",
                path: path.clone(),
                source,
            })?;
        } else {
            match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(KernelError::Io {
                        op: "unlink",
                        path,
                        source: e,
                    })
                }
                _ => {}
            }
            self.map
                .pin(&path)
                .map_err(|err| KernelError::from_aya_pin(err, &path))?;
        }
        self.location = to.clone();
        self.info.pin_path = path;
        Ok(())
    }

    /// Unpins and closes the map, which frees it unless an eBPF program or
    /// another process still holds it. A pin that now serves a different
    /// map is left alone.
    pub fn delete(self) -> KernelResult<()> {
        if self.pin_status()? == PinStatus::Pinned {
            unpin(&self.info.pin_path)?;
        }
        Ok(())
    }
}

fn unpin(path: &Path) -> KernelResult<()> {
    std::fs::remove_file(path).map_err(|source| KernelError::Io {
        op: "unlink",
        path: path.to_path_buf(),
        source,
    })
}

fn read_info(map: &MapData, path: &Path) -> KernelResult<bpf_map_info> {
    sys::map_info(map.fd().as_fd()).map_err(|source| KernelError::Syscall {
        call: "bpf(BPF_OBJ_GET_INFO_BY_FD)",
        path: path.to_path_buf(),
        source,
    })
}
