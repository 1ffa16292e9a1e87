//! Server commands: CONFIG, INFO, TIME, SHUTDOWN, MEMORY, LASTSAVE.

use super::args::*;
use super::Ctx;
use crate::protocol::Args;
use blinkdb_engine::glob_match;

/// CONFIG GET's answer, as Redis's configGetCommand: a word without glob
/// characters names one option (or an old name), hidden ones too, and is
/// answered under the spelling it was given; a pattern matches the options
/// and old names but never a hidden option. A name already answered (in any
/// case) is not repeated.
fn config_get_pairs(cfg: &crate::config::Config, words: &[&[u8]]) -> Vec<(String, String)> {
    use crate::config::{aliases, find, Config, HIDDEN, OPTIONS};
    let mut pairs: Vec<(String, String)> = Vec::new();
    let mut add = |shown: &str, option: &str| {
        if !pairs.iter().any(|(n, _)| n.eq_ignore_ascii_case(shown)) {
            pairs.push((shown.to_string(), Config::shown(option, cfg.get(option))));
        }
    };
    for word in words {
        if !word.iter().any(|c| b"[*?".contains(c)) {
            let name = String::from_utf8_lossy(word);
            if let Some(def) = find(&name) {
                add(&name, def.name);
            }
            continue;
        }
        for def in OPTIONS.iter().filter(|d| !HIDDEN.contains(&d.name)) {
            if glob_match(word, def.name.as_bytes(), true) {
                add(def.name, def.name);
            }
        }
        for (old, new) in aliases() {
            if glob_match(word, old.as_bytes(), true) {
                add(old, new);
            }
        }
    }
    pairs
}

pub fn config(ctx: &mut Ctx, args: &Args) {
    let sub = String::from_utf8_lossy(args[1]).to_ascii_lowercase();
    match sub.as_str() {
        "get" if args.len() >= 3 => {
            let cfg = ctx.shared.config();
            let pairs = config_get_pairs(&cfg, &args[2..]);
            drop(cfg);
            ctx.out.map(pairs.len());
            for (n, v) in pairs {
                ctx.out.bulk(n.as_bytes());
                ctx.out.bulk(v.as_bytes());
            }
        }
        "set" if args.len() >= 4 && args.len().is_multiple_of(2) => {
            let pairs: Vec<(String, String)> = args[2..]
                .chunks(2)
                .map(|p| {
                    (
                        String::from_utf8_lossy(p[0]).to_ascii_lowercase(),
                        String::from_utf8_lossy(p[1]).into_owned(),
                    )
                })
                .collect();
            let protected = ctx
                .client
                .settings(ctx.shared)
                .enable_protected_configs
                .clone();
            let protected_ok = super::allows(&protected, ctx.client);
            match ctx.shared.config_set(&pairs, protected_ok) {
                Ok(()) => {
                    // A lowered maxmemory-clients (or maxmemory under a
                    // percentage) evicts now, as Redis's CONFIG SET does;
                    // nothing to do while the limit is off.
                    crate::memory::client_eviction::from_command(ctx.shared, &ctx.client.info);
                    ctx.out.ok()
                }
                Err((name, e)) if e == "unknown" => ctx.out.error(&format!(
                    "ERR Unknown option or number of arguments for CONFIG SET - '{name}'"
                )),
                Err((name, e)) => ctx.out.error(&format!(
                    "ERR CONFIG SET failed (possibly related to argument '{name}') - {e}"
                )),
            }
        }
        "resetstat" if args.len() == 2 => {
            ctx.shared.stats.reset();
            crate::exec::stats::reset();
            let engine = &ctx.shared.engine.stats;
            engine
                .evicted_keys
                .store(0, std::sync::atomic::Ordering::Relaxed);
            engine
                .expired_keys
                .store(0, std::sync::atomic::Ordering::Relaxed);
            engine
                .expired_subkeys
                .store(0, std::sync::atomic::Ordering::Relaxed);
            blinkdb_engine::LAZYFREED.store(0, std::sync::atomic::Ordering::Relaxed);
            ctx.shared.replication.feed.reset_stats();
            ctx.shared.memory.eviction.reset();
            for c in [
                &crate::replication::NET_REPL_INPUT,
                &crate::replication::NET_REPL_OUTPUT,
            ] {
                c.store(0, std::sync::atomic::Ordering::Relaxed);
            }
            ctx.out.ok();
        }
        "rewrite" if args.len() == 2 => match ctx
            .shared
            .config()
            .rewrite(false, &super::acl::config_user_lines(ctx.shared))
        {
            Ok(()) => ctx.out.ok(),
            Err(e) => ctx.out.error(&format!("ERR {e}")),
        },
        "get" | "set" | "resetstat" | "rewrite" => ctx.arity_error(&format!("config|{sub}")),
        "help" => {
            let lines = [
                "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "GET <pattern>",
                "    Return parameters matching the glob-like <pattern> and their values.",
                "SET <directive> <value>",
                "    Set the configuration <directive> to <value>.",
                "RESETSTAT",
                "    Reset statistics reported by the INFO command.",
                "REWRITE",
                "    Rewrite the configuration file.",
                "HELP",
                "    Prints this help.",
            ];
            ctx.out.help(&lines);
        }
        _ => ctx.out.error(&format!(
            "ERR unknown subcommand '{}'. Try CONFIG HELP.",
            String::from_utf8_lossy(args[1])
        )),
    }
}

