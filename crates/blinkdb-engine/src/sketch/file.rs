//! A sketch's file (docs/sketch-file-format.md): a header page, a table of
//! per-page checksums, then the structure's body. A count-min sketch's body
//! is its counters as they are in memory, so that a restart maps them
//! (`Cells::mapped`) instead of reading them; a cuckoo filter's, top-k's and
//! t-digest's is the structure's own encoding (`Sketch::file_body`), which a
//! restart decodes from the mapped pages (no log record runs).
//!
//! The file holds the structure as of one log position (the header's
//! checkpoint): a checkpoint writes the changed pages and their table entries
//! with the next generation, syncs, then writes the header naming that
//! generation and syncs again. At open, an entry newer than the header (a
//! checkpoint that did not finish) or a page whose checksum fails (a torn or
//! damaged page) rejects the whole file, and the key is rebuilt from the log.
//! Everything read here is untrusted: sizes are checked against the file's
//! length before anything is mapped.

use super::cells::{pages_for, Cells, PAGE};
use super::cms::CountMin;
use super::Sketch;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

pub const MAGIC: &[u8; 8] = b"BLINKSK\0";
pub const VERSION: u32 = 1;
/// The structure a file holds.
pub const KIND_COUNT_MIN: u32 = 1;
pub const KIND_CUCKOO: u32 = 2;
pub const KIND_TOP_K: u32 = 3;
pub const KIND_TDIGEST: u32 = 4;
/// Bytes of the header before the key.
const FIXED: usize = 64;
/// The longest key a file can name (a longer key's sketch stays in memory).
pub const MAX_KEY: usize = PAGE - FIXED - 4;
/// The most counter bytes a file may describe (a bound on what is mapped).
const MAX_DATA: u64 = 1 << 40;

/// What the header says. `width`, `depth` and `counter` are a count-min
/// sketch's dimensions and count; for the encoded bodies (`KIND_CUCKOO`,
/// `KIND_TOP_K`, `KIND_TDIGEST`) `width` is the body's length in bytes,
/// `depth` the pages the file gives it (its capacity) and `counter` 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub kind: u32,
    /// The checkpoint this header completes.
    pub generation: u32,
    /// The log position (`Lsn`) the counters are exactly as of.
    pub checkpoint: u64,
    pub db: u32,
    pub width: u64,
    pub depth: u64,
    /// Count-min: the sum of all increments.
    pub counter: u64,
    pub key: Vec<u8>,
    /// No page was written after this header (`FLAG_CLEAN`): a restart
    /// trusts the pages without re-reading them (docs/sketch-file-format.md
    /// "Verification at start" gives the argument).
    pub clean: bool,
}

/// Header flags (the word at offset 60).
pub const FLAG_CLEAN: u32 = 1;

/// Where the parts of a file of `cells` counters lie.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub pages: usize,
    pub table: u64,
    pub data: u64,
    pub len: u64,
}

impl Layout {
    pub fn of(cells: usize) -> Layout {
        Layout::of_pages(pages_for(cells))
    }

    /// A file whose body takes `pages` pages.
    pub fn of_pages(pages: usize) -> Layout {
        let table_len = ((pages * 8).div_ceil(PAGE) * PAGE) as u64;
        let data = PAGE as u64 + table_len;
        Layout {
            pages,
            table: PAGE as u64,
            data,
            len: data + (pages * PAGE) as u64,
        }
    }
}

/// Why a file cannot be bound (its key is then rebuilt from the log).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reject {
    Io(String),
    Header(&'static str),
    /// The file's length is not what its header's dimensions give.
    Shape {
        expected: u64,
        found: u64,
    },
    /// A checkpoint wrote this page but did not finish.
    Unfinished(usize),
    Checksum(usize),
    /// An encoded body that does not decode (`Sketch::from_file_body`).
    Body(&'static str),
}

impl std::fmt::Display for Reject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reject::Io(e) => write!(f, "read error: {e}"),
            Reject::Header(why) => write!(f, "bad header: {why}"),
            Reject::Shape { expected, found } => write!(
                f,
                "wrong shape: {found} bytes where its header gives {expected}"
            ),
            Reject::Unfinished(p) => write!(f, "page {p} is from an unfinished checkpoint"),
            Reject::Checksum(p) => write!(f, "page {p} fails its checksum (torn or damaged)"),
            Reject::Body(why) => write!(f, "bad body: {why}"),
        }
    }
}

