//! The partial quicksort Redis uses when only a window of a sort is
//! returned (SORT with BY and LIMIT, GEOSEARCH with COUNT): Bentley and
//! McIlroy's three-way quicksort ("Engineering a Sort Function") that skips
//! the partitions lying wholly outside the window. The window ends up in
//! sorted order; elements that compare equal end up in the order this
//! algorithm leaves them in, which is the order Redis replies with, so the
//! steps (pivot choice, swaps) follow the paper's, as Redis's do.

use std::cmp::Ordering;

/// Sorts `v` enough that positions `lo..=hi` hold what a full sort would put
/// there.
pub fn partial_sort<T>(v: &mut [T], lo: i64, hi: i64, cmp: impl Fn(&T, &T) -> Ordering) {
    let n = v.len();
    sort_part(v, 0, n, (lo, hi), &cmp);
}

/// The median of three positions.
fn med3<T>(v: &[T], a: usize, b: usize, c: usize, cmp: &impl Fn(&T, &T) -> Ordering) -> usize {
    use Ordering::{Greater, Less};
    if cmp(&v[a], &v[b]) == Less {
        if cmp(&v[b], &v[c]) == Less {
            b
        } else if cmp(&v[a], &v[c]) == Less {
            c
        } else {
            a
        }
    } else if cmp(&v[b], &v[c]) == Greater {
        b
    } else if cmp(&v[a], &v[c]) == Less {
        a
    } else {
        c
    }
}

/// Swaps the `n` positions from `a` with the `n` from `b`, pairwise.
fn swap_run<T>(v: &mut [T], a: usize, b: usize, n: usize) {
    for k in 0..n {
        v.swap(a + k, b + k);
    }
}

/// Whether positions `start..start + len` lie wholly before or wholly
/// after the window.
fn outside(start: usize, len: usize, (lo, hi): (i64, i64)) -> bool {
    let (s, e) = (start as i64, (start + len) as i64);
    (lo < s && hi < s) || (lo >= e && hi >= e)
}

fn sort_part<T>(
    v: &mut [T],
    mut a: usize,
    mut n: usize,
    window: (i64, i64),
    cmp: &impl Fn(&T, &T) -> Ordering,
) {
    use Ordering::{Equal, Greater, Less};
    loop {
        if n < 7 {
            for pm in a + 1..a + n {
                let mut pl = pm;
                while pl > a && cmp(&v[pl - 1], &v[pl]) == Greater {
                    v.swap(pl, pl - 1);
                    pl -= 1;
                }
            }
            return;
        }
        let mut pm = a + n / 2;
        if n > 7 {
            let mut pl = a;
            let mut pn = a + n - 1;
            if n > 40 {
                let d = n / 8;
                pl = med3(v, pl, pl + d, pl + 2 * d, cmp);
                pm = med3(v, pm - d, pm, pm + d, cmp);
                pn = med3(v, pn - 2 * d, pn - d, pn, cmp);
            }
            pm = med3(v, pl, pm, pn, cmp);
        }
        v.swap(a, pm);
        // The pivot is at `a`; equal elements gather at both ends.
        let (mut pa, mut pb) = (a + 1, a + 1);
        let (mut pc, mut pd) = (a + n - 1, a + n - 1);
        loop {
            while pb <= pc {
                let c = cmp(&v[pb], &v[a]);
                if c == Greater {
                    break;
                }
                if c == Equal {
                    v.swap(pa, pb);
                    pa += 1;
                }
                pb += 1;
            }
            while pb <= pc {
                let c = cmp(&v[pc], &v[a]);
                if c == Less {
                    break;
                }
                if c == Equal {
                    v.swap(pc, pd);
                    pd -= 1;
                }
                pc -= 1;
            }
            if pb > pc {
                break;
            }
            v.swap(pb, pc);
            pb += 1;
            pc -= 1;
        }
        let pn = a + n;
        let r = (pa - a).min(pb - pa);
        swap_run(v, a, pb - r, r);
        let r = (pd - pc).min(pn - pd - 1);
        swap_run(v, pb, pn - r, r);
        let r = pb - pa;
        if r > 1 && !outside(a, r, window) {
            sort_part(v, a, r, window, cmp);
        }
        let r = pd - pc;
        if r <= 1 {
            return;
        }
        a = pn - r;
        n = r;
        if outside(a, n, window) {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn window_matches_a_full_sort() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        for _ in 0..300 {
            let n = rng.gen_range(0..120);
            let v: Vec<u32> = (0..n).map(|_| rng.gen_range(0..30)).collect();
            let mut full = v.clone();
            full.sort();
            let lo = rng.gen_range(0..=n as i64);
            let hi = rng.gen_range(lo - 1..=n as i64 - 1);
            let mut part = v.clone();
            partial_sort(&mut part, lo, hi, |a, b| a.cmp(b));
            if lo <= hi {
                assert_eq!(
                    part[lo as usize..=hi as usize],
                    full[lo as usize..=hi as usize]
                );
            }
            let mut all = v.clone();
            partial_sort(&mut all, 0, n as i64 - 1, |a, b| a.cmp(b));
            assert_eq!(all, full);
        }
    }
}
