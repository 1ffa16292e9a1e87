//! The probabilistic structures of RedisBloom besides Bloom filters (issue
//! 45): one variant of `Sketch` each, kept in a key as `Value::Sketch`.
//! Each structure's module holds its algorithm (RedisBloom-identical, so the
//! same commands give the same answers and bytes) and its RDB module value;
//! a match over `Sketch` here has one arm per structure and nothing else.
//!
//! A sketch is a value like a collection: shared by `Arc` (COPY, the AOF
//! rewrite's snapshot) and copied on its next change (`Arc::make_mut`); its
//! commands are logged as sent (their effect is deterministic), and the
//! rewrite writes its RDB module value (RDB base) or the records below (RESP
//! base). Each also gets a file of its own, which a restart binds instead of
//! replaying its records (`sketch_files.rs`): a count-min sketch's counters
//! are mapped from it, the others are decoded from their `file_body`.
//!
//! Adding a structure touches, besides its own module:
//! 1. here: the variant, its `mod` line, and one arm in each match below
//!    (`type_name`, `module_type`, `write_rdb`, `read_rdb`, `heap_bytes`,
//!    `rewrite_records`), plus its `as_*` accessors through `SketchKind`;
//! 2. `lib.rs`: its types in the `sketch` namespace;
//! 3. the server: `commands/sketch/<name>.rs` (its commands and table
//!    entries) and its line in `commands/sketch/mod.rs` and in
//!    `commands/table.rs`'s FAMILIES.
//!
//! Everything else (TYPE, OBJECT ENCODING, MEMORY USAGE, DUMP/RESTORE,
//! MIGRATE, dump.rdb, replication, AOF rewrite, COPY/RENAME/MOVE, DEBUG
//! DIGEST) goes through `Value::Sketch` and these methods.

pub mod body;
pub mod cells;
pub mod cms;
pub mod cuckoo;
pub mod dirty;
pub mod file;
pub mod mapped;
pub mod murmur2;
pub mod tdigest;
pub mod topk;

use crate::rdb::{RdbError, Reader};

/// One probabilistic structure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sketch {
    Cuckoo(cuckoo::CuckooFilter),
    CountMin(cms::CountMin),
    TopK(topk::TopK),
    TDigest(tdigest::TDigest),
}

/// A structure `Sketch` holds: typed access for the commands.
pub trait SketchKind: Sized + 'static {
    fn of(s: &Sketch) -> Option<&Self>;
    fn of_mut(s: &mut Sketch) -> Option<&mut Self>;
    fn wrap(self) -> Sketch;
}

impl SketchKind for cuckoo::CuckooFilter {
    fn of(s: &Sketch) -> Option<&Self> {
        match s {
            Sketch::Cuckoo(c) => Some(c),
            _ => None,
        }
    }
    fn of_mut(s: &mut Sketch) -> Option<&mut Self> {
        match s {
            Sketch::Cuckoo(c) => Some(c),
            _ => None,
        }
    }
    fn wrap(self) -> Sketch {
        Sketch::Cuckoo(self)
    }
}

impl SketchKind for cms::CountMin {
    fn of(s: &Sketch) -> Option<&Self> {
        match s {
            Sketch::CountMin(c) => Some(c),
            _ => None,
        }
    }
    fn of_mut(s: &mut Sketch) -> Option<&mut Self> {
        match s {
            Sketch::CountMin(c) => Some(c),
            _ => None,
        }
    }
    fn wrap(self) -> Sketch {
        Sketch::CountMin(self)
    }
}

impl SketchKind for topk::TopK {
    fn of(s: &Sketch) -> Option<&Self> {
        match s {
            Sketch::TopK(t) => Some(t),
            _ => None,
        }
    }
    fn of_mut(s: &mut Sketch) -> Option<&mut Self> {
        match s {
            Sketch::TopK(t) => Some(t),
            _ => None,
        }
    }
    fn wrap(self) -> Sketch {
        Sketch::TopK(self)
    }
}

impl SketchKind for tdigest::TDigest {
    fn of(s: &Sketch) -> Option<&Self> {
        match s {
            Sketch::TDigest(t) => Some(t),
            _ => None,
        }
    }
    fn of_mut(s: &mut Sketch) -> Option<&mut Self> {
        match s {
            Sketch::TDigest(t) => Some(t),
            _ => None,
        }
    }
    fn wrap(self) -> Sketch {
        Sketch::TDigest(self)
    }
}

