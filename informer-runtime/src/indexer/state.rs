//! The data behind the indexer's lock: objects by key plus one value -> keys map per index (X4, X8).

use std::collections::HashMap;
use std::sync::Arc;

use super::index::{IndexDef, IndexMap, index_insert, index_refresh, index_remove};
use super::{Error, Result};
use crate::key::ObjectKey;

/// The index values of one object, one slice per index in definition order. The strings are
/// shared with the index maps' keys, so an entry holds no string copies (KR4).
pub(crate) type EntryValues = Box<[Box<[Arc<str>]>]>;

/// Index values computed outside the lock, one `Vec` per index in definition order.
pub(crate) type Computed = Vec<Vec<String>>;

/// A stored object and the index values it was filed under (needed to touch only changed
/// entries on update and delete, X4, without calling the index functions again).
pub(crate) struct Entry<K> {
    pub(crate) obj: Arc<K>,
    pub(crate) values: EntryValues,
}

/// Everything the indexer's single `RwLock` protects (X8).
pub(crate) struct State<K> {
    /// The index definitions; swapped as a whole by `add_indexers`, so writers can tell (by
    /// pointer) whether the values they computed before locking are still for the current set.
    pub(crate) defs: Arc<[IndexDef<K>]>,
    pub(crate) items: HashMap<ObjectKey, Entry<K>>,
    /// Parallel to `defs`.
    pub(crate) indices: Vec<IndexMap<K>>,
    pub(crate) stopped: bool,
}

/// Runs every index function on `obj` (user code: callers do this before taking the write lock).
pub(crate) fn compute<K>(defs: &[IndexDef<K>], obj: &K, key: &str) -> Result<Computed> {
    defs.iter()
        .map(|def| {
            def.func.values(obj).map_err(|source| Error::IndexFn {
                index: def.name.to_string(),
                key: key.to_owned(),
                source,
            })
        })
        .collect()
}

impl<K> State<K> {
    /// An empty state with these index definitions.
    pub(crate) fn empty(defs: Arc<[IndexDef<K>]>, capacity: usize) -> Self {
        let indices = defs.iter().map(|_| IndexMap::new()).collect();
        State {
            defs,
            items: HashMap::with_capacity(capacity),
            indices,
            stopped: false,
        }
    }

    /// The position of the index called `name`.
    pub(crate) fn position(&self, name: &str) -> Result<usize> {
        self.defs
            .iter()
            .position(|d| &*d.name == name)
            .ok_or_else(|| Error::UnknownIndex(name.to_owned()))
    }

    /// Inserts or replaces the object under `key` with its precomputed index values, touching
    /// only the index entries that changed (X4). Returns the previous object.
    pub(crate) fn upsert(&mut self, key: ObjectKey, obj: Arc<K>, new: Computed) -> Option<Arc<K>> {
        debug_assert_eq!(new.len(), self.defs.len());
        let State { items, indices, .. } = self;
        // Reuse the stored key allocation so index sets and the map share one string per object.
        let stored_key = items.get_key_value(key.as_str()).map(|(k, _)| k.clone());
        match stored_key {
            Some(key) => {
                let entry = items.get_mut(key.as_str())?;
                for (i, new_values) in new.iter().enumerate() {
                    let old_values = &entry.values[i];
                    let unchanged = old_values.len() == new_values.len()
                        && old_values.iter().zip(new_values).all(|(a, b)| **a == **b);
                    if unchanged {
                        for v in old_values.iter() {
                            index_refresh(&mut indices[i], v, key.as_str(), &obj);
                        }
                        continue;
                    }
                    for old in old_values.iter() {
                        if !new_values.iter().any(|n| **n == **old) {
                            index_remove(&mut indices[i], old, &key);
                        }
                    }
                    let interned: Vec<Arc<str>> = new_values
                        .iter()
                        .map(|n| match old_values.iter().find(|o| ***o == **n) {
                            Some(o) => {
                                index_refresh(&mut indices[i], o, key.as_str(), &obj);
                                o.clone()
                            }
                            None => index_insert(&mut indices[i], n, &key, &obj),
                        })
                        .collect();
                    entry.values[i] = interned.into_boxed_slice();
                }
                Some(std::mem::replace(&mut entry.obj, obj))
            }
            None => {
                let values: EntryValues = new
                    .iter()
                    .enumerate()
                    .map(|(i, vals)| {
                        vals.iter()
                            .map(|v| index_insert(&mut indices[i], v, &key, &obj))
                            .collect::<Vec<_>>()
                            .into_boxed_slice()
                    })
                    .collect();
                items.insert(key, Entry { obj, values });
                None
            }
        }
    }

