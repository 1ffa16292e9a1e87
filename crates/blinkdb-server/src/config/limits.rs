//! `client-output-buffer-limit`'s value: Redis's syntax (`<class> <hard> <soft>
//! <soft-seconds>` repeated), its classes (normal, replica/slave, pubsub) and
//! its defaults (the value syntax of `Kind::OutputLimits`; serve::output_limits
//! enforces the limits).

use super::values::parse_memory;

pub const DEFAULT: &str = "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60";

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ClassLimit {
    pub hard: u64,
    pub soft: u64,
    pub soft_secs: u64,
}

impl ClassLimit {
    pub fn is_unlimited(&self) -> bool {
        self.hard == 0 && self.soft == 0
    }

    /// Whether `used` pending bytes break the limit: at or over the hard limit, or
    /// at or over the soft one continuously for more than its seconds.
    /// `soft_since_ms` is the caller's record of when the soft limit was reached.
    pub fn exceeded(&self, used: usize, soft_since_ms: &mut u64, now_ms: u64) -> bool {
        let used = used as u64;
        if self.hard > 0 && used >= self.hard {
            return true;
        }
        if self.soft > 0 && used >= self.soft {
            if *soft_since_ms == 0 {
                *soft_since_ms = now_ms.max(1);
                return false;
            }
            return now_ms.saturating_sub(*soft_since_ms) > self.soft_secs * 1000;
        }
        *soft_since_ms = 0;
        false
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OutputLimits {
    pub normal: ClassLimit,
    pub replica: ClassLimit,
    pub pubsub: ClassLimit,
}

impl OutputLimits {
    /// `current` with the classes named in `value` replaced; all or nothing,
    /// with Redis's error texts.
    pub fn parse_over(current: &str, value: &str) -> Result<OutputLimits, String> {
        let mut limits = OutputLimits::parse_canonical(current);
        let words: Vec<&str> = value.split_whitespace().collect();
        if !words.len().is_multiple_of(4) {
            return Err("Wrong number of arguments in buffer limit configuration.".into());
        }
        let mut next = limits;
        for w in words.chunks(4) {
            let class = match w[0].to_ascii_lowercase().as_str() {
                "normal" => &mut next.normal,
                "slave" | "replica" => &mut next.replica,
                "pubsub" => &mut next.pubsub,
                _ => {
                    return Err(
                        "Invalid client class specified in buffer limit configuration.".into(),
                    )
                }
            };
            let secs = w[3].parse::<i64>().ok().filter(|s| *s >= 0);
            match (parse_memory(w[1]), parse_memory(w[2]), secs) {
                (Some(hard), Some(soft), Some(secs)) => {
                    *class = ClassLimit {
                        hard,
                        soft,
                        soft_secs: secs as u64,
                    }
                }
                _ => return Err(
                    "Error in hard, soft or soft_seconds setting in buffer limit configuration."
                        .into(),
                ),
            }
        }
        limits = next;
        Ok(limits)
    }

    /// Reads the form `format` writes (the stored config value).
    pub fn parse_canonical(s: &str) -> OutputLimits {
        let mut limits = OutputLimits::default();
        let words: Vec<&str> = s.split_whitespace().collect();
        for w in words.chunks_exact(4) {
            let n = |i: usize| w[i].parse::<u64>().unwrap_or(0);
            let class = ClassLimit {
                hard: n(1),
                soft: n(2),
                soft_secs: n(3),
            };
            match w[0] {
                "normal" => limits.normal = class,
                "slave" => limits.replica = class,
                "pubsub" => limits.pubsub = class,
                _ => {}
            }
        }
        limits
    }

    /// CONFIG GET's form: every class, in bytes, as Redis prints it.
    pub fn format(&self) -> String {
        let c = |n: &str, l: &ClassLimit| format!("{n} {} {} {}", l.hard, l.soft, l.soft_secs);
        format!(
            "{} {} {}",
            c("normal", &self.normal),
            c("slave", &self.replica),
            c("pubsub", &self.pubsub)
        )
    }
}
