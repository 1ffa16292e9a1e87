//! Keeps other clients' commands out while a transaction (EXEC) runs, on
//! every connection thread. Each thread enters its own slot in shared mode
//! for a batch of commands: an uncontended lock on a cache line no other
//! thread touches, so single commands keep their fast path. EXEC takes every
//! slot exclusively, which waits for the batches in progress to end and holds
//! new ones back until it is done. (Locking only the shards of the queued
//! keys would miss commands that reach every shard: KEYS, FLUSHALL, SCAN.)

use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// More slots than connection threads: threads beyond it share a slot, which
/// is still correct (readers share; EXEC takes them all).
const SLOTS: usize = 16;

#[repr(align(128))]
#[derive(Default)]
struct Slot(RwLock<()>);

#[derive(Default)]
pub struct ExecGate {
    slots: [Slot; SLOTS],
}

static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static MY_SLOT: usize = NEXT_SLOT.fetch_add(1, Ordering::Relaxed) % SLOTS;
}

impl ExecGate {
    /// Runs ordinary commands: excluded only by an EXEC.
    pub fn shared(&self) -> RwLockReadGuard<'_, ()> {
        self.slots[MY_SLOT.with(|s| *s)].0.read()
    }

    /// Runs ordinary commands unless a script is past its busy threshold
    /// (`busy`): then returns None at once, or within a few milliseconds
    /// for a thread already waiting, so that the caller can answer BUSY.
    /// A script that pauses on this very thread would otherwise never be
    /// resumed.
    pub fn shared_unless(&self, busy: &AtomicBool) -> Option<RwLockReadGuard<'_, ()>> {
        let slot = &self.slots[MY_SLOT.with(|s| *s)].0;
        if let Some(g) = slot.try_read() {
            return Some(g);
        }
        loop {
            if busy.load(Ordering::Acquire) {
                return None;
            }
            if let Some(g) = slot.try_read_for(Duration::from_millis(2)) {
                return Some(g);
            }
        }
    }

    /// Runs alone. The caller must not hold `shared` on this thread.
    pub fn exclusive(&self) -> Vec<RwLockWriteGuard<'_, ()>> {
        self.slots.iter().map(|s| s.0.write()).collect()
    }

    fn lock_all(&self) {
        for s in &self.slots {
            std::mem::forget(s.0.write());
        }
    }

    /// # Safety
    /// Only for the locks `lock_all` took and leaked.
    unsafe fn unlock_all(&self) {
        for s in &self.slots {
            s.0.force_unlock_write();
        }
    }
}

/// The exclusive mode held by a script, which may outlive the call that
/// took it (a script past its busy threshold is resumed on later turns of
/// its connection's event loop). Released when dropped.
/// It keeps alive what holds the gate (the server's shared state) without
/// naming it, so that the gate sits below the state that holds it.
pub struct ExclusiveToken(Arc<dyn HoldsGate>);

/// What holds the server's gate (`state::Shared`).
pub trait HoldsGate: Send + Sync {
    fn gate(&self) -> &ExecGate;
}

impl ExclusiveToken {
    /// The caller must not hold `shared` on this thread.
    pub fn take(holder: Arc<dyn HoldsGate>) -> Self {
        holder.gate().lock_all();
        ExclusiveToken(holder)
    }
}

impl Drop for ExclusiveToken {
    fn drop(&mut self) {
        // SAFETY: `take` locked every slot and leaked the guards; this
        // token is their only owner and is dropped once.
        unsafe { self.0.gate().unlock_all() }
    }
}

#[cfg(test)]
mod tests {
    use super::ExecGate;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    #[test]
    fn exclusive_sections_see_no_shared_section_running() {
        let gate = Arc::new(ExecGate::default());
        let inside = Arc::new(AtomicU64::new(0));
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let (gate, inside) = (gate.clone(), inside.clone());
                std::thread::spawn(move || {
                    for i in 0..2000 {
                        if (i + t) % 50 == 0 {
                            let _g = gate.exclusive();
                            assert_eq!(inside.load(Ordering::SeqCst), 0);
                        } else {
                            let _g = gate.shared();
                            inside.fetch_add(1, Ordering::SeqCst);
                            std::hint::spin_loop();
                            inside.fetch_sub(1, Ordering::SeqCst);
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }
}
