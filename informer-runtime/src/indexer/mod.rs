//! The thread-safe store of an informer: objects by key plus named secondary indices (X1–X8).
//!
//! [`Indexer<K>`] is client-go's `cache.Indexer`: a map from [`ObjectKey`] to the shared
//! `Arc<K>` (X7) plus, for every named index function, a map from index value to the keys
//! filed under it. One `parking_lot::RwLock` guards both, so a reader never sees an object
//! without its index entries (X8). Index functions are user code and run **before** the write
//! lock is taken; the lock is held only to splice precomputed values in.
//!
//! ```
//! use std::sync::Arc;
//! use informer_runtime::indexer::{Indexer, Indexers, NAMESPACE_INDEX};
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::api::ObjectMeta;
//!
//! let indexer = Indexer::<ConfigMap>::builder()
//!     .indexers(Indexers::new().with("by_app", |cm: &ConfigMap| {
//!         cm.metadata.labels.as_ref().and_then(|l| l.get("app").cloned()).into_iter().collect()
//!     }))
//!     .build()?;
//! let cm = ConfigMap {
//!     metadata: ObjectMeta {
//!         name: Some("a".into()),
//!         namespace: Some("prod".into()),
//!         labels: Some([("app".to_string(), "web".to_string())].into()),
//!         ..Default::default()
//!     },
//!     ..Default::default()
//! };
//! indexer.add(Arc::new(cm))?;
//! assert_eq!(indexer.by_index("by_app", "web")?.len(), 1);
//! assert_eq!(indexer.by_index(NAMESPACE_INDEX, "prod")?.len(), 1);
//! assert_eq!(indexer.by_indices(&[("by_app", "web"), (NAMESPACE_INDEX, "dev")])?.len(), 0);
//! # Ok::<(), informer_runtime::indexer::Error>(())
//! ```

mod index;
mod state;
mod view;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use parking_lot::{RwLock, RwLockUpgradableReadGuard};

pub use index::{IndexFn, IndexFnError, IndexFunc, Indexers, NAMESPACE_INDEX, TryIndexFn};
pub use view::ReadView;

use crate::key::{KeyError, ObjectKey};
use index::IndexDef;
use state::{Computed, State, compute};

/// Why an indexer operation failed. None of these are retryable as-is: they report a bad
/// argument, a failing index function, or use after [`Indexer::stop`].
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A query or lister named an index that is not registered (X5).
    #[error("index `{0}` does not exist")]
    UnknownIndex(String),
    /// `add_indexers` or the builder was given a name that is already registered (X6).
    #[error("index `{0}` already exists")]
    DuplicateIndex(String),
    /// `add_indexers` was called after the informer stopped (X6).
    #[error("the indexer is stopped")]
    Stopped,
    /// A fallible index function returned an error; the write was not applied.
    #[error("index function `{index}` failed for object `{key}`: {source}")]
    IndexFn {
        /// The index whose function failed.
        index: String,
        /// The object's key (empty when the object was only queried with, not stored).
        key: String,
        /// The function's error.
        #[source]
        source: IndexFnError,
    },
    /// The object has no usable key (X1).
    #[error(transparent)]
    Key(#[from] KeyError),
}

/// The result type of this module.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// One write of [`Indexer::apply_batch_lenient`].
#[derive(Debug)]
pub enum BatchOp<K> {
    /// Store `obj` under the key (insert or replace).
    Upsert(ObjectKey, Arc<K>),
    /// Remove whatever is stored under the key.
    Delete(ObjectKey),
}

impl<K> Clone for BatchOp<K> {
    fn clone(&self) -> Self {
        match self {
            BatchOp::Upsert(key, obj) => BatchOp::Upsert(key.clone(), Arc::clone(obj)),
            BatchOp::Delete(key) => BatchOp::Delete(key.clone()),
        }
    }
}

/// A thread-safe store of `Arc<K>` by key with named secondary indices (X2–X8).
///
/// Cheap to share behind an `Arc`; every read returns clones of the **same** `Arc<K>` the
/// store holds (X7). See the [module docs](self) for an example.
pub struct Indexer<K> {
    state: RwLock<State<K>>,
}

/// Builds an [`Indexer`]: the namespace index (X3) is on unless turned off.
pub struct IndexerBuilder<K> {
    namespace_index: bool,
    indexers: Indexers<K>,
}

