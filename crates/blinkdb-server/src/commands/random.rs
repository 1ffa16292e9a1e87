//! Distinct random picks for HRANDFIELD, SRANDMEMBER and ZRANDMEMBER with a
//! positive count, and their count arguments.

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

/// Whether a negative count (repeats allowed) asks for more picks than a
/// client without a hard output limit may get. With a limit (Redis's
/// `client-output-buffer-limit`), any count is accepted as in Redis: the
/// reply stops at the limit (`Out::full`) and the connection closes. Without
/// one the reply is built whole in memory, so it is bounded by a quarter of
/// `proto-max-bulk-len` (134M picks by default), where Redis would grow
/// without limit on `SRANDMEMBER k -9223372036854775807`.
pub fn too_many_repeats(ctx: &mut super::Ctx, count: i64) -> bool {
    let limit = ctx.client.settings(ctx.shared).proto_max_bulk_len.max(4) as u64 / 4;
    count < 0 && ctx.out.cap == usize::MAX && count.unsigned_abs() > limit
}

/// HRANDFIELD's and ZRANDMEMBER's `count [WITHVALUES|WITHSCORES]` (`with`
/// names the word), with Redis's errors in its order: the count, and
/// whether the values or scores were asked for; None once an error is sent.
pub fn count_args(
    ctx: &mut super::Ctx,
    args: &crate::protocol::Args,
    with: &str,
) -> Option<(i64, bool)> {
    use super::args::{eq_ic, parse_i64, ERR_NOT_INT, ERR_SYNTAX};
    let count = match parse_i64(args[2]) {
        Some(n) if n != i64::MIN => n,
        Some(_) => {
            ctx.out.error(
                "ERR value is out of range, value must between -9223372036854775807 and \
                 9223372036854775807",
            );
            return None;
        }
        None => {
            ctx.out.error(ERR_NOT_INT);
            return None;
        }
    };
    let with = match args.get(3) {
        None => false,
        Some(w) if args.len() == 4 && eq_ic(w, with) => true,
        Some(_) => {
            ctx.out.error(ERR_SYNTAX);
            return None;
        }
    };
    if (with && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&count)) || too_many_repeats(ctx, count)
    {
        ctx.out.error("ERR value is out of range");
        return None;
    }
    Some((count, with))
}
