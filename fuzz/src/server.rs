//! A BlinkDB server in the fuzzing process: engine, shared state and clients
//! whose bytes go through the same parser and dispatch as a socket's.

use blinkdb_engine::{Engine, EngineOptions};
use blinkdb_server::boot::{CONFIG_CHECKS, CONFIG_SET_EFFECTS};
use blinkdb_server::client::{ClientInfo, Peer};
use blinkdb_server::config::{Config, OPTIONS};
use blinkdb_server::exec::session::Client;
use blinkdb_server::protocol::{Out, RequestParser};
use blinkdb_server::serve::connection::run_commands_for_fuzzing;
use blinkdb_server::server::state::Shared;
use bytes::BytesMut;
use std::sync::Arc;

/// Settings that keep one input within the fuzzer's memory limit: a
/// SETRANGE at 500 MB or a 1 GB Bloom filter is legal but says nothing new.
pub const BOUNDED: &[(&str, &str)] = &[("proto-max-bulk-len", "1mb"), ("bf-max-memory", "4mb"), ("sketch-max-memory", "4mb")];

/// Four databases are enough for SELECT, MOVE, SWAPDB and their range errors,
/// and a server with 16 costs 4096 shards to make for every input.
const DATABASES: &str = "4";

pub struct Server {
    pub shared: Arc<Shared>,
    pub dir: tempfile::TempDir,
    /// Every runtime option's value at start, which `reset` puts back (the
    /// defaults, but for what `new` set: the directory, the pin root...).
    start: Vec<(String, String)>,
}

impl Server {
    /// A server on a fresh scratch directory: no AOF unless `extra` turns it
    /// on, kernel filters off (the pin root is not a bpffs), plus `extra`.
    pub fn new(extra: &[(&str, &str)]) -> Server {
        let dir = crate::scratch_dir();
        let data = dir.path().to_str().expect("utf-8 path").to_string();
        let pins = format!("{data}/pins");
        let mut args: Vec<String> = vec![
            "--dir".into(),
            data,
            "--appendonly".into(),
            "no".into(),
            "--bpf-pin-root".into(),
            pins,
            "--databases".into(),
            DATABASES.into(),
        ];
        for (k, v) in BOUNDED.iter().chain(extra) {
            args.push(format!("--{k}"));
            args.push(v.to_string());
        }
        let config = Config::from_args(&args, CONFIG_CHECKS).expect("fuzz server config");
        let s = config.settings();
        let engine = Arc::new(Engine::new(EngineOptions {
            databases: s.databases,
            data_dir: s.dir.clone(),
            bpf_pin_root: s.bpf_pin_root.clone(),
            existence_filter_size: s.existence_filter_size,
        }));
        let start = OPTIONS
            .iter()
            .filter(|o| o.mutable)
            .map(|o| (o.name.to_string(), config.get(o.name).to_string()))
            .collect();
        let shared = Shared::new(engine, config, Box::new(|_| {}), CONFIG_SET_EFFECTS).into_arc();
        Server { shared, dir, start }
    }

    pub fn connect(&self) -> Conn {
        let id = self.shared.clients.next_id();
        let info = Arc::new(ClientInfo::new(
            id,
            format!("127.0.0.1:{}", 40000 + id),
            "127.0.0.1:6379".into(),
            10 + id as i32,
            Peer::Tcp(std::net::Ipv4Addr::LOCALHOST.into()),
            self.shared.clock(),
        ));
        self.shared.clients.register(info.clone());
        Conn {
            client: Client::new(info.clone(), &self.shared),
            parser: RequestParser::default(),
            inbuf: BytesMut::new(),
            out: Out::new(2),
            info,
        }
    }

    /// Empties every database and, if the last input ran CONFIG, puts every
    /// runtime option back to its start-up value: the state a fresh server has, at a
    /// fraction of the cost of making one, so that a server serves many inputs.
    pub fn reset(&self, configured: bool) {
        if configured {
            self.reset_config();
        }
        self.shared.stats.reset();
        let engine = &self.shared.engine;
        if (0..engine.databases()).any(|db| engine.db(db).len() > 0) {
            let mut conn = self.connect();
            let mut req = Vec::new();
            crate::encode_request(&[b"FLUSHALL".to_vec()], &mut req);
            conn.feed(self, &req);
            assert_eq!(&conn.out.buf[..], b"+OK\r\n", "FLUSHALL");
            conn.close(self);
        }
    }

    fn reset_config(&self) {
        self.shared
            .config_set(&self.start, true)
            .expect("start-up settings");
    }

    /// Puts back the memory bounds a CONFIG SET may have lifted.
    pub fn rebound(&self) {
        let pairs: Vec<(String, String)> = BOUNDED
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        self.shared
            .config_set(&pairs, true)
            .expect("bounded settings");
    }
}

/// One client connection without a socket.
pub struct Conn {
    pub client: Client,
    pub parser: RequestParser,
    pub inbuf: BytesMut,
    pub out: Out,
    pub info: Arc<ClientInfo>,
}

impl Conn {
    /// Delivers `bytes` as one socket read; returns true when the server
    /// would close the connection after writing its replies.
    pub fn feed(&mut self, server: &Server, bytes: &[u8]) -> bool {
        self.inbuf.extend_from_slice(bytes);
        run_commands_for_fuzzing(
            &server.shared,
            &mut self.client,
            &mut self.parser,
            &mut self.inbuf,
            &mut self.out,
        )
    }

    pub fn close(&mut self, server: &Server) {
        blinkdb_server::commands::multi::unwatch_all(&server.shared, &mut self.client);
        server.shared.unregister(self.info.id);
    }
}
