//! The longest common subsequence of two strings by Redis 7.0's dynamic
//! programming table and its walk back through it, so that the subsequence
//! and the matching runs are the ones Redis picks (the LCS command is
//! `commands/lcs.rs`).

/// Why a table was not built.
#[derive(Debug, PartialEq)]
pub enum TableError {
    /// It needs more bytes than the limit given.
    OverLimit,
    /// Its size overflows or the allocation failed.
    AllocFailed,
}

/// One matching run: the ranges in the first and the second string.
pub struct Match {
    pub a: (u32, u32),
    pub b: (u32, u32),
}

/// The table's cells: LCS length of a[..i] and b[..j] at `j + i * (blen + 1)`.
pub struct Table {
    cells: Vec<u32>,
    width: usize,
}

impl Table {
    /// The table of `a` against `b`, refused when it needs more than `limit`
    /// bytes or cannot be allocated.
    pub fn build(a: &[u8], b: &[u8], limit: i64) -> Result<Table, TableError> {
        let width = b.len() + 1;
        let cells = ((a.len() + 1) as u64).checked_mul(width as u64);
        let bytes = cells.and_then(|c| c.checked_mul(4));
        let (Some(cells), Some(bytes)) = (cells, bytes) else {
            return Err(TableError::AllocFailed);
        };
        if bytes > limit.max(0) as u64 {
            return Err(TableError::OverLimit);
        }
        let mut t = Vec::new();
        t.try_reserve_exact(cells as usize)
            .map_err(|_| TableError::AllocFailed)?;
        t.resize(cells as usize, 0u32);
        for i in 1..=a.len() {
            let (prev, row) = t[(i - 1) * width..(i + 1) * width].split_at_mut(width);
            for j in 1..width {
                row[j] = if a[i - 1] == b[j - 1] {
                    prev[j - 1] + 1
                } else {
                    prev[j].max(row[j - 1])
                };
            }
        }
        Ok(Table { cells: t, width })
    }

    pub fn at(&self, i: usize, j: usize) -> u32 {
        self.cells[j + i * self.width]
    }
}

/// Walks back from the end of both strings, as Redis does, collecting the
/// subsequence and the runs of at least `min_len` bytes (0: all).
pub fn walk(a: &[u8], b: &[u8], t: &Table, min_len: i64, runs: bool) -> (Vec<u8>, Vec<Match>) {
    let total = t.at(a.len(), b.len()) as usize;
    let mut lcs = vec![0u8; total];
    let mut left = total;
    let mut matches = Vec::new();
    let alen = a.len() as u32;
    // `a_start == alen`: no run is open.
    let (mut a_start, mut a_end, mut b_start, mut b_end) = (alen, 0u32, 0u32, 0u32);
    let (mut i, mut j) = (a.len(), b.len());
    while i > 0 && j > 0 {
        let mut emit = false;
        if a[i - 1] == b[j - 1] {
            lcs[left - 1] = a[i - 1];
            let (ii, jj) = ((i - 1) as u32, (j - 1) as u32);
            if a_start == alen {
                (a_start, a_end, b_start, b_end) = (ii, ii, jj, jj);
            } else if a_start == ii + 1 && b_start == jj + 1 {
                a_start -= 1;
                b_start -= 1;
            } else {
                emit = true;
            }
            if a_start == 0 || b_start == 0 {
                emit = true;
            }
            left -= 1;
            i -= 1;
            j -= 1;
        } else {
            if t.at(i - 1, j) > t.at(i, j - 1) {
                i -= 1;
            } else {
                j -= 1;
            }
            if a_start != alen {
                emit = true;
            }
        }
        if emit {
            let len = a_end.wrapping_sub(a_start).wrapping_add(1);
            if runs && (min_len == 0 || len as i64 >= min_len) {
                matches.push(Match {
                    a: (a_start, a_end),
                    b: (b_start, b_end),
                });
            }
            a_start = alen;
        }
    }
    (lcs, matches)
}
