//! The delta FIFO between the reflector and the informer's processing loop (D1–D9).
//!
//! [`DeltaFifo<K>`] is client-go's `DeltaFIFO`: every key holds its own list of [`Delta`]s and
//! appears in the queue once, in first-enqueue order (D2). The reflector writes into it through
//! [`ReflectorStore`]; the informer pops keys with [`DeltaFifo::pop_batch`] and processes
//! the deltas **without** the queue lock held (D9 \[ours\]), so the reflector never waits on
//! one item's processing or on handlers; it waits only when the consumer is
//! [`max_queued_deltas`](DeltaFifoBuilder::max_queued_deltas) behind (D12).
//!
//! [`FifoMode::Ordered`] swaps the keyed queue for client-go's `RealFIFO` log (D10) behind the
//! same API; the keyed mode is the default (D11, see `.notes/fifo-ordered-mode.md`).
//!
//! ```
//! # async fn demo() {
//! use std::sync::Arc;
//! use informer_runtime::delta_fifo::{Delta, DeltaFifo};
//! use informer_runtime::indexer::Indexer;
//! use informer_runtime::store::ReflectorStore;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! # let cm = |n: &str| ConfigMap { metadata: kube::api::ObjectMeta { name: Some(n.into()),
//! #     namespace: Some("ns".into()), ..Default::default() }, ..Default::default() };
//!
//! let store = Arc::new(Indexer::<ConfigMap>::new());
//! let fifo = DeltaFifo::builder().known_objects(store.clone()).build();
//! fifo.replace(vec![cm("a"), cm("b")], "10".into()).unwrap();
//! while !fifo.has_synced() {
//!     for popped in fifo.pop_batch(16, false).await.expect("not closed") {
//!         for delta in popped.deltas() {
//!             match delta {
//!                 Delta::Deleted(gone) => { store.delete_key(popped.key().as_str()); }
//!                 other => { store.upsert(popped.key().clone(), other.object().unwrap().clone()).unwrap(); }
//!             }
//!         }
//!         popped.done(); // D7: counts as processed only now
//!     }
//! }
//! assert_eq!(store.len(), 2);
//! # }
//! ```

mod delta;
mod in_flight;
mod keyed;
mod known;
mod ordered;
mod queue;
mod room;
mod settled;
mod versions;

use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use tokio::sync::Notify;

pub use delta::{DeletedFinalStateUnknown, DeletedObject, Delta, DeltaType, Deltas};
pub use known::KnownObjects;

use crate::key::ObjectKey;
use crate::store::{Keyed, ReflectorStore, StoreError};
use keyed::KeyedQueue;
use ordered::OrderedQueue;
use queue::{DeltaQueue, populate};

/// A transform applied to each object queued by `add`, `update`, `delete` or `replace` (D8): it
/// mutates in place and must be idempotent. It never runs for `Sync` deltas of a resync, nor for
/// tombstones. Behind a reflector it runs earlier, as each object is decoded (see
/// [`DeltaFifo`]'s transform timing), so it runs once per object either way.
pub type TransformFn<K> = Arc<dyn Fn(&mut K) + Send + Sync + 'static>;

/// How the FIFO orders deltas across keys (D10, D11). Both modes hand out the same
/// [`Popped`] (one key's deltas, oldest first), so the consumer cannot tell them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum FifoMode {
    /// client-go's `DeltaFIFO` (the default): per-key coalescing in first-enqueue order, delete
    /// dedup, memory bounded by the key count (D2–D6, D11).
    #[default]
    Coalescing,
    /// client-go's `RealFIFO` (D10): a log of every delta in arrival order, deletes always
    /// queued, relist tombstones before the listed items. Memory grows with the event count, up
    /// to the bound at which the reflector stops reading its watch (D12; client-go blocks its
    /// writers at 2000 queued deltas, ours wait asynchronously). A failed key's deltas go back
    /// to the front of the log.
    Ordered,
}