pub fn info(ctx: &mut Ctx, args: &Args) {
    ctx.client.flush_stats(ctx.shared, 0, true);
    let sections: Vec<String> = args[1..]
        .iter()
        .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
        .collect();
    let text = crate::info::render(ctx.shared, &sections);
    ctx.out.verbatim(&text);
}

pub fn time(ctx: &mut Ctx, _args: &Args) {
    let us = blinkdb_engine::now_us();
    ctx.out.array(2);
    ctx.out.bulk((us / 1_000_000).to_string().as_bytes());
    ctx.out.bulk((us % 1_000_000).to_string().as_bytes());
}

pub fn shutdown(ctx: &mut Ctx, args: &Args) {
    for a in &args[1..] {
        let ok = ["nosave", "save", "now", "force", "abort"]
            .iter()
            .any(|o| eq_ic(a, o));
        if !ok {
            return ctx.syntax_error();
        }
        if eq_ic(a, "abort") {
            return ctx.out.error("ERR No shutdown in progress.");
        }
    }
    let has = |o: &str| args[1..].iter().any(|a| eq_ic(a, o));
    if ctx.shared.scripting.is_busy() && !has("nosave") {
        // Past a script's busy threshold only SHUTDOWN NOSAVE stops the
        // server (Redis's shutdownCommand).
        return ctx.out.error(ctx.shared.scripting.busy_error());
    }
    // As Redis: SAVE, or `save` points without NOSAVE, write the RDB file
    // first; a failed save stops the shutdown unless FORCE.
    let save = has("save") || (!has("nosave") && !ctx.shared.settings().save_points.is_empty());
    tracing::warn!("User requested shutdown...");
    if save {
        tracing::info!("Saving the final RDB snapshot before exiting.");
        if let Err(e) = crate::persistence::rdb_file::save(ctx.shared) {
            tracing::warn!("Error trying to save the DB, can't exit: {e}");
            if !has("force") {
                return ctx.out.error("ERR Errors trying to SHUTDOWN. Check logs.");
            }
        }
    }
    ctx.shared.request_stop();
    ctx.client.close_after_reply = true;
}

