//! The whole dataset, the keys of every database and the function libraries,
//! taken out and put back as one. The loads that replace it (DEBUG RELOAD,
//! DEBUG LOADAOF, a replica's full sync with `repl-diskless-load swapdb`)
//! keep the old one aside until the new one has loaded, and put it back if
//! the load fails.

use super::state::Shared;

pub struct Aside {
    keys: blinkdb_engine::TakenDataset,
    libraries: crate::scripting::functions::Registry,
}

impl Aside {
    /// Empties keys and libraries. Watchers of present keys and tracking
    /// clients see a flush, as with Redis's emptyData; a running BGSAVE or
    /// rewrite keeps its copy.
    pub fn take(shared: &Shared) -> Self {
        Aside {
            keys: shared.engine.take_dataset(),
            libraries: std::mem::take(&mut *shared.scripting.functions.lock()),
        }
    }

    /// How many keys were set aside.
    pub fn keys(&self) -> u64 {
        self.keys.keys()
    }

    /// The load failed: what it left goes, the old dataset comes back.
    pub fn put_back(self, shared: &Shared) {
        shared.engine.restore_dataset(self.keys);
        *shared.scripting.functions.lock() = self.libraries;
    }

    /// The load succeeded: the old keys are freed off this thread (and off
    /// the serving ones).
    pub fn discard(self, shared: &Shared) {
        shared.engine.drop_dataset(self.keys);
    }

    /// The load succeeded and the old keys must outlive something else
    /// (an AOF rewrite that still names their files): they are handed over.
    pub fn into_keys(self) -> blinkdb_engine::TakenDataset {
        self.keys
    }
}
