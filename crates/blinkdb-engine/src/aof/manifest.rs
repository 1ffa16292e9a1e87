//! The Redis 7 AOF manifest: `<basename>.manifest` in the AOF directory.
//!
//! Byte layout (text, one file per line, '\n' terminated, at most 1024 bytes a line):
//!
//! ```text
//! file <name> seq <decimal> type <b|h|i>\n      keys may come in any order, any case;
//! # comment\n                                    extra key/value pairs are ignored
//! ```
//!
//! `<name>` is a bare file name; when it holds spaces, quotes or unprintable bytes Redis
//! writes it double-quoted with C escapes (`\n \r \t \a \b \\ \" \xHH`), and reads it with
//! `sdssplitargs` rules (double or single quotes). The base (if any) comes first, then
//! history entries (files retired by a rewrite, never loaded), then incr files in
//! strictly increasing seq order.

use std::path::{Path, PathBuf};

use super::error::{AofError, Result};
use super::storage::{write_all_at, Storage};
use crate::splitargs::{is_space, split_args};

/// Redis's MANIFEST_MAX_LINE.
const MANIFEST_MAX_LINE: usize = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Base,
    History,
    Incr,
}

impl FileKind {
    fn letter(self) -> char {
        match self {
            FileKind::Base => 'b',
            FileKind::History => 'h',
            FileKind::Incr => 'i',
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestEntry {
    pub name: String,
    pub seq: u64,
    pub kind: FileKind,
}

/// The parsed manifest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest {
    pub base: Option<ManifestEntry>,
    pub history: Vec<ManifestEntry>,
    pub incr: Vec<ManifestEntry>,
}

pub fn manifest_name(basename: &str) -> String {
    format!("{basename}.manifest")
}
fn temp_manifest_name(basename: &str) -> String {
    format!("temp-{basename}.manifest")
}
pub fn incr_name(basename: &str, seq: u64) -> String {
    format!("{basename}.{seq}.incr.aof")
}
pub fn base_name(basename: &str, seq: u64) -> String {
    format!("{basename}.{seq}.base.aof")
}
/// An RDB-format base's name (`aof-use-rdb-preamble yes`), as Redis 7 names it.
pub fn rdb_base_name(basename: &str, seq: u64) -> String {
    format!("{basename}.{seq}.base.rdb")
}

impl Manifest {
    /// Highest base seq ever used (current base, else history bases parsed from names).
    pub fn base_seq(&self) -> u64 {
        self.base.as_ref().map_or(0, |b| b.seq)
    }

    /// Parses manifest text with the same acceptance rules as Redis 7.0's
    /// `aofLoadManifestFromFile`.
    pub fn parse(text: &[u8], path: &Path) -> Result<Manifest> {
        let bad = |line: usize, reason: &'static str| AofError::Manifest {
            path: path.to_path_buf(),
            line,
            reason,
        };
        let mut m = Manifest::default();
        let mut max_incr_seq = 0u64;
        let mut linenum = 0;
        let mut rest = text;
        while !rest.is_empty() {
            linenum += 1;
            let (raw, complete) = match rest.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    let l = &rest[..i];
                    rest = &rest[i + 1..];
                    (l, true)
                }
                None => {
                    let l = rest;
                    rest = &[];
                    (l, false)
                }
            };
            if raw.first() == Some(&b'#') {
                continue;
            }
            if !complete || raw.len() + 1 > MANIFEST_MAX_LINE {
                return Err(bad(linenum, "The AOF manifest file contains too long line"));
            }
            let args = split_args(trim(raw))
                .ok_or_else(|| bad(linenum, "Invalid AOF manifest file format"))?;
            if args.len() < 6 || args.len() % 2 != 0 {
                return Err(bad(linenum, "Invalid AOF manifest file format"));
            }
            let (mut name, mut seq, mut kind) = (None, 0u64, None);
            for pair in args.chunks(2) {
                let key = String::from_utf8_lossy(&pair[0]).to_ascii_lowercase();
                match key.as_str() {
                    "file" => {
                        let n = String::from_utf8(pair[1].clone())
                            .map_err(|_| bad(linenum, "File name is not UTF-8"))?;
                        if n.contains('/') {
                            return Err(bad(linenum, "File can't be a path, just a filename"));
                        }
                        name = Some(n);
                    }
                    "seq" => seq = atoll(&pair[1]),
                    "type" => kind = pair[1].first().copied(),
                    _ => {}
                }
            }
            let (Some(name), true, Some(kind)) = (name, seq > 0, kind) else {
                return Err(bad(linenum, "Invalid AOF manifest file format"));
            };
            match kind {
                b'b' => {
                    if m.base.is_some() {
                        return Err(bad(linenum, "Found duplicate base file information"));
                    }
                    m.base = Some(ManifestEntry {
                        name,
                        seq,
                        kind: FileKind::Base,
                    });
                }
                b'h' => m.history.push(ManifestEntry {
                    name,
                    seq,
                    kind: FileKind::History,
                }),
                b'i' => {
                    if seq <= max_incr_seq {
                        return Err(bad(linenum, "Found a non-monotonic sequence number"));
                    }
                    max_incr_seq = seq;
                    m.incr.push(ManifestEntry {
                        name,
                        seq,
                        kind: FileKind::Incr,
                    });
                }
                _ => return Err(bad(linenum, "Unknown AOF file type")),
            }
        }
        if linenum == 0 {
            return Err(bad(0, "Found an empty AOF manifest"));
        }
        Ok(m)
    }

    /// The manifest text Redis would write for these entries.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for e in self.base.iter().chain(&self.history).chain(&self.incr) {
            out.push_str(&format!(
                "file {} seq {} type {}\n",
                repr_if_needed(&e.name),
                e.seq,
                e.kind.letter()
            ));
        }
        out
    }

    /// Atomically replaces the manifest: write temp, fdatasync, rename, fsync the directory.
    pub fn persist(&self, storage: &dyn Storage, dir: &Path, basename: &str) -> Result<()> {
        let tmp: PathBuf = dir.join(temp_manifest_name(basename));
        let dst: PathBuf = dir.join(manifest_name(basename));
        let text = self.render();
        let f = storage
            .create(&tmp)
            .map_err(|e| AofError::io("create", &tmp, e))?;
        write_all_at(&*f, text.as_bytes(), 0).map_err(|(_, e)| AofError::io("write", &tmp, e))?;
        f.sync_data()
            .map_err(|e| AofError::io("fdatasync", &tmp, e))?;
        drop(f);
        storage
            .rename(&tmp, &dst)
            .map_err(|e| AofError::io("rename", &dst, e))?;
        storage
            .sync_dir(dir)
            .map_err(|e| AofError::io("fsync dir", dir, e))
    }
}

