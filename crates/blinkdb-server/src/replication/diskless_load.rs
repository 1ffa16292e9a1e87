//! `repl-diskless-load`: how a replica loads its master's full-sync RDB.
//!
//! - `disabled`: into `dir/temp-*.rdb`, checked whole, then loaded
//!   (replica.rs);
//! - `on-empty-db`: parsed straight from the socket when the dataset holds
//!   no key (else as `disabled`); a stream that fails part-way leaves an
//!   empty dataset again;
//! - `swapdb`: parsed straight from the socket into an emptied keyspace
//!   while the old keys are kept aside; they come back if the stream fails
//!   and are freed on a background thread once it loaded.
//!
//! Either way clients get -LOADING while the RDB loads (Redis's blocking
//! load): Redis 7.0's async loading (old data served meanwhile) is not done.
//!
//! The payload's framing (`$<len>` or `$EOF:<40-byte mark>`) is `Payload`,
//! shared with the file path; its bytes reach the loader thread through a
//! channel, and the loader is rdb_file.rs's, the one that reads files.

use super::replica::Conn;
use crate::server::state::Shared;
use blinkdb_engine::rdb_format::{Next, RdbError};
use bytes::Buf;
use std::sync::Arc;
use tokio::sync::mpsc::error::TryRecvError;

/// The `repl-diskless-load` setting.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Mode {
    Disabled,
    OnEmptyDb,
    Swapdb,
}

impl Mode {
    pub fn of(value: &str) -> Mode {
        match value {
            "on-empty-db" => Mode::OnEmptyDb,
            "swapdb" => Mode::Swapdb,
            _ => Mode::Disabled,
        }
    }
}

/// Whether this full sync loads from the socket, and how (Redis's
/// useDisklessLoad): swapdb always, on-empty-db when no database holds a key.
pub fn from_socket(shared: &Shared) -> Option<Mode> {
    match Mode::of(&shared.settings().repl_diskless_load) {
        Mode::Disabled => None,
        Mode::Swapdb => Some(Mode::Swapdb),
        Mode::OnEmptyDb => {
            let engine = &shared.engine;
            let keys: usize = (0..engine.databases()).map(|db| engine.db(db).len()).sum();
            (keys == 0).then_some(Mode::OnEmptyDb)
        }
    }
}

/// A full sync's payload after its `$` header: `len` bytes, or bytes up to
/// a 40-byte EOF mark (the mark's possible start held back until it is in).
pub struct Payload {
    /// Bytes still to come (`$<len>`), or the mark.
    end: End,
    /// Payload bytes handed out so far.
    pub read: u64,
}

enum End {
    Len(u64),
    Mark(Vec<u8>),
    Done,
}

pub const MARK_LEN: usize = 40;

impl Payload {
    /// From the header after its `$`.
    pub fn new(spec: &str) -> Result<Payload, String> {
        let end = match spec.strip_prefix("EOF:") {
            Some(mark) if mark.len() == MARK_LEN => End::Mark(mark.as_bytes().to_vec()),
            Some(_) => return Err(format!("Bad EOF mark from MASTER: {spec}")),
            None => match spec.parse::<u64>() {
                Ok(len) => End::Len(len),
                Err(_) => return Err(format!("Bad bulk length from MASTER: {spec}")),
            },
        };
        Ok(Payload { end, read: 0 })
    }

    /// The length the master announced (None: EOF-marked).
    pub fn total(&self) -> Option<u64> {
        match self.end {
            End::Len(left) => Some(left + self.read),
            _ => None,
        }
    }

    /// The payload's next bytes (reading the socket when it has none
    /// ready), or None once it is all read; what follows it stays in
    /// `conn.buf` (the replication stream).
    pub(super) async fn next(&mut self, conn: &mut Conn) -> Result<Option<Vec<u8>>, String> {
        loop {
            match &mut self.end {
                End::Done => return Ok(None),
                End::Len(0) => {
                    self.end = End::Done;
                    return Ok(None);
                }
                End::Len(left) => {
                    if !conn.buf.is_empty() {
                        let n = (conn.buf.len() as u64).min(*left) as usize;
                        *left -= n as u64;
                        return Ok(Some(self.take(conn, n)));
                    }
                }
                End::Mark(mark) => {
                    if let Some(at) = conn.buf.windows(MARK_LEN).position(|w| w == &mark[..]) {
                        if at > 0 {
                            return Ok(Some(self.take(conn, at)));
                        }
                        conn.buf.advance(MARK_LEN);
                        self.end = End::Done;
                        return Ok(None);
                    }
                    // All but a possible start of the mark.
                    if conn.buf.len() >= MARK_LEN {
                        let n = conn.buf.len() - (MARK_LEN - 1);
                        return Ok(Some(self.take(conn, n)));
                    }
                }
            }
            conn.fill().await?;
        }
    }