/// The FIFO's state behind its mutex: what both modes share, plus the mode's queue.
struct Locked<K> {
    closed: bool,
    last_resource_version: Option<String>,
    queued: Box<dyn DeltaQueue<K>>,
    /// Queue entries (keys, or log entries in ordered mode) that the last relist's `replace`
    /// left in front of everything queued after it; [`DeltaFifo::pop_batch`] hands them out in
    /// one batch, so the relist reaches the store as one swap (V2).
    relist_barrier: usize,
    /// Popped entries not yet finished (done or requeued): while any is out, the store does not
    /// yet reflect the FIFO's last resource version (K4).
    in_flight: usize,
    /// A reflector waits in [`ReflectorStore::room`] for the queue to drain (D12).
    room_wanted: bool,
}

/// The delta FIFO (D1–D9). Share it behind an `Arc`: the reflector writes, one consumer pops.
///
/// # Transform timing (D8, M8)
///
/// Used directly, the FIFO runs its transform when [`add`](Self::add),
/// [`update`](Self::update), [`delete`](ReflectorStore::delete) or [`replace`](Self::replace)
/// queues an object. Behind a [`Reflector`](crate::reflector::Reflector), the reflector owns the
/// transform: it calls [`ReflectorStore::transform`] on each object as soon as it is decoded, so
/// a large LIST is never held untransformed, and hands the FIFO finished `Arc`s through
/// [`ReflectorStore::add_shared`], [`update_shared`](ReflectorStore::update_shared) and
/// [`replace_shared`](ReflectorStore::replace_shared), which queue them as they are. `delete`
/// always transforms itself, and only when it queues a real `Deleted` (D4), since the reflector
/// never transforms `DELETED` events.
pub struct DeltaFifo<K> {
    queue: Mutex<Locked<K>>,
    known: Option<Arc<dyn KnownObjects<K>>>,
    emit_replaced: bool,
    transform: RwLock<Option<TransformFn<K>>>,
    /// Wakes the single consumer; `notify_one` keeps a permit, so no wake-up is lost.
    item_ready: Notify,
    /// Wakes `wait_synced` callers when `has_synced` flips or the FIFO closes.
    synced: Notify,
    /// Wakes [`wait_progress`](DeltaFifo::wait_progress): a bookmark arrived while nothing was
    /// queued or in flight (K4).
    progress: Notify,
    /// The queued deltas at which [`ReflectorStore::room`] makes the reflector wait; 0 = never
    /// (D12).
    max_queued: usize,
    /// Wakes a reflector waiting in [`ReflectorStore::room`]: the queue drained to half of
    /// `max_queued`, or the FIFO closed (D12).
    room: Notify,
}

/// The default bound on queued deltas at which the reflector stops reading its watch until the
/// consumer has processed half of them (D12; [`DeltaFifoBuilder::max_queued_deltas`]).
pub const DEFAULT_MAX_QUEUED_DELTAS: usize = 1024;

/// Builds a [`DeltaFifo`].
pub struct DeltaFifoBuilder<K> {
    known: Option<Arc<dyn KnownObjects<K>>>,
    emit_replaced: bool,
    transform: Option<TransformFn<K>>,
    mode: FifoMode,
    max_queued: usize,
}

impl<K: crate::object::Meta> DeltaFifoBuilder<K> {
    /// The store the consumer fills (usually the informer's [`Indexer`](crate::indexer::Indexer)):
    /// needed to ignore unknown deletes (D4), tombstone vanished objects on `replace` (D5) and
    /// resync (D6). Without it, `resync` does nothing and `replace` only sees queued keys.
    pub fn known_objects(mut self, known: Arc<dyn KnownObjects<K>>) -> Self {
        self.known = Some(known);
        self
    }

    /// Whether `replace` queues `Replaced` (the default here, as every client-go informer sets)
    /// or `Sync` (client-go's `DeltaFIFO` default, for compatibility) (D5).
    pub fn emit_delta_type_replaced(mut self, emit: bool) -> Self {
        self.emit_replaced = emit;
        self
    }

    /// The transform applied at enqueue time (D8).
    pub fn transform(mut self, transform: TransformFn<K>) -> Self {
        self.transform = Some(transform);
        self
    }

