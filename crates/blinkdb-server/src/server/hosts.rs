//! What the modules below `Shared` read of it and ask of it, through their
//! own traits (`persistence::Host`, `info::Host`): the command table, the
//! pipeline, replication and scripting, which they cannot name, are reached
//! from here.

use crate::commands::table::props;
use crate::exec::admit::Verdict;
use crate::exec::session::Client;
use crate::persistence::{Persistence, ReplayKind, Replayer};
use crate::protocol::{Args, Out};
use crate::server::state::Shared;
use std::sync::atomic::Ordering;

impl crate::persistence::Host for Shared {
    type Replayer<'a> = AofReplay<'a>;

    fn persistence(&self) -> &Persistence {
        &self.persistence
    }

    fn replayer(&self) -> AofReplay<'_> {
        AofReplay {
            shared: self,
            client: Client::internal(self, "aof"),
            out: Out::new(2),
        }
    }

    fn replay_kind(&self, name: &[u8]) -> ReplayKind {
        let base = crate::commands::table::lookup(name);
        let has = |p: u32| base.is_some_and(|s| s.has_prop(p));
        if has(props::TX_OPEN) || has(props::RUNS_QUEUE) {
            ReplayKind::Skip
        } else if has(props::LOGGED_VALUES) {
            ReplayKind::LoggedValues
        } else {
            ReplayKind::Run
        }
    }

    fn library_codes(&self) -> Vec<Vec<u8>> {
        crate::scripting::functions::library_codes(self)
    }

    fn restore_functions(&self, codes: &[&[u8]], replace: bool) -> Result<(), String> {
        let payload = crate::scripting::rdb::dump_payload(codes);
        let policy: &[u8] = if replace { b"REPLACE" } else { b"APPEND" };
        run_internal(self, &[b"FUNCTION", b"RESTORE", &payload, policy])
    }
}

impl crate::info::Host for Shared {
    fn stats(&self) -> &crate::info::stats::Stats {
        &self.stats
    }
    fn client_registry(&self) -> &crate::client::registry::Registry {
        &self.clients
    }
    fn pubsub(&self) -> &crate::pubsub::Registry {
        &self.pubsub
    }
    fn notifier(&self) -> &crate::pubsub::notify::Notifier {
        &self.notify
    }
    fn started_ms(&self) -> u64 {
        self.started_ms
    }
    fn run_id(&self) -> &str {
        &self.run_id
    }
    fn config_file(&self) -> Option<String> {
        let config = self.config();
        config.file.as_ref().map(|p| p.display().to_string())
    }
    fn supervised(&self) -> &'static str {
        crate::server::supervise::name()
    }
    fn blocked_clients(&self) -> (usize, usize) {
        (
            self.exec.blocking.blocked_clients() + self.exec.pause.held(),
            self.exec.blocking.timed_clients(),
        )
    }
    fn cluster_nodes(&self) -> Option<usize> {
        self.cluster.as_ref().map(|c| c.state.read().nodes.len())
    }
    fn lua_memory(&self, o: &mut String) {
        self.scripting.info_memory(o)
    }
    fn script_caches(&self) -> ((usize, usize), usize) {
        (
            self.scripting.caches(),
            self.scripting.cached_script_count(),
        )
    }
    fn syncs(&self) -> [u64; 3] {
        let feed = &self.replication.feed;
        [
            &feed.sync_full,
            &feed.sync_partial_ok,
            &feed.sync_partial_err,
        ]
        .map(|c| c.load(Ordering::Relaxed))
    }
    fn repl_net_bytes(&self) -> (u64, u64) {
        (
            crate::replication::NET_REPL_INPUT.load(Ordering::Relaxed),
            crate::replication::NET_REPL_OUTPUT.load(Ordering::Relaxed),
        )
    }
    fn migrate_cached_sockets(&self) -> usize {
        crate::commands::migrate::cached_sockets()
    }
    fn acl_denied(&self) -> [u64; 4] {
        let acl = &self.acl;
        [
            &acl.denied_auth,
            &acl.denied_cmd,
            &acl.denied_key,
            &acl.denied_channel,
        ]
        .map(|c| c.load(Ordering::Relaxed))
    }
    fn module(&self) -> (&'static str, u32) {
        (
            crate::commands::table::MODULE_NAME,
            crate::commands::table::MODULE_VERSION,
        )
    }
    fn section(&self, name: &str, o: &mut String) {
        match name {
            "replication" => crate::replication::info_section(self, o),
            "commandstats" => crate::exec::stats::commandstats_section(o),
            "latencystats" => crate::exec::stats::latencystats_section(&self.settings(), o),
            _ => {}
        }
    }
}

