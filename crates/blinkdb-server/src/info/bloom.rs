//! INFO's `# Bloom` section: the key-existence filter, filter files found at
//! start, and whether kernel filters can be used here.

use blinkdb_engine::Engine;
use std::fmt::Write;
use std::sync::atomic::Ordering;

pub fn section(engine: &Engine, o: &mut String) {
    o.push_str("# Bloom\r\n");
    match &engine.existence {
        Some(filter) => {
            let s = filter.stats();
            let _ = write!(
                o,
                "existence_filter_size:{}\r\nexistence_filter_fill_ratio:{:.6}\r\nexistence_filter_estimated_fp:{:.6}\r\nexistence_filter_negative_lookups:{}\r\n",
                s.filter.size_bytes, s.filter.fill_ratio, s.filter.estimated_fp, s.negative_lookups
            );
        }
        None => o.push_str("existence_filter_size:0\r\n"),
    }
    let stats = &engine.blooms.stats;
    let _ = write!(
        o,
        "bloom_filters_open:{}\r\nbloom_corrupt_lines_at_start:{}\r\nbloom_filters_rebuilt:{}\r\n",
        engine.blooms.open_filters(),
        stats.corrupt_lines_at_open.load(Ordering::Relaxed),
        stats.rebuilds.load(Ordering::Relaxed),
    );
    match engine.blooms.kernel_available() {
        Ok(()) => o.push_str("kernel_filters_available:yes\r\n"),
        Err(reason) => {
            let _ = write!(
                o,
                "kernel_filters_available:no\r\nkernel_filters_reason:{reason}\r\n"
            );
        }
    }
}
