//! `notify-keyspace-events`: Redis's flag letters and the engine's flag bits
//! (the value syntax of `Kind::KeyspaceEvents`; pubsub::notify publishes the events).

use blinkdb_engine::event::*;

/// The flag letters Redis accepts, in its CONFIG SET error's order.
pub const ERR_FLAGS: &str = "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.";

/// Parses `notify-keyspace-events` letters (Redis's keyspaceEventsStringToFlags).
pub fn parse_flags(s: &str) -> Option<u32> {
    let mut flags = 0;
    for c in s.chars() {
        flags |= match c {
            'A' => ALL,
            'g' => GENERIC,
            '$' => STRING,
            'l' => LIST,
            's' => SET,
            'h' => HASH,
            'z' => ZSET,
            'x' => EXPIRED,
            'e' => EVICTED,
            'K' => KEYSPACE,
            'E' => KEYEVENT,
            't' => STREAM,
            'm' => KEY_MISS,
            'd' => MODULE,
            'n' => NEW,
            _ => return None,
        };
    }
    Some(flags)
}

/// Every letter of `flags`, without `A`: the stored form, which parses back
/// to the same flags (Redis's shown form drops `n` next to `A`).
pub fn letters(flags: u32) -> String {
    render(flags, false)
}

/// The letters CONFIG GET shows for `flags` (Redis's keyspaceEventsFlagsToString):
/// `A` for all classes, else each class in a fixed order, then K, E and m.
pub fn format_flags(flags: u32) -> String {
    render(flags, true)
}

fn render(flags: u32, collapse_all: bool) -> String {
    let mut s = String::new();
    if collapse_all && flags & ALL == ALL {
        s.push('A');
    } else {
        for (bit, c) in [
            (GENERIC, 'g'),
            (STRING, '$'),
            (LIST, 'l'),
            (SET, 's'),
            (HASH, 'h'),
            (ZSET, 'z'),
            (EXPIRED, 'x'),
            (EVICTED, 'e'),
            (STREAM, 't'),
            (MODULE, 'd'),
            (NEW, 'n'),
        ] {
            if flags & bit != 0 {
                s.push(c);
            }
        }
    }
    for (bit, c) in [(KEYSPACE, 'K'), (KEYEVENT, 'E'), (KEY_MISS, 'm')] {
        if flags & bit != 0 {
            s.push(c);
        }
    }
    s
}