pub fn checksum(bytes: &[u8]) -> u32 {
    crate::checksum::xxh3_64_large(bytes) as u32
}

/// A table entry: the generation that wrote the page, its checksum.
pub fn entry(generation: u32, page: &[u8]) -> u64 {
    (generation as u64) | ((checksum(page) as u64) << 32)
}

/// Whether `kind` is one of the encoded bodies (not mapped as counters).
pub fn encoded(kind: u32) -> bool {
    matches!(kind, KIND_CUCKOO | KIND_TOP_K | KIND_TDIGEST)
}

impl Header {
    /// A count-min sketch's counters (None for another kind or past the bound).
    pub fn cells(&self) -> Option<usize> {
        if self.kind != KIND_COUNT_MIN {
            return None;
        }
        let bytes = self.width.checked_mul(self.depth)?.checked_mul(4)?;
        (bytes <= MAX_DATA).then_some((bytes / 4) as usize)
    }

    /// The pages of the body, None when the header's sizes do not hold
    /// together (or pass the bound on what is mapped).
    pub fn data_pages(&self) -> Option<usize> {
        if self.kind == KIND_COUNT_MIN {
            return self.cells().map(pages_for);
        }
        let bytes = self.depth.checked_mul(PAGE as u64)?;
        (bytes <= MAX_DATA && self.width <= bytes).then_some(self.depth as usize)
    }

