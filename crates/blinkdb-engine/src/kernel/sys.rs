//! The few bpf() commands aya 0.14 does not expose in the form we need.
//!
//! Own code instead of aya here, for three reasons: aya's standalone map
//! creation builds a legacy map definition whose `map_extra` is always 0 (the
//! BTF definition that carries it needs a BTF fd only `Ebpf::load` can make);
//! aya's `BloomFilter` needs the value width as a compile-time type, while RAW
//! widths are chosen at run time; and aya's `MapInfo` hides `map_extra`.
//! The attribute layouts come from aya-obj's generated kernel bindings.

use std::io;
use std::mem;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use aya_obj::generated::{bpf_attr, bpf_cmd, bpf_map_info, bpf_map_type, BPF_ANY};

/// The kernel name every filter map gets (shown by `bpftool map show`).
pub(crate) const MAP_NAME: &[u8] = b"blinkdb_bf";

fn sys_bpf(cmd: bpf_cmd, attr: &mut bpf_attr) -> io::Result<libc::c_long> {
    // SAFETY: `attr` is a fully initialised bpf_attr that lives for the call,
    // and every pointer stored in it points at memory the caller keeps alive.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd as libc::c_int,
            attr as *mut bpf_attr,
            mem::size_of::<bpf_attr>(),
        )
    };
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn zeroed_attr() -> bpf_attr {
    // SAFETY: bpf_attr is a plain C union of integers; all-zero is valid and
    // is what the kernel requires for every unused byte.
    unsafe { mem::zeroed() }
}

/// `bpf(BPF_MAP_CREATE)` for a bloom filter map with `hash_count` hashes.
pub(crate) fn create_bloom_map(
    value_size: u32,
    max_entries: u32,
    hash_count: u32,
) -> io::Result<OwnedFd> {
    let mut attr = zeroed_attr();
    // SAFETY: writing plain integer fields of the map-create member.
    let create = unsafe { &mut attr.__bindgen_anon_1 };
    create.map_type = bpf_map_type::BPF_MAP_TYPE_BLOOM_FILTER as u32;
    create.key_size = 0;
    create.value_size = value_size;
    create.max_entries = max_entries;
    create.map_extra = u64::from(hash_count);
    // A fixed (zero) hash seed: a map rebuilt from the items recorded as new
    // sets exactly the same bits, so an item that was a false positive when
    // it was added (and so never recorded) is still found after a rebuild.
    // With the default random seed such items became false negatives.
    create.map_flags = aya_obj::generated::BPF_F_ZERO_SEED;
    for (slot, byte) in create.map_name.iter_mut().zip(MAP_NAME) {
        *slot = *byte as libc::c_char;
    }
    let fd = sys_bpf(bpf_cmd::BPF_MAP_CREATE, &mut attr)?;
    // SAFETY: on success BPF_MAP_CREATE returns a new fd that we now own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

/// `bpf(BPF_MAP_UPDATE_ELEM)` without a key: a push into a bloom map.
pub(crate) fn push(map: BorrowedFd<'_>, value: &[u8]) -> io::Result<()> {
    let mut attr = zeroed_attr();
    // SAFETY: writing plain integer fields of the element member.
    let elem = unsafe { &mut attr.__bindgen_anon_2 };
    elem.map_fd = map.as_raw_fd() as u32;
    elem.__bindgen_anon_1.value = value.as_ptr() as u64;
    elem.flags = u64::from(BPF_ANY);
    sys_bpf(bpf_cmd::BPF_MAP_UPDATE_ELEM, &mut attr).map(drop)
}

/// `bpf(BPF_MAP_LOOKUP_ELEM)` without a key: a peek into a bloom map.
/// `Ok(false)` is the kernel's ENOENT, "definitely not present".
pub(crate) fn peek(map: BorrowedFd<'_>, value: &[u8]) -> io::Result<bool> {
    let mut attr = zeroed_attr();
    // SAFETY: writing plain integer fields of the element member.
    let elem = unsafe { &mut attr.__bindgen_anon_2 };
    elem.map_fd = map.as_raw_fd() as u32;
    // The kernel only reads the value of a bloom peek, never writes it.
    elem.__bindgen_anon_1.value = value.as_ptr() as u64;
    match sys_bpf(bpf_cmd::BPF_MAP_LOOKUP_ELEM, &mut attr) {
        Ok(_) => Ok(true),
        Err(err) if err.raw_os_error() == Some(libc::ENOENT) => Ok(false),
        Err(err) => Err(err),
    }
}

/// `bpf(BPF_OBJ_GET_INFO_BY_FD)` for a map, including `map_extra`.
pub(crate) fn map_info(map: BorrowedFd<'_>) -> io::Result<bpf_map_info> {
    // SAFETY: bpf_map_info is plain integers; zero is valid.
    let mut info: bpf_map_info = unsafe { mem::zeroed() };
    let mut attr = zeroed_attr();
    // SAFETY: writing plain integer fields of the info member.
    let req = unsafe { &mut attr.info };
    req.bpf_fd = map.as_raw_fd() as u32;
    req.info_len = mem::size_of::<bpf_map_info>() as u32;
    req.info = &mut info as *mut bpf_map_info as u64;
    sys_bpf(bpf_cmd::BPF_OBJ_GET_INFO_BY_FD, &mut attr)?;
    Ok(info)
}
