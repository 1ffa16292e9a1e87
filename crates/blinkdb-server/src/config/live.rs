//! The settings handle: the options as set (`Config`, what CONFIG GET and
//! REWRITE read) and their typed form (`Settings`), swapped whole on each
//! change, with a version that lets a connection keep its own copy and
//! refresh it only when it changed. Which effects a change has is the
//! registry's (`hooks.rs`), run by the server around `publish`.

use crate::config::{Config, OnSet, Settings};
use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Sets the log filter's level (CONFIG SET loglevel); the logger's.
pub type LevelSetter = Box<dyn Fn(&str) + Send + Sync>;

/// `S`: the server the CONFIG SET effects are given.
pub struct Live<S: 'static> {
    config: RwLock<Config>,
    settings: RwLock<Arc<Settings>>,
    version: AtomicU64,
    /// What CONFIG SET does when an option changed, registered by the
    /// options' owners (`boot::CONFIG_SET_EFFECTS`), in order.
    pub effects: &'static [OnSet<S>],
    pub on_loglevel: LevelSetter,
}

impl<S> Live<S> {
    pub fn new(
        config: Config,
        settings: Arc<Settings>,
        effects: &'static [OnSet<S>],
        on_loglevel: LevelSetter,
    ) -> Self {
        Live {
            config: RwLock::new(config),
            settings: RwLock::new(settings),
            version: AtomicU64::new(0),
            effects,
            on_loglevel,
        }
    }

    /// The current typed settings (cheap: an Arc clone).
    pub fn settings(&self) -> Arc<Settings> {
        self.settings.read().clone()
    }

    /// Bumped on every change.
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    pub fn config(&self) -> RwLockReadGuard<'_, Config> {
        self.config.read()
    }

    /// The options, held for a change (CONFIG SET is one at a time).
    pub fn config_mut(&self) -> RwLockWriteGuard<'_, Config> {
        self.config.write()
    }

    /// Makes `settings` the current ones.
    pub fn publish(&self, settings: Arc<Settings>) {
        *self.settings.write() = settings;
        self.version.fetch_add(1, Ordering::Release);
    }
}
