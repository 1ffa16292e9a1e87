//! Whole RDB files (`dump.rdb`): the header, AUX fields, function
//! libraries, databases with their RESIZEDB hints, keys with their expiry
//! and LRU/LFU opcodes, EOF and the CRC-64 trailer.

use super::read::{read_entry, Loaded, Reader};
use super::write::{object_type, write_len, write_object, write_string};
use super::{
    kind, module_type_name, native_bloom, opcode, RdbError, CRC64, RDB_VERSION, RDB_VERSION_READ,
};
use crate::aof::BlobRef;
use crate::keyspace::access::{ClockSave, SavedClock};
use crate::keyspace::{InlineBytes, Value};
use crate::types::Limits;
use std::io::Write;
use std::path::{Path, PathBuf};

/// One key read from a file.
pub struct LoadedKey {
    pub db: usize,
    /// Inline up to 16 bytes, as the keyspace keeps it: no allocation per key.
    pub key: InlineBytes,
    pub value: Loaded,
    /// The value's type byte and where its bytes lie in the file (after the key).
    pub kind: u8,
    pub raw: std::ops::Range<usize>,
    /// Absolute expiry in Unix ms, 0 for none.
    pub expire_at: u64,
    /// The idle time (seconds) or LFU counter the file recorded, if any.
    pub idle: Option<u64>,
    pub freq: Option<u8>,
}

/// What a file held besides its keys.
#[derive(Debug, Default)]
pub struct FileContents {
    pub version: u16,
    pub aux: Vec<(Vec<u8>, Vec<u8>)>,
    /// Function library codes (`#!lua name=...` and the body).
    pub functions: Vec<Vec<u8>>,
    pub keys: u64,
    /// Keys left out because they had expired (as Redis does on a master).
    pub expired: u64,
    /// Empty collections left out, as Redis does.
    pub empty: u64,
}

/// The old FUNCTION opcode of the 7.0 release candidates: name, engine,
/// optional description, then the body; rebuilt as the code FUNCTION LOAD takes.
pub fn read_old_function(r: &mut Reader<'_>) -> Result<Vec<u8>, RdbError> {
    let name = r.string()?.into_owned();
    let engine = r.string()?.into_owned();
    if r.len()? != 0 {
        r.string()?;
    }
    let blob = r.string()?;
    let mut code = b"#!".to_vec();
    code.extend_from_slice(&engine);
    code.extend_from_slice(b" name=");
    code.extend_from_slice(&name);
    code.push(b'\n');
    code.extend_from_slice(&blob);
    Ok(code)
}

/// Reads a whole file image, checking its CRC-64 first (when the file has
/// one that is not zero and `check_crc`), so a damaged file delivers no key.
/// `now` is the time keys expire against (0: keep every key).
pub fn load_file(
    data: &[u8],
    limits: &Limits,
    databases: usize,
    check_crc: bool,
    now: u64,
    on_key: impl FnMut(LoadedKey) -> Result<(), RdbError>,
) -> Result<FileContents, RdbError> {
    load_file_sized(data, limits, databases, check_crc, now, |_, _| {}, on_key)
}

/// `load_file`, also giving each RESIZEDB hint as `on_resize(db, keys)`
/// (the count the file claims for the database that follows, unchecked),
/// so the caller can size its tables before the keys arrive.
pub fn load_file_sized(
    data: &[u8],
    limits: &Limits,
    databases: usize,
    check_crc: bool,
    now: u64,
    on_resize: impl FnMut(usize, u64),
    on_key: impl FnMut(LoadedKey) -> Result<(), RdbError>,
) -> Result<FileContents, RdbError> {
    let version = header(data)?;
    // Files since version 5 end in EOF then an 8-byte checksum (0: not computed).
    let body_end = if version >= 5 {
        if data.len() < 9 + 1 + 8 {
            return Err(RdbError::Corrupt("Unexpected EOF reading RDB file"));
        }
        let end = data.len() - 8;
        let stored = u64::from_le_bytes(data[end..].try_into().expect("8"));
        if check_crc && stored != 0 && CRC64.checksum(&data[..end]) != stored {
            return Err(checksum_failure(data, limits, databases));
        }
        end
    } else {
        data.len()
    };
    let input = Input::whole(&data[..body_end]);
    // A file cut short whose last 8 bytes read as a checksum of 0 ("not
    // computed") skips the check and ends inside a record: Redis says this.
    read_records(input, limits, databases, now, on_resize, on_key).map_err(|e| {
        if is_truncated(&e) {
            RdbError::Corrupt("Unexpected EOF reading RDB file")
        } else {
            e
        }
    })
}

