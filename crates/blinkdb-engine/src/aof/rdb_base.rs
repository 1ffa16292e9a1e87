//! An RDB-format base file (Redis 7's `aof-use-rdb-preamble yes`, its default:
//! `appendonly.aof.<seq>.base.rdb`): replayed as the commands that rebuild it.
//! Each key becomes `RESTORE key <abs-ms> <its RDB value as a DUMP payload>
//! REPLACE ABSTTL [IDLETIME s | FREQ f]` (the value bytes are the file's, so
//! BlinkDB's RESTORE decodes them exactly as a file load would), each change of
//! database a `SELECT`, each library `FUNCTION LOAD REPLACE`. The file's CRC-64
//! is checked, and every value decoded once, before the first command is given;
//! keys already expired are kept, as Redis keeps them in a preamble.

use bytes::Bytes;

use super::error::{AofError, Result};
use super::load::{Arg, LoadedCommand};
use super::storage::LogFile;
use super::types::{FileId, Lsn};
use crate::rdb;
use crate::types::Limits;

/// Reads the whole base at once (it is a snapshot, read once at start).
fn read_all(f: &dyn LogFile, len: u64, name: &str) -> Result<Vec<u8>> {
    let mut data = vec![0u8; len as usize];
    let mut at = 0usize;
    while at < data.len() {
        let n = f
            .read_at(&mut data[at..], at as u64)
            .map_err(|e| AofError::Corrupt {
                file: name.to_string(),
                offset: at as u64,
                reason: format!("read: {e}"),
            })?;
        if n == 0 {
            break;
        }
        at += n;
    }
    data.truncate(at);
    Ok(data)
}

fn inline(parts: Vec<Vec<u8>>) -> Vec<Arg> {
    parts
        .into_iter()
        .map(|p| Arg::Inline(Bytes::from(p)))
        .collect()
}

struct Key {
    db: usize,
    key: Vec<u8>,
    kind: u8,
    raw: std::ops::Range<usize>,
    expire_at: u64,
    idle: Option<u64>,
    freq: Option<u8>,
}

/// Replays the RDB base `f`; returns the number of commands given.
pub(super) fn replay(
    f: &dyn LogFile,
    len: u64,
    file: FileId,
    lsn: Lsn,
    name: &str,
    on_command: &mut dyn FnMut(LoadedCommand) -> Result<()>,
) -> Result<u64> {
    let data = read_all(f, len, name)?;
    let corrupt = |e: rdb::RdbError| AofError::Corrupt {
        file: name.to_string(),
        offset: 0,
        reason: format!("RDB base: {e}"),
    };
    // Every value decodes before the first command is given: a damaged base
    // loads nothing. Only the positions are kept (the decoded value is dropped).
    let mut keys: Vec<Key> = Vec::new();
    let contents = rdb::load_file(&data, &Limits::default(), usize::MAX, true, 0, |k| {
        keys.push(Key {
            db: k.db,
            key: k.key.into_vec(),
            kind: k.kind,
            raw: k.raw,
            expire_at: k.expire_at,
            idle: k.idle,
            freq: k.freq,
        });
        Ok(())
    })
    .map_err(corrupt)?;
    let mut commands = 0u64;
    let mut give = |args: Vec<Vec<u8>>, offset: u64| {
        commands += 1;
        on_command(LoadedCommand {
            args: inline(args),
            file,
            offset,
            lsn,
        })
    };
    let mut db = 0usize;
    for k in keys {
        if k.db != db {
            db = k.db;
            give(
                vec![b"SELECT".to_vec(), db.to_string().into_bytes()],
                k.raw.start as u64,
            )?;
        }
        let mut body = Vec::with_capacity(1 + k.raw.len());
        body.push(k.kind);
        body.extend_from_slice(&data[k.raw.clone()]);
        let mut args = vec![
            b"RESTORE".to_vec(),
            k.key,
            k.expire_at.to_string().into_bytes(),
            rdb::create_payload(body),
            b"REPLACE".to_vec(),
            b"ABSTTL".to_vec(),
        ];
        if let Some(idle) = k.idle {
            args.extend([b"IDLETIME".to_vec(), idle.to_string().into_bytes()]);
        } else if let Some(freq) = k.freq {
            args.extend([b"FREQ".to_vec(), freq.to_string().into_bytes()]);
        }
        give(args, k.raw.start as u64)?;
    }
    if db != 0 {
        give(vec![b"SELECT".to_vec(), b"0".to_vec()], len)?;
    }
    for code in contents.functions {
        give(
            vec![
                b"FUNCTION".to_vec(),
                b"LOAD".to_vec(),
                b"REPLACE".to_vec(),
                code,
            ],
            len,
        )?;
    }
    Ok(commands)
}
