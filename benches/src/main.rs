//! `blinkdb-loadgen`: a RESP load generator that runs unchanged against BlinkDB and Redis.

mod connection;
mod consumers;
mod options;
mod pace;
mod preload;
mod stats;
mod subscribers;
mod workload;

use std::process::ExitCode;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Instant;

use rand::rngs::SmallRng;
use rand::SeedableRng;

use connection::{run_client, Budget, Connection};
use options::{Options, StopAfter};
use pace::Pace;
use stats::Stats;
use subscribers::Subscribers;
use workload::Workload;

fn main() -> ExitCode {
    let options = match Options::from_args() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("blinkdb-loadgen: {message}");
            return ExitCode::from(2);
        }
    };
    let runtime = if options.threads == 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(options.threads)
            .enable_all()
            .build()
    };
    let runtime = match runtime {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("blinkdb-loadgen: tokio runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(run(&options)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("blinkdb-loadgen: {message}");
            ExitCode::from(1)
        }
    }
}

async fn run(options: &Options) -> Result<(), String> {
    let mut preload_seconds = 0.0;
    if options.preload {
        let started = Instant::now();
        preload::preload(
            &options.host,
            options.port,
            options.clients,
            options.keys,
            options.value_size,
        )
        .await?;
        preload_seconds = started.elapsed().as_secs_f64();
    }

    let subscribers = if options.subscribers > 0 {
        Some(
            Subscribers::start(
                &options.host,
                options.port,
                options.subscribers,
                &options.subscribe_channel,
            )
            .await?,
        )
    } else {
        None
    };

    let consumers = match (&options.consume, options.consumers) {
        (Some(queue), n) if n > 0 => {
            Some(consumers::Consumers::start(&options.host, options.port, n, queue).await?)
        }
        _ => None,
    };

    // Every connection is open before the clock starts, so connect time is not throughput.
    let mut connections = Vec::with_capacity(options.clients);
    for _ in 0..options.clients {
        connections.push(Connection::open(&options.host, options.port).await?);
    }
    let started = Instant::now();
    let budget = Arc::new(match options.stop {
        StopAfter::Requests(n) => Budget::Requests(AtomicU64::new(n)),
        StopAfter::Duration(d) => Budget::Until(started + d),
    });
    let mut tasks = Vec::with_capacity(options.clients);
    for (client_id, connection) in connections.into_iter().enumerate() {
        let mut workload = Workload::new(options, client_id)?;
        let mut rng =
            SmallRng::seed_from_u64(options.seed.wrapping_mul(1_000_003) + client_id as u64);
        let budget = Arc::clone(&budget);
        let pipeline = options.pipeline;
        let pace = options
            .rate
            .map(|rate| Pace::new(rate, options.clients, client_id, started));
        tasks.push(tokio::spawn(async move {
            run_client(
                connection,
                move |buf| workload.write_op(&mut rng, buf),
                pipeline,
                budget,
                pace,
            )
            .await
        }));
    }
    let mut total = Stats::new();
    let mut failure = None;
    for task in tasks {
        match task.await.map_err(|e| format!("client task: {e}"))? {
            Ok(stats) => total.merge(&stats),
            Err(e) => failure = failure.or(Some(e)),
        }
    }
    let seconds = started.elapsed().as_secs_f64().max(1e-9);
    if let Some(e) = failure {
        return Err(e);
    }
    let consumed = match consumers {
        Some(c) => Some(c.finish().await?),
        None => None,
    };
    let subscriber_messages = match &subscribers {
        Some(subscribers) => settled_count(subscribers).await,
        None => 0,
    };

    if options.json {
        let mut report = total.to_json(seconds);
        report["clients"] = options.clients.into();
        report["pipeline"] = options.pipeline.into();
        report["target_rate"] = options.rate.into();
        report["preload_keys"] = if options.preload { options.keys } else { 0 }.into();
        report["preload_seconds"] = preload_seconds.into();
        report["subscribers"] = options.subscribers.into();
        report["subscriber_messages"] = subscriber_messages.into();
        if let Some(c) = &consumed {
            report["consumers"] = options.consumers.into();
            report["consumed"] = c.to_json(seconds);
        }
        println!("{report}");
    } else {
        if options.preload {
            println!("preloaded {} keys in {preload_seconds:.3} s", options.keys);
        }
        println!("{}", total.to_text(seconds));
        if let Some(rate) = options.rate {
            println!("target rate {rate:.0} ops/s");
        }
        if options.subscribers > 0 {
            println!("subscribers received {subscriber_messages} messages");
        }
        if let Some(c) = &consumed {
            println!("consumed (push to pop): {}", c.to_text(seconds));
        }
    }
    Ok(())
}

/// The subscribers' message count once it has stopped growing for 200 ms (messages still in
/// flight when the publishers finish arrive after the clock stopped).
async fn settled_count(subscribers: &Subscribers) -> u64 {
    let mut last = subscribers.received();
    loop {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        let now = subscribers.received();
        if now == last {
            return now;
        }
        last = now;
    }
}
