//! Logging through tracing, with Redis's level names and a runtime reload
//! for `CONFIG SET loglevel`.

use tracing_subscriber::{filter::LevelFilter, prelude::*, reload};

fn level(name: &str) -> LevelFilter {
    match name {
        "debug" => LevelFilter::DEBUG,
        "verbose" => LevelFilter::DEBUG,
        "notice" => LevelFilter::INFO,
        "warning" => LevelFilter::WARN,
        "nothing" => LevelFilter::OFF,
        _ => LevelFilter::INFO,
    }
}

/// Installs the global subscriber; returns a function that changes the level.
/// Changes the log level at runtime.
pub use crate::config::live::LevelSetter;

pub fn init(loglevel: &str, logfile: Option<&str>) -> std::io::Result<LevelSetter> {
    let (filter, handle) = reload::Layer::new(level(loglevel));
    let fmt = tracing_subscriber::fmt::layer()
        .with_target(false)
        .with_ansi(false);
    let registry = tracing_subscriber::registry().with(filter);
    match logfile {
        Some(path) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)?;
            registry
                .with(fmt.with_writer(std::sync::Mutex::new(file)))
                .init();
        }
        None => registry.with(fmt.with_writer(std::io::stdout)).init(),
    }
    Ok(Box::new(move |name: &str| {
        let _ = handle.modify(|f| *f = level(name));
    }))
}
