//! LATENCY: the latency monitor (events that took at least
//! `latency-monitor-threshold` ms, as Redis records them: a command, a fast
//! command, an expire cycle) and the per-command histograms of exec/stats.rs.

use super::table::{self, CommandSpec};
use super::Ctx;
use crate::protocol::Args;
use parking_lot::Mutex;
use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write;

/// Samples kept per event (Redis's LATENCY_TS_LEN).
const SAMPLES: usize = 160;

#[derive(Default)]
struct Event {
    /// (unix seconds, milliseconds), oldest first; one per second at most.
    samples: VecDeque<(u64, u64)>,
    max: u64,
}

#[derive(Default)]
pub struct LatencyMonitor {
    events: Mutex<BTreeMap<String, Event>>,
}

impl LatencyMonitor {
    /// Records `ms` for `event` if the monitor is on and it reaches the
    /// threshold; samples of one second keep the highest.
    pub fn add_if_needed(&self, event: &str, ms: u64, threshold_ms: u64) {
        if threshold_ms == 0 || ms < threshold_ms {
            return;
        }
        let now = blinkdb_engine::now_ms() / 1000;
        let mut events = self.events.lock();
        let e = events.entry(event.to_string()).or_default();
        e.max = e.max.max(ms);
        match e.samples.back_mut() {
            Some((t, v)) if *t == now => *v = (*v).max(ms),
            _ => {
                if e.samples.len() == SAMPLES {
                    e.samples.pop_front();
                }
                e.samples.push_back((now, ms));
            }
        }
    }
}

pub fn latest(ctx: &mut Ctx, _args: &Args) {
    let events = ctx.shared.diagnostics.latency.events.lock();
    ctx.out.array(events.len());
    for (name, e) in events.iter() {
        let (t, v) = e.samples.back().copied().unwrap_or_default();
        ctx.out.array(4);
        ctx.out.bulk(name.as_bytes());
        ctx.out.int(t as i64);
        ctx.out.int(v as i64);
        ctx.out.int(e.max as i64);
    }
}

pub fn history(ctx: &mut Ctx, args: &Args) {
    let events = ctx.shared.diagnostics.latency.events.lock();
    let samples = String::from_utf8(args[2].to_vec())
        .ok()
        .and_then(|n| events.get(&n))
        .map(|e| e.samples.clone())
        .unwrap_or_default();
    drop(events);
    ctx.out.array(samples.len());
    for (t, v) in samples {
        ctx.out.array(2);
        ctx.out.int(t as i64);
        ctx.out.int(v as i64);
    }
}

pub fn reset(ctx: &mut Ctx, args: &Args) {
    let mut events = ctx.shared.diagnostics.latency.events.lock();
    let n = if args.len() == 2 {
        let n = events.len();
        events.clear();
        n
    } else {
        args[2..]
            .iter()
            .filter(|a| {
                std::str::from_utf8(a)
                    .ok()
                    .and_then(|n| events.remove(n))
                    .is_some()
            })
            .count()
    };
    drop(events);
    ctx.out.int(n as i64);
}