pub fn memory(ctx: &mut Ctx, args: &Args) {
    let sub = String::from_utf8_lossy(args[1]).to_ascii_lowercase();
    match sub.as_str() {
        "usage" if args.len() >= 3 => {
            let mut j = 3;
            while j < args.len() {
                if eq_ic(args[j], "samples") && j + 1 < args.len() {
                    match parse_i64(args[j + 1]) {
                        None => return ctx.out.error(ERR_NOT_INT),
                        Some(n) if n < 0 => return ctx.syntax_error(),
                        Some(_) => {}
                    }
                    j += 2;
                } else {
                    return ctx.syntax_error();
                }
            }
            let key = &args[2];
            // What the key costs in RSS: its table slot, heap parts and expiry.
            let engine = &ctx.shared.engine;
            let slot = engine.slot_share(ctx.db(), key);
            let size = engine.peek(ctx.db(), key, |e| e.map(|e| e.usage_bytes(key, slot)));
            match size {
                Some(n) => ctx.out.int(n as i64),
                None => ctx.out.null(),
            }
        }
        "usage" => ctx.arity_error("memory|usage"),
        "help" if args.len() == 2 => {
            let lines = [
                "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "DOCTOR",
                "    Return memory problems reports.",
                "MALLOC-STATS",
                "    Return internal statistics report from the memory allocator.",
                "PURGE",
                "    Attempt to purge dirty pages for reclamation by the allocator.",
                "STATS",
                "    Return information about the memory usage of the server.",
                "USAGE <key> [SAMPLES <count>]",
                "    Return memory in bytes used by <key> and its value. Nested values are",
                "    sampled up to <count> times (default: 5, 0 means sample all).",
                "HELP",
                "    Prints this help.",
            ];
            ctx.out.help(&lines);
        }
        "stats" if args.len() == 2 => crate::info::memory::stats(ctx.out, ctx.shared),
        "doctor" if args.len() == 2 => ctx.out.verbatim(&crate::info::memory::doctor(ctx.shared)),
        "malloc-stats" if args.len() == 2 => ctx.out.verbatim(&crate::memory::malloc_stats()),
        "purge" if args.len() == 2 => {
            crate::memory::alloc_count::purge();
            ctx.out.ok()
        }
        _ => ctx.out.error(&format!(
            "ERR unknown subcommand '{}'. Try MEMORY HELP.",
            String::from_utf8_lossy(args[1])
        )),
    }
}

pub fn bgrewriteaof(ctx: &mut Ctx, _args: &Args) {
    match crate::persistence::start_rewrite(&ctx.shared.arc()) {
        Ok(()) => ctx
            .out
            .simple("Background append only file rewriting started"),
        Err(e) => ctx.out.error(e),
    }
}

/// SAVE: the dataset to `dir/dbfilename` now (see rdb_file::save).
pub fn save(ctx: &mut Ctx, _args: &Args) {
    match crate::persistence::rdb_file::save(ctx.shared) {
        Ok(()) => ctx.out.ok(),
        Err(e) => ctx.out.error(&e),
    }
}

/// BGSAVE [SCHEDULE] (see rdb_file::bgsave).
pub fn bgsave(ctx: &mut Ctx, args: &Args) {
    let schedule = match args.get(1) {
        None => false,
        Some(a) if a.eq_ignore_ascii_case(b"schedule") && args.len() == 2 => true,
        Some(_) => return ctx.syntax_error(),
    };
    let shared = ctx.shared.arc();
    match crate::persistence::rdb_file::bgsave(&shared, schedule) {
        Ok(text) => ctx.out.simple(text),
        Err(e) => ctx.out.error(&e),
    }
}

pub fn lastsave(ctx: &mut Ctx, _args: &Args) {
    ctx.out
        .int((ctx.persistence().last_save_ms() / 1000) as i64);
}

/// One MODULE LIST entry: the Bloom commands BlinkDB serves itself, named
/// and versioned as RedisBloom, so that tools checking for the `bf` module
/// find it (its path is this server's executable).
pub fn reply_module(out: &mut crate::protocol::Out) {
    let path = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    out.map(4);
    out.bulk(b"name");
    out.bulk(super::table::MODULE_NAME.as_bytes());
    out.bulk(b"ver");
    out.int(super::table::MODULE_VERSION as i64);
    out.bulk(b"path");
    out.bulk(path.as_bytes());
    out.bulk(b"args");
    out.array(0);
}

pub fn module_list(ctx: &mut Ctx, _args: &Args) {
    ctx.out.array(1);
    reply_module(ctx.out);
}

