//! MULTI/EXEC around what a command propagates. A command whose effects are
//! several records (XREADGROUP's XCLAIMs, HGETEX's HDELs) wraps them, as
//! Redis does; inside EXEC's or a script's own MULTI it must not open a
//! second one (a replica refuses a nested MULTI). EXEC and scripts run their
//! commands synchronously on the connection's thread, so the open wrapper is
//! a thread-local set for that span.

use blinkdb_engine::Tx;
use std::cell::Cell;

thread_local! {
    static OPEN: Cell<bool> = const { Cell::new(false) };
}

/// While held, a MULTI this thread logged (EXEC's, a script's) is open.
pub struct Open(bool);

impl Open {
    pub fn begin() -> Self {
        Open(OPEN.with(|o| o.replace(true)))
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        OPEN.with(|o| o.set(self.0));
    }
}

/// Whether a MULTI logged by this thread is open.
pub fn open() -> bool {
    OPEN.with(Cell::get)
}

/// A command's own MULTI before its records, unless one is open.
pub fn multi(tx: &mut Tx, db: usize) {
    if !open() {
        tx.log(db, &[b"MULTI"]);
    }
}

/// The EXEC after a command's records, matching `multi`.
pub fn exec(tx: &mut Tx, db: usize) {
    if !open() {
        tx.log(db, &[b"EXEC"]);
    }
}
