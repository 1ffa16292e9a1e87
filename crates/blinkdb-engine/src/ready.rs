//! Keys that may now serve clients blocked on them (Redis's signalKeyAsReady).
//!
//! While any client is blocked (`Engine::blocked`, counted by the server), a
//! write that creates a key of a type clients block on (list, sorted set) notes
//! the key here, on the writing thread. The server takes the notes once the
//! command, transaction or script ends and serves the waiting clients there,
//! before the writer's next command: the same order Redis keeps.

use std::cell::RefCell;

thread_local! {
    static READY: RefCell<Vec<(usize, Box<[u8]>)>> = const { RefCell::new(Vec::new()) };
}

/// Notes `key` of `db` as ready.
pub fn signal(db: usize, key: &[u8]) {
    READY.with(|r| r.borrow_mut().push((db, key.into())));
}

/// Whether anything is noted on this thread.
pub fn pending() -> bool {
    READY.with(|r| !r.borrow().is_empty())
}

/// Takes the keys noted on this thread, in the order they were first noted,
/// each once (a transaction pushing to a key several times made it ready
/// once, as Redis's db->ready_keys keeps it).
pub fn take() -> Vec<(usize, Box<[u8]>)> {
    let mut keys = READY.with(|r| std::mem::take(&mut *r.borrow_mut()));
    if keys.len() > 1 {
        let mut seen = std::collections::HashSet::with_capacity(keys.len());
        keys.retain(|(db, key)| seen.insert((*db, key.clone())));
    }
    keys
}
