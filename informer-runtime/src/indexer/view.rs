//! A read-only view of the indexer under one read lock: every query in it sees one consistent state (X5, X8).

use std::collections::HashSet;
use std::sync::Arc;

use parking_lot::RwLockReadGuard;

use super::state::State;
use super::{Error, Result};
use crate::key::ObjectKey;

/// A consistent read-only view of an [`Indexer`](super::Indexer), holding its read lock.
///
/// All queries made through one view see the same state: an object and its index entries are
/// always seen together (X8). Readers never block each other, but a view blocks writers while it
/// lives, so keep it short and never write to the same indexer while holding it (that deadlocks).
pub struct ReadView<'a, K> {
    pub(crate) state: RwLockReadGuard<'a, State<K>>,
}

impl<K> ReadView<'_, K> {
    /// The object stored under `key` (a clone of the shared `Arc`, X7).
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.get_by_key(key.as_str())
    }

    /// The object stored under the key string `namespace/name` or `name`.
    pub fn get_by_key(&self, key: &str) -> Option<Arc<K>> {
        self.state.items.get(key).map(|e| e.obj.clone())
    }

    /// Whether an object is stored under `key`.
    pub fn contains_key(&self, key: &str) -> bool {
        self.state.items.contains_key(key)
    }

    /// Every stored object, in unspecified order.
    pub fn list(&self) -> Vec<Arc<K>> {
        self.state.items.values().map(|e| e.obj.clone()).collect()
    }

    /// Every stored `(key, object)` pair, in unspecified order (keys are shared, not rebuilt).
    pub fn entries(&self) -> Vec<(ObjectKey, Arc<K>)> {
        self.state
            .items
            .iter()
            .map(|(k, e)| (k.clone(), e.obj.clone()))
            .collect()
    }

    /// Every stored key, in unspecified order.
    pub fn list_keys(&self) -> Vec<ObjectKey> {
        self.state.items.keys().cloned().collect()
    }

    /// The number of stored objects.
    pub fn len(&self) -> usize {
        self.state.items.len()
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.state.items.is_empty()
    }

    /// The registered index names, in registration order.
    pub fn index_names(&self) -> Vec<String> {
        self.state.defs.iter().map(|d| d.name.to_string()).collect()
    }

    /// The objects whose index `index_name` contains exactly `value` (X5). O(result).
    pub fn by_index(&self, index_name: &str, value: &str) -> Result<Vec<Arc<K>>> {
        let i = self.state.position(index_name)?;
        Ok(match self.state.indices[i].get(value) {
            Some(objs) => objs.values().cloned().collect(),
            None => Vec::new(),
        })
    }

    /// The keys of the objects whose index `index_name` contains exactly `value` (X5).
    pub fn index_keys(&self, index_name: &str, value: &str) -> Result<Vec<ObjectKey>> {
        let i = self.state.position(index_name)?;
        Ok(self.state.indices[i]
            .get(value)
            .map(|objs| objs.keys().cloned().collect())
            .unwrap_or_default())
    }

    /// Every value present in index `index_name` (X5). Values whose key set emptied are gone (X4).
    pub fn list_index_values(&self, index_name: &str) -> Result<Vec<Arc<str>>> {
        let i = self.state.position(index_name)?;
        Ok(self.state.indices[i].keys().cloned().collect())
    }

    /// The number of objects under `value` in index `index_name`, without collecting them.
    pub fn count_by_index(&self, index_name: &str, value: &str) -> Result<usize> {
        let i = self.state.position(index_name)?;
        Ok(self.state.indices[i]
            .get(value)
            .map_or(0, |objs| objs.len()))
    }

    /// The objects filed under **every** given `(index, value)` pair: an AND across indices
    /// (X8 \[ours\]; client-go has none). Cost is O(smallest matching set × number of pairs).
    /// An empty list of pairs matches nothing.
    pub fn by_indices(&self, pairs: &[(&str, &str)]) -> Result<Vec<Arc<K>>> {
        let positions = pairs
            .iter()
            .map(|(name, _)| self.state.position(name))
            .collect::<Result<Vec<_>>>()?;
        let mut sets = Vec::with_capacity(pairs.len());
        for (i, (_, value)) in positions.into_iter().zip(pairs) {
            match self.state.indices[i].get(*value) {
                Some(keys) => sets.push(keys),
                // One empty set makes the intersection empty.
                None => return Ok(Vec::new()),
            }
        }
        sets.sort_by_key(|s| s.len());
        let Some((smallest, rest)) = sets.split_first() else {
            return Ok(Vec::new());
        };
        Ok(smallest
            .iter()
            .filter(|(k, _)| rest.iter().all(|s| s.contains_key(k.as_str())))
            .map(|(_, obj)| obj.clone())
            .collect())
    }

    /// The union, without duplicates, of the objects sharing any of `values` in index
    /// `index_name` (the lookup half of client-go's `Index(name, obj)`).
    pub(crate) fn union_of_values(&self, i: usize, values: &[String]) -> Vec<Arc<K>> {
        let index = &self.state.indices[i];
        match values {
            [] => Vec::new(),
            [one] => index
                .get(one.as_str())
                .map(|objs| objs.values().cloned().collect())
                .unwrap_or_default(),
            many => {
                let mut seen: HashSet<&str> = HashSet::new();
                let mut out = Vec::new();
                for v in many {
                    for (k, obj) in index.get(v.as_str()).into_iter().flatten() {
                        if seen.insert(k.as_str()) {
                            out.push(obj.clone());
                        }
                    }
                }
                out
            }
        }
    }

    /// Runs index `index_name`'s function on `obj` and returns the union of the objects sharing
    /// any of its values (X5). The function runs under this view's read lock; prefer
    /// [`Indexer::index`](super::Indexer::index), which runs it before locking.
    pub fn index(&self, index_name: &str, obj: &K) -> Result<Vec<Arc<K>>> {
        let i = self.state.position(index_name)?;
        let values = self.state.defs[i]
            .func
            .values(obj)
            .map_err(|source| Error::IndexFn {
                index: index_name.to_owned(),
                key: String::new(),
                source,
            })?;
        Ok(self.union_of_values(i, &values))
    }
}