    pub fn encode(&self) -> [u8; PAGE] {
        assert!(self.key.len() <= MAX_KEY);
        let mut b = [0u8; PAGE];
        b[0..8].copy_from_slice(MAGIC);
        b[8..12].copy_from_slice(&VERSION.to_le_bytes());
        b[12..16].copy_from_slice(&self.kind.to_le_bytes());
        b[16..20].copy_from_slice(&self.generation.to_le_bytes());
        b[20..24].copy_from_slice(&self.db.to_le_bytes());
        b[24..32].copy_from_slice(&self.checkpoint.to_le_bytes());
        b[32..40].copy_from_slice(&self.width.to_le_bytes());
        b[40..48].copy_from_slice(&self.depth.to_le_bytes());
        b[48..56].copy_from_slice(&self.counter.to_le_bytes());
        b[56..60].copy_from_slice(&(self.key.len() as u32).to_le_bytes());
        let flags = if self.clean { FLAG_CLEAN } else { 0 };
        b[60..64].copy_from_slice(&flags.to_le_bytes());
        b[FIXED..FIXED + self.key.len()].copy_from_slice(&self.key);
        let sum = checksum(&b[..PAGE - 4]);
        b[PAGE - 4..].copy_from_slice(&sum.to_le_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> Result<Header, Reject> {
        if b.len() != PAGE {
            return Err(Reject::Header("short"));
        }
        let u32_at = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
        let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
        if &b[0..8] != MAGIC {
            return Err(Reject::Header("magic"));
        }
        if u32_at(PAGE - 4) != checksum(&b[..PAGE - 4]) {
            return Err(Reject::Header("checksum"));
        }
        if u32_at(8) != VERSION {
            return Err(Reject::Header("version"));
        }
        if u32_at(12) != KIND_COUNT_MIN && !encoded(u32_at(12)) {
            return Err(Reject::Header("structure kind"));
        }
        if u32_at(60) & !FLAG_CLEAN != 0 {
            return Err(Reject::Header("unknown flags"));
        }
        let key_len = u32_at(56) as usize;
        if key_len > MAX_KEY {
            return Err(Reject::Header("key length"));
        }
        let h = Header {
            kind: u32_at(12),
            generation: u32_at(16),
            db: u32_at(20),
            checkpoint: u64_at(24),
            width: u64_at(32),
            depth: u64_at(40),
            counter: u64_at(48),
            key: b[FIXED..FIXED + key_len].to_vec(),
            clean: u32_at(60) & FLAG_CLEAN != 0,
        };
        if h.width == 0 || h.depth == 0 || h.data_pages().is_none() {
            return Err(Reject::Header("dimensions"));
        }
        Ok(h)
    }
}

/// Reads and checks a file's header and length (cheap: one page).
pub fn read_header(path: &Path) -> Result<(File, Header, Layout), Reject> {
    let io = |e: std::io::Error| Reject::Io(e.to_string());
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(io)?;
    let mut page = vec![0u8; PAGE];
    file.read_exact_at(&mut page, 0).map_err(io)?;
    let header = Header::decode(&page)?;
    let layout = Layout::of_pages(header.data_pages().expect("checked in decode"));
    let found = file.metadata().map_err(io)?.len();
    if found != layout.len {
        return Err(Reject::Shape {
            expected: layout.len,
            found,
        });
    }
    Ok((file, header, layout))
}

/// A verified file: its header, its table, and its structure (a count-min
/// sketch's counters mapped, another's decoded from its body).
pub struct Opened {
    pub file: File,
    pub header: Header,
    pub layout: Layout,
    pub table: Vec<u64>,
    /// Its pages marked as this file's (`Dirty::bind`): a checkpoint with
    /// nothing changed writes none.
    pub sketch: Sketch,
}

/// Opens file `id`, checks every page against the table (on every core:
/// this is the only full read a restart makes) unless its header says no
/// page was written after it (`clean`), and maps the counters or decodes
/// the body.
pub fn open(path: &Path, id: u64) -> Result<Opened, Reject> {
    let io = |e: std::io::Error| Reject::Io(e.to_string());
    let (file, header, layout) = read_header(path)?;
    let mut raw = vec![0u8; layout.pages * 8];
    file.read_exact_at(&mut raw, layout.table).map_err(io)?;
    let table: Vec<u64> = raw
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    if let Some(p) = table.iter().position(|e| (*e as u32) > header.generation) {
        return Err(Reject::Unfinished(p));
    }
    // An encoded body's pages only: those past its end are never read (a
    // body that grows into them writes them, with their entries, before a
    // header names the longer body).
    let body = (header.width as usize).div_ceil(PAGE).clamp(1, table.len());
    let sketch = if encoded(header.kind) && !Sketch::file_mapped(header.kind) {
        // A body decoded whole into the heap (a t-digest's, a few pages):
        // read with one pread, no mapping made and torn down per file, and
        // every page read checked whatever the clean flag says (hashing
        // them costs microseconds; it is the reading that a clean flag
        // spares a mapped body).
        let mut bytes = vec![0u8; body * PAGE];
        file.read_exact_at(&mut bytes, layout.data).map_err(io)?;
        if let Some(p) = first_bad_page(&bytes, &table[..body]) {
            return Err(Reject::Checksum(p));
        }
        let sketch = Sketch::from_file_body(header.kind, &bytes[..header.width as usize])
            .map_err(Reject::Body)?;
        sketch.file_dirty().bind(id);
        sketch
    } else {
        // SAFETY: a private mapping of a file only this process writes (and
        // only through `write`, never while the file is mapped by another
        // value's pages that differ: see cells.rs). Not MAP_POPULATE: on a
        // writable private mapping it copies every page (measured: 1.2 s for
        // 256 MB); the checksum pass below maps them read-only, sharing the
        // page cache.
        let map = unsafe {
            memmap2::MmapOptions::new()
                .offset(layout.data)
                .len(layout.pages * PAGE)
                .map_copy(&file)
        }
        .map_err(io)?;
        // A mapped body (a cuckoo filter's slots, a top-k's buckets: its
        // pages) is checked as a count-min sketch's counters are: unless the
        // file is clean.
        let checked = if encoded(header.kind) {
            &table[..body]
        } else {
            &table[..]
        };
        if let Some(p) = (!header.clean)
            .then(|| first_bad_page(&map, checked))
            .flatten()
        {
            return Err(Reject::Checksum(p));
        }
        if encoded(header.kind) {
            // The large arrays stay in the mapping; the rest is decoded from it.
            let map = std::sync::Arc::new(map);
            let sketch = Sketch::from_file_map(header.kind, &map, header.width as usize)
                .map_err(Reject::Body)?;
            sketch.file_dirty().bind(id);
            sketch
        } else {
            let cells = Cells::mapped(map, header.cells().expect("a count-min sketch"), id);
            let (w, d) = (header.width as usize, header.depth as usize);
            Sketch::CountMin(CountMin::from_parts(w, d, header.counter, cells))
        }
    };
    Ok(Opened {
        file,
        header,
        layout,
        table,
        sketch,
    })
}

/// Pages a thread of the check gets at least: fewer are hashed on the
/// calling thread (xxh3 takes about 0.5 ms for 4 MB; starting a thread costs
/// tens of microseconds, and a restart with hundreds of small t-digest files
/// spent a third of its time opening them in thread starts and in
/// `available_parallelism`'s cgroup reads, once per file).
const PAGES_PER_THREAD: usize = 1024;

/// The cores a check may use (read once: `available_parallelism` reads
/// cgroup files at every call).
pub(crate) fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The first page whose checksum differs from its table entry: on the
/// calling thread for a few pages, else in one slice per core.
fn first_bad_page(data: &[u8], table: &[u64]) -> Option<usize> {
    let bad = |p: usize| (table[p] >> 32) as u32 != checksum(&data[p * PAGE..(p + 1) * PAGE]);
    let threads = cores().min(table.len() / PAGES_PER_THREAD).max(1);
    if threads == 1 {
        return (0..table.len()).find(|&p| bad(p));
    }
    let per = table.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let parts: Vec<_> = table
            .chunks(per)
            .enumerate()
            .map(|(i, t)| s.spawn(move || (0..t.len()).map(|j| i * per + j).find(|&p| bad(p))))
            .collect();
        parts
            .into_iter()
            .filter_map(|h| h.join().unwrap_or(Some(0)))
            .min()
    })
}