pub fn module_help(ctx: &mut Ctx, _args: &Args) {
    ctx.out.help(&[
        "MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "LIST",
        "    Return a list of loaded modules.",
        "LOAD <path> [<arg> ...]",
        "    Load a module library from <path>, passing to it any optional arguments.",
        "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
        "    Load a module library from <path>, while passing it module configurations and optional arguments.",
        "UNLOAD <name>",
        "    Unload a module.",
        "HELP",
        "    Prints this help.",
    ]);
}

/// MODULE LOAD and LOADEX, past `enable-module-command`: BlinkDB runs no
/// module code, so loading fails, with Redis's text followed by why (and the
/// reason in the log, where Redis's text points).
pub fn module_load(ctx: &mut Ctx, args: &Args) {
    tracing::warn!(
        "Module {} failed to load: BlinkDB does not load modules",
        String::from_utf8_lossy(args[2])
    );
    ctx.out.error(
        "ERR Error loading the extension. Please check the server logs. (BlinkDB does not load modules; its Bloom filter commands are built in)",
    );
}

/// MODULE UNLOAD: only the built-in `bf` module is ever listed, and it stays.
pub fn module_unload(ctx: &mut Ctx, args: &Args) {
    let why = if args[2] == super::table::MODULE_NAME.as_bytes() {
        "the bf module is built into BlinkDB, can't unload"
    } else {
        "no such module with that name"
    };
    ctx.out.error(&format!("ERR Error unloading module: {why}"));
}

/// LOLWUT [VERSION v] [...]: computer art and the version line, drawn as
/// Redis 7.0 draws it for `v` (5: Georg Nees's schotter in Braille dots; 6:
/// a skyline in terminal colors; other versions, and none given on 7.x:
/// the version line alone). The rest of the arguments are the drawing's.
pub fn lolwut(ctx: &mut Ctx, args: &Args) {
    let mut rest = &args[1..];
    let mut asked = None;
    if args.len() >= 3 && eq_ic(args[1], "version") {
        let Some(v) = parse_i64(args[2]) else {
            return ctx.out.error(ERR_NOT_INT);
        };
        // Redis prints it as an unsigned int, "<v>.0.0", and reads that.
        asked = Some(format!("{}.0.0", v as u32));
        rest = &args[3..];
    }
    let v = asked
        .as_deref()
        .unwrap_or(crate::REDIS_COMPAT_VERSION)
        .as_bytes();
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    let (a, dot, c) = (at(0), at(1) == b'.', at(2));
    let numbers = |n: usize| -> Result<Vec<i64>, ()> {
        rest.iter()
            .take(n)
            .map(|a| parse_i64(a).ok_or(()))
            .collect()
    };
    let mut rng = rand::thread_rng();
    let text = if dot && ((a == b'5' && c != b'9') || (a == b'4' && c == b'9')) {
        let Ok(n) = numbers(3) else {
            return ctx.out.error(ERR_NOT_INT);
        };
        let get =
            |i: usize, default: i64, max: i64| n.get(i).copied().unwrap_or(default).clamp(1, max);
        let canvas =
            lolwut_art::schotter(get(0, 66, 1000), get(1, 8, 200), get(2, 12, 200), &mut rng);
        let mut s = canvas.braille();
        s.push_str("\nGeorg Nees - schotter, plotter on paper, 1968. Redis ver. ");
        s
    } else if dot && ((a == b'6' && c != b'9') || (a == b'5' && c == b'9')) {
        let Ok(n) = numbers(2) else {
            return ctx.out.error(ERR_NOT_INT);
        };
        let get = |i: usize, default: i64| n.get(i).copied().unwrap_or(default).clamp(1, 1000);
        let canvas = lolwut_art::skyline(get(0, 80), get(1, 20), &mut rng);
        let mut s = canvas.colors();
        s.push_str("\nDedicated to the 8 bit game developers of past and present.\nOriginal 8 bit image from Plaguemon by hikikomori. Redis ver. ");
        s
    } else {
        "Redis ver. ".to_string()
    };
    ctx.out
        .verbatim(&format!("{text}{}\n", crate::REDIS_COMPAT_VERSION));
}