fn trim(s: &[u8]) -> &[u8] {
    let is_ws = |b: &u8| matches!(b, b' ' | b'\t' | b'\r' | b'\n');
    let start = s.iter().position(|b| !is_ws(b)).unwrap_or(s.len());
    let end = s.iter().rposition(|b| !is_ws(b)).map_or(start, |i| i + 1);
    &s[start..end]
}

/// C `atoll`: optional sign, leading digits, stops at the first non-digit.
fn atoll(s: &[u8]) -> u64 {
    let digits = s.iter().take_while(|b| b.is_ascii_digit());
    digits.fold(0u64, |acc, &d| {
        acc.saturating_mul(10).saturating_add((d - b'0') as u64)
    })
}

/// Redis's `sdsneedsrepr` + `sdscatrepr`: quote a name only when it needs it.
fn repr_if_needed(name: &str) -> String {
    let needs = name.bytes().any(|b| {
        matches!(b, b'\\' | b'"' | b'\n' | b'\r' | b'\t' | 0x07 | 0x08)
            || !(0x20..0x7f).contains(&b)
            || is_space(b)
    });
    if !needs {
        return name.to_string();
    }
    let mut out = String::from("\"");
    for b in name.bytes() {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'"' => out.push_str("\\\""),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x07 => out.push_str("\\a"),
            0x08 => out.push_str("\\b"),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Manifest> {
        Manifest::parse(s.as_bytes(), Path::new("m"))
    }

    #[test]
    fn parses_redis_written_manifest_with_history() {
        let m = parse(
            "file appendonly.aof.2.base.rdb seq 2 type b\n\
             file appendonly.aof.1.incr.aof seq 1 type h\n\
             # a comment\n\
             file appendonly.aof.4.incr.aof seq 4 type i\n\
             FILE appendonly.aof.5.incr.aof TYPE i SEQ 5 extra x\n",
        )
        .unwrap();
        assert_eq!(m.base.as_ref().unwrap().name, "appendonly.aof.2.base.rdb");
        assert_eq!(m.history.len(), 1);
        assert_eq!(m.incr.iter().map(|e| e.seq).collect::<Vec<_>>(), [4, 5]);
    }

    #[test]
    fn quoted_names_round_trip() {
        let m = Manifest {
            base: None,
            history: vec![],
            incr: vec![ManifestEntry {
                name: "my aof\t\"x\"\u{1}.1.incr.aof".into(),
                seq: 1,
                kind: FileKind::Incr,
            }],
        };
        let text = m.render();
        assert!(text.starts_with("file \"my aof\\t\\\"x\\\"\\x01.1.incr.aof\" seq 1"));
        assert_eq!(parse(&text).unwrap(), m);
        let single = parse("file 'it\\'s' seq 1 type i\n").unwrap();
        assert_eq!(single.incr[0].name, "it's");
    }

    #[test]
    fn rejects_what_redis_rejects() {
        for bad in [
            "",
            "file a seq 1 type i",                        // no trailing newline
            "\n",                                         // empty line
            "file a seq 1\n",                             // too few fields
            "file a seq 0 type i\n",                      // seq 0
            "file dir/a seq 1 type i\n",                  // a path
            "file a seq 1 type x\n",                      // unknown type
            "file \"a seq 1 type i\n",                    // unbalanced quote
            "file a seq 2 type i\nfile b seq 2 type i\n", // non-monotonic
            "file a seq 1 type b\nfile b seq 2 type b\n", // two bases
        ] {
            assert!(parse(bad).is_err(), "accepted {bad:?}");
        }
    }
}