impl Sketch {
    /// TYPE's answer: RedisBloom's module type name.
    pub fn type_name(&self) -> &'static str {
        self.module_type().0
    }

    /// The RDB module type and the encoding version written.
    pub fn module_type(&self) -> (&'static str, u64) {
        match self {
            Sketch::Cuckoo(_) => (cuckoo::dump::TYPE_NAME, cuckoo::dump::ENCVER),
            Sketch::CountMin(_) => (cms::TYPE_NAME, cms::ENCVER),
            Sketch::TopK(_) => (topk::TYPE_NAME, topk::ENCVER),
            Sketch::TDigest(_) => (tdigest::payload::TYPE_NAME, tdigest::payload::ENCVER),
        }
    }

    /// The module value's fields (after the type id, before EOF).
    pub fn write_rdb(&self, out: &mut Vec<u8>, compress: bool) {
        match self {
            Sketch::Cuckoo(c) => c.write_rdb(out, compress),
            Sketch::CountMin(c) => c.write_rdb(out, compress),
            Sketch::TopK(t) => t.write_rdb(out, compress),
            Sketch::TDigest(t) => tdigest::payload::write(t, out),
        }
    }

    /// Reads the fields of module type `name`; None when no sketch has
    /// that name (another module type).
    pub fn read_rdb(name: &str, encver: u64, r: &mut Reader<'_>) -> Option<Result<Self, RdbError>> {
        Some(match name {
            cuckoo::dump::TYPE_NAME => {
                cuckoo::CuckooFilter::read_rdb(r, encver).map(Sketch::Cuckoo)
            }
            cms::TYPE_NAME => cms::CountMin::read_rdb(r, encver).map(Sketch::CountMin),
            topk::TYPE_NAME => topk::TopK::read_rdb(r, encver).map(Sketch::TopK),
            tdigest::payload::TYPE_NAME => tdigest::payload::read(r, encver).map(Sketch::TDigest),
            _ => return None,
        })
    }

    /// Heap bytes held besides the `Sketch` itself (MEMORY USAGE).
    pub fn heap_bytes(&self) -> usize {
        match self {
            Sketch::Cuckoo(c) => c.heap_bytes(),
            Sketch::CountMin(c) => c.heap_bytes(),
            Sketch::TopK(t) => t.heap_bytes(),
            Sketch::TDigest(t) => t.heap_bytes(),
        }
    }

    /// The commands that rebuild the structure in a RESP AOF base, as
    /// RedisBloom's aof_rewrite callbacks emit them (so redis-server with
    /// RedisBloom loads the base too).
    pub fn rewrite_records(&self, key: &[u8], emit: &mut dyn FnMut(&[&[u8]])) {
        match self {
            Sketch::Cuckoo(c) => c.rewrite_records(key, emit),
            // RedisBloom's callback for these is RMUtil_DefaultAofRewrite:
            // RESTORE of the module value, which redis-server loads too.
            Sketch::CountMin(_) | Sketch::TopK(_) | Sketch::TDigest(_) => {
                restore_record(self, key, emit)
            }
        }
    }

    /// Whether RedisBloom's rdb_save changes the live value before writing
    /// it (see `settle_for_save`).
    pub fn unsettled(&self) -> bool {
        match self {
            Sketch::Cuckoo(_) | Sketch::CountMin(_) | Sketch::TopK(_) => false,
            Sketch::TDigest(t) => t.unmerged_nodes() > 0,
        }
    }

    /// What RedisBloom's rdb_save does to the live value first: a t-digest
    /// compresses its buffer. DUMP runs it on the key in place, as
    /// RedisBloom's DUMP does (later answers depend on when a digest was
    /// compressed); snapshots write a settled copy and leave the key alone,
    /// as a forked child's save does.
    pub fn settle_for_save(&mut self) {
        match self {
            Sketch::Cuckoo(_) | Sketch::CountMin(_) | Sketch::TopK(_) => {}
            Sketch::TDigest(t) => {
                let _ = t.compress();
            }
        }
    }
}

/// Sketch files (docs/sketch-file-format.md): the kind a file names and the
/// body the others than count-min (whose counters are the body) encode.
impl Sketch {
    pub fn file_kind(&self) -> u32 {
        match self {
            Sketch::Cuckoo(_) => file::KIND_CUCKOO,
            Sketch::CountMin(_) => file::KIND_COUNT_MIN,
            Sketch::TopK(_) => file::KIND_TOP_K,
            Sketch::TDigest(_) => file::KIND_TDIGEST,
        }
    }

