//! FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT ms]: a coordinated
//! handover from this master to one of its replicas, as Redis 7.0 does it
//! (docs/replication.md, "FAILOVER"):
//!
//! 1. writes are paused (FAILOVER's own pause, which CLIENT UNPAUSE does not
//!    lift) and the state is `waiting-for-sync`;
//! 2. a driver thread waits until the target replica (or, without TO, any
//!    replica) has acknowledged the whole stream (`REPLCONF ACK` equal to
//!    `master_repl_offset`); with TIMEOUT it aborts at the deadline, or with
//!    FORCE goes on regardless;
//! 3. `failover-in-progress`: this server becomes a replica of the target and
//!    its handshake sends `PSYNC <replid> <offset+1> FAILOVER`; the target
//!    (same replid required) promotes itself and answers `+CONTINUE <new id>`;
//! 4. any `+CONTINUE`/`+FULLRESYNC` ends the failover (writes resume and get
//!    READONLY); any other answer aborts it: this server is a master again.

use crate::commands::Ctx;
use crate::protocol::Args;
use crate::server::state::Shared;
use parking_lot::Mutex;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Redis's failover_state.
#[derive(Clone, Copy, PartialEq, Debug, Default)]
pub enum Phase {
    #[default]
    NoFailover,
    WaitForSync,
    InProgress,
}

impl Phase {
    /// INFO replication's master_failover_state.
    pub fn name(self) -> &'static str {
        match self {
            Phase::NoFailover => "no-failover",
            Phase::WaitForSync => "waiting-for-sync",
            Phase::InProgress => "failover-in-progress",
        }
    }
}

#[derive(Default)]
struct State {
    phase: Phase,
    /// The replica handed over to (set at once with TO, else when one is synced).
    target: Option<(String, u16)>,
    /// Deadline (Unix ms; 0: none).
    end_ms: u64,
    force: bool,
    /// Bumped by every FAILOVER: an older driver thread ends.
    generation: u64,
}

#[derive(Default)]
pub struct Failover {
    state: Mutex<State>,
}

impl Failover {
    pub fn phase(&self) -> Phase {
        self.state.lock().phase
    }
}

fn eq_ic(a: &[u8], b: &str) -> bool {
    a.eq_ignore_ascii_case(b.as_bytes())
}

const NOT_INT: &str = "ERR value is not an integer or out of range";

/// FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT ms], with Redis 7.0's
/// checks in its order and its error texts.
pub fn command(ctx: &mut Ctx, args: &Args) {
    let shared = ctx.shared;
    if shared.cluster.is_some() {
        return ctx.out.error(
            "ERR FAILOVER not allowed in cluster mode. Use CLUSTER FAILOVER command instead.",
        );
    }
    let failover = &shared.replication.failover;
    if args.len() == 2 && eq_ic(args[1], "abort") {
        if failover.phase() == Phase::NoFailover {
            return ctx.out.error("ERR No failover in progress.");
        }
        abort(shared, "Failover manually aborted");
        return ctx.out.ok();
    }
    let mut timeout_ms = 0i64;
    let mut force = false;
    let mut target: Option<(String, i64)> = None;
    let mut j = 1;
    while j < args.len() {
        if eq_ic(args[j], "timeout") && j + 1 < args.len() && timeout_ms == 0 {
            let Some(ms) = crate::commands::args::parse_i64(args[j + 1]) else {
                return ctx.out.error(NOT_INT);
            };
            if ms <= 0 {
                return ctx.out.error("ERR FAILOVER timeout must be greater than 0");
            }
            timeout_ms = ms;
            j += 2;
        } else if eq_ic(args[j], "to") && j + 2 < args.len() && target.is_none() {
            let Some(port) = crate::commands::args::parse_i64(args[j + 2]) else {
                return ctx.out.error(NOT_INT);
            };
            target = Some((String::from_utf8_lossy(args[j + 1]).into_owned(), port));
            j += 3;
        } else if eq_ic(args[j], "force") && !force {
            force = true;
            j += 1;
        } else {
            return ctx.syntax_error();
        }
    }
    if failover.phase() != Phase::NoFailover {
        return ctx.out.error("ERR FAILOVER already in progress.");
    }
    if shared.replication.link.is_replica.load(Ordering::Acquire) {
        return ctx
            .out
            .error("ERR FAILOVER is not valid when server is a replica.");
    }
    let feed = &shared.replication.feed;
    if feed.lock().replicas.is_empty() {
        return ctx.out.error("ERR FAILOVER requires connected replicas.");
    }
    if force && (timeout_ms == 0 || target.is_none()) {
        return ctx.out.error(
            "ERR FAILOVER with force option requires both a timeout and target HOST and IP.",
        );
    }
    let target = match target {
        Some((host, port)) => {
            let online = {
                let b = feed.lock();
                b.replicas
                    .iter()
                    .find(|r| r.ip.eq_ignore_ascii_case(&host) && i64::from(r.port) == port)
                    .map(|r| r.state == super::backlog::ReplicaState::Online)
            };
            match online {
                None => {
                    return ctx
                        .out
                        .error("ERR FAILOVER target HOST and PORT is not a replica.")
                }
                Some(false) => return ctx.out.error("ERR FAILOVER target replica is not online."),
                Some(true) => {}
            }
            tracing::info!("FAILOVER requested to {host}:{port}.");
            Some((host, port as u16))
        }
        None => {
            tracing::info!("FAILOVER requested to any replica.");
            None
        }
    };
    let generation = {
        let mut st = failover.state.lock();
        st.generation += 1;
        st.phase = Phase::WaitForSync;
        st.target = target;
        st.force = force;
        st.end_ms = if timeout_ms > 0 {
            blinkdb_engine::now_ms() + timeout_ms as u64
        } else {
            0
        };
        st.generation
    };
    shared.exec.pause.set_failover(true);
    // Reads of expired keys do not delete them meanwhile (a DEL would grow
    // the stream the replicas must catch up with).
    shared.engine.hold_expiry_until(u64::MAX);
    let s = shared.arc();
    let spawned = std::thread::Builder::new()
        .name("failover".into())
        .spawn(move || drive(&s, generation));
    if let Err(e) = spawned {
        tracing::warn!("Can't start the failover thread: {e}");
        clear(shared);
        return ctx.out.error("ERR Can't start the failover");
    }
    ctx.out.ok();
}