    /// The ordering mode (default [`FifoMode::Coalescing`]).
    pub fn mode(mut self, mode: FifoMode) -> Self {
        self.mode = mode;
        self
    }

    /// The queued deltas (of every key, in either mode) at which a reflector writing into this
    /// FIFO stops reading its watch, until the consumer has popped all but half of them (D12).
    /// Default [`DEFAULT_MAX_QUEUED_DELTAS`]; 0 never stops the reflector. Writes are never
    /// refused: the bound holds back what the reflector reads next, not what it was given.
    pub fn max_queued_deltas(mut self, max: usize) -> Self {
        self.max_queued = max;
        self
    }

    /// Builds the FIFO.
    pub fn build(self) -> DeltaFifo<K> {
        let queued: Box<dyn DeltaQueue<K>> = match self.mode {
            FifoMode::Coalescing => Box::new(KeyedQueue::new()),
            FifoMode::Ordered => Box::new(OrderedQueue::new()),
        };
        DeltaFifo {
            queue: Mutex::new(Locked {
                closed: false,
                last_resource_version: None,
                queued,
                relist_barrier: 0,
                in_flight: 0,
                room_wanted: false,
            }),
            known: self.known,
            emit_replaced: self.emit_replaced,
            transform: RwLock::new(self.transform),
            item_ready: Notify::new(),
            synced: Notify::new(),
            progress: Notify::new(),
            max_queued: self.max_queued,
            room: Notify::new(),
        }
    }
}

/// One popped key, handed to the single consumer (D9). The queue lock is **not** held while it
/// lives. Finish it with [`done`](Self::done) after processing (D7 counts it only then) or
/// [`requeue`](Self::requeue) on failure. Dropping it unfinished counts as `done`.
pub struct Popped<'a, K: crate::object::Meta> {
    fifo: &'a DeltaFifo<K>,
    key: ObjectKey,
    deltas: Deltas<K>,
    initial: usize,
    is_in_initial_list: bool,
    finished: bool,
}

impl<K: crate::object::Meta> Popped<'_, K> {
    /// The key whose deltas these are.
    pub fn key(&self) -> &ObjectKey {
        &self.key
    }

    /// The deltas, oldest first; never empty (D2).
    pub fn deltas(&self) -> &[Delta<K>] {
        &self.deltas
    }

    /// Whether the FIFO had not synced when this key was popped (H3's `is_in_initial_list`).
    pub fn is_in_initial_list(&self) -> bool {
        self.is_in_initial_list
    }

    /// Processing succeeded: the key leaves flight and counts towards `has_synced` (D7).
    pub fn done(mut self) {
        self.finish_done();
    }

    /// Processing failed: put the deltas back (in front of any newer deltas for the key).
    pub fn requeue(mut self) {
        self.finished = true;
        let deltas = std::mem::take(&mut self.deltas);
        self.fifo.requeue(self.key.clone(), deltas, self.initial);
    }

    fn finish_done(&mut self) {
        if !self.finished {
            self.finished = true;
            self.fifo.finish(self.key.as_str(), self.initial);
        }
    }
}

impl<K: crate::object::Meta> Drop for Popped<'_, K> {
    fn drop(&mut self) {
        self.finish_done();
    }
}

impl<K: crate::object::Meta> DeltaFifo<K> {
    /// A builder; defaults: no known objects, replaced-emission on, no transform.
    pub fn builder() -> DeltaFifoBuilder<K> {
        DeltaFifoBuilder {
            known: None,
            emit_replaced: true,
            transform: None,
            mode: FifoMode::default(),
            max_queued: DEFAULT_MAX_QUEUED_DELTAS,
        }
    }

    /// Sets or clears the transform (D8). It applies to objects queued from now on.
    pub fn set_transform(&self, transform: Option<TransformFn<K>>) {
        *self.transform.write() = transform;
    }

    /// Runs the transform (outside the queue lock: it is user code).
    fn apply_transform(&self, obj: &mut K) {
        let transform = self.transform.read().clone();
        if let Some(transform) = transform {
            transform(obj);
        }
    }

