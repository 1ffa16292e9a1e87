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