/// Waits for the target to catch up (Redis's updateFailoverStatus, which
/// runs on every event loop turn: here every 10 ms).
fn drive(shared: &Shared, generation: u64) {
    loop {
        std::thread::sleep(Duration::from_millis(10));
        if !step(shared, generation) {
            return;
        }
    }
}

/// One check; false once this failover left `waiting-for-sync`.
fn step(shared: &Shared, generation: u64) -> bool {
    let failover = &shared.replication.failover;
    let (target, end_ms, force) = {
        let st = failover.state.lock();
        if st.phase != Phase::WaitForSync || st.generation != generation {
            return false;
        }
        (st.target.clone(), st.end_ms, st.force)
    };
    if end_ms != 0 && end_ms <= blinkdb_engine::now_ms() {
        if force {
            let Some((host, port)) = target else {
                return false;
            };
            // Commands already running finish first (none starts: paused).
            let _alone = shared.exec.gate.exclusive();
            if !set_phase(shared, generation, Phase::InProgress, None) {
                return false;
            }
            tracing::info!("FAILOVER to {host}:{port} time out exceeded, failing over.");
            super::replica::follow(shared, host, port);
        } else {
            abort(shared, "Replica never caught up before timeout");
        }
        return false;
    }
    if synced(shared, target.as_ref()).is_none() {
        return true;
    }
    // Looks synced: check again with no command half-way (a write that
    // passed the pause check just before FAILOVER may still be running).
    let _alone = shared.exec.gate.exclusive();
    let Some((host, port)) = synced(shared, target.as_ref()) else {
        return true;
    };
    if !set_phase(
        shared,
        generation,
        Phase::InProgress,
        Some((host.clone(), port)),
    ) {
        return false;
    }
    tracing::info!("Failover target {host}:{port} is synced, failing over.");
    super::replica::follow(shared, host, port);
    false
}

/// The target (or the first replica) whose acknowledged offset is the
/// master's offset.
fn synced(shared: &Shared, target: Option<&(String, u16)>) -> Option<(String, u16)> {
    let b = shared.replication.feed.lock();
    b.replicas
        .iter()
        .filter(|r| match target {
            Some((host, port)) => r.ip.eq_ignore_ascii_case(host) && r.port == *port,
            None => true,
        })
        .find(|r| r.ack == b.offset)
        .map(|r| match target {
            Some(t) => t.clone(),
            None => (r.ip.clone(), r.port),
        })
}

fn set_phase(
    shared: &Shared,
    generation: u64,
    phase: Phase,
    target: Option<(String, u16)>,
) -> bool {
    let mut st = shared.replication.failover.state.lock();
    if st.generation != generation || st.phase == Phase::NoFailover {
        return false;
    }
    st.phase = phase;
    if target.is_some() {
        st.target = target;
    }
    true
}

/// Whether the replica handshake must send `PSYNC ... FAILOVER`.
pub fn handing_over(shared: &Shared) -> bool {
    shared.replication.failover.phase() == Phase::InProgress
}

/// The target answered our `PSYNC ... FAILOVER` (`accepted`: `+CONTINUE` or
/// `+FULLRESYNC`), or the PSYNC could not be sent or answered.
pub fn psync_answered(shared: &Shared, accepted: bool, write_error: bool) {
    if !handing_over(shared) {
        return;
    }
    if accepted {
        tracing::info!("FAILOVER finished: this server is now a replica.");
        clear(shared);
    } else if write_error {
        abort(shared, "Write error to failover target");
    } else {
        abort(shared, "Failover target rejected psync request");
    }
}

/// Redis's abortFailover: logged; a server already handing over becomes a
/// master again (REPLICAOF NO ONE's new history); writes resume.
pub fn abort(shared: &Shared, reason: &str) {
    let (phase, target) = {
        let st = shared.replication.failover.state.lock();
        (st.phase, st.target.clone())
    };
    if phase == Phase::NoFailover {
        return;
    }
    match target {
        Some((host, port)) => tracing::info!("FAILOVER to {host}:{port} aborted: {reason}"),
        None => tracing::info!("FAILOVER to any replica aborted: {reason}"),
    }
    if phase == Phase::InProgress {
        super::replica::promote(shared);
    }
    clear(shared);
}

/// Redis's clearFailoverState: no failover, writes resume.
fn clear(shared: &Shared) {
    {
        let mut st = shared.replication.failover.state.lock();
        st.phase = Phase::NoFailover;
        st.target = None;
        st.end_ms = 0;
        st.force = false;
    }
    shared.exec.pause.set_failover(false);
    shared.engine.hold_expiry_until(shared.exec.pause.end_ms());
}
