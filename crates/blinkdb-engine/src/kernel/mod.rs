//! Bloom filters held by the Linux kernel in `BPF_MAP_TYPE_BLOOM_FILTER` maps.
//!
//! A [`KernelFilter`] is a fixed-size kernel map pinned at
//! `<pin_root>/<db>/<name>` in bpffs, so it survives restarts of the server
//! and can be shared with eBPF programs. Its contents are not in the AOF:
//! when the pin is gone (reboot, `rm`), [`KernelFilter::open`] returns `None`
//! and the caller creates a new map and replays the filter's items from its
//! log. See `docs/kernel-filters.md` for the value format and lifecycle.
//!
//! Typical use by the BF.* layer:
//!
//! ```no_run
//! use blinkdb_engine::bpf::{probe, FilterSpec, KernelFilter, OpenOutcome, PinLocation};
//! # fn main() -> Result<(), blinkdb_engine::bpf::KernelError> {
//! let root = std::path::Path::new("/sys/fs/bpf/blinkdb");
//! probe(root)?; // "CAP_BPF missing", "kernel lacks ...", "bpffs not mounted ..."
//! let spec = FilterSpec::digest(100_000, 0.01);
//! let location = PinLocation::for_key(root, 0, b"users");
//! let (filter, outcome) = KernelFilter::open_or_create(&location, &spec)?;
//! if outcome == OpenOutcome::Created {
//!     // replay this key's items from the AOF with filter.insert(..)
//! }
//! let newly_added = filter.add(b"alice")?;
//! assert!(filter.contains(b"alice")?);
//! # let _ = newly_added;
//! # Ok(())
//! # }
//! ```

mod error;
mod filter;
mod pin;
mod probe;
mod spec;
mod sys;

pub use error::KernelError;
pub use filter::{KernelFilter, KernelFilterInfo, OpenOutcome, PinStatus};
pub use pin::{ensure_bpffs, is_bpffs, pin_file_name, PinLocation, DEFAULT_PIN_ROOT};
pub use probe::probe;
pub use spec::FilterSpec;