/// Makes a new, empty file of `layout` (zero pages; its header is written
/// by its first checkpoint, so a file that never got one is refused).
pub fn create(path: &Path, layout: Layout) -> std::io::Result<File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)?;
    file.set_len(layout.len)?;
    Ok(file)
}

/// Writes table entries `pages` (their whole table pages) from `table`.
pub fn write_table(
    file: &File,
    layout: Layout,
    table: &[u64],
    pages: &[usize],
) -> std::io::Result<()> {
    const PER: usize = PAGE / 8;
    let mut last = usize::MAX;
    let mut buf = Vec::with_capacity(PAGE);
    for &p in pages {
        let tp = p / PER;
        if tp == last {
            continue;
        }
        last = tp;
        buf.clear();
        for e in &table[tp * PER..((tp + 1) * PER).min(table.len())] {
            buf.extend_from_slice(&e.to_le_bytes());
        }
        file.write_all_at(&buf, layout.table + (tp * PAGE) as u64)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header {
            kind: KIND_COUNT_MIN,
            generation: 3,
            checkpoint: 99,
            db: 2,
            width: 1500,
            depth: 3,
            counter: 12,
            key: b"k".to_vec(),
            clean: false,
        }
    }

    #[test]
    fn header_round_trips_and_any_flipped_bit_is_refused() {
        let h = header();
        let b = h.encode();
        assert_eq!(Header::decode(&b), Ok(h));
        for at in [0, 9, 17, 33, 64, PAGE - 1] {
            let mut bad = b;
            bad[at] ^= 1;
            assert!(Header::decode(&bad).is_err(), "byte {at}");
        }
    }

    #[test]
    fn the_clean_flag_round_trips_and_unknown_flags_are_refused() {
        let h = Header {
            clean: true,
            ..header()
        };
        assert_eq!(Header::decode(&h.encode()), Ok(h));
        let mut b = header().encode();
        b[60] = 2;
        let sum = checksum(&b[..PAGE - 4]);
        b[PAGE - 4..].copy_from_slice(&sum.to_le_bytes());
        assert_eq!(Header::decode(&b), Err(Reject::Header("unknown flags")));
    }

    #[test]
    fn layout_puts_data_on_a_page_after_the_table() {
        let l = Layout::of(1500 * 3);
        assert_eq!(l.pages, 5);
        assert_eq!(l.data, 2 * PAGE as u64);
        assert_eq!(l.len, l.data + 5 * PAGE as u64);
        let big = Layout::of(600 * 1024);
        assert_eq!(big.data, PAGE as u64 + PAGE as u64 * 2);
    }

    #[test]
    fn hostile_headers_are_refused_not_trusted() {
        let mut h = header();
        h.width = u64::MAX / 2;
        assert!(Header::decode(&h.encode()).is_err());
        let mut b = header().encode();
        b[56..60].copy_from_slice(&(PAGE as u32).to_le_bytes());
        let sum = checksum(&b[..PAGE - 4]);
        b[PAGE - 4..].copy_from_slice(&sum.to_le_bytes());
        assert_eq!(Header::decode(&b), Err(Reject::Header("key length")));
    }
}
