//! Command-line options of `blinkdb-loadgen`.

use std::time::Duration;

use clap::{value_parser, Arg, ArgAction, Command};

/// When a run stops: after a fixed number of operations or after a wall-clock time.
#[derive(Debug, Clone, Copy)]
pub enum StopAfter {
    Requests(u64),
    Duration(Duration),
}

#[derive(Debug, Clone)]
pub struct Options {
    pub host: String,
    pub port: u16,
    pub clients: usize,
    pub pipeline: usize,
    pub stop: StopAfter,
    /// Total operations per second across clients (None: as fast as replies come).
    pub rate: Option<f64>,
    pub keys: u64,
    pub value_size: usize,
    pub set_ratio: f64,
    pub miss_ratio: f64,
    pub preload: bool,
    pub seed: u64,
    pub json: bool,
    pub threads: usize,
    pub commands: Vec<String>,
    pub items: usize,
    pub filters: u64,
    pub subscribers: usize,
    pub subscribe_channel: String,
    pub consumers: usize,
    pub consume: Option<crate::consumers::Queue>,
}

fn command() -> Command {
    Command::new("blinkdb-loadgen")
        .about("RESP load generator: SET/GET mixes or templated commands, HDR latency percentiles")
        .arg(Arg::new("host").long("host").default_value("127.0.0.1"))
        .arg(
            Arg::new("port")
                .long("port")
                .default_value("6379")
                .value_parser(value_parser!(u16)),
        )
        .arg(
            Arg::new("clients")
                .long("clients")
                .default_value("50")
                .value_parser(value_parser!(usize)),
        )
        .arg(
            Arg::new("pipeline")
                .long("pipeline")
                .default_value("1")
                .value_parser(value_parser!(usize))
                .help("operations in flight per connection"),
        )
        .arg(
            Arg::new("requests")
                .long("requests")
                .value_parser(value_parser!(u64))
                .conflicts_with("duration")
                .help("total operations (default 100000)"),
        )
        .arg(
            Arg::new("duration")
                .long("duration")
                .value_parser(value_parser!(f64))
                .help("run for this many seconds instead of a request count"),
        )
        .arg(
            Arg::new("rate")
                .long("rate")
                .value_parser(value_parser!(f64))
                .help(
                    "total operations per second across all clients (a pipeline counts as \
                     --pipeline operations); each client paces an equal share",
                ),
        )
        .arg(
            Arg::new("keys")
                .long("keys")
                .default_value("100000")
                .value_parser(value_parser!(u64))
                .help("keyspace size: hits use key:0..keys, misses key:keys..2*keys"),
        )
        .arg(
            Arg::new("value-size")
                .long("value-size")
                .default_value("3")
                .value_parser(value_parser!(usize)),
        )
        .arg(
            Arg::new("set-ratio")
                .long("set-ratio")
                .default_value("0")
                .value_parser(value_parser!(f64))
                .help("fraction of operations that are SET; the rest are GET"),
        )
        .arg(
            Arg::new("miss-ratio")
                .long("miss-ratio")
                .default_value("0")
                .value_parser(value_parser!(f64))
                .help("fraction of GETs aimed at keys outside the loaded range"),
        )
        .arg(
            Arg::new("preload")
                .long("preload")
                .action(ArgAction::SetTrue)
                .help("SET every key of the keyspace before measuring"),
        )
        .arg(
            Arg::new("seed")
                .long("seed")
                .default_value("1")
                .value_parser(value_parser!(u64)),
        )
        .arg(
            Arg::new("json")
                .long("json")
                .action(ArgAction::SetTrue)
                .help("print one JSON object instead of text"),
        )
        .arg(
            Arg::new("threads")
                .long("threads")
                .default_value("1")
                .value_parser(value_parser!(usize))
                .help("runtime worker threads (1 = single-threaded, like redis-benchmark)"),
        )
        .arg(
            Arg::new("command")
                .long("command")
                .action(ArgAction::Append)
                .help(
                    "command template instead of SET/GET, e.g. 'BF.MADD bf __items__'. \
                     Placeholders: __rand_int__ __rand_filter__ __items__ __seq__. \
                     ' ; ' chains commands into one operation; a leading '@W ' sets a weight",
                ),
        )
        .arg(
            Arg::new("items")
                .long("items")
                .default_value("1")
                .value_parser(value_parser!(usize))
                .help("random items that __items__ expands to (counted for items/s)"),
        )
        .arg(
            Arg::new("filters")
                .long("filters")
                .default_value("1")
                .value_parser(value_parser!(u64))
                .help("range of __rand_filter__"),
        )
        .arg(
            Arg::new("subscribers")
                .long("subscribers")
                .default_value("0")
                .value_parser(value_parser!(usize))
                .help("connections that SUBSCRIBE to --subscribe-channel before the run and count what they receive"),
        )
        .arg(
            Arg::new("subscribe-channel")
                .long("subscribe-channel")
                .default_value("bench:channel"),
        )
        .arg(
            Arg::new("consumers")
                .long("consumers")
                .default_value("0")
                .value_parser(value_parser!(usize))
                .help("connections that pop what the clients push, from --consume, and time each item from push (its __ts__ value) to pop"),
        )
        .arg(
            Arg::new("consume")
                .long("consume")
                .help("what consumers pop: list:KEY (BLPOP) or stream:KEY:GROUP (XREADGROUP + XACK)"),
        )
}