    /// Removes the object under `key` and its index entries (X4). Returns it.
    pub(crate) fn remove(&mut self, key: &str) -> Option<Arc<K>> {
        let (key, entry) = self.items.remove_entry(key)?;
        for (i, values) in entry.values.iter().enumerate() {
            for v in values.iter() {
                index_remove(&mut self.indices[i], v, &key);
            }
        }
        Some(entry.obj)
    }

    /// Appends index definitions and back-fills them from `computed` (one entry per stored key,
    /// values for the new definitions only) (X6).
    pub(crate) fn extend_indices(
        &mut self,
        new_defs: Vec<IndexDef<K>>,
        computed: HashMap<ObjectKey, Computed>,
    ) {
        let first_new = self.defs.len();
        let mut defs: Vec<IndexDef<K>> = self.defs.iter().cloned().collect();
        defs.extend(new_defs);
        self.defs = Arc::from(defs);
        self.indices.resize_with(self.defs.len(), IndexMap::new);
        let State { items, indices, .. } = self;
        for (key, entry) in items.iter_mut() {
            let mut values: Vec<Box<[Arc<str>]>> = std::mem::take(&mut entry.values).into_vec();
            let added = computed.get(key.as_str());
            for j in 0..(indices.len() - first_new) {
                let vals = added
                    .and_then(|c| c.get(j))
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                let interned: Vec<Arc<str>> = vals
                    .iter()
                    .map(|v| index_insert(&mut indices[first_new + j], v, key, &entry.obj))
                    .collect();
                values.push(interned.into_boxed_slice());
            }
            entry.values = values.into_boxed_slice();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::indexer::index::IndexFunc;

    fn state() -> State<Vec<&'static str>> {
        let defs: Vec<IndexDef<Vec<&'static str>>> = vec![IndexDef {
            name: Arc::from("tags"),
            func: IndexFunc::Infallible(Arc::new(|v: &Vec<&'static str>| {
                v.iter().map(|s| s.to_string()).collect()
            })),
        }];
        State::empty(Arc::from(defs), 0)
    }

    fn put(state: &mut State<Vec<&'static str>>, key: &str, tags: Vec<&'static str>) {
        let values = compute(&state.defs.clone(), &tags, key).unwrap();
        state.upsert(ObjectKey::parse(key).unwrap(), Arc::new(tags), values);
    }

    #[test]
    fn k4_entries_share_value_strings_with_the_index() {
        let mut st = state();
        put(&mut st, "a", vec!["x"]);
        put(&mut st, "b", vec!["x", "y"]);
        let (interned, _) = st.indices[0].get_key_value("x").unwrap();
        for entry in st.items.values() {
            assert!(Arc::ptr_eq(&entry.values[0][0], interned));
        }
    }

    #[test]
    fn x4_update_keeps_unchanged_values_and_drops_empty_ones() {
        let mut st = state();
        put(&mut st, "a", vec!["x", "y"]);
        let before = st.indices[0].get_key_value("x").unwrap().0.clone();
        put(&mut st, "a", vec!["x", "z"]);
        assert!(Arc::ptr_eq(
            st.indices[0].get_key_value("x").unwrap().0,
            &before
        ));
        let mut values: Vec<&str> = st.indices[0].keys().map(|k| &**k).collect();
        values.sort();
        assert_eq!(values, ["x", "z"]);
        assert!(st.remove("a").is_some());
        assert!(st.indices[0].is_empty());
        assert!(st.items.is_empty());
    }
}