/// Why a file image's checksum does not match, told as Redis tells it:
/// Redis reads records first and checks the checksum last, so a file cut
/// short fails with "Unexpected EOF reading RDB file". Found by a pass that
/// keeps no key. Damage inside the records stays a wrong checksum: Redis
/// checks values less deeply on load than this parser, and so, for most
/// damage, reaches its checksum without a record error.
fn checksum_failure(data: &[u8], limits: &Limits, databases: usize) -> RdbError {
    match read_records(
        Input::whole(data),
        limits,
        databases,
        0,
        |_, _| {},
        |_| Ok(()),
    ) {
        Err(e) if is_truncated(&e) => RdbError::Corrupt("Unexpected EOF reading RDB file"),
        _ => RdbError::Corrupt("Wrong RDB checksum"),
    }
}

/// A stream's next bytes (a replica's diskless load: the socket's bytes,
/// framed), given `wait`: whether to wait for them as long as it takes.
pub type More<'s> = &'s mut dyn FnMut(bool) -> Result<Next, RdbError>;

/// What a stream's source gives.
pub enum Next {
    Bytes(Vec<u8>),
    /// The end of the payload.
    End,
    /// Nothing came within a short while (only when not asked to wait).
    Idle,
}

/// `load_file_sized` over a stream read a piece at a time, never held whole:
/// each record is parsed once the bytes it needs are in. The CRC-64 can
/// only be checked at the end, so a damaged stream fails after some keys
/// went to `on_key`: the caller discards them (or never serves them).
pub fn load_stream(
    more: More<'_>,
    limits: &Limits,
    databases: usize,
    check_crc: bool,
    now: u64,
    on_resize: impl FnMut(usize, u64),
    on_key: impl FnMut(LoadedKey) -> Result<(), RdbError>,
) -> Result<FileContents, RdbError> {
    let input = Input {
        whole: None,
        buf: Vec::new(),
        start: 0,
        base: 0,
        more: Some(more),
        ended: false,
        digest: check_crc.then(|| CRC64.digest()),
    };
    read_records(input, limits, databases, now, on_resize, on_key)
}

/// The signature and version at the start of a file.
fn header(data: &[u8]) -> Result<u16, RdbError> {
    if data.len() < 9 || &data[..5] != b"REDIS" {
        return Err(RdbError::Corrupt(
            "wrong signature trying to load DB from file",
        ));
    }
    let version: u16 = std::str::from_utf8(&data[5..9])
        .ok()
        .and_then(|v| v.parse().ok())
        .ok_or(RdbError::Corrupt("invalid RDB version"))?;
    if version == 0 || version > RDB_VERSION_READ {
        return Err(RdbError::Unsupported(format!(
            "Can't handle RDB format version {version}"
        )));
    }
    Ok(version)
}

/// The bytes a load reads: a whole image (already checked), or a window
/// over a stream (the CRC-64 summed as records are consumed).
struct Input<'d> {
    whole: Option<&'d [u8]>,
    buf: Vec<u8>,
    /// Consumed bytes of the window.
    start: usize,
    /// The offset of the window's first byte in the file.
    base: usize,
    more: Option<More<'d>>,
    ended: bool,
    digest: Option<crc::Digest<'static, u64, crc::Table<16>>>,
}

impl<'d> Input<'d> {
    /// A whole file image in memory (its checksum checked by the caller).
    fn whole(data: &'d [u8]) -> Self {
        Input {
            whole: Some(data),
            buf: Vec::new(),
            start: 0,
            base: 0,
            more: None,
            ended: true,
            digest: None,
        }
    }

    fn window(&self) -> &[u8] {
        match self.whole {
            Some(d) => &d[self.start..],
            None => &self.buf[self.start..],
        }
    }

    /// The file offset of the window's next byte.
    fn pos(&self) -> usize {
        self.base + self.start
    }

    fn consume(&mut self, n: usize, summed: bool) {
        if summed {
            if let Some(d) = self.digest.as_mut() {
                let at = self.start;
                d.update(&self.buf[at..at + n]);
            }
        }
        self.start += n;
        // The consumed head goes once it is most of the buffer.
        if self.whole.is_none() && self.start >= 1 << 20 && self.start * 2 >= self.buf.len() {
            self.buf.drain(..self.start);
            self.base += self.start;
            self.start = 0;
        }
    }

    /// Reads on until the window holds at least twice what it did (so a
    /// record is parsed again O(1) times on average); false at the end.
    fn more(&mut self) -> Result<bool, RdbError> {
        // The window, not `buf`: a whole image leaves `buf` empty.
        let held = self.window().len();
        self.more_by(held.max(64 * 1024))
    }