/// LOLWUT's drawings: a canvas of small colors (0-3), Bresenham lines and
/// rotated squares, and the two renderings.
mod lolwut_art {
    use rand::Rng;
    use std::f64::consts::{FRAC_PI_2, FRAC_PI_4};

    pub struct Canvas {
        width: i32,
        height: i32,
        pixels: Vec<u8>,
    }

    impl Canvas {
        fn new(width: i32, height: i32, color: u8) -> Canvas {
            let size = width.max(0) as usize * height.max(0) as usize;
            Canvas {
                width,
                height,
                pixels: vec![color; size],
            }
        }

        fn set(&mut self, x: i32, y: i32, color: u8) {
            if (0..self.width).contains(&x) && (0..self.height).contains(&y) {
                self.pixels[(x + y * self.width) as usize] = color;
            }
        }

        fn get(&self, x: i32, y: i32) -> u8 {
            if (0..self.width).contains(&x) && (0..self.height).contains(&y) {
                self.pixels[(x + y * self.width) as usize]
            } else {
                0
            }
        }

        fn line(&mut self, (mut x1, mut y1): (i32, i32), (x2, y2): (i32, i32), color: u8) {
            let (dx, dy) = ((x2 - x1).abs(), (y2 - y1).abs());
            let (sx, sy) = (if x1 < x2 { 1 } else { -1 }, if y1 < y2 { 1 } else { -1 });
            let mut err = dx - dy;
            loop {
                self.set(x1, y1, color);
                if x1 == x2 && y1 == y2 {
                    break;
                }
                let e2 = err * 2;
                if e2 > -dy {
                    err -= dy;
                    x1 += sx;
                }
                if e2 < dx {
                    err += dx;
                    y1 += sy;
                }
            }
        }

        /// A square of side `size` centred on x,y, turned by `angle`. The
        /// arithmetic keeps Redis's mix of float and double, so that the
        /// same inputs light the same pixels.
        fn square(&mut self, x: i32, y: i32, size: f32, angle: f32, color: u8) {
            // Redis's literal, shorter than SQRT_2: the same pixels need it.
            #[allow(clippy::approx_constant)]
            let size = ((size as f64 / 1.4142135623) as f32).round();
            let mut k = (FRAC_PI_4 + angle as f64) as f32;
            let mut corners = [(0, 0); 4];
            for c in &mut corners {
                let px = ((k as f64).sin() * size as f64 + x as f64).round() as i32;
                let py = ((k as f64).cos() * size as f64 + y as f64).round() as i32;
                *c = (px, py);
                k = (k as f64 + FRAC_PI_2) as f32;
            }
            for j in 0..4 {
                self.line(corners[j], corners[(j + 1) % 4], color);
            }
        }

        /// Each 2x4 block of pixels as one Braille character (U+2800 plus
        /// the block's dots), rows of blocks on lines.
        pub fn braille(&self) -> String {
            const DOTS: [(i32, i32); 8] = [
                (0, 0),
                (0, 1),
                (0, 2),
                (1, 0),
                (1, 1),
                (1, 2),
                (0, 3),
                (1, 3),
            ];
            let mut s = String::new();
            for y in (0..self.height).step_by(4) {
                for x in (0..self.width).step_by(2) {
                    let mut dots = 0;
                    for (bit, (dx, dy)) in DOTS.iter().enumerate() {
                        if self.get(x + dx, y + dy) != 0 {
                            dots |= 1 << bit;
                        }
                    }
                    s.push(char::from_u32(0x2800 + dots).unwrap_or(' '));
                }
                if y != self.height - 1 {
                    s.push('\n');
                }
            }
            s
        }

        /// Each pixel as a space on its color (black, two grays, white).
        pub fn colors(&self) -> String {
            let mut s = String::new();
            for y in 0..self.height {
                for x in 0..self.width {
                    s.push_str(match self.get(x, y) {
                        1 => "\x1b[0;90;100m \x1b[0m",
                        2 => "\x1b[0;37;47m \x1b[0m",
                        3 => "\x1b[0;97;107m \x1b[0m",
                        _ => "\x1b[0;30;40m \x1b[0m",
                    });
                }
                if y != self.height - 1 {
                    s.push('\n');
                }
            }
            s
        }
    }

