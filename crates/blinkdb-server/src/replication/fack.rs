//! A replica's FACK (Redis 7.2's `REPLCONF ACK <offset> FACK <offset>`): how far into its
//! master's stream its own AOF is fsync'd, which the master's WAITAOF counts.
//!
//! Each ACK notes the stream offset applied and the log position its effects reached
//! (the master client's highest logged position); an offset counts as fsync'd once the
//! AOF's synced position passes the log position noted with it. After a full sync the
//! loaded data is already in the AOF (the rewrite that follows the load), so the offset
//! the sync started at is fsync'd from the first ACK.

use std::collections::VecDeque;

use crate::server::state::Shared;

/// Marks older than this many ACKs are dropped unconfirmed: a later mark covers them
/// (its offset and log position are higher), so the FACK only lags, never overstates.
const MAX_MARKS: usize = 64;

#[derive(Default)]
pub struct FsyncMarks {
    /// (stream offset, log position) noted at each ACK, both increasing.
    marks: VecDeque<(u64, u64)>,
    fsynced: u64,
}

impl FsyncMarks {
    /// The FACK to send with the ACK of `offset`, whose effects end at log position
    /// `lsn`; None while this server writes no AOF (Redis then sends no FACK).
    pub fn fack(&mut self, shared: &Shared, offset: u64, lsn: u64) -> Option<u64> {
        let log = shared
            .engine
            .log_handle()
            .filter(|_| shared.settings().appendonly)?;
        Some(self.advance(offset, lsn, log.aof.synced_lsn().0))
    }

    fn advance(&mut self, offset: u64, lsn: u64, synced: u64) -> u64 {
        match self.marks.back_mut() {
            // No new log bytes since the last mark (PINGs, reads): the same position
            // covers the further offset.
            Some(last) if last.1 == lsn => last.0 = last.0.max(offset),
            _ => self.marks.push_back((offset, lsn)),
        }
        if self.marks.len() > MAX_MARKS {
            self.marks.pop_front();
        }
        while let Some(&(off, at)) = self.marks.front() {
            if at > synced {
                break;
            }
            self.fsynced = self.fsynced.max(off);
            self.marks.pop_front();
        }
        self.fsynced
    }
}

#[cfg(test)]
mod tests {
    use super::FsyncMarks;

    #[test]
    fn an_offset_counts_once_its_log_position_is_synced() {
        let mut m = FsyncMarks::default();
        assert_eq!(m.advance(100, 0, 0), 100);
        assert_eq!(m.advance(150, 40, 10), 100);
        assert_eq!(m.advance(200, 40, 10), 100);
        assert_eq!(m.advance(250, 90, 40), 200);
        assert_eq!(m.advance(260, 90, 90), 260);
    }

    #[test]
    fn dropped_marks_only_delay_the_fack() {
        let mut m = FsyncMarks::default();
        for i in 1..=200u64 {
            assert_eq!(m.advance(i * 10, i, 0), 0);
        }
        assert_eq!(m.advance(2010, 201, 150), 1500);
        assert_eq!(m.advance(2020, 201, 201), 2020);
    }
}
