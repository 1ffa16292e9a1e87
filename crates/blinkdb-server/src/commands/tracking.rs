//! CLIENT TRACKING, CACHING, GETREDIR and TRACKINGINFO with Redis 7.0's
//! replies and errors, and what dispatch does after each command of a
//! tracking client (remember the keys it read, send its invalidations after
//! the reply). The shared state and the messages are in `tracking/`.

use super::args::*;
use super::table::{props, CommandSpec, READONLY};
use super::Ctx;
use crate::exec::session::Client;
use crate::protocol::Args;
use crate::server::state::Shared;
use crate::tracking::ClientTracking;

/// CLIENT TRACKING ON|OFF [REDIRECT id] [BCAST] [PREFIX p ...] [OPTIN] [OPTOUT] [NOLOOP]
pub fn tracking(ctx: &mut Ctx, args: &Args) {
    let mut opts = ClientTracking::default();
    let mut redirect_to = None;
    let mut prefixes: Vec<Vec<u8>> = Vec::new();
    let mut j = 3;
    while j < args.len() {
        let more = j + 1 < args.len();
        if eq_ic(args[j], "redirect") && more {
            j += 1;
            if opts.redirect != 0 {
                return ctx
                    .out
                    .error("ERR A client can only redirect to a single other client");
            }
            let Some(id) = parse_i64(args[j]) else {
                return ctx.out.error(ERR_NOT_INT);
            };
            // Checked now, although the client may go away later.
            match (id > 0).then(|| ctx.clients().by_id(id as u64)).flatten() {
                Some(c) => redirect_to = Some(c),
                None => {
                    return ctx
                        .out
                        .error("ERR The client ID you want redirect to does not exist")
                }
            }
            opts.redirect = id as u64;
        } else if eq_ic(args[j], "bcast") {
            opts.bcast = true;
        } else if eq_ic(args[j], "optin") {
            opts.optin = true;
        } else if eq_ic(args[j], "optout") {
            opts.optout = true;
        } else if eq_ic(args[j], "noloop") {
            opts.noloop = true;
        } else if eq_ic(args[j], "prefix") && more {
            j += 1;
            prefixes.push(args[j].to_vec());
        } else {
            return ctx.syntax_error();
        }
        j += 1;
    }
    if eq_ic(args[2], "off") {
        disable(ctx.shared, ctx.client);
        return ctx.out.ok();
    }
    if !eq_ic(args[2], "on") {
        return ctx.syntax_error();
    }
    if let Err(e) = check_on(ctx.client.tracking.as_deref(), &opts, &prefixes) {
        return ctx.out.error(&e);
    }
    enable(ctx, opts, redirect_to, prefixes);
    ctx.out.ok();
}

/// Redis's checks before tracking goes on, in its order.
fn check_on(
    current: Option<&ClientTracking>,
    opts: &ClientTracking,
    prefixes: &[Vec<u8>],
) -> Result<(), String> {
    if !opts.bcast && !prefixes.is_empty() {
        return Err("ERR PREFIX option requires BCAST mode to be enabled".into());
    }
    if current.is_some_and(|c| c.bcast != opts.bcast) {
        return Err("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.".into());
    }
    if opts.bcast && (opts.optin || opts.optout) {
        return Err("ERR OPTIN and OPTOUT are not compatible with BCAST".into());
    }
    if opts.optin && opts.optout {
        return Err("ERR You can't specify both OPTIN mode and OPTOUT mode".into());
    }
    if current.is_some_and(|c| (opts.optin && c.optout) || (opts.optout && c.optin)) {
        return Err("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.".into());
    }
    if opts.bcast {
        check_prefix_collisions(current, prefixes)?;
    }
    Ok(())
}

/// Two prefixes collide when one starts with the other: a key would be
/// reported twice to the same client.
fn check_prefix_collisions(
    current: Option<&ClientTracking>,
    prefixes: &[Vec<u8>],
) -> Result<(), String> {
    let overlap = |a: &[u8], b: &[u8]| a.starts_with(b) || b.starts_with(a);
    let show = |p: &[u8]| String::from_utf8_lossy(p).into_owned();
    for (i, p) in prefixes.iter().enumerate() {
        if let Some(old) = current.and_then(|c| c.prefixes.iter().find(|old| overlap(old, p))) {
            return Err(format!(
                "ERR Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a single client must not overlap.",
                show(p),
                show(old)
            ));
        }
        if let Some(other) = prefixes[i + 1..].iter().find(|q| overlap(p, q)) {
            return Err(format!(
                "ERR Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a single client must not overlap.",
                show(p),
                show(other)
            ));
        }
    }
    Ok(())
}

fn enable(
    ctx: &mut Ctx,
    mut opts: ClientTracking,
    redirect_to: Option<std::sync::Arc<crate::client::ClientInfo>>,
    mut prefixes: Vec<Vec<u8>>,
) {
    if let Some(current) = ctx.client.tracking.take() {
        // Options are replaced; BCAST prefixes and CLIENT CACHING carry over.
        opts.prefixes = current.prefixes;
        opts.caching = current.caching;
    }
    if opts.bcast && prefixes.is_empty() {
        prefixes.push(Vec::new());
    }
    if opts.bcast {
        opts.prefixes.extend(prefixes.iter().cloned());
    }
    let info = ctx.client.info.clone();
    // The inbox exists before the first invalidation, so the connection waits on it.
    info.inbox();
    let tracking = &ctx.shared.notify.tracking;
    tracking.enable(&info, &opts, redirect_to.as_ref(), &prefixes);
    info.usage
        .set_tracking_prefixes(prefixes_memory(&opts.prefixes));
    ctx.client.tracking = Some(Box::new(opts));
    ctx.shared.refresh_interest();
}

