//! `Shared<T>`: how a collection's full encoding is held. Cloning shares it
//! (COPY, the AOF rewrite's snapshot of a key, a writer's pre-image: O(1)
//! under the shard lock) and the next change copies it once
//! (`Arc::make_mut`). The compact encodings are not shared: they live in
//! the key's table entry and a clone copies their few bytes (at most the
//! `*-max-listpack-*` limits), which saves the `Arc`'s 64-byte allocation
//! per small key (issue 42).
//!
//! Dropping the last handle of a large one hands it to the lazyfree thread
//! (DEL, overwrite, expiry, FLUSHALL of a 10M-member set must not stall the
//! connection thread), as Redis's lazyfree does past LAZYFREE_THRESHOLD.

use std::mem::ManuallyDrop;
use std::sync::Arc;

/// A full encoding, which knows its member count (for lazyfree).
pub trait Members: Clone + Send + Sync + 'static {
    fn members(&self) -> usize;
}

pub struct Shared<T: Members>(ManuallyDrop<Arc<T>>);

impl<T: Members> Shared<T> {
    pub fn new(v: T) -> Self {
        Shared(ManuallyDrop::new(Arc::new(v)))
    }

    /// The value to change, copied first if another handle shares it.
    pub fn make_mut(&mut self) -> &mut T {
        Arc::make_mut(&mut self.0)
    }

    /// The heap its `Arc` takes (two counts and the value), as malloc
    /// rounds it.
    pub const fn arc_chunk() -> usize {
        super::arc_chunk::<T>()
    }
}

impl<T: Members> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Shared(ManuallyDrop::new(Arc::clone(&self.0)))
    }
}

impl<T: Members> std::ops::Deref for Shared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: Members> Drop for Shared<T> {
    fn drop(&mut self) {
        // SAFETY: the field is taken once, here, and never used after.
        let arc = unsafe { ManuallyDrop::take(&mut self.0) };
        if Arc::strong_count(&arc) == 1 && arc.members() > super::LAZYFREE_THRESHOLD {
            super::free_later(arc);
        }
    }
}
