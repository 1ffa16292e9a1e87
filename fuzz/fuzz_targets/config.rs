//! Config file parsing (redis.conf syntax), CONFIG SET values and CONFIG
//! REWRITE on arbitrary text.
//!
//! Checks: no panic (reading, typed settings, rewrite); the typed settings of
//! any accepted file are usable (a positive proto-max-bulk-len, ...); a
//! rewritten file reads back as the same configuration; memory values parse
//! as Redis's `memtoull` reads them.
#![no_main]

use blinkdb_fuzz::Cursor;
use blinkdb_server::boot::CONFIG_CHECKS;
use blinkdb_server::config::{parse_memory, Config, OPTIONS};
use libfuzzer_sys::fuzz_target;

/// Redis 7.0's `memtoull`, except that a unit pushing the value past u64 is
/// refused (Redis wraps it around).
fn memtoull(s: &[u8]) -> Option<u64> {
    if s.first() == Some(&b'-') {
        return None;
    }
    let digits = s.iter().take_while(|c| c.is_ascii_digit()).count();
    let unit = String::from_utf8(s[digits..].to_vec())
        .ok()?
        .to_ascii_lowercase();
    let mul: u64 = match unit.as_str() {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    if digits >= 128 {
        return None;
    }
    // strtoull: "" is 0, too many digits give ULLONG_MAX.
    let n: u64 = match digits {
        0 => 0,
        _ => std::str::from_utf8(&s[..digits])
            .ok()?
            .parse()
            .unwrap_or(u64::MAX),
    };
    n.checked_mul(mul)
}

fn values(c: &Config) -> Vec<(String, String)> {
    c.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn check_settings(c: &Config) {
    let s = c.settings();
    assert!(s.proto_max_bulk_len >= 1 << 20, "{s:?}");
    assert!(s.client_query_buffer_limit >= 1 << 20, "{s:?}");
    assert!(s.databases >= 1, "{s:?}");
}

fuzz_target!(|data: &[u8]| {
    let mut c = Cursor::new(data);
    let which = c.u8();
    let rest = c.rest();
    match which % 3 {
        0 => {
            // A config file.
            let dir = blinkdb_fuzz::scratch_dir();
            let path = dir.path().join("blinkdb.conf");
            std::fs::write(&path, rest).unwrap();
            let arg = path.to_str().unwrap().to_string();
            let Ok(cfg) = Config::from_args(&[arg.clone()], CONFIG_CHECKS) else {
                return;
            };
            check_settings(&cfg);
            cfg.rewrite(false, &[]).expect("CONFIG REWRITE");
            let again = Config::from_args(&[arg], CONFIG_CHECKS).unwrap_or_else(|e| {
                panic!(
                    "the rewritten file does not load: {e}\n{}",
                    std::fs::read_to_string(&path).unwrap_or_default()
                )
            });
            assert_eq!(values(&cfg), values(&again), "the rewrite changed values");
        }
        1 => {
            // CONFIG SET name value pairs on the defaults.
            let mut cfg = Config::new(CONFIG_CHECKS);
            let mut words = rest.split(|&b| b == 0);
            while let (Some(name), Some(value)) = (words.next(), words.next()) {
                let name = String::from_utf8_lossy(name);
                let value = String::from_utf8_lossy(value);
                // Names from the table, picked by the first byte, reach deeper.
                let name = match name.as_bytes().first() {
                    Some(&b) if b < 0x80 && name.len() == 1 => {
                        OPTIONS[b as usize % OPTIONS.len()].name.to_string()
                    }
                    _ => name.into_owned(),
                };
                let _ = cfg.set_runtime(&name, &value);
            }
            check_settings(&cfg);
        }
        _ => {
            let Ok(s) = std::str::from_utf8(rest) else {
                return;
            };
            assert_eq!(parse_memory(s), memtoull(rest), "memory value {s:?}");
        }
    }
});