/// What a client's BCAST prefixes hold (client memory, as Redis counts its
/// prefix tree's nodes): its own copy of each and the shared table's entry.
fn prefixes_memory(prefixes: &std::collections::BTreeSet<Vec<u8>>) -> usize {
    prefixes
        .iter()
        .map(|p| 2 * p.len() + std::mem::size_of::<Vec<u8>>() + std::mem::size_of::<u64>())
        .sum()
}

/// Turns tracking off (CLIENT TRACKING OFF, RESET, disconnect).
pub fn disable(shared: &Shared, client: &mut Client) {
    if let Some(t) = client.tracking.take() {
        shared.notify.tracking.disable(&client.info, &t.prefixes);
        client.info.usage.set_tracking_prefixes(0);
        shared.refresh_interest();
    }
}

/// CLIENT CACHING YES|NO
pub fn caching(ctx: &mut Ctx, args: &Args) {
    let Some(t) = ctx.client.tracking.as_deref_mut() else {
        return ctx.out.error("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled");
    };
    if eq_ic(args[2], "yes") {
        if !t.optin {
            return ctx.out.error(
                "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.",
            );
        }
    } else if eq_ic(args[2], "no") {
        if !t.optout {
            return ctx.out.error(
                "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.",
            );
        }
    } else {
        return ctx.syntax_error();
    }
    t.caching = true;
    ctx.out.ok();
}

/// CLIENT GETREDIR: the redirection (0: none) while tracking, else -1.
pub fn getredir(ctx: &mut Ctx) {
    let id = ctx
        .client
        .tracking
        .as_ref()
        .map_or(-1, |t| t.redirect as i64);
    ctx.out.int(id);
}

/// CLIENT TRACKINGINFO: flags, redirect and prefixes.
pub fn trackinginfo(ctx: &mut Ctx) {
    let t = ctx.client.tracking.as_deref();
    let mut flags = vec![if t.is_some() { "on" } else { "off" }];
    if let Some(t) = t {
        if t.bcast {
            flags.push("bcast");
        }
        if t.optin {
            flags.push("optin");
            if t.caching {
                flags.push("caching-yes");
            }
        }
        if t.optout {
            flags.push("optout");
            if t.caching {
                flags.push("caching-no");
            }
        }
        if t.noloop {
            flags.push("noloop");
        }
        if ctx.client.info.tracking.broken() {
            flags.push("broken_redirect");
        }
    }
    let out = &mut *ctx.out;
    out.map(3);
    out.bulk(b"flags");
    out.set(flags.len());
    for f in flags {
        out.bulk(f.as_bytes());
    }
    out.bulk(b"redirect");
    out.int(t.map_or(-1, |t| t.redirect as i64));
    out.bulk(b"prefixes");
    match t {
        Some(t) => out.strs(t.prefixes.iter().map(|p| &p[..])),
        None => out.array(0),
    }
}

/// After each command of a tracking client: remember the keys a read-only
/// command read (unless OPTIN/OPTOUT say otherwise), and forget CLIENT CACHING
/// once a command other than CLIENT ran outside a transaction. (The
/// invalidations it caused are written after its reply by `run_commands`.)
pub fn after_command(ctx: &mut Ctx, spec: &CommandSpec, args: &Args) {
    let (in_tx, in_exec) = (ctx.client.multi.is_some(), ctx.client.in_exec);
    let Some(t) = ctx.client.tracking.as_deref_mut() else {
        return;
    };
    // A read-only script's own flag does not count, as in Redis: the commands
    // it runs do (`remember_script_keys`).
    let script = spec.has_prop(props::RUNS_SCRIPT);
    if spec.has(READONLY) && !script && spec.first_key > 0 && t.remembers_reads() {
        let tracking = &ctx.shared.notify.tracking;
        tracking.remember(ctx.client.id, key_args(spec, args).into_iter());
        tracking.limit_used_slots();
    }
    if !spec.has_prop(props::KEEPS_CACHING) && !in_tx && !in_exec {
        t.caching = false;
    }
}

/// A read-only command run by a script (`scripting/run.rs`): its caller may
/// cache the keys the script declared (Redis's call() remembers those for the
/// script's caller, not the keys the script read), each time, as Redis does.
pub fn remember_script_keys(shared: &Shared, client: &Client, keys: &[Vec<u8>]) {
    if client
        .tracking
        .as_deref()
        .is_some_and(|t| t.remembers_reads())
    {
        let tracking = &shared.notify.tracking;
        tracking.remember(client.id, keys.iter().map(|k| &k[..]));
        tracking.limit_used_slots();
    }
}

/// The key arguments of `args` by the command's key positions.
fn key_args<'a>(spec: &CommandSpec, args: &Args<'a>) -> Vec<&'a [u8]> {
    let argc = args.len() as i32;
    let last = if spec.last_key < 0 {
        argc + spec.last_key
    } else {
        spec.last_key.min(argc - 1)
    };
    (spec.first_key..=last)
        .step_by(spec.step.max(1) as usize)
        .filter_map(|i| args.get(i as usize).copied())
        .collect()
}
