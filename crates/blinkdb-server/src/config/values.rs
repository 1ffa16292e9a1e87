//! Option values by kind: sizes, booleans, SHUTDOWN's flags, and the check
//! of a value against its option's kind.

use super::events;
use super::hooks::{checked, Check};
use super::limits::{self, OutputLimits};
use super::options::{Kind, OptionDef};
use crate::protocol::int::parse_i64;

/// What a signal's shutdown does, as SHUTDOWN's flags: save the RDB file even
/// without save points, or not even with them; `now` (Redis: do not wait for
/// lagging replicas; BlinkDB never waits for them); exit even if saving fails.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShutdownFlags {
    pub save: bool,
    pub nosave: bool,
    pub now: bool,
    pub force: bool,
}

impl ShutdownFlags {
    /// The words, in Redis's order.
    const NAMES: [&'static str; 5] = ["default", "save", "nosave", "now", "force"];

    /// Space-separated words (Redis's multi-word enum): `default` alone is
    /// no flag; `save` with `nosave` is refused, with Redis's texts.
    pub fn parse(value: &str) -> Result<ShutdownFlags, String> {
        let mut f = ShutdownFlags::default();
        let words: Vec<&str> = value.split_whitespace().collect();
        if words.is_empty() {
            return Err(Self::choices());
        }
        for w in words {
            match w.to_ascii_lowercase().as_str() {
                "default" => {}
                "save" => f.save = true,
                "nosave" => f.nosave = true,
                "now" => f.now = true,
                "force" => f.force = true,
                _ => return Err(Self::choices()),
            }
        }
        if f.save && f.nosave {
            return Err("shutdown options SAVE and NOSAVE can't be used simultaneously".into());
        }
        Ok(f)
    }

    fn choices() -> String {
        format!(
            "argument(s) must be one of the following: {}",
            Self::NAMES.join(", ")
        )
    }

    /// As CONFIG GET shows it: the flags in Redis's order, or `default`.
    pub fn format(&self) -> String {
        let set = [self.save, self.nosave, self.now, self.force];
        let words: Vec<&str> = Self::NAMES[1..]
            .iter()
            .zip(set)
            .filter_map(|(n, on)| on.then_some(*n))
            .collect();
        if words.is_empty() {
            "default".into()
        } else {
            words.join(" ")
        }
    }
}

/// Parses "512mb"-style sizes as Redis's `memtoull` does (k=1000, kb=1024, units
/// in any case, no sign or spaces, "" and "kb" are 0, digits past u64 saturate),
/// except that a unit pushing the value past u64 is refused (Redis wraps it).
pub fn parse_memory(s: &str) -> Option<u64> {
    if s.starts_with('-') {
        return None;
    }
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let mul: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    // Redis copies the digits into a 128-byte buffer first.
    if num.len() >= 128 {
        return None;
    }
    let n = num.bytes().fold(0u64, |n, d| {
        n.saturating_mul(10).saturating_add((d - b'0') as u64)
    });
    n.checked_mul(mul)
}

fn parse_bool(s: &str) -> Option<bool> {
    match s.to_ascii_lowercase().as_str() {
        "yes" => Some(true),
        "no" => Some(false),
        _ => None,
    }
}

/// Checks a value against its option's kind, then its owner's check if one
/// is registered; returns the canonical form.
pub fn validate(def: &OptionDef, value: &str, checks: &[Check]) -> Result<String, String> {
    checked(checks, def.name, validate_kind(def, value)?)
}

/// Checks a value against its option's kind; returns the canonical form.
fn validate_kind(def: &OptionDef, value: &str) -> Result<String, String> {
    match def.kind {
        Kind::Bool => parse_bool(value)
            .map(|b| if b { "yes" } else { "no" }.to_string())
            .ok_or_else(|| "argument must be 'yes' or 'no'".into()),
        Kind::Int(lo, hi) => {
            // Redis's string2ll: no '+', no leading zeros, no spaces.
            let n = parse_i64(value.as_bytes())
                .ok_or_else(|| "argument couldn't be parsed into an integer".to_string())?;
            if n < lo || n > hi {
                return Err(format!("argument must be between {lo} and {hi} inclusive"));
            }
            Ok(n.to_string())
        }
        Kind::Memory(lo, hi) => {
            let n = parse_memory(value).ok_or("argument must be a memory value")?;
            if n < lo || n > hi {
                return Err(format!("argument must be between {lo} and {hi} inclusive"));
            }
            Ok(n.to_string())
        }
        // Redis stores a percentage as a negative number and shows it back as `N%`.
        Kind::MemoryOrPercent => match value.strip_suffix('%') {
            Some(p) if parse_memory(value).is_none() => {
                match parse_i64(p.as_bytes()).filter(|n| *n >= 0) {
                    Some(n) if n > 100 => {
                        Err("percentage argument must be less or equal to 100".into())
                    }
                    Some(0) => Ok("0".into()),
                    Some(n) => Ok(format!("{n}%")),
                    None => Err("argument must be a memory or percent value".into()),
                }
            }
            _ => parse_memory(value)
                .filter(|n| *n <= i64::MAX as u64)
                .map(|n| n.to_string())
                .ok_or_else(|| "argument must be a memory or percent value".into()),
        },
        Kind::Enum(choices) => choices
            .iter()
            .find(|c| c.eq_ignore_ascii_case(value))
            // Redis shows an enum by the first name of its value: `relative`
            // is oom-score-adj's `yes`.
            .map(|c| if *c == "relative" { "yes" } else { c }.to_string())
            .ok_or_else(|| {
                "argument(s) must be one of the following: ".to_string() + &choices.join(", ")
            }),
        Kind::Octal => match u32::from_str_radix(value, 8) {
            Ok(n) if n <= 0o777 => Ok(format!("{n:o}")),
            _ => Err("argument must be an octal permission mask (0-777)".into()),
        },
        Kind::OutputLimits => OutputLimits::parse_over(limits::DEFAULT, value).map(|l| l.format()),
        // Stored with every letter (Redis's own form, shown by `shown`, drops
        // `n` next to `A`, though the flag stays on).
        Kind::ShutdownFlags => ShutdownFlags::parse(value).map(|f| f.format()),
        Kind::KeyspaceEvents => events::parse_flags(value)
            .map(events::letters)
            .ok_or_else(|| events::ERR_FLAGS.to_string()),
        Kind::Str => Ok(value.to_string()),
    }
}