    /// A non-negative random int, as C's rand().
    fn rand(rng: &mut impl Rng) -> i32 {
        (rng.gen::<u32>() >> 1) as i32
    }

    /// A random float in [0, 1], as `(float)rand() / RAND_MAX`.
    fn unit(rng: &mut impl Rng) -> f32 {
        rand(rng) as f32 / i32::MAX as f32
    }

    /// Georg Nees's schotter: rows of squares, more disordered row after row.
    pub fn schotter(cols: i64, per_row: i64, per_col: i64, rng: &mut impl Rng) -> Canvas {
        let (per_row, per_col) = (per_row as i32, per_col as i32);
        let width = cols as i32 * 2;
        let padding = if width > 4 { 2 } else { 0 };
        let side = (width - padding * 2) as f32 / per_row as f32;
        let height = (side * per_col as f32 + (padding * 2) as f32) as i32;
        let mut canvas = Canvas::new(width, height, 0);
        for y in 0..per_col {
            for x in 0..per_row {
                let mut sx = (x as f32 * side + side / 2.0 + padding as f32) as i32;
                let mut sy = (y as f32 * side + side / 2.0 + padding as f32) as i32;
                let mut angle = 0.0;
                if y > 1 {
                    let mut r = [0f32; 3];
                    for r in &mut r {
                        *r = unit(rng) / per_col as f32 * y as f32;
                    }
                    for r in &mut r {
                        if rand(rng) % 2 == 1 {
                            *r = -*r;
                        }
                    }
                    angle = r[0];
                    sx = (sx as f32 + r[1] * side / 3.0) as i32;
                    sy = (sy as f32 + r[2] * side / 3.0) as i32;
                }
                canvas.square(sx, sy, side, angle, 1);
            }
        }
        canvas
    }

    struct Building {
        xoff: i32,
        width: i32,
        height: i32,
        windows: bool,
        color: u8,
    }

    fn building(canvas: &mut Canvas, b: &Building, rng: &mut impl Rng) {
        let top = canvas.height - 1;
        let end = top - b.height + 1;
        for y in (end..=top).rev() {
            for x in b.xoff..b.xoff + b.width {
                // The roof is four pixels narrower.
                if y == end && (x <= b.xoff + 1 || x >= b.xoff + b.width - 2) {
                    continue;
                }
                let mut color = b.color;
                let inner =
                    x > b.xoff + 1 && x < b.xoff + b.width - 2 && y > end + 1 && y < top - 1;
                if b.windows && inner {
                    // Windows two pixels wide, one tall, every other place.
                    let (relx, rely) = (x - (b.xoff + 1), y - (end + 1));
                    if (relx / 2) % 2 != 0 && rely % 2 != 0 {
                        loop {
                            color = 1 + (rand(rng) % 2) as u8;
                            if color != b.color {
                                break;
                            }
                        }
                        if relx % 2 != 0 {
                            color = canvas.get(x - 1, y);
                        }
                    }
                }
                canvas.set(x, y, color);
            }
        }
    }

    /// A skyline: two rows of plain gray buildings behind black ones with
    /// lit windows, on a white sky.
    pub fn skyline(cols: i64, rows: i64, rng: &mut impl Rng) -> Canvas {
        let mut canvas = Canvas::new(cols as i32, rows as i32, 3);
        let h = canvas.height;
        for color in [2u8, 1] {
            let mut offset = -10;
            while offset < canvas.width {
                offset += rand(rng) % 8;
                let width = 10 + rand(rng) % 9;
                let height = if color == 2 {
                    h / 2 + (rand(rng) % h) / 2
                } else {
                    h / 2 + (rand(rng) % h) / 3
                };
                let b = Building {
                    xoff: offset,
                    width,
                    height,
                    windows: false,
                    color,
                };
                building(&mut canvas, &b, rng);
                offset += if color == 2 { width / 2 } else { width + 1 };
            }
        }
        let mut offset = -10;
        while offset < canvas.width {
            offset += rand(rng) % 8;
            let mut width = 5 + rand(rng) % 14;
            if width % 4 != 0 {
                width += width % 3;
            }
            let height = h / 3 + (rand(rng) % h) / 2;
            let b = Building {
                xoff: offset,
                width,
                height,
                windows: true,
                color: 0,
            };
            building(&mut canvas, &b, rng);
            offset += width + 5;
        }
        canvas
    }
}