    /// Waits for the next bytes, then reads on until `least` more bytes
    /// are in or the source goes idle (the rest of a stream that stalls, a
    /// master's link kept open after a bad mark, is parsed at once); false
    /// at the end.
    fn more_by(&mut self, least: usize) -> Result<bool, RdbError> {
        let Some(more) = self.more.as_mut() else {
            return Ok(false);
        };
        if self.ended {
            return Ok(false);
        }
        let want = self.buf.len() + least;
        let mut grew = false;
        while self.buf.len() < want {
            match more(!grew)? {
                Next::Bytes(chunk) => {
                    grew |= !chunk.is_empty();
                    self.buf.extend_from_slice(&chunk);
                }
                Next::End => {
                    self.ended = true;
                    break;
                }
                Next::Idle => break,
            }
        }
        Ok(grew || !self.ended)
    }

    /// At least `n` bytes in the window, or the stream ended first.
    fn need(&mut self, n: usize) -> Result<bool, RdbError> {
        while self.window().len() < n {
            if !self.more()? {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

fn is_truncated(e: &RdbError) -> bool {
    matches!(e, RdbError::Corrupt(m) if *m == "unexpected end of data")
}

/// What the reading carries from one record to the next.
struct State {
    contents: FileContents,
    db: usize,
    expire_at: i64,
    idle: Option<u64>,
    freq: Option<u8>,
    /// The `blinkdb-bf` field before a key: that key's exact filter.
    native: Option<Vec<u8>>,
}

enum Record {
    /// An opcode (or a key left out): nothing for the caller.
    Meta,
    Key(LoadedKey),
    Eof,
}

/// One whole record (opcode, or key and value) at the reader's start
/// (`at`: its file offset). A record cut short fails with the reader's
/// truncation error before changing the state, so it can be parsed again
/// once more bytes are in.
fn read_record(
    st: &mut State,
    r: &mut Reader<'_>,
    at: usize,
    limits: &Limits,
    databases: usize,
    now: u64,
    on_resize: &mut impl FnMut(usize, u64),
) -> Result<Record, RdbError> {
    let t = r.byte()?;
    match t {
        opcode::EXPIRETIME => {
            st.expire_at = r.u32_le()? as i64 * 1000;
            return Ok(Record::Meta);
        }
        opcode::EXPIRETIME_MS => {
            st.expire_at = r.millis()?;
            return Ok(Record::Meta);
        }
        // The next key's access clock (set after it is stored).
        opcode::FREQ => {
            st.freq = Some(r.byte()?);
            return Ok(Record::Meta);
        }
        opcode::IDLE => {
            st.idle = Some(r.len()?);
            return Ok(Record::Meta);
        }
        opcode::EOF => return Ok(Record::Eof),
        opcode::SELECTDB => {
            let n = r.len()?;
            if n >= databases as u64 {
                return Err(RdbError::Unsupported(format!(
                    "FATAL: Data file was created with a Redis server configured to handle more than {databases} databases"
                )));
            }
            st.db = n as usize;
            return Ok(Record::Meta);
        }
        opcode::RESIZEDB => {
            let keys = r.len()?;
            r.len()?;
            on_resize(st.db, keys);
            return Ok(Record::Meta);
        }
        opcode::AUX => {
            let k = r.string()?.into_owned();
            let v = r.string()?.into_owned();
            if k == native_bloom::AUX_NAME {
                st.native = Some(v);
            } else {
                st.contents.aux.push((k, v));
            }
            return Ok(Record::Meta);
        }
        opcode::SLOT_INFO => {
            // slot, its keys, its keys with a TTL: a sizing hint Redis itself
            // ignores outside cluster mode; BlinkDB sizes by RESIZEDB alone.
            for _ in 0..3 {
                r.len()?;
            }
            return Ok(Record::Meta);
        }
        opcode::MODULE_AUX => {
            // No module BlinkDB loads (RedisBloom's types included) keeps
            // auxiliary data: Redis refuses the file when no loaded module
            // owns such data, and so does BlinkDB, with Redis's words.
            let (name, _) = module_type_name(r.len()?);
            return Err(RdbError::Unsupported(format!(
                "The RDB file contains AUX module data I can't load: no matching module '{name}'"
            )));
        }
        opcode::FUNCTION2 => {
            let code = r.string()?.into_owned();
            st.contents.functions.push(code);
            return Ok(Record::Meta);
        }
        opcode::FUNCTION => {
            let code = read_old_function(r)?;
            st.contents.functions.push(code);
            return Ok(Record::Meta);
        }
        _ => {}
    }
    let key = InlineBytes::from_slice(&r.string()?);
    let value_start = at + r.pos();
    // (Clearing it again on a retry changes nothing.)
    if st.native.is_some() && t != kind::MODULE_2 {
        st.native = None;
    }
    let value = match read_entry(t, r, limits) {
        Ok(Loaded::Bloom(chain)) => match st.native.take().map(|v| native_bloom::decode(&v)) {
            Some(Some(dump)) => Loaded::NativeBloom(Box::new(dump), chain),
            Some(None) => {
                tracing::warn!("a malformed blinkdb-bf field: the key's RedisBloom value is used");
                Loaded::Bloom(chain)
            }
            None => Loaded::Bloom(chain),
        },
        // BlinkDB writes its filters into files as the AUX field plus
        // RedisBloom's value, never as its DUMP-only module type.
        Ok(Loaded::NativeDump(_)) => {
            return Err(RdbError::Unsupported(format!(
                "module type {} in a file (it only travels in RESTORE payloads)",
                super::module::NATIVE_TYPE
            )))
        }
        Ok(v) => v,
        Err(RdbError::EmptyKey) => {
            st.contents.empty += 1;
            st.expire_at = -1;
            (st.idle, st.freq) = (None, None);
            return Ok(Record::Meta);
        }
        // A value BlinkDB cannot hold: the file is refused, naming the key.
        Err(RdbError::Unsupported(why)) => {
            return Err(RdbError::Unsupported(format!(
                "key '{}' in DB {}: {why}",
                String::from_utf8_lossy(&key),
                st.db
            )))
        }
        Err(e) => return Err(e),
    };
    let expire_at = if st.expire_at < 0 {
        0
    } else {
        st.expire_at.max(1) as u64
    };
    st.expire_at = -1;
    let (idle, freq) = (st.idle.take(), st.freq.take());
    if expire_at != 0 && now != 0 && expire_at <= now {
        st.contents.expired += 1;
        return Ok(Record::Meta);
    }
    st.contents.keys += 1;
    Ok(Record::Key(LoadedKey {
        db: st.db,
        key,
        value,
        kind: t,
        raw: value_start..at + r.pos(),
        expire_at,
        idle,
        freq,
    }))
}

/// The one loop behind `load_file_sized` and `load_stream`.
fn read_records(
    mut input: Input<'_>,
    limits: &Limits,
    databases: usize,
    now: u64,
    mut on_resize: impl FnMut(usize, u64),
    mut on_key: impl FnMut(LoadedKey) -> Result<(), RdbError>,
) -> Result<FileContents, RdbError> {
    if !input.need(9)? {
        return Err(RdbError::Corrupt(
            "wrong signature trying to load DB from file",
        ));
    }
    let version = header(input.window())?;
    if input.whole.is_some() {
        // The whole image starts after its header.
        input.whole = input.whole.map(|d| &d[9..]);
        input.base = 9;
    } else {
        input.consume(9, true);
    }
    let mut st = State {
        contents: FileContents {
            version,
            ..FileContents::default()
        },
        db: 0,
        expire_at: -1,
        idle: None,
        freq: None,
        native: None,
    };
    loop {
        let at = input.pos();
        let (record, used) = {
            let mut r = Reader::new(input.window());
            let record = read_record(&mut st, &mut r, at, limits, databases, now, &mut on_resize);
            (record, r.pos())
        };
        match record {
            Ok(record) => {
                input.consume(used, true);
                match record {
                    Record::Meta => {}
                    Record::Key(k) => on_key(k)?,
                    Record::Eof => break,
                }
            }
            Err(e) if is_truncated(&e) && input.more()? => {}
            Err(e) => return Err(e),
        }
    }
    if input.whole.is_none() && version >= 5 {
        // A stream's checksum: of every byte before it.
        if !input.need(8)? {
            return Err(RdbError::Corrupt("Unexpected EOF reading RDB file"));
        }
        let stored = u64::from_le_bytes(input.window()[..8].try_into().expect("8"));
        let computed = input.digest.take().map(|d| d.finalize());
        input.consume(8, false);
        if let Some(sum) = computed {
            if stored != 0 && sum != stored {
                return Err(RdbError::Corrupt("Wrong RDB checksum"));
            }
        }
    }
    // (One byte is enough to tell: a stream's next piece is not waited for.)
    if !input.window().is_empty() || input.more_by(1)? {
        return Err(RdbError::Corrupt("data after the EOF opcode"));
    }
    Ok(st.contents)
}

/// A temp file removed when dropped unless `keep` took it: a save that
/// fails anywhere (an error returned early, a panic in the save thread)
/// leaves no `temp-*.rdb` behind, not only one that reached `abort`.
struct TempFile(Option<PathBuf>);

impl TempFile {
    fn path(&self) -> &Path {
        self.0.as_deref().unwrap_or(Path::new(""))
    }

    /// The file stays: renamed into place, or owned by the caller.
    fn keep(mut self) -> PathBuf {
        self.0.take().unwrap_or_default()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            match std::fs::remove_file(&p) {
                Ok(()) => tracing::info!("Removed temp file {} of a failed save", p.display()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => tracing::warn!("Could not remove temp file {}: {e}", p.display()),
            }
        }
    }
}

/// Where an RDB writer's bytes go.
enum Out {
    /// A file written as `tmp`, then fsynced and renamed over `path`
    /// (`tmp == path`: written in place, and never removed here).
    File {
        file: std::io::BufWriter<std::fs::File>,
        tmp: TempFile,
        path: PathBuf,
    },
    /// Any byte sink: a diskless full sync's stream to its replicas.
    Sink(Box<dyn Write + Send>),
}

impl Out {
    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match self {
            Out::File { file, .. } => file.write_all(bytes),
            Out::Sink(sink) => sink.write_all(bytes),
        }
    }
}

/// Writes an RDB as rdbSaveRio does: to a file (into a temp name created
/// next to the final one, then fsynced and renamed over it), or to any
/// `Write` sink (`to_sink`: the diskless full sync).
pub struct RdbFileWriter {
    out: Out,
    digest: crc::Digest<'static, u64, crc::Table<16>>,
    checksum: bool,
    compress: bool,
    buf: Vec<u8>,
    pub bytes: u64,
    /// What each key's access clock becomes in the file.
    clocks: ClockSave,
}

impl RdbFileWriter {
    /// Starts the file with its signature and AUX fields.
    pub fn create(
        path: &Path,
        aux: &[(&str, String)],
        compress: bool,
        checksum: bool,
    ) -> Result<Self, RdbError> {
        let dir = path.parent().unwrap_or(Path::new("."));
        let tmp = dir.join(format!("temp-{}.rdb", std::process::id()));
        Self::create_via(path, tmp, aux, compress, checksum)
    }

    /// `create` with the temp file named by the caller (a full sync's file
    /// must not share BGSAVE's temp name).
    pub fn create_via(
        path: &Path,
        tmp: PathBuf,
        aux: &[(&str, String)],
        compress: bool,
        checksum: bool,
    ) -> Result<Self, RdbError> {
        let file = std::fs::File::create(&tmp)?;
        // In place: the file is its owner's (the AOF's rewrite removes it).
        let tmp = if tmp == path {
            TempFile(None)
        } else {
            TempFile(Some(tmp))
        };
        let out = Out::File {
            file: std::io::BufWriter::with_capacity(1 << 20, file),
            tmp,
            path: path.to_path_buf(),
        };
        Self::start(out, aux, compress, checksum)
    }

    /// An RDB written to `sink` (no file, no fsync): `finish` writes the EOF
    /// opcode and checksum and flushes the sink.
    pub fn to_sink(
        sink: Box<dyn Write + Send>,
        aux: &[(&str, String)],
        compress: bool,
        checksum: bool,
    ) -> Result<Self, RdbError> {
        Self::start(Out::Sink(sink), aux, compress, checksum)
    }

    fn start(
        out: Out,
        aux: &[(&str, String)],
        compress: bool,
        checksum: bool,
    ) -> Result<Self, RdbError> {
        let mut w = RdbFileWriter {
            out,
            digest: CRC64.digest(),
            checksum,
            compress,
            buf: Vec::with_capacity(1 << 16),
            bytes: 0,
            clocks: ClockSave::NOTHING,
        };
        w.buf
            .extend_from_slice(format!("REDIS{RDB_VERSION:04}").as_bytes());
        for (k, v) in aux {
            w.buf.push(opcode::AUX);
            write_string(&mut w.buf, k.as_bytes(), compress);
            write_string(&mut w.buf, v.as_bytes(), compress);
        }
        w.flush_buf()?;
        Ok(w)
    }

    /// A file written in place at `path` (no temp name, no rename): the AOF
    /// rewrite's RDB base, whose temp name and switch are the AOF's.
    pub fn create_in_place(
        path: &Path,
        aux: &[(&str, String)],
        compress: bool,
        checksum: bool,
    ) -> Result<Self, RdbError> {
        Self::create_via(path, path.to_path_buf(), aux, compress, checksum)
    }

    fn flush_buf(&mut self) -> Result<(), RdbError> {
        if self.checksum {
            self.digest.update(&self.buf);
        }
        self.out.write_all(&self.buf)?;
        self.bytes += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }

    pub fn function(&mut self, code: &[u8]) -> Result<(), RdbError> {
        self.buf.push(opcode::FUNCTION2);
        write_string(&mut self.buf, code, self.compress);
        self.flush_buf()
    }

    /// SELECTDB then RESIZEDB with the database's key and expiry counts.
    pub fn select_db(&mut self, db: usize, keys: usize, expires: usize) -> Result<(), RdbError> {
        self.buf.push(opcode::SELECTDB);
        write_len(&mut self.buf, db as u64);
        self.buf.push(opcode::RESIZEDB);
        write_len(&mut self.buf, keys as u64);
        write_len(&mut self.buf, expires as u64);
        self.flush_buf()
    }

    /// SELECTDB alone (keys of a background save arrive in any order).
    pub fn select(&mut self, db: usize) -> Result<(), RdbError> {
        self.buf.push(opcode::SELECTDB);
        write_len(&mut self.buf, db as u64);
        Ok(())
    }

    /// Records the keys' access clocks as `clocks` says (see
    /// `AccessPolicy::save_mode`); by default the file records none.
    pub fn save_clocks(&mut self, clocks: ClockSave) {
        self.clocks = clocks;
    }

    /// One key: EXPIRETIME_MS if it has an expiry, IDLE or FREQ as the
    /// policy asks, its type, name and value.
    pub fn key(
        &mut self,
        key: &[u8],
        value: &Value,
        expire_at: u64,
        blob: &mut dyn FnMut(&BlobRef) -> Result<bytes::Bytes, RdbError>,
    ) -> Result<(), RdbError> {
        let t = object_type(value)?;
        if let Value::Bloom(filter, _) = value {
            if let Some(field) = native_bloom::Field::of(filter) {
                self.buf.push(opcode::AUX);
                write_string(&mut self.buf, native_bloom::AUX_NAME, false);
                write_len(&mut self.buf, field.byte_len());
                field.write(filter, |piece| {
                    self.buf.extend_from_slice(piece);
                    if self.buf.len() >= 1 << 16 {
                        self.flush_buf()?;
                    }
                    Ok(())
                })?;
            }
        }
        self.key_header(expire_at, value.clock().get());
        self.buf.push(t);
        write_string(&mut self.buf, key, self.compress);
        write_object(&mut self.buf, value, self.compress, blob)?;
        if self.buf.len() >= 1 << 16 {
            self.flush_buf()?;
        }
        Ok(())
    }

    /// What precedes a key's type byte: its expiry, then its LRU/LFU clock.
    fn key_header(&mut self, expire_at: u64, clock: u32) {
        if expire_at != 0 {
            self.buf.push(opcode::EXPIRETIME_MS);
            self.buf.extend_from_slice(&expire_at.to_le_bytes());
        }
        match self.clocks.record(clock) {
            SavedClock::Nothing => {}
            SavedClock::Idle(secs) => {
                self.buf.push(opcode::IDLE);
                write_len(&mut self.buf, secs);
            }
            SavedClock::Freq(f) => {
                self.buf.push(opcode::FREQ);
                self.buf.push(f);
            }
        }
    }

    /// A string key whose value is written uncompressed, whatever
    /// `rdbcompression` says (a large value the AOF keeps on disk: its
    /// payload is read back in place, see `aof::RewriteBase::blob_ref`).
    /// Returns the file offset of the value's first byte.
    pub fn key_raw_string(
        &mut self,
        key: &[u8],
        value: &[u8],
        expire_at: u64,
        clock: u32,
    ) -> Result<u64, RdbError> {
        self.key_header(expire_at, clock);
        self.buf.push(kind::STRING);
        write_string(&mut self.buf, key, self.compress);
        write_len(&mut self.buf, value.len() as u64);
        let offset = self.bytes + self.buf.len() as u64;
        self.flush_buf()?;
        if self.checksum {
            self.digest.update(value);
        }
        self.out.write_all(value)?;
        self.bytes += value.len() as u64;
        Ok(offset)
    }

    /// EOF, the checksum (0 when rdbchecksum is off), fsync, rename.
    pub fn finish(mut self) -> Result<u64, RdbError> {
        self.buf.push(opcode::EOF);
        self.flush_buf()?;
        let crc = if self.checksum {
            self.digest.clone().finalize()
        } else {
            0
        };
        self.out.write_all(&crc.to_le_bytes())?;
        self.bytes += 8;
        let (file, tmp, path) = match self.out {
            Out::Sink(mut sink) => {
                sink.flush()?;
                return Ok(self.bytes);
            }
            Out::File { file, tmp, path } => (file, tmp, path),
        };
        let file = file.into_inner().map_err(|e| RdbError::Io(e.to_string()))?;
        file.sync_all()?;
        drop(file);
        if tmp.0.is_none() {
            return Ok(self.bytes);
        }
        // On an error `tmp` is dropped, so removed: the old file stays.
        std::fs::rename(tmp.path(), &path)?;
        tmp.keep();
        if let Some(dir) = path.parent() {
            if let Ok(d) = std::fs::File::open(if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            }) {
                let _ = d.sync_all();
            }
        }
        Ok(self.bytes)
    }

    /// Drops the temp file (a failed save leaves the old file in place).
    /// A file written in place is left to its owner (the AOF removes it).
    /// A sink is just dropped.
    pub fn abort(self) {
        if let Out::File { file, tmp, .. } = self.out {
            drop(file);
            drop(tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer into a sink gives the same bytes as one into a file.
    #[test]
    fn sink_writes_what_a_file_gets() {
        #[derive(Clone, Default)]
        struct Shared(std::sync::Arc<parking_lot::Mutex<Vec<u8>>>);
        impl Write for Shared {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.lock().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dump.rdb");
        let sink = Shared::default();
        let aux = [("redis-ver", "7.0.15".to_string())];
        let mut to_file = RdbFileWriter::create(&path, &aux, true, true).unwrap();
        let mut to_sink = RdbFileWriter::to_sink(Box::new(sink.clone()), &aux, true, true).unwrap();
        let mut no_blob = |_: &BlobRef| -> Result<bytes::Bytes, RdbError> { unreachable!() };
        for w in [&mut to_file, &mut to_sink] {
            w.select_db(0, 2, 0).unwrap();
            w.key(b"a", &Value::str(&b"1"[..]), 0, &mut no_blob)
                .unwrap();
            w.key_raw_string(b"big", &[7u8; 100_000], 0, 0).unwrap();
        }
        let n = to_sink.finish().unwrap();
        assert_eq!(to_file.finish().unwrap(), n);
        let data = sink.0.lock().clone();
        assert_eq!(data.len() as u64, n);
        assert_eq!(data, std::fs::read(&path).unwrap());
        let mut keys = 0;
        load_file(&data, &Limits::default(), 16, true, 1, |_| {
            keys += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(keys, 2);
    }

    #[test]
    fn a_file_cut_where_zeros_read_as_no_checksum_is_a_short_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dump.rdb");
        let mut w = RdbFileWriter::create(&path, &[], true, true).unwrap();
        w.select_db(0, 1, 0).unwrap();
        let mut no_blob = |_: &BlobRef| -> Result<bytes::Bytes, RdbError> { unreachable!() };
        w.key(b"z", &Value::str(&[0u8; 8][..]), 0, &mut no_blob)
            .unwrap();
        w.finish().unwrap();
        let data = std::fs::read(&path).unwrap();
        // Without the EOF opcode and the checksum, the file ends in the
        // value's 8 zero bytes, which read as "no checksum".
        let cut = &data[..data.len() - 9];
        assert_eq!(cut[cut.len() - 8..], [0; 8]);
        let e = load_file(cut, &Limits::default(), 16, true, 1, |_| Ok(())).unwrap_err();
        assert_eq!(e, RdbError::Corrupt("Unexpected EOF reading RDB file"));
    }

    /// Versions 11 and 12 are read (their new opcodes too); 13 is refused
    /// with Redis's words; a value BlinkDB cannot hold names its key.
    #[test]
    fn versions_and_new_opcodes() {
        let file = |version: &str, body: &[u8]| {
            let mut data = format!("REDIS{version}").into_bytes();
            data.extend_from_slice(body);
            data.push(opcode::EOF);
            let crc = CRC64.checksum(&data);
            data.extend_from_slice(&crc.to_le_bytes());
            data
        };
        // SLOT_INFO (slot 7: 1 key, 0 expires), AUX slot-info, then a key.
        let body = b"\xf4\x07\x01\x00\xfa\x09slot-info\x057,1,0\x00\x01k\x01v";
        for v in ["0011", "0012"] {
            let mut keys = 0;
            let c = load_file(&file(v, body), &Limits::default(), 16, true, 1, |k| {
                assert_eq!(&k.key[..], b"k");
                keys += 1;
                Ok(())
            })
            .unwrap();
            assert_eq!((keys, c.version), (1, v.parse().unwrap()));
        }
        let e = load_file(&file("0013", body), &Limits::default(), 16, true, 1, |_| {
            Ok(())
        });
        assert_eq!(
            e.unwrap_err(),
            RdbError::Unsupported("Can't handle RDB format version 13".into())
        );
        // MODULE_AUX of a module BlinkDB does not have: Redis's refusal.
        let e = load_file(
            &file("0012", b"\xf7\x81\x00\x00\x00\x00\x00\x00\x00\x01\x02\x02"),
            &Limits::default(),
            16,
            true,
            1,
            |_| Ok(()),
        );
        assert!(matches!(e, Err(RdbError::Unsupported(m))
            if m.starts_with("The RDB file contains AUX module data I can't load: no matching module")));
        // A pre-Redis-5 module value: refused naming its key and DB.
        let e = load_file(
            &file("0012", b"\xfe\x02\x06\x03mod\x01"),
            &Limits::default(),
            16,
            true,
            1,
            |_| Ok(()),
        );
        assert!(matches!(e, Err(RdbError::Unsupported(m)) if m.starts_with("key 'mod' in DB 2: ")));
    }

    #[test]
    fn file_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dump.rdb");
        let mut w =
            RdbFileWriter::create(&path, &[("redis-ver", "7.0.15".into())], true, true).unwrap();
        w.function(b"#!lua name=lib\nredis.register_function('f', function() return 1 end)")
            .unwrap();
        w.select_db(3, 2, 1).unwrap();
        let mut no_blob = |_: &BlobRef| -> Result<bytes::Bytes, RdbError> { unreachable!() };
        w.key(b"a", &Value::str(&b"1"[..]), 0, &mut no_blob)
            .unwrap();
        w.key(
            b"b",
            &Value::str(&b"x"[..]),
            4_000_000_000_000,
            &mut no_blob,
        )
        .unwrap();
        w.finish().unwrap();
        let data = std::fs::read(&path).unwrap();
        let mut keys = Vec::new();
        let mut hints = Vec::new();
        let c = load_file_sized(
            &data,
            &Limits::default(),
            16,
            true,
            1,
            |db, n| hints.push((db, n)),
            |k| {
                keys.push((k.db, k.key, k.value, k.expire_at));
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(hints, [(3, 2)]);
        assert_eq!(&keys[0].1[..], b"a");
        assert_eq!(c.functions.len(), 1);
        assert_eq!(c.aux[0].0, b"redis-ver");
        assert_eq!(keys.len(), 2);
        assert_eq!(keys[1].0, 3);
        assert_eq!(keys[1].3, 4_000_000_000_000);
        let mut bad = data.clone();
        bad[20] ^= 1;
        assert!(load_file(&bad, &Limits::default(), 16, true, 1, |_| Ok(())).is_err());
        assert!(load_file(
            &data[..data.len() - 3],
            &Limits::default(),
            16,
            true,
            1,
            |_| Ok(())
        )
        .is_err());
        // The same bytes as a stream, in pieces of every size: the same keys.
        // `bytes` as a stream in pieces of `piece` bytes, default limits.
        fn in_pieces(
            bytes: &[u8],
            piece: usize,
            check_crc: bool,
            on_key: impl FnMut(LoadedKey) -> Result<(), RdbError>,
        ) -> Result<FileContents, RdbError> {
            let mut chunks = bytes.chunks(piece).map(|c| c.to_vec());
            let mut more = |_| Ok(chunks.next().map_or(Next::End, Next::Bytes));
            load_stream(
                &mut more,
                &Limits::default(),
                16,
                check_crc,
                1,
                |_, _| {},
                on_key,
            )
        }
        for piece in [1, 7, 64, data.len()] {
            let mut streamed = Vec::new();
            let c = in_pieces(&data, piece, true, |k| {
                streamed.push((k.db, k.key, k.expire_at, k.raw));
                Ok(())
            })
            .unwrap();
            assert_eq!(c.functions.len(), 1);
            assert_eq!(streamed.len(), 2);
            assert_eq!(&streamed[1].1[..], b"b");
            assert_eq!(streamed[1].2, 4_000_000_000_000);
        }
        let stream = |bytes: &[u8]| in_pieces(bytes, 5, true, |_| Ok(()));
        // Cut anywhere, damaged, or followed by more: refused.
        for cut in 0..data.len() {
            assert!(stream(&data[..cut]).is_err(), "cut at {cut}");
        }
        assert!(stream(&bad).is_err());
        // The last value's byte (before EOF and the CRC): only the checksum tells.
        let mut flipped = data.clone();
        let at = data.len() - 10;
        assert_eq!(flipped[at], b'x');
        flipped[at] = b'y';
        assert!(matches!(
            stream(&flipped),
            Err(RdbError::Corrupt("Wrong RDB checksum"))
        ));
        let mut unchecked = Vec::new();
        in_pieces(&flipped, 3, false, |k| {
            unchecked.push(k.key);
            Ok(())
        })
        .unwrap();
        assert_eq!(unchecked.len(), 2);
        let mut longer = data.clone();
        longer.push(0);
        assert!(stream(&longer).is_err());
        // A source's failure (a dropped link) is the load's.
        let mut n = 0;
        let mut failing = |_| {
            n += 1;
            if n > 2 {
                Err(RdbError::Io("link lost".into()))
            } else {
                Ok(Next::Bytes(data[(n - 1) * 5..n * 5].to_vec()))
            }
        };
        assert!(matches!(
            load_stream(
                &mut failing,
                &Limits::default(),
                16,
                true,
                1,
                |_, _| {},
                |_| Ok(())
            ),
            Err(RdbError::Io(_))
        ));
    }
}