    /// The encoded body (nothing for a count-min sketch).
    pub fn file_body(&self, out: &mut Vec<u8>) {
        match self {
            Sketch::Cuckoo(c) => c.file_body(out),
            Sketch::CountMin(_) => {}
            Sketch::TopK(t) => t.file_body(out),
            Sketch::TDigest(t) => t.file_body(out),
        }
    }

    /// The body's length in bytes (a count-min sketch's counters').
    pub fn file_len(&self) -> usize {
        match self {
            Sketch::Cuckoo(c) => c.file_len(),
            Sketch::CountMin(c) => c.cells().len() * 4,
            Sketch::TopK(t) => t.file_len(),
            Sketch::TDigest(t) => t.file_len(),
        }
    }

    /// The body's pages changed since its file got them (every write marks
    /// the pages of the bytes it changed; a t-digest marks them all).
    pub fn file_dirty(&self) -> &dirty::Dirty {
        match self {
            Sketch::Cuckoo(c) => c.file_dirty(),
            Sketch::CountMin(c) => c.cells().dirty(),
            Sketch::TopK(t) => t.file_dirty(),
            Sketch::TDigest(t) => &t.pages,
        }
    }

    /// Pages `pages` (ascending) of the body as its file holds them, each
    /// zero-padded past the body's end, given to `out` one at a time: the
    /// one way a checkpoint gets the bytes it writes. Only a t-digest
    /// (a few pages, all changed by any write) is encoded whole for it.
    pub fn file_pages(
        &self,
        pages: &[usize],
        out: &mut dyn FnMut(usize, &[u8; cells::PAGE]) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let mut buf = [0u8; cells::PAGE];
        match self {
            Sketch::Cuckoo(c) => c.file_pages(pages, out),
            Sketch::TopK(t) => t.file_pages(pages, out),
            Sketch::CountMin(c) => pages.iter().try_for_each(|&p| {
                c.cells().page_bytes(p, &mut buf);
                out(p, &buf)
            }),
            Sketch::TDigest(t) => {
                let mut body = Vec::new();
                t.file_body(&mut body);
                pages.iter().try_for_each(|&p| {
                    buf.fill(0);
                    body::copy_part(&mut buf, p * cells::PAGE, 0, &body);
                    out(p, &buf)
                })
            }
        }
    }

    /// The bytes a new file gives a body of `len` bytes. A cuckoo filter's
    /// body changes size only when a sub-filter is added: a new file then.
    /// A top-k's changes with its heap's items: a quarter more spares most
    /// new files. A t-digest's is bounded by its compression: that bound.
    pub fn file_capacity(&self, len: usize) -> usize {
        match self {
            Sketch::Cuckoo(_) | Sketch::CountMin(_) => len,
            Sketch::TopK(_) => len + len / 4,
            Sketch::TDigest(t) => t.file_capacity().max(len),
        }
    }

    /// A structure from the private mapping of a file's body of `kind` (an
    /// encoded kind), its first `len` bytes: a cuckoo filter's slots and a
    /// top-k's buckets stay in the mapping (bound, not read); a t-digest is
    /// decoded (its body is a few pages).
    pub fn from_file_map(
        kind: u32,
        map: &std::sync::Arc<memmap2::MmapMut>,
        len: usize,
    ) -> body::Result<Sketch> {
        match kind {
            file::KIND_CUCKOO => cuckoo::CuckooFilter::from_file_map(map, len).map(Sketch::Cuckoo),
            file::KIND_TOP_K => topk::TopK::from_file_map(map, len).map(Sketch::TopK),
            _ => Sketch::from_file_body(kind, &map[..len]),
        }
    }

    /// Whether a file's body of `kind` is mapped at start (its pages then
    /// need no check when the file is clean), not read whole.
    pub fn file_mapped(kind: u32) -> bool {
        matches!(
            kind,
            file::KIND_COUNT_MIN | file::KIND_CUCKOO | file::KIND_TOP_K
        )
    }

    /// A structure from a file's body of `kind` (an encoded kind).
    pub fn from_file_body(kind: u32, bytes: &[u8]) -> body::Result<Sketch> {
        match kind {
            file::KIND_CUCKOO => cuckoo::CuckooFilter::from_file_body(bytes).map(Sketch::Cuckoo),
            file::KIND_TOP_K => topk::TopK::from_file_body(bytes).map(Sketch::TopK),
            file::KIND_TDIGEST => tdigest::TDigest::from_file_body(bytes).map(Sketch::TDigest),
            _ => Err("not an encoded body"),
        }
    }
}

