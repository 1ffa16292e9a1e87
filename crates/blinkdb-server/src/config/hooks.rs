//! Per-option hooks, registered by the module that owns the option (as
//! Dragonfly's config registry): a check that refines an option's value past
//! its kind's check, and what CONFIG SET does when an option changes. Config
//! knows options by kind only; what `save` or `port` mean belongs to their
//! owners, and the server hands the registered hooks to config.

use super::Settings;

/// Checks a value that passed its kind's check (`Kind`) and returns the
/// canonical form stored for it, or the error CONFIG SET and the config file
/// report (Redis's text, without the option's name).
#[derive(Clone, Copy)]
pub struct Check {
    pub option: &'static str,
    pub check: fn(&str) -> Result<String, String>,
}

/// The registered check of `option` applied to its kind-checked value.
pub fn checked(checks: &[Check], option: &str, value: String) -> Result<String, String> {
    match checks.iter().find(|c| c.option == option) {
        Some(c) => (c.check)(&value),
        None => Ok(value),
    }
}

/// When a CONFIG SET effect runs: before the new values are committed (it may
/// refuse the whole CONFIG SET, nothing changed), or after.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    BeforeCommit,
    AfterCommit,
}

/// What CONFIG SET does when one of `options` changed, given the server
/// (`S`), the new typed settings and which options changed. An error names
/// the option it is reported under, and Redis's text. Effects run in the
/// order they are registered, each stage in turn.
pub struct OnSet<S: 'static> {
    pub options: &'static [&'static str],
    pub stage: Stage,
    pub apply: Apply<S>,
}

pub type Apply<S> = fn(&S, &Settings, &dyn Fn(&str) -> bool) -> Result<(), (String, String)>;

/// Runs the effects of `stage` whose options changed, in order; the first
/// error stops them.
pub fn run<S>(
    effects: &[OnSet<S>],
    stage: Stage,
    server: &S,
    settings: &Settings,
    changed: &dyn Fn(&str) -> bool,
) -> Result<(), (String, String)> {
    for e in effects.iter().filter(|e| e.stage == stage) {
        if e.options.iter().any(|o| changed(o)) {
            (e.apply)(server, settings, changed)?;
        }
    }
    Ok(())
}