impl<K: crate::object::Meta> IndexerBuilder<K> {
    /// Do not register the [`NAMESPACE_INDEX`] (X3). Namespaced listers then fall back to a
    /// scan (L2).
    pub fn without_namespace_index(mut self) -> Self {
        self.namespace_index = false;
        self
    }

    /// Registers these index functions as well.
    pub fn indexers(mut self, indexers: Indexers<K>) -> Self {
        self.indexers.defs.extend(indexers.defs);
        self
    }

    /// Builds the indexer; a repeated index name is an error (X6).
    pub fn build(self) -> Result<Indexer<K>> {
        let mut defs = Vec::with_capacity(self.indexers.len() + 1);
        if self.namespace_index {
            defs.push(IndexDef {
                name: Arc::from(NAMESPACE_INDEX),
                func: IndexFunc::Namespace(index::namespace_of::<K>),
            });
        }
        defs.extend(self.indexers.defs);
        check_unique(&[], &defs)?;
        Ok(Indexer {
            state: RwLock::new(State::empty(Arc::from(defs), 0)),
        })
    }
}

fn check_unique<K>(existing: &[IndexDef<K>], new: &[IndexDef<K>]) -> Result<()> {
    let mut seen: HashSet<&str> = existing.iter().map(|d| &*d.name).collect();
    for def in new {
        if !seen.insert(&def.name) {
            return Err(Error::DuplicateIndex(def.name.to_string()));
        }
    }
    Ok(())
}

impl<K: crate::object::Meta> Default for Indexer<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: crate::object::Meta> Indexer<K> {
    /// An empty indexer with the [`NAMESPACE_INDEX`] registered (X3).
    pub fn new() -> Self {
        let defs = vec![IndexDef {
            name: Arc::from(NAMESPACE_INDEX),
            func: IndexFunc::Namespace(index::namespace_of::<K>),
        }];
        Indexer {
            state: RwLock::new(State::empty(Arc::from(defs), 0)),
        }
    }

    /// A builder, to add index functions or turn the namespace index off.
    pub fn builder() -> IndexerBuilder<K> {
        IndexerBuilder {
            namespace_index: true,
            indexers: Indexers::new(),
        }
    }

    /// Inserts or replaces `obj` under its key and returns the previous object (so the caller
    /// can tell an add from an update, H2). Only changed index entries are touched (X4).
    ///
    /// Index functions run before the write lock is taken. A failing fallible index function
    /// leaves the store unchanged and returns [`Error::IndexFn`].
    pub fn add(&self, obj: Arc<K>) -> Result<Option<Arc<K>>> {
        let key = ObjectKey::from_resource(&*obj)?;
        self.upsert(key, obj)
    }

    /// Same as [`add`](Self::add): client-go's `Update` is also an upsert.
    pub fn update(&self, obj: Arc<K>) -> Result<Option<Arc<K>>> {
        self.add(obj)
    }

    /// Inserts or replaces `obj` under an already computed `key` (for callers that keyed the
    /// object earlier, such as the informer processing a popped delta).
    pub fn upsert(&self, key: ObjectKey, obj: Arc<K>) -> Result<Option<Arc<K>>> {
        loop {
            let defs = self.state.read().defs.clone();
            let values = compute(&defs, &obj, key.as_str())?;
            let mut state = self.state.write();
            // `add_indexers` ran in between: the values are for an old definition set.
            if !Arc::ptr_eq(&state.defs, &defs) {
                continue;
            }
            return Ok(state.upsert(key, obj, values));
        }
    }

    /// Like [`upsert`](Self::upsert), but the write is always applied: an index whose function
    /// fails (or panics) on `obj` gets no entry for it, as if the function had returned no
    /// values, and the failures are returned beside the previous object.
    ///
    /// This is the informer's rule (our extension of X2, decision record 10): the store follows
    /// the server whatever the user's index functions do, so the cache never keeps an old object
    /// (and its old index entries) that the server has replaced, and handlers are told.
    pub fn upsert_lenient(&self, key: ObjectKey, obj: Arc<K>) -> (Option<Arc<K>>, Vec<Error>) {
        loop {
            let defs = self.state.read().defs.clone();
            let mut failures = Vec::new();
            let values = defs
                .iter()
                .map(|def| {
                    def.func.values(&*obj).unwrap_or_else(|source| {
                        failures.push(Error::IndexFn {
                            index: def.name.to_string(),
                            key: key.as_str().to_owned(),
                            source,
                        });
                        Vec::new()
                    })
                })
                .collect();
            let mut state = self.state.write();
            if !Arc::ptr_eq(&state.defs, &defs) {
                continue;
            }
            return (state.upsert(key, obj, values), failures);
        }
    }