impl cuckoo::CuckooFilter {
    /// CFAofRewrite: the header at position 1, then every chunk with the
    /// position after it.
    fn rewrite_records(&self, key: &[u8], emit: &mut dyn FnMut(&[&[u8]])) {
        let header = cuckoo::Header::of(self).to_bytes();
        emit(&[b"CF.LOADCHUNK", key, b"1", &header]);
        let mut pos = 1;
        while let Some((next, chunk)) = self.chunk_at(pos) {
            pos = next;
            emit(&[
                b"CF.LOADCHUNK",
                key,
                itoa::Buffer::new().format(pos).as_bytes(),
                chunk,
            ]);
        }
    }
}

/// `RESTORE key 0 <payload>`: RMUtil_DefaultAofRewrite's record (a DUMP of the
/// value), for the structures RedisBloom gives no command-level rewrite.
fn restore_record(sketch: &Sketch, key: &[u8], emit: &mut dyn FnMut(&[&[u8]])) {
    let payload = crate::rdb::sketch_payload(sketch);
    emit(&[b"RESTORE", key, b"0", &payload]);
}

#[cfg(test)]
mod file_body_tests {
    use super::*;

    fn samples() -> Vec<Sketch> {
        let mut cf = cuckoo::CuckooFilter::new(16, 2, 20, 2, 1 << 20).unwrap();
        for i in 0..200u32 {
            cf.insert(cuckoo::hash_item(&i.to_le_bytes()), false, 1 << 20);
        }
        let mut tk = topk::TopK::new(3, 8, 3, 0.9, 1 << 20, 7).unwrap();
        for i in 0..300u32 {
            tk.add(format!("i{}", i % 17).as_bytes(), 1);
        }
        tk.add(b"nul\0inside", 50);
        let mut td = tdigest::TDigest::new(20.0, 1 << 20).unwrap();
        for i in 0..1000 {
            td.add((i * 37 % 101) as f64, 1).unwrap();
        }
        vec![Sketch::Cuckoo(cf), Sketch::TopK(tk), Sketch::TDigest(td)]
    }

    #[test]
    fn bodies_round_trip_exactly() {
        for s in samples() {
            let mut body = Vec::new();
            s.file_body(&mut body);
            assert!(body.len() <= s.file_capacity(body.len()));
            let back = Sketch::from_file_body(s.file_kind(), &body).unwrap();
            assert_eq!(back, s);
            // The same state encodes to the same bytes (unchanged pages stay).
            let mut again = Vec::new();
            back.file_body(&mut again);
            assert_eq!(again, body);
        }
    }

    /// Every page `file_pages` gives is `file_body`'s, zero-padded.
    fn assert_pages_are_the_body(s: &Sketch) {
        let mut body = Vec::new();
        s.file_body(&mut body);
        assert_eq!(body.len(), s.file_len());
        let pages: Vec<usize> = (0..body.len().div_ceil(cells::PAGE) + 1).collect();
        let mut got = Vec::new();
        s.file_pages(&pages, &mut |p, page| {
            assert_eq!(p, got.len() / cells::PAGE);
            got.extend_from_slice(page);
            Ok(())
        })
        .unwrap();
        assert!(got[body.len()..].iter().all(|b| *b == 0), "zero-padded");
        assert!(got[..body.len()] == body[..], "pages differ from the body");
    }

    #[test]
    fn pages_are_the_body_without_encoding_it() {
        for s in samples() {
            assert_pages_are_the_body(&s);
        }
    }