/// "12s", "3m", "2h" or "1d" ago.
fn age(secs: u64) -> String {
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

/// Rows of the ASCII graph.
const GRAPH_ROWS: u64 = 4;

pub fn graph(ctx: &mut Ctx, args: &Args) {
    let name = String::from_utf8_lossy(args[2]).into_owned();
    let events = ctx.shared.diagnostics.latency.events.lock();
    let Some(e) = events.get(&name).filter(|e| !e.samples.is_empty()) else {
        drop(events);
        return ctx
            .out
            .error(&format!("ERR No samples available for event '{name}'"));
    };
    let now = blinkdb_engine::now_ms() / 1000;
    let low = e.samples.iter().map(|s| s.1).min().unwrap_or(0);
    let high = e.samples.iter().map(|s| s.1).max().unwrap_or(0);
    let mut text = format!(
        "{name} - high {high} ms, low {low} ms (all time high {} ms)\n",
        e.max
    );
    text.push_str(&"-".repeat(80));
    text.push('\n');
    // The 80 newest samples, one column each, scaled between low and high.
    let shown: Vec<(u64, u64)> = e.samples.iter().rev().take(80).rev().copied().collect();
    drop(events);
    let level = |v: u64| {
        if high == low {
            GRAPH_ROWS
        } else {
            1 + (v - low) * (GRAPH_ROWS - 1) / (high - low)
        }
    };
    for row in (1..=GRAPH_ROWS).rev() {
        let line: String = shown
            .iter()
            .map(|s| if level(s.1) >= row { '#' } else { ' ' })
            .collect();
        text.push_str(line.trim_end());
        text.push('\n');
    }
    // Each column's age, written downwards.
    let ages: Vec<Vec<char>> = shown
        .iter()
        .map(|s| age(now.saturating_sub(s.0)).chars().collect())
        .collect();
    let depth = ages.iter().map(Vec::len).max().unwrap_or(0);
    for i in 0..depth {
        let line: String = ages
            .iter()
            .map(|a| a.get(i).copied().unwrap_or(' '))
            .collect();
        text.push_str(line.trim_end());
        text.push('\n');
    }
    ctx.out.verbatim(&text);
}

pub fn doctor(ctx: &mut Ctx, _args: &Args) {
    let threshold = ctx.client.settings(ctx.shared).latency_monitor_threshold_ms;
    let events = ctx.shared.diagnostics.latency.events.lock();
    let mut text = String::new();
    if events.is_empty() {
        if threshold == 0 {
            text.push_str("The latency monitor is off, so there is nothing to analyze: set latency-monitor-threshold to a number of milliseconds (CONFIG SET latency-monitor-threshold 100) to record events that take at least that long.\n");
        } else {
            let _ = writeln!(
                text,
                "No event took {threshold} ms or more (latency-monitor-threshold) since the monitor was last reset."
            );
        }
    } else {
        let _ = writeln!(
            text,
            "Latency events of at least {threshold} ms (latency-monitor-threshold):\n"
        );
        for (i, (name, e)) in events.iter().enumerate() {
            let n = e.samples.len() as u64;
            let sum: u64 = e.samples.iter().map(|s| s.1).sum();
            let avg = sum / n.max(1);
            let mad = e.samples.iter().map(|s| s.1.abs_diff(avg)).sum::<u64>() / n.max(1);
            let span = match (e.samples.front(), e.samples.back()) {
                (Some(a), Some(b)) if n > 1 => (b.0 - a.0) / (n - 1),
                _ => 0,
            };
            let _ = writeln!(
                text,
                "{}. {name}: {n} spikes kept, average {avg} ms, mean deviation {mad} ms, one every {span} s on average; worst ever {} ms.",
                i + 1,
                e.max
            );
        }
        text.push_str(
            "\nWhat to look at: \"command\" events are slow commands (see SLOWLOG GET); \"fast-command\" events are O(1) or O(log N) commands that were delayed, which points at the machine (CPU steal, swapping, transparent huge pages) more than at the workload; \"expire-cycle\" events are many keys expiring at once.\n",
        );
    }
    drop(events);
    ctx.out.verbatim(&text);
}

fn reply_histogram(ctx: &mut Ctx, c: &CommandSpec, h: &[u64; crate::exec::stats::BUCKETS]) {
    ctx.out.bulk(c.name.as_bytes());
    ctx.out.map(2);
    ctx.out.bulk(b"calls");
    ctx.out.int(h.iter().sum::<u64>() as i64);
    ctx.out.bulk(b"histogram_usec");
    let mut cumulative = 0;
    let mut points = Vec::new();
    for (k, n) in h.iter().enumerate() {
        if *n > 0 {
            cumulative += n;
            points.push((crate::exec::stats::bucket_micros(k), cumulative));
        }
    }
    ctx.out.map(points.len());
    for (micros, count) in points {
        ctx.out.int(micros as i64);
        ctx.out.int(count as i64);
    }
}

pub fn histogram(ctx: &mut Ctx, args: &Args) {
    let totals = crate::exec::stats::totals();
    let has_data = |c: &CommandSpec| {
        c.index()
            .is_some_and(|i| totals[i].histogram.iter().any(|n| *n > 0))
    };
    let mut chosen: Vec<&'static CommandSpec> = Vec::new();
    if args.len() == 2 {
        chosen.extend(table::COMMANDS.iter().filter(|c| has_data(c)));
    } else {
        for name in &args[2..] {
            let Some(c) = table::lookup_full(name) else {
                continue;
            };
            let subs = table::subcommands(c);
            for c in std::iter::once(c).chain(subs.iter()) {
                if has_data(c) && !chosen.iter().any(|x| std::ptr::eq(*x, c)) {
                    chosen.push(c);
                }
            }
        }
    }
    ctx.out.map(chosen.len());
    for c in chosen {
        let h = totals[c.index().expect("a table entry")].histogram;
        reply_histogram(ctx, c, &h);
    }
}

pub fn help(ctx: &mut Ctx, _args: &Args) {
    ctx.out.help(&[
        "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "DOCTOR",
        "    Return a human readable latency analysis report.",
        "GRAPH <event>",
        "    Return an ASCII latency graph for the <event> class.",
        "HISTORY <event>",
        "    Return time-latency samples for the <event> class.",
        "LATEST",
        "    Return the latest latency samples for all events.",
        "RESET [<event> ...]",
        "    Reset latency data of one or more <event> classes.",
        "    (default: reset all data for all event classes)",
        "HISTOGRAM [COMMAND ...]",
        "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
        "    If no commands are specified then all histograms are replied.",
        "HELP",
        "    Prints this help.",
    ]);
}

use super::table::cmd;

/// This family's entries of the command table (`commands/table.rs` gathers
/// the families' lists into COMMANDS).
#[rustfmt::skip]
pub(super) const COMMANDS: &[super::table::CommandSpec] = &[
    cmd!("latency", -2, CONTAINER, NOKEYS, "server", "2.8.13", "A container for latency diagnostics commands", NO_HANDLER;
        complexity: "Depends on subcommand."),
    cmd!("latency|latest", 2, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "2.8.13", "Return the latest latency samples for all events.", latest;
        complexity: "O(1)",
        tips: &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"]),
    cmd!("latency|history", 3, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "2.8.13", "Return timestamp-latency samples for the event.", history;
        complexity: "O(1)",
        args: "event:string",
        tips: &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"]),
    cmd!("latency|reset", -2, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "2.8.13", "Reset latency data for one or more events.", reset;
        complexity: "O(1)",
        args: "event:string?*",
        tips: &["request_policy:all_nodes", "response_policy:all_succeeded"]),
    cmd!("latency|doctor", 2, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "2.8.13", "Return a human readable latency analysis report.", doctor;
        complexity: "O(1)",
        tips: &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"]),
    cmd!("latency|graph", 3, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "2.8.13", "Return a latency graph for the event.", graph;
        complexity: "O(1)",
        args: "event:string",
        tips: &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"]),
    cmd!("latency|histogram", -2, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "7.0.0", "Return the cumulative distribution of latencies of a subset of commands or all.", histogram;
        complexity: "O(N) where N is the number of commands with latency information being retrieved.",
        args: "command:string?*",
        tips: &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"]),
    cmd!("latency|help", 2, LOADING_OK | STALE, NOKEYS, "server", "2.8.13", "Show helpful text about the different subcommands.", help;
        complexity: "O(1)"),
];