    fn take(&mut self, conn: &mut Conn, n: usize) -> Vec<u8> {
        self.read += n as u64;
        let bytes = conn.buf[..n].to_vec();
        conn.buf.advance(n);
        bytes
    }
}

/// How long (ms) the loader waits for more of a record it has a part of
/// before parsing what it has again.
const IDLE_MS: u32 = 100;

/// The socket's reads during a diskless load, at most.
const PIECE: usize = 256 * 1024;

/// What the socket side hands the loader thread.
enum Piece {
    Bytes(Vec<u8>),
    /// The payload is all read.
    End,
    /// The link failed (its error).
    Failed(String),
}

/// Reads the payload from the socket into the loader (replica::load, on a
/// blocking thread) as it arrives. On any failure of the stream (link,
/// framing, RDB, checksum) the dataset is as `mode` promises: empty again
/// (on-empty-db) or the old one (swapdb).
pub(super) async fn load(
    shared: &Arc<Shared>,
    generation: u64,
    conn: &mut Conn,
    mut payload: Payload,
    mode: Mode,
) -> Result<(), String> {
    let (to_loader, mut pieces) = tokio::sync::mpsc::channel::<Piece>(16);
    let total = payload.total();
    let s = shared.clone();
    let loader = tokio::task::spawn_blocking(move || {
        let mut more = |wait: bool| {
            let piece = if wait {
                pieces.blocking_recv()
            } else {
                // A short while, polled (this is a blocking thread).
                let mut waited = 0;
                loop {
                    match pieces.try_recv() {
                        Ok(p) => break Some(p),
                        Err(TryRecvError::Disconnected) => break None,
                        Err(TryRecvError::Empty) if waited >= IDLE_MS => return Ok(Next::Idle),
                        Err(TryRecvError::Empty) => {
                            std::thread::sleep(std::time::Duration::from_millis(1));
                            waited += 1;
                        }
                    }
                }
            };
            match piece {
                Some(Piece::Bytes(b)) => Ok(Next::Bytes(b)),
                Some(Piece::End) => Ok(Next::End),
                Some(Piece::Failed(e)) => Err(RdbError::Io(e)),
                None => Err(RdbError::Io("Link with the MASTER closed".into())),
            }
        };
        super::replica::load(&s, mode == Mode::Swapdb, "socket", |shared, settings| {
            crate::persistence::rdb_file::import_stream(shared, settings, &mut more, total)
        })
    });
    let pumped = loop {
        // Large reads: fewer, larger pieces for the loader to wake up for.
        if conn.buf.capacity() - conn.buf.len() < PIECE / 4 {
            conn.buf.reserve(PIECE);
        }
        // A loader that stopped (a bad RDB) ends the wait for the socket
        // (`next` is cancel-safe: it only awaits the socket's read).
        let next = tokio::select! {
            next = payload.next(conn) => next,
            _ = to_loader.closed() => break Ok(()),
        };
        match next {
            Ok(Some(bytes)) => {
                super::replica::sync_progress(shared, generation, payload.read);
                // Closed: the loader stopped on an error of its own.
                if to_loader.send(Piece::Bytes(bytes)).await.is_err() {
                    break Ok(());
                }
            }
            Ok(None) => {
                let _ = to_loader.send(Piece::End).await;
                break Ok(());
            }
            Err(e) => {
                let _ = to_loader.send(Piece::Failed(e.clone())).await;
                break Err(e);
            }
        }
    };
    drop(to_loader);
    let loaded = loader
        .await
        .unwrap_or_else(|e| Err(format!("loading task failed: {e}")));
    pumped?;
    loaded
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_and_headers() {
        assert_eq!(Mode::of("swapdb"), Mode::Swapdb);
        assert_eq!(Mode::of("on-empty-db"), Mode::OnEmptyDb);
        assert_eq!(Mode::of("disabled"), Mode::Disabled);
        assert_eq!(Payload::new("12").unwrap().total(), Some(12));
        let mark = "a".repeat(40);
        assert_eq!(Payload::new(&format!("EOF:{mark}")).unwrap().total(), None);
        assert!(Payload::new("EOF:short").is_err());
        assert!(Payload::new("x").is_err());
    }
}