    /// Applies `ops` in order under **one** write lock (V2, V3): a reader sees the store before
    /// the batch or after it, never in between. Returns, per op, the object stored under its key
    /// just before that op (so the caller can tell adds, updates and deletes of absent keys
    /// apart, as with [`upsert_lenient`](Self::upsert_lenient) and
    /// [`delete_key`](Self::delete_key)), and the index function failures (lenient, X2).
    ///
    /// Index functions run for every upsert before the lock is taken (X8: no user code under
    /// the lock).
    pub fn apply_batch_lenient(&self, ops: &[BatchOp<K>]) -> (Vec<Option<Arc<K>>>, Vec<Error>) {
        loop {
            let defs = self.state.read().defs.clone();
            let mut failures = Vec::new();
            // Index values first (user code, outside the lock), paired with their op.
            let prepared: Vec<(BatchOp<K>, state::Computed)> = ops
                .iter()
                .map(|op| {
                    let values = match op {
                        BatchOp::Upsert(key, obj) => defs
                            .iter()
                            .map(|def| {
                                def.func.values(&**obj).unwrap_or_else(|source| {
                                    failures.push(Error::IndexFn {
                                        index: def.name.to_string(),
                                        key: key.as_str().to_owned(),
                                        source,
                                    });
                                    Vec::new()
                                })
                            })
                            .collect(),
                        BatchOp::Delete(_) => Vec::new(),
                    };
                    (op.clone(), values)
                })
                .collect();
            let mut state = self.state.write();
            if !Arc::ptr_eq(&state.defs, &defs) {
                continue;
            }
            let olds = prepared
                .into_iter()
                .map(|(op, values)| match op {
                    BatchOp::Upsert(key, obj) => state.upsert(key, obj, values),
                    BatchOp::Delete(key) => state.remove(key.as_str()),
                })
                .collect();
            return (olds, failures);
        }
    }

    /// Removes `obj`'s key and returns the removed object, if it was stored.
    pub fn delete(&self, obj: &K) -> Result<Option<Arc<K>>> {
        let key = ObjectKey::from_resource(obj)?;
        Ok(self.delete_key(key.as_str()))
    }

    /// Removes the object under `key` (a tombstone's key, say) and returns it, if it was stored.
    pub fn delete_key(&self, key: &str) -> Option<Arc<K>> {
        self.state.write().remove(key)
    }

    /// Atomically replaces the whole content with `objs` and rebuilds every index (X4, X8).
    ///
    /// The new maps are built before the write lock is taken; under the lock they are swapped
    /// in, and the old ones are dropped after it is released. A later duplicate key wins.
    pub fn replace(&self, objs: Vec<Arc<K>>) -> Result<()> {
        let keyed = objs
            .into_iter()
            .map(|obj| Ok((ObjectKey::from_resource(&*obj)?, obj)))
            .collect::<Result<Vec<_>>>()?;
        let old = loop {
            let defs = self.state.read().defs.clone();
            let mut fresh = State::empty(defs.clone(), keyed.len());
            for (key, obj) in &keyed {
                let values = compute(&defs, &**obj, key.as_str())?;
                fresh.upsert(key.clone(), obj.clone(), values);
            }
            let mut state = self.state.write();
            if !Arc::ptr_eq(&state.defs, &defs) {
                continue;
            }
            let old_items = std::mem::replace(&mut state.items, fresh.items);
            let old_indices = std::mem::replace(&mut state.indices, fresh.indices);
            break (old_items, old_indices);
        };
        drop(old);
        Ok(())
    }

    /// Registers more index functions and back-fills them from the stored objects (X6).
    ///
    /// A name that is already registered (or repeated in `indexers`) is
    /// [`Error::DuplicateIndex`]; after [`stop`](Self::stop) it is [`Error::Stopped`]. The new
    /// functions run under an upgradable read lock: readers continue, writers wait.
    pub fn add_indexers(&self, indexers: Indexers<K>) -> Result<()> {
        let state = self.state.upgradable_read();
        if state.stopped {
            return Err(Error::Stopped);
        }
        check_unique(&state.defs, &indexers.defs)?;
        let mut computed: HashMap<ObjectKey, Computed> = HashMap::with_capacity(state.items.len());
        for (key, entry) in &state.items {
            computed.insert(
                key.clone(),
                compute(&indexers.defs, &*entry.obj, key.as_str())?,
            );
        }
        let mut state = RwLockUpgradableReadGuard::upgrade(state);
        state.extend_indices(indexers.defs, computed);
        Ok(())
    }