impl Options {
    pub fn from_args() -> Result<Options, String> {
        let m = command().get_matches();
        let stop = match (m.get_one::<u64>("requests"), m.get_one::<f64>("duration")) {
            (_, Some(secs)) if *secs > 0.0 => StopAfter::Duration(Duration::from_secs_f64(*secs)),
            (_, Some(_)) => return Err("--duration must be positive".into()),
            (Some(n), None) => StopAfter::Requests(*n),
            (None, None) => StopAfter::Requests(100_000),
        };
        let options = Options {
            host: m.get_one::<String>("host").cloned().unwrap_or_default(),
            port: *m.get_one("port").unwrap_or(&6379),
            clients: *m.get_one("clients").unwrap_or(&50),
            pipeline: *m.get_one("pipeline").unwrap_or(&1),
            stop,
            rate: m.get_one::<f64>("rate").copied(),
            keys: *m.get_one("keys").unwrap_or(&100_000),
            value_size: *m.get_one("value-size").unwrap_or(&3),
            set_ratio: *m.get_one("set-ratio").unwrap_or(&0.0),
            miss_ratio: *m.get_one("miss-ratio").unwrap_or(&0.0),
            preload: m.get_flag("preload"),
            seed: *m.get_one("seed").unwrap_or(&1),
            json: m.get_flag("json"),
            threads: *m.get_one("threads").unwrap_or(&1),
            commands: m
                .get_many::<String>("command")
                .map(|v| v.cloned().collect())
                .unwrap_or_default(),
            items: *m.get_one("items").unwrap_or(&1),
            filters: *m.get_one("filters").unwrap_or(&1),
            subscribers: *m.get_one("subscribers").unwrap_or(&0),
            subscribe_channel: m
                .get_one::<String>("subscribe-channel")
                .cloned()
                .unwrap_or_default(),
            consumers: *m.get_one("consumers").unwrap_or(&0),
            consume: m
                .get_one::<String>("consume")
                .map(|t| crate::consumers::Queue::parse(t))
                .transpose()?,
        };
        if options.consumers > 0 && options.consume.is_none() {
            return Err("--consumers needs --consume".into());
        }
        options.check()?;
        Ok(options)
    }

    fn check(&self) -> Result<(), String> {
        if self.clients == 0 || self.pipeline == 0 || self.threads == 0 {
            return Err("--clients, --pipeline and --threads must be at least 1".into());
        }
        if let Some(rate) = self.rate {
            if !(rate.is_finite() && rate > 0.0) {
                return Err("--rate must be a positive number of operations per second".into());
            }
        }
        if self.keys == 0 || self.filters == 0 {
            return Err("--keys and --filters must be at least 1".into());
        }
        for (name, ratio) in [
            ("--set-ratio", self.set_ratio),
            ("--miss-ratio", self.miss_ratio),
        ] {
            if !(0.0..=1.0).contains(&ratio) {
                return Err(format!("{name} must be within 0..=1"));
            }
        }
        Ok(())
    }
}