/// Runs one command as an internal client (FUNCTION RESTORE of a file's
/// libraries); its error reply becomes the error.
fn run_internal(shared: &Shared, args: &[&[u8]]) -> Result<(), String> {
    let mut client = Client::internal(shared, "rdb");
    let mut out = Out::new(2);
    let spec = match crate::commands::table::resolve(args) {
        Some(Ok(spec)) => spec,
        _ => return Err("internal command not found".into()),
    };
    let args: Args = args.iter().copied().collect();
    let mut ctx = crate::commands::Ctx {
        shared,
        client: &mut client,
        out: &mut out,
    };
    (spec.handler)(&mut ctx, &args);
    if out.errors > 0 {
        return Err(String::from_utf8_lossy(&out.buf).trim().to_string());
    }
    Ok(())
}

/// The AOF's client: each logged command goes through the one admission
/// path (as `Source::Aof`) and its handler.
pub struct AofReplay<'a> {
    shared: &'a Shared,
    client: Client,
    out: Out,
}

impl Replayer for AofReplay<'_> {
    fn db(&self) -> usize {
        self.client.db
    }

    fn run(&mut self, args: &Args) -> Result<(), String> {
        let (shared, client, out) = (self.shared, &mut self.client, &mut self.out);
        let found = crate::exec::lookup(args);
        let source = crate::exec::Source::Aof;
        let spec = match crate::exec::admit::admit(shared, client, out, args, found, source) {
            Verdict::Run(spec) => spec,
            Verdict::Invalid(why) => return Err(why),
            Verdict::Queue(_) | Verdict::Refused => {
                unreachable!("the AOF's records are not queued or refused")
            }
        };
        let errors = out.errors;
        let mut ctx = crate::commands::Ctx {
            shared,
            client,
            out,
        };
        (spec.handler)(&mut ctx, args);
        if out.errors > errors {
            let settings = shared.settings();
            shared
                .stats
                .unexpected_error_replies
                .fetch_add(1, Ordering::Relaxed);
            let source = crate::exec::propagation::Source::AofLoading;
            if let Err(message) =
                crate::exec::propagation::after_error(&settings, source, &out.buf, args[0])
            {
                crate::exec::propagation::panic(&message);
            }
        }
        out.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use crate::persistence::load;
    use crate::server::state::Shared;
    use blinkdb_engine::{Engine, EngineOptions};
    use std::sync::Arc;

    /// A server whose AOF directory holds `incr` as its only file, loaded.
    fn load_incr(incr: &[u8]) -> (Result<(), String>, Arc<Shared>, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let aof = dir.path().join("appendonlydir");
        std::fs::create_dir_all(&aof).unwrap();
        std::fs::write(
            aof.join("appendonly.aof.manifest"),
            "file appendonly.aof.1.incr.aof seq 1 type i\n",
        )
        .unwrap();
        std::fs::write(aof.join("appendonly.aof.1.incr.aof"), incr).unwrap();
        let args: Vec<String> = ["--dir", dir.path().to_str().unwrap(), "--appendonly", "yes"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let config = Config::from_args(&args, &[]).unwrap();
        let settings = config.settings();
        let engine = Arc::new(Engine::new(EngineOptions {
            databases: settings.databases,
            data_dir: settings.dir.clone(),
            bpf_pin_root: dir.path().join("pins"),
            existence_filter_size: 0,
        }));
        let shared = Shared::new(engine, config, Box::new(|_| {}), &[]).into_arc();
        let loaded = load(&*shared, &settings);
        (loaded, shared, dir)
    }

    #[test]
    fn a_record_with_too_few_arguments_is_refused_not_run() {
        // `*1 SET` reached the SET handler, which indexes args[1] and args[2]:
        // a panic at startup (found reading the replay path for the aof_load
        // fuzz target).
        for record in [
            &b"*1\r\n$3\r\nSET\r\n"[..],
            b"*2\r\n$6\r\nEXPIRE\r\n$1\r\nk\r\n",
        ] {
            let (loaded, _, _dir) = load_incr(record);
            let err = loaded.unwrap_err();
            assert!(err.contains("Wrong number of arguments"), "{err}");
        }
        let (loaded, shared, _dir) = load_incr(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n");
        loaded.unwrap();
        assert_eq!(shared.engine.db(0).len(), 1);
    }
}
