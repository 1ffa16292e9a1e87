//! Per-connection counters and latency histogram, merged into one report at the end.

use hdrhistogram::Histogram;
use serde_json::{json, Value};

/// Highest latency the histogram tracks, in nanoseconds (a minute: far beyond any sane reply).
const MAX_LATENCY_NS: u64 = 60_000_000_000;

#[derive(Debug, Clone)]
pub struct Stats {
    pub ops: u64,
    pub items: u64,
    pub hits: u64,
    pub misses: u64,
    pub errors: u64,
    pub first_error: Option<String>,
    pub latency_ns: Histogram<u64>,
}

impl Stats {
    pub fn new() -> Stats {
        Stats {
            ops: 0,
            items: 0,
            hits: 0,
            misses: 0,
            errors: 0,
            first_error: None,
            latency_ns: Histogram::new_with_bounds(1, MAX_LATENCY_NS, 3)
                .expect("static histogram bounds are valid"),
        }
    }

    pub fn record_latency(&mut self, nanos: u64) {
        self.latency_ns
            .saturating_record(nanos.clamp(1, MAX_LATENCY_NS));
    }

    pub fn record_error(&mut self, text: &[u8]) {
        self.errors += 1;
        if self.first_error.is_none() {
            self.first_error = Some(String::from_utf8_lossy(text).into_owned());
        }
    }

    pub fn merge(&mut self, other: &Stats) {
        self.ops += other.ops;
        self.items += other.items;
        self.hits += other.hits;
        self.misses += other.misses;
        self.errors += other.errors;
        if self.first_error.is_none() {
            self.first_error.clone_from(&other.first_error);
        }
        // Both histograms share the same bounds, so adding cannot fail.
        let _ = self.latency_ns.add(&other.latency_ns);
    }

    fn quantile_us(&self, q: f64) -> f64 {
        self.latency_ns.value_at_quantile(q) as f64 / 1000.0
    }

    pub fn to_json(&self, seconds: f64) -> Value {
        json!({
            "ops": self.ops,
            "items": self.items,
            "seconds": seconds,
            "ops_per_sec": self.ops as f64 / seconds,
            "items_per_sec": self.items as f64 / seconds,
            "hits": self.hits,
            "misses": self.misses,
            "errors": self.errors,
            "first_error": self.first_error,
            "latency_us": {
                "p50": self.quantile_us(0.5),
                "p90": self.quantile_us(0.9),
                "p99": self.quantile_us(0.99),
                "p999": self.quantile_us(0.999),
                "max": self.latency_ns.max() as f64 / 1000.0,
                "mean": self.latency_ns.mean() / 1000.0,
            },
        })
    }

    pub fn to_text(&self, seconds: f64) -> String {
        format!(
            "{} ops in {:.3} s: {:.0} ops/s, {:.0} items/s\n\
             latency us: p50 {:.1}  p90 {:.1}  p99 {:.1}  p99.9 {:.1}  max {:.1}\n\
             hits {}  misses {}  errors {}{}",
            self.ops,
            seconds,
            self.ops as f64 / seconds,
            self.items as f64 / seconds,
            self.quantile_us(0.5),
            self.quantile_us(0.9),
            self.quantile_us(0.99),
            self.quantile_us(0.999),
            self.latency_ns.max() as f64 / 1000.0,
            self.hits,
            self.misses,
            self.errors,
            self.first_error
                .as_deref()
                .map(|e| format!(" (first: {e})"))
                .unwrap_or_default(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_adds_counts_and_keeps_first_error() {
        let mut a = Stats::new();
        a.ops = 3;
        a.record_latency(1_000);
        let mut b = Stats::new();
        b.ops = 5;
        b.record_error(b"ERR unknown command 'BF.ADD'");
        b.record_latency(9_000_000);
        a.merge(&b);
        assert_eq!(a.ops, 8);
        assert_eq!(a.errors, 1);
        assert_eq!(
            a.first_error.as_deref(),
            Some("ERR unknown command 'BF.ADD'")
        );
        let p99 = a.quantile_us(0.99);
        assert!((8_990.0..9_010.0).contains(&p99), "p99 = {p99}");
    }
}