use super::table::cmd;

/// This family's entries of the command table (`commands/table.rs` gathers
/// the families' lists into COMMANDS).
#[rustfmt::skip]
pub(super) const COMMANDS: &[super::table::CommandSpec] = &[
    cmd!("config", -2, CONTAINER, NOKEYS, "server", "2.0.0", "A container for server configuration commands", NO_HANDLER;
        complexity: "Depends on subcommand."),
    cmd!("config|get", -3, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "2.0.0", "Get the values of configuration parameters", config;
        complexity: "O(N) when N is the number of configuration parameters provided",
        args: "parameter:block*(parameter:string)",
        history: &[("7.0.0", "Added the ability to pass multiple pattern parameters in one call")]),
    cmd!("config|set", -4, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "2.0.0", "Set configuration parameters to the given values", config;
        redact: Some(super::monitor::redact_config_set),
        complexity: "O(N) when N is the number of configuration parameters provided",
        args: "parameter_value:block*(parameter:string value:string)",
        history: &[("7.0.0", "Added the ability to set multiple parameters in one call.")],
        tips: &["request_policy:all_nodes", "response_policy:all_succeeded"]),
    cmd!("config|resetstat", 2, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "2.0.0", "Reset the stats returned by INFO", config;
        complexity: "O(1)"),
    cmd!("config|rewrite", 2, ADMIN | NOSCRIPT | LOADING_OK | STALE, NOKEYS, "server", "2.8.0", "Rewrite the configuration file with the in memory configuration", config;
        complexity: "O(1)"),
    cmd!("config|help", 2, LOADING_OK | STALE, NOKEYS, "server", "5.0.0", "Show helpful text about the different subcommands", config;
        complexity: "O(1)"),
    cmd!("info", -1, LOADING_OK | STALE, NOKEYS, "server", "1.0.0", "Get information and statistics about the server", info;
        acl: acl::DANGEROUS,
        complexity: "O(1)",
        args: "section:string?*",
        history: &[("7.0.0", "Added support for taking multiple section arguments.")],
        tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"]),
    cmd!("lolwut", -1, READONLY | FAST, NOKEYS, "server", "5.0.0", "Display some computer art and the Redis version", lolwut;
        args: "version:integer=VERSION?"),
    cmd!("time", 1, LOADING_OK | STALE | FAST, NOKEYS, "server", "2.6.0", "Return the current server time", time;
        complexity: "O(1)",
        tips: &["nondeterministic_output"]),
    cmd!("shutdown", -1, ADMIN | NOSCRIPT | LOADING_OK | STALE | NO_MULTI | ALLOW_BUSY, NOKEYS, "server", "1.0.0", "Synchronously save the dataset to disk and then shut down the server", shutdown;
        complexity: "O(N) when saving, where N is the total number of keys in all databases when saving data, otherwise O(1)",
        args: "nosave_save:oneof?(nosave:NOSAVE save:SAVE) now:NOW?^7.0.0 force:FORCE?^7.0.0 abort:ABORT?^7.0.0",
        history: &[("7.0.0", "Added the `NOW`, `FORCE` and `ABORT` modifiers.")]),
    cmd!("memory", -2, CONTAINER, NOKEYS, "server", "4.0.0", "A container for memory diagnostics commands", NO_HANDLER;
        props: props::NO_TOUCH,
        complexity: "Depends on subcommand."),
    cmd!("memory|doctor", 2, 0, NOKEYS, "server", "4.0.0", "Outputs memory problems report", memory;
        props: props::NO_TOUCH,
        complexity: "O(1)",
        tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"]),
    cmd!("memory|malloc-stats", 2, 0, NOKEYS, "server", "4.0.0", "Show allocator internal stats", memory;
        props: props::NO_TOUCH,
        complexity: "Depends on how much memory is allocated, could be slow",
        tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"]),
    cmd!("memory|purge", 2, 0, NOKEYS, "server", "4.0.0", "Ask the allocator to release memory", memory;
        props: props::NO_TOUCH,
        complexity: "Depends on how much memory is allocated, could be slow",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"]),
    cmd!("memory|stats", 2, 0, NOKEYS, "server", "4.0.0", "Show memory usage details", memory;
        props: props::NO_TOUCH,
        complexity: "O(1)",
        tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"]),
    cmd!("memory|usage", -3, READONLY, (2, 2, 1), "server", "4.0.0", "Estimate the memory usage of a key", memory;
        props: props::NO_TOUCH,
        complexity: "O(N) where N is the number of samples.",
        keys: "RO index:2 range:0:1:0",
        args: "key:key count:integer=SAMPLES?"),
    cmd!("memory|help", 2, LOADING_OK | STALE, NOKEYS, "server", "4.0.0", "Show helpful text about the different subcommands", memory;
        props: props::NO_TOUCH,
        complexity: "O(1)"),
    cmd!("bgrewriteaof", 1, NO_ASYNC_LOADING | ADMIN | NOSCRIPT, NOKEYS, "server", "1.0.0", "Asynchronously rewrite the append-only file", bgrewriteaof;
        complexity: "O(1)"),
    cmd!("save", 1, NO_ASYNC_LOADING | ADMIN | NOSCRIPT | NO_MULTI, NOKEYS, "server", "1.0.0", "Synchronously save the dataset to disk", save;
        complexity: "O(N) where N is the total number of keys in all databases"),
    cmd!("bgsave", -1, NO_ASYNC_LOADING | ADMIN | NOSCRIPT, NOKEYS, "server", "1.0.0", "Asynchronously save the dataset to disk", bgsave;
        complexity: "O(1)",
        args: "schedule:SCHEDULE?^3.2.2",
        history: &[("3.2.2", "Added the `SCHEDULE` option.")]),
    cmd!("lastsave", 1, LOADING_OK | STALE | FAST, NOKEYS, "server", "1.0.0", "Get the UNIX time stamp of the last successful save to disk", lastsave;
        acl: acl::ADMIN | acl::DANGEROUS,
        complexity: "O(1)",
        tips: &["nondeterministic_output"]),
    cmd!("module", -2, CONTAINER, NOKEYS, "server", "4.0.0", "A container for module commands", NO_HANDLER;
        complexity: "Depends on subcommand."),
    cmd!("module|list", 2, ADMIN | NOSCRIPT, NOKEYS, "server", "4.0.0", "List all modules loaded by the server", module_list;
        complexity: "O(N) where N is the number of loaded modules.",
        tips: &["nondeterministic_output_order"]),
    cmd!("module|load", -3, NO_ASYNC_LOADING | ADMIN | NOSCRIPT | PROTECTED_MODULE, NOKEYS, "server", "4.0.0", "Load a module", module_load;
        complexity: "O(1)",
        args: "path:string arg:string?*"),
    cmd!("module|loadex", -3, NO_ASYNC_LOADING | ADMIN | NOSCRIPT | PROTECTED_MODULE, NOKEYS, "server", "7.0.0", "Load a module with extended parameters", module_load;
        complexity: "O(1)",
        args: "path:string configs:block=CONFIG?*+(name:string value:string) args:block=ARGS?*(arg:string)"),
    cmd!("module|unload", 3, NO_ASYNC_LOADING | ADMIN | NOSCRIPT | PROTECTED_MODULE, NOKEYS, "server", "4.0.0", "Unload a module", module_unload;
        complexity: "O(1)",
        args: "name:string"),
    cmd!("module|help", 2, LOADING_OK | STALE, NOKEYS, "server", "5.0.0", "Show helpful text about the different subcommands", module_help;
        complexity: "O(1)"),
];