    /// A file image that gets only the marked pages, as checkpoints write
    /// them, stays equal to the whole body through every kind of write:
    /// the marks miss no changed byte.
    #[test]
    fn marked_pages_keep_a_file_equal_to_the_body() {
        fn image(s: &Sketch, file: &mut Vec<u8>, id: u64) {
            let pages = s
                .file_len()
                .div_ceil(cells::PAGE)
                .max(file.len() / cells::PAGE);
            file.resize(pages * cells::PAGE, 0);
            let marked = s.file_dirty().take(id, pages);
            s.file_pages(&marked, &mut |p, page| {
                file[p * cells::PAGE..(p + 1) * cells::PAGE].copy_from_slice(page);
                Ok(())
            })
            .unwrap();
            let mut body = Vec::new();
            s.file_body(&mut body);
            assert!(
                file[..body.len()] == body[..],
                "a changed page was not marked"
            );
        }
        // A cuckoo filter of 4 sub-filters (growth), kick-outs, deletes and
        // the compaction they start, CF.COMPACT, and LOADCHUNK.
        let mut cf = cuckoo::CuckooFilter::new(2048, 2, 50, 2, 1 << 24).unwrap();
        let mut file = Vec::new();
        for round in 0..40u32 {
            for i in 0..400u32 {
                cf.insert(
                    cuckoo::hash_item(&(round * 400 + i).to_le_bytes()),
                    false,
                    1 << 24,
                );
            }
            for i in (0..round * 400).step_by(7) {
                cf.delete(cuckoo::hash_item(&i.to_le_bytes()));
            }
            if round == 30 {
                cf.compact(true);
            }
            if round == 35 {
                let (pos, chunk) = cf.chunk_at(1).unwrap();
                let chunk = chunk.to_vec();
                assert!(cf.load_chunk(pos, &chunk));
            }
            // The structure moves into the Sketch and back, keeping its marks
            // (a clone would not: it is written whole).
            let s = Sketch::Cuckoo(cf);
            image(&s, &mut file, 1);
            let Sketch::Cuckoo(back) = s else {
                unreachable!()
            };
            cf = back;
        }
        assert!(cf.num_filters() > 1, "the filter grew");
        // Top-k whose heaps churn (items of varying lengths, so the body
        // grows and shrinks), with decay: one whose heap shares a page with
        // buckets, one whose heap has pages of its own.
        for (k, width, depth, long) in [(20, 300, 4, 40), (100, 8, 7, 90)] {
            let mut tk = topk::TopK::new(k, width, depth, 0.9, 1 << 24, 3).unwrap();
            let mut file = Vec::new();
            for round in 0..60u32 {
                for i in 0..200u32 {
                    let item =
                        "x".repeat(((i * 7 + round) % long) as usize) + &(i % 131).to_string();
                    tk.add(item.as_bytes(), 1 + i % 3);
                }
                let s = Sketch::TopK(tk);
                image(&s, &mut file, 2);
                let Sketch::TopK(back) = s else {
                    unreachable!()
                };
                tk = back;
            }
        }
        // A t-digest through compressions and a reset.
        let mut td = tdigest::TDigest::new(50.0, 1 << 24).unwrap();
        let mut file = Vec::new();
        for round in 0..30u32 {
            for i in 0..100 {
                td.add((i * 31 % 97 + round) as f64, 1).unwrap();
            }
            if round == 20 {
                td.reset();
            }
            let s = Sketch::TDigest(td);
            image(&s, &mut file, 3);
            let Sketch::TDigest(back) = s else {
                unreachable!()
            };
            td = back;
        }
    }

    #[test]
    fn truncated_or_extended_bodies_are_refused() {
        for s in samples() {
            let mut body = Vec::new();
            s.file_body(&mut body);
            for cut in [0, 1, 7, body.len() / 2, body.len() - 1] {
                assert!(Sketch::from_file_body(s.file_kind(), &body[..cut]).is_err());
            }
            body.push(0);
            assert!(Sketch::from_file_body(s.file_kind(), &body).is_err());
        }
    }

    #[test]
    fn hostile_counts_allocate_nothing() {
        // A cuckoo header claiming 2^40 sub-filters, a top-k of 2^32 - 1 squared
        // buckets, a t-digest of a huge compression: errors, not allocations.
        let mut cf = cuckoo::Header::of(&cuckoo::CuckooFilter::new(16, 2, 20, 2, 1 << 20).unwrap());
        cf.num_filters = 1 << 40;
        assert!(Sketch::from_file_body(file::KIND_CUCKOO, &cf.to_bytes()).is_err());
        let mut tk = Vec::new();
        for v in [1u32, u32::MAX, u32::MAX] {
            body::put_u32(&mut tk, v);
        }
        body::put_f64(&mut tk, 0.5);
        body::put_u64(&mut tk, 0);
        assert!(Sketch::from_file_body(file::KIND_TOP_K, &tk).is_err());
        let mut td = Vec::new();
        body::put_f64(&mut td, 1e18);
        assert!(Sketch::from_file_body(file::KIND_TDIGEST, &td).is_err());
    }
}