    /// Queues `Added` for an object that is not yet transformed: the transform runs once here
    /// (D2, D8). The reflector uses [`ReflectorStore::add_shared`] instead.
    pub fn add(&self, mut obj: K) -> Result<(), StoreError> {
        self.apply_transform(&mut obj);
        let key = ObjectKey::from_resource(&obj)?;
        self.add_shared(key, Arc::new(obj))
    }

    /// Queues `Updated` for an object that is not yet transformed: the transform runs once here
    /// (D2, D8). The reflector uses [`ReflectorStore::update_shared`] instead.
    pub fn update(&self, mut obj: K) -> Result<(), StoreError> {
        self.apply_transform(&mut obj);
        let key = ObjectKey::from_resource(&obj)?;
        self.update_shared(key, Arc::new(obj))
    }

    /// [`ReflectorStore::delete`] keyed here: queues `Deleted` with the final state, unless the
    /// key is neither stored nor queued (D4).
    pub fn delete(&self, obj: K) -> Result<(), StoreError> {
        let key = ObjectKey::from_resource(&obj)?;
        ReflectorStore::delete(self, key, obj)
    }

    /// [`ReflectorStore::replace_shared`] for objects that are not yet transformed: each is
    /// transformed once (D8) and shared ([`ReflectorStore::share`]) first.
    pub fn replace(&self, items: Vec<K>, resource_version: String) -> Result<(), StoreError> {
        let items = items
            .into_iter()
            .map(|mut obj| {
                self.apply_transform(&mut obj);
                let key = ObjectKey::from_resource(&obj)?;
                let obj = self.share(&key, obj);
                Ok((key, obj))
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        self.replace_shared(items, resource_version)
    }

    /// The known object that `obj` is an unchanged copy of: same key, same UID and the same
    /// non-empty resourceVersion. The server changes the resourceVersion on every write, so the
    /// two have the same content (before the transform, which ran on both).
    fn cached_same(&self, key: &ObjectKey, obj: &K) -> Option<Arc<K>> {
        let known = self.known.as_deref()?;
        let rv = obj.object_resource_version().filter(|rv| !rv.is_empty())?;
        let cached = known.get_by_key(key.as_str())?;
        (cached.object_resource_version() == Some(rv) && cached.object_uid() == obj.object_uid())
            .then_some(cached)
    }

    fn enqueue(&self, key: ObjectKey, delta: Delta<K>) -> Result<(), StoreError> {
        let mut queue = self.queue.lock();
        if queue.closed {
            return Err(StoreError::Closed);
        }
        let flipped = populate(&mut *queue.queued);
        queue.queued.queue_action(key, delta);
        drop(queue);
        self.item_ready.notify_one();
        if flipped {
            self.synced.notify_waiters();
        }
        Ok(())
    }

    /// Waits for the next key and hands out up to `max` queued keys at once (V3; client-go's
    /// `PopBatch`), each a [`Popped`] to finish on its own, in pop order. With `atomic`, a
    /// relist's `replace` is handed out whole however large, together with everything queued
    /// before it, so a consumer that applies a batch under one store lock makes the relist one
    /// swap (V2; client-go's atomic `ReplacedAll`). `None` once closed. One consumer only.
    /// Cancel-safe: nothing is taken from the queue unless this resolves.
    pub async fn pop_batch(&self, max: usize, atomic: bool) -> Option<Vec<Popped<'_, K>>> {
        let max = max.max(1);
        loop {
            {
                let mut queue = self.queue.lock();
                if queue.closed {
                    return None;
                }
                let mut batch = Vec::new();
                loop {
                    let wanted = batch.len() < max || (atomic && queue.relist_barrier > 0);
                    if !wanted {
                        break;
                    }
                    let before = queue.queued.len();
                    let Some(item) = queue.queued.pop_front() else {
                        break;
                    };
                    let taken = before.saturating_sub(queue.queued.len()).max(1);
                    queue.relist_barrier = queue.relist_barrier.saturating_sub(taken);
                    queue.in_flight += 1;
                    batch.push(Popped {
                        fifo: self,
                        key: item.key,
                        deltas: item.deltas,
                        initial: item.initial,
                        is_in_initial_list: item.is_in_initial_list,
                        finished: false,
                    });
                }
                if !atomic {
                    queue.relist_barrier = 0;
                }
                if !batch.is_empty() {
                    self.wake_room(&mut queue);
                    return Some(batch);
                }
            }
            self.item_ready.notified().await;
        }
    }

    fn finish(&self, key: &str, initial: usize) {
        let flipped = {
            let mut queue = self.queue.lock();
            queue.in_flight = queue.in_flight.saturating_sub(1);
            queue.queued.finish(key, initial)
        };
        if flipped {
            self.synced.notify_waiters();
        }
    }

    fn requeue(&self, key: ObjectKey, deltas: Deltas<K>, initial: usize) {
        {
            let mut queue = self.queue.lock();
            queue.in_flight = queue.in_flight.saturating_sub(1);
            queue.queued.requeue(key, deltas, initial);
        }
        self.item_ready.notify_one();
    }

    /// Whether every item of the first `replace` (items plus the tombstones it queued) has been
    /// popped **and processed**, or an add/update/delete came first (D7).
    pub fn has_synced(&self) -> bool {
        self.queue.lock().queued.has_synced()
    }

    /// Resolves once [`has_synced`](Self::has_synced) is true (`true`), or the FIFO is closed
    /// before that (`false`). Notification-based, no polling (D7).
    pub async fn wait_synced(&self) -> bool {
        loop {
            let notified = self.synced.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let queue = self.queue.lock();
                if queue.queued.has_synced() {
                    return true;
                }
                if queue.closed {
                    return false;
                }
            }
            notified.await;
        }
    }

