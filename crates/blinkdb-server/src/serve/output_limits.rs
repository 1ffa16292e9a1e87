//! `client-output-buffer-limit` enforced: which class a client is in and when
//! its pending replies break that class's limit (the value type is config::limits).

use crate::client::{ClientInfo, ClientType};
use crate::exec::session::Client;
use crate::server::state::Shared;
use std::sync::atomic::Ordering;

pub use crate::config::limits::{ClassLimit, OutputLimits, DEFAULT};

/// The limit of the client's class: pubsub while it has subscriptions, normal otherwise.
fn class_limit(client: &mut Client, shared: &Shared) -> ClassLimit {
    let subscribed = client.pubsub.is_some();
    let limits = &client.settings(shared).output_limits;
    if subscribed {
        limits.pubsub
    } else {
        limits.normal
    }
}

/// Unsent reply bytes a client that must still authenticate may have.
/// Redis 7.0 (checkClientOutputBufferLimits) closes such a client once its
/// reply list holds more than 1 KB; replies go to the list only past the
/// client's 16 KB reply buffer, and the list's first block is itself 16 KB,
/// so the client is closed as soon as its replies pass 16 KB.
const UNAUTH_OUTPUT_MAX: usize = 16 * 1024;

/// The hard limit of the client's class now, for `Out::cap` (usize::MAX: none).
pub fn hard_cap(client: &mut Client, shared: &Shared) -> usize {
    let class = match class_limit(client, shared).hard {
        0 => usize::MAX,
        n => n as usize,
    };
    if client.auth_required(shared) {
        // Full one byte past the limit, where replies_over_limit closes.
        return class.min(UNAUTH_OUTPUT_MAX + 1);
    }
    class
}

/// Whether `used` unsent bytes of `info` break `limit`, keeping the client's
/// record of when it went over the soft limit.
fn exceeded(limit: &ClassLimit, info: &ClientInfo, used: usize, now_ms: u64) -> bool {
    let since = &info.usage.soft_limit_since_ms;
    let mut soft_since = since.load(Ordering::Relaxed);
    let over = limit.exceeded(used, &mut soft_since, now_ms);
    since.store(soft_since, Ordering::Relaxed);
    over
}

fn log_closing(info: &ClientInfo, now_ms: u64) {
    tracing::warn!(
        "Client {} scheduled to be closed ASAP for overcoming of output buffer limits.",
        info.describe(&now_ms)
    );
}

/// Checks a client's unsent replies (`used` bytes: the output queue and this
/// batch's) against its class; over it, logs as Redis does and returns true:
/// the connection closes instead of sending them. Messages are checked as they
/// arrive (`mailbox.rs`), and replies that wait past the soft limit's seconds
/// by the cron.
pub fn replies_over_limit(client: &mut Client, shared: &Shared, used: usize, now_ms: u64) -> bool {
    if used > UNAUTH_OUTPUT_MAX && client.auth_required(shared) {
        log_closing(&client.info, now_ms);
        return true;
    }
    let limit = class_limit(client, shared);
    if limit.is_unlimited() || !exceeded(&limit, &client.info, used, now_ms) {
        return false;
    }
    log_closing(&client.info, now_ms);
    true
}

/// Redis's clientsCron check: a normal or pub/sub client whose unsent output
/// stays over its class's soft limit is closed once the limit's seconds pass,
/// even if nothing more is added to it.
pub fn cron(shared: &Shared) {
    let limits = shared.settings().output_limits;
    if limits.normal.soft == 0 && limits.pubsub.soft == 0 {
        return;
    }
    let now_ms = shared.clock();
    let over = shared.clients.filter(|c| {
        let pending = c.output_pending() as usize;
        let limit = match ClientType::of(c) {
            _ if pending == 0 || c.is_killed() => return false,
            ClientType::Normal => limits.normal,
            ClientType::Pubsub => limits.pubsub,
            ClientType::Replica | ClientType::Master => return false,
        };
        limit.soft > 0 && exceeded(&limit, c, pending, now_ms)
    });
    for c in over {
        log_closing(&c, now_ms);
        c.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_replaces_only_named_classes() {
        let l = OutputLimits::parse_over(DEFAULT, "pubsub 1mb 512kb 5").unwrap();
        assert_eq!(
            l.format(),
            "normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 524288 5"
        );
        let l = OutputLimits::parse_over(DEFAULT, "replica 1k 0 0 normal 10 0 0").unwrap();
        assert_eq!(l.replica.hard, 1000);
        assert_eq!(l.normal.hard, 10);
        assert_eq!(OutputLimits::parse_canonical(DEFAULT).format(), DEFAULT);
    }

    #[test]
    fn errors_are_redis_texts() {
        let e = OutputLimits::parse_over(DEFAULT, "pubsub 1 2").unwrap_err();
        assert_eq!(
            e,
            "Wrong number of arguments in buffer limit configuration."
        );
        let e = OutputLimits::parse_over(DEFAULT, "master 1 2 3").unwrap_err();
        assert_eq!(
            e,
            "Invalid client class specified in buffer limit configuration."
        );
        let e = OutputLimits::parse_over(DEFAULT, "pubsub 1 2 -3").unwrap_err();
        assert!(e.starts_with("Error in hard, soft"));
    }

    #[test]
    fn soft_limit_needs_its_seconds() {
        let l = ClassLimit {
            hard: 0,
            soft: 100,
            soft_secs: 2,
        };
        let mut since = 0;
        assert!(!l.exceeded(150, &mut since, 1000));
        assert!(!l.exceeded(150, &mut since, 3000));
        assert!(l.exceeded(150, &mut since, 3001));
        assert!(!l.exceeded(50, &mut since, 4000));
        assert_eq!(since, 0);
        let hard = ClassLimit {
            hard: 10,
            ..Default::default()
        };
        assert!(hard.exceeded(10, &mut since, 0));
    }
}
