//! Distinct random picks for HRANDFIELD, SRANDMEMBER and ZRANDMEMBER with a
//! positive count.

pub enum Picked {
    /// The count reaches the size: every member, once.
    All(usize),
    /// Distinct positions in iteration order, in random order.
    Some(Vec<usize>),
}

impl Picked {
    pub fn len(&self) -> usize {
        match self {
            Picked::All(n) => *n,
            Picked::Some(v) => v.len(),
        }
    }
}

/// `count` distinct positions out of `size` (all of them when count >= size).
pub fn distinct(size: usize, count: usize, rng: &mut impl rand::Rng) -> Picked {
    if count >= size {
        return Picked::All(size);
    }
    Picked::Some(rand::seq::index::sample(rng, size, count).into_vec())
}

/// The most picks a negative count (repeats allowed) may ask for: a reply
/// that size is built in memory, so it is bounded by a quarter of
/// `proto-max-bulk-len` (134M picks by default). Redis has no bound and
/// would grow without limit on `SRANDMEMBER k -9223372036854775807`.
pub fn too_many_repeats(ctx: &mut super::Ctx, count: i64) -> bool {
    let limit = ctx.client.settings(ctx.shared).proto_max_bulk_len.max(4) as u64 / 4;
    count < 0 && count.unsigned_abs() > limit
}