    /// Closes the FIFO: pending and later `pop_batch` calls return `None`, writes fail with
    /// [`StoreError::Closed`], `wait_synced` resolves.
    pub fn close(&self) {
        self.queue.lock().closed = true;
        self.item_ready.notify_one();
        self.synced.notify_waiters();
        self.room.notify_waiters();
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.queue.lock().closed
    }

    /// The resource version of the last `replace` or bookmark (D1).
    pub fn last_resource_version(&self) -> Option<String> {
        self.queue.lock().last_resource_version.clone()
    }

    /// Queued units: keys in the keyed mode (memory is bounded by keys, D9), deltas in the
    /// ordered mode.
    pub fn len(&self) -> usize {
        self.queue.lock().queued.len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.queue.lock().queued.len() == 0
    }

    /// The queued keys, in pop order.
    pub fn queued_keys(&self) -> Vec<ObjectKey> {
        self.queue.lock().queued.queued_keys()
    }

    /// A copy of the deltas queued for `key` (Arc clones), if any.
    pub fn queued_deltas(&self, key: &str) -> Option<Deltas<K>> {
        self.queue.lock().queued.queued_deltas(key)
    }
}

impl<K: crate::object::Meta> ReflectorStore<K> for DeltaFifo<K> {
    /// Runs the transform on a freshly decoded object (D8, M8); what the reflector then hands
    /// over is finished and not transformed again.
    fn transform(&self, obj: &mut K) {
        self.apply_transform(obj);
    }

    /// Queues `Added` for a finished object (D2; transformed by the caller, D8).
    fn add_shared(&self, key: ObjectKey, obj: Arc<K>) -> Result<(), StoreError> {
        self.enqueue(key, Delta::Added(obj))
    }

    /// Queues `Updated` for a finished object (D2; transformed by the caller, D8).
    fn update_shared(&self, key: ObjectKey, obj: Arc<K>) -> Result<(), StoreError> {
        self.enqueue(key, Delta::Updated(obj))
    }