    /// Marks the indexer stopped (its informer has shut down): `add_indexers` then fails (X6).
    pub fn stop(&self) {
        self.state.write().stopped = true;
    }

    /// Whether [`stop`](Self::stop) was called.
    pub fn is_stopped(&self) -> bool {
        self.state.read().stopped
    }

    /// Runs index `index_name`'s function on `obj` (before locking) and returns the union,
    /// without duplicates, of the stored objects sharing any of its values (X5).
    pub fn index(&self, index_name: &str, obj: &K) -> Result<Vec<Arc<K>>> {
        loop {
            let (defs, i) = {
                let state = self.state.read();
                (state.defs.clone(), state.position(index_name)?)
            };
            let values = defs[i].func.values(obj).map_err(|source| Error::IndexFn {
                index: index_name.to_owned(),
                key: ObjectKey::from_resource(obj)
                    .map(|k| k.to_string())
                    .unwrap_or_default(),
                source,
            })?;
            let view = self.read();
            if !Arc::ptr_eq(&view.state.defs, &defs) {
                continue;
            }
            return Ok(view.union_of_values(i, &values));
        }
    }
}

/// Reads. Each call takes the read lock once; use [`read`](Indexer::read) for several
/// queries that must see the same state.
impl<K> Indexer<K> {
    /// A consistent read-only view holding the read lock (X8).
    pub fn read(&self) -> ReadView<'_, K> {
        ReadView {
            state: self.state.read(),
        }
    }

    /// The object stored under `key`.
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.read().get(key)
    }

    /// The object stored under the key string `namespace/name` or `name`.
    pub fn get_by_key(&self, key: &str) -> Option<Arc<K>> {
        self.read().get_by_key(key)
    }

    /// Whether an object is stored under `key`.
    pub fn contains_key(&self, key: &str) -> bool {
        self.read().contains_key(key)
    }

    /// Every stored object, in unspecified order.
    pub fn list(&self) -> Vec<Arc<K>> {
        self.read().list()
    }

    /// Every stored `(key, object)` pair, in unspecified order: a snapshot for synthetic adds (H5)
    /// without re-keying each object.
    pub fn entries(&self) -> Vec<(ObjectKey, Arc<K>)> {
        self.read().entries()
    }

    /// Every stored key, in unspecified order.
    pub fn list_keys(&self) -> Vec<ObjectKey> {
        self.read().list_keys()
    }

    /// The number of stored objects.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    /// The registered index names, in registration order.
    pub fn index_names(&self) -> Vec<String> {
        self.read().index_names()
    }

    /// Whether an index called `index_name` is registered.
    pub fn has_index(&self, index_name: &str) -> bool {
        self.read().state.position(index_name).is_ok()
    }

    /// The objects filed under exactly `value` in index `index_name` (X5). O(result).
    pub fn by_index(&self, index_name: &str, value: &str) -> Result<Vec<Arc<K>>> {
        self.read().by_index(index_name, value)
    }

    /// The keys filed under exactly `value` in index `index_name` (X5).
    pub fn index_keys(&self, index_name: &str, value: &str) -> Result<Vec<ObjectKey>> {
        self.read().index_keys(index_name, value)
    }

    /// Every value present in index `index_name` (X5).
    pub fn list_index_values(&self, index_name: &str) -> Result<Vec<Arc<str>>> {
        self.read().list_index_values(index_name)
    }

    /// The objects filed under **every** `(index, value)` pair (X8 \[ours\]).
    pub fn by_indices(&self, pairs: &[(&str, &str)]) -> Result<Vec<Arc<K>>> {
        self.read().by_indices(pairs)
    }
}

impl<K> std::fmt::Debug for Indexer<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state.read();
        f.debug_struct("Indexer")
            .field("len", &state.items.len())
            .field(
                "indices",
                &state.defs.iter().map(|d| &*d.name).collect::<Vec<_>>(),
            )
            .field("stopped", &state.stopped)
            .finish()
    }
}