    /// Queues `Deleted` with the final state, unless the key is neither stored nor queued (D4);
    /// dedups consecutive deletes (D3).
    fn delete(&self, key: ObjectKey, obj: K) -> Result<(), StoreError> {
        {
            let mut queue = self.queue.lock();
            if queue.closed {
                return Err(StoreError::Closed);
            }
            let flipped = populate(&mut *queue.queued);
            if !queue
                .queued
                .delete_is_known(key.as_str(), self.known.as_deref())
            {
                drop(queue);
                if flipped {
                    self.synced.notify_waiters();
                }
                return Ok(());
            }
        }
        // Only the reflector writes, so the D4 answer cannot go stale while the transform runs.
        // The reflector never pre-transforms deletes, so this is the only transform they get.
        let mut obj = obj;
        self.apply_transform(&mut obj);
        let obj = Arc::new(obj);
        self.enqueue(key, Delta::Deleted(DeletedObject::Known(obj)))
    }

    /// Shares a transformed object. If the known objects hold the same object (same key, same
    /// UID, same non-empty resourceVersion), their `Arc` is returned and `obj` dropped: a relist
    /// then costs memory only for what changed (M8, X7). A reused object keeps the transform it
    /// was cached with; the transform cannot change once the informer runs (H14), and D8
    /// requires it to be idempotent.
    fn share(&self, key: &ObjectKey, obj: K) -> Arc<K> {
        match self.cached_same(key, &obj) {
            Some(cached) => cached,
            None => Arc::new(obj),
        }
    }

    /// D5: `Replaced` (or `Sync`) for every item, then tombstones. The items come keyed.
    fn replace_shared(
        &self,
        list: Vec<Keyed<K>>,
        resource_version: String,
    ) -> Result<(), StoreError> {
        let mut queue = self.queue.lock();
        if queue.closed {
            return Err(StoreError::Closed);
        }
        // V2: only a relist is atomic. Before the first list has been processed nothing reads
        // the cache (F4, C6), and a batch of the whole first list would hold one entry per
        // object beside the FIFO's own for the duration of the sync.
        let relist = queue.queued.has_synced();
        queue
            .queued
            .replace(list, self.emit_replaced, self.known.as_deref());
        queue.relist_barrier = if relist { queue.queued.len() } else { 0 };
        queue.last_resource_version = Some(resource_version);
        let ready = queue.queued.len() > 0;
        drop(queue);
        if ready {
            self.item_ready.notify_one();
        }
        // An empty first list makes `has_synced` true at once.
        self.synced.notify_waiters();
        Ok(())
    }

    /// D6: `Sync` for every stored key without queued deltas. A no-op without known objects.
    fn resync(&self) -> Result<(), StoreError> {
        let Some(known) = self.known.as_deref() else {
            return Ok(());
        };
        let mut queue = self.queue.lock();
        if queue.closed {
            return Err(StoreError::Closed);
        }
        queue.queued.resync(known);
        let ready = queue.queued.len() > 0;
        drop(queue);
        if ready {
            self.item_ready.notify_one();
        }
        Ok(())
    }

    /// Records the resource version; never reaches handlers (D1). When nothing is queued or in
    /// flight it wakes [`wait_progress`](DeltaFifo::wait_progress) (K4).
    fn bookmark(&self, resource_version: &str) {
        let drained = {
            let mut queue = self.queue.lock();
            queue.last_resource_version = Some(resource_version.to_owned());
            queue.queued.len() == 0 && queue.in_flight == 0
        };
        if drained {
            self.progress.notify_one();
        }
    }

    /// Waits while the queue holds [`max_queued_deltas`](DeltaFifoBuilder::max_queued_deltas)
    /// or more deltas, until the consumer has popped all but half of them (D12).
    fn room(&self) -> Option<crate::store::RoomFuture<'_>> {
        self.room_future()
    }
}

impl<K> std::fmt::Debug for DeltaFifo<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let queue = self.queue.lock();
        f.debug_struct("DeltaFifo")
            .field("queued", &queue.queued.len())
            .field("synced", &queue.queued.has_synced())
            .field("initial_remaining", &queue.queued.initial_remaining())
            .field("closed", &queue.closed)
            .finish()
    }
}
