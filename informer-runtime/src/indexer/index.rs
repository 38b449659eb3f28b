//! Index functions, the set of named indexers, and the built-in namespace index (X2, X3).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::key::ObjectKey;

/// The name of the namespace index every informer registers by default (X3).
pub const NAMESPACE_INDEX: &str = "namespace";

/// The error type a fallible index function returns (see [`Indexers::with_fallible`]).
pub type IndexFnError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// An infallible index function: the values under which an object is indexed (X2).
///
/// It may return several values, or none (the object is then absent from that index).
/// Duplicated values are collapsed.
pub type IndexFn<K> = Arc<dyn Fn(&K) -> Vec<String> + Send + Sync + 'static>;

/// A fallible index function. An error is returned to the caller of the write or query that ran
/// it, and the write is not applied. (client-go panics instead.) An informer cannot refuse the
/// server's state: it stores the object anyway, leaves it out of this index, and logs and counts
/// the error (`SharedIndexInformer::index_errors`). A panic counts as an error.
pub type TryIndexFn<K> =
    Arc<dyn Fn(&K) -> Result<Vec<String>, IndexFnError> + Send + Sync + 'static>;

/// One index function, infallible or fallible.
pub enum IndexFunc<K> {
    /// An index function that cannot fail (X2).
    Infallible(IndexFn<K>),
    /// An index function whose error is returned to the caller.
    Fallible(TryIndexFn<K>),
    /// The built-in namespace index (X3): `metadata.namespace`, or `""` for cluster-scoped
    /// objects, as client-go's `MetaNamespaceIndexFunc`. Computed without a user call.
    Namespace(fn(&K) -> Option<&str>),
}

impl<K> Clone for IndexFunc<K> {
    fn clone(&self) -> Self {
        match self {
            IndexFunc::Infallible(f) => IndexFunc::Infallible(f.clone()),
            IndexFunc::Fallible(f) => IndexFunc::Fallible(f.clone()),
            IndexFunc::Namespace(f) => IndexFunc::Namespace(*f),
        }
    }
}

impl<K> IndexFunc<K> {
    /// Runs the function: the deduplicated values, in first-seen order.
    ///
    /// A panic of the user's function is caught and returned as its error (X2: a panicking
    /// index function is a failing one, never an unwinding writer).
    pub fn values(&self, obj: &K) -> Result<Vec<String>, IndexFnError> {
        let call = |f: &dyn Fn() -> Result<Vec<String>, IndexFnError>| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|panic| {
                let message = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "non-string panic payload".to_string());
                Err(format!("index function panicked: {message}").into())
            })
        };
        let mut values = match self {
            IndexFunc::Infallible(f) => call(&|| Ok(f(obj)))?,
            IndexFunc::Fallible(f) => call(&|| f(obj))?,
            IndexFunc::Namespace(f) => return Ok(vec![f(obj).unwrap_or_default().to_owned()]),
        };
        dedup_in_place(&mut values);
        Ok(values)
    }
}

/// Removes repeated values while keeping first-seen order (index functions may repeat a value).
fn dedup_in_place(values: &mut Vec<String>) {
    if values.len() < 2 {
        return;
    }
    if values.len() <= 8 {
        let mut i = 1;
        while i < values.len() {
            if values[..i].contains(&values[i]) {
                values.remove(i);
            } else {
                i += 1;
            }
        }
    } else {
        let mut seen = HashSet::with_capacity(values.len());
        values.retain(|v| seen.insert(v.clone()));
    }
}

/// A set of named index functions, to pass to [`Indexer::builder`](super::Indexer::builder) or
/// [`Indexer::add_indexers`](super::Indexer::add_indexers).
///
/// ```
/// use informer_runtime::indexer::Indexers;
/// use k8s_openapi::api::core::v1::Pod;
/// let indexers = Indexers::<Pod>::new()
///     .with("by_node", |pod: &Pod| {
///         pod.spec.as_ref().and_then(|s| s.node_name.clone()).into_iter().collect()
///     });
/// assert_eq!(indexers.names().collect::<Vec<_>>(), ["by_node"]);
/// ```
pub struct Indexers<K> {
    pub(crate) defs: Vec<IndexDef<K>>,
}

impl<K> Default for Indexers<K> {
    fn default() -> Self {
        Indexers { defs: Vec::new() }
    }
}

impl<K> Clone for Indexers<K> {
    fn clone(&self) -> Self {
        Indexers {
            defs: self.defs.clone(),
        }
    }
}

impl<K> std::fmt::Debug for Indexers<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl<K> Indexers<K> {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an infallible index function (X2). A repeated name is reported when the set is used.
    pub fn with(
        mut self,
        name: impl Into<String>,
        func: impl Fn(&K) -> Vec<String> + Send + Sync + 'static,
    ) -> Self {
        self.defs.push(IndexDef {
            name: Arc::from(name.into()),
            func: IndexFunc::Infallible(Arc::new(func)),
        });
        self
    }

    /// Adds a fallible index function: its error is returned to the caller of the write
    /// (which is then not applied) or of the query.
    pub fn with_fallible(
        mut self,
        name: impl Into<String>,
        func: impl Fn(&K) -> Result<Vec<String>, IndexFnError> + Send + Sync + 'static,
    ) -> Self {
        self.defs.push(IndexDef {
            name: Arc::from(name.into()),
            func: IndexFunc::Fallible(Arc::new(func)),
        });
        self
    }

    /// Adds an already-built [`IndexFunc`].
    pub fn with_func(mut self, name: impl Into<String>, func: IndexFunc<K>) -> Self {
        self.defs.push(IndexDef {
            name: Arc::from(name.into()),
            func,
        });
        self
    }

    /// The index names, in insertion order.
    pub fn names(&self) -> impl Iterator<Item = &str> + '_ {
        self.defs.iter().map(|d| &*d.name)
    }

    /// The number of index functions.
    pub fn len(&self) -> usize {
        self.defs.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.defs.is_empty()
    }
}

/// A named index function.
pub(crate) struct IndexDef<K> {
    /// The index name used in queries.
    pub(crate) name: Arc<str>,
    /// How to compute the object's values.
    pub(crate) func: IndexFunc<K>,
}

impl<K> Clone for IndexDef<K> {
    fn clone(&self) -> Self {
        IndexDef {
            name: self.name.clone(),
            func: self.func.clone(),
        }
    }
}

/// The namespace index function (X3), as client-go's `MetaNamespaceIndexFunc`: cluster-scoped
/// objects are indexed under `""`.
pub(crate) fn namespace_of<K: crate::object::Meta>(obj: &K) -> Option<&str> {
    obj.object_namespace()
}

/// One index: value -> the objects filed under it, by key. Each key carries the object's `Arc`,
/// so a query clones it straight from the set instead of looking the key up again in the items
/// map: one memory access per result instead of three dependent ones (hash the key string, probe
/// the map, touch the object), which is what makes a namespaced list over a large cache cost
/// O(result) in practice, not only on paper (X5). Every write that replaces an object
/// re-points its entries (see `State::upsert`). A value with no keys is removed (X4).
pub(crate) type IndexMap<K> = HashMap<Arc<str>, HashMap<ObjectKey, Arc<K>>>;

/// Files `obj` under `value` (replacing what `key` pointed to there), reusing the interned value
/// string when it exists; returns the interned value so the object's entry shares it instead of
/// holding a copy (KR4).
pub(crate) fn index_insert<K>(
    map: &mut IndexMap<K>,
    value: &str,
    key: &ObjectKey,
    obj: &Arc<K>,
) -> Arc<str> {
    if let Some((interned, _)) = map.get_key_value(value) {
        let interned = interned.clone();
        if let Some(objs) = map.get_mut(value) {
            objs.insert(key.clone(), obj.clone());
        }
        return interned;
    }
    let interned: Arc<str> = Arc::from(value);
    let mut objs = HashMap::with_capacity(1);
    objs.insert(key.clone(), obj.clone());
    map.insert(interned.clone(), objs);
    interned
}

/// Points `key`'s entry under `value` at `obj`, the object's new version (the value is unchanged).
pub(crate) fn index_refresh<K>(map: &mut IndexMap<K>, value: &str, key: &str, obj: &Arc<K>) {
    if let Some(slot) = map.get_mut(value).and_then(|objs| objs.get_mut(key)) {
        *slot = obj.clone();
    }
}

/// Removes `key` from `value`'s set and drops the value once its set is empty (X4, kubernetes#84959).
pub(crate) fn index_remove<K>(map: &mut IndexMap<K>, value: &str, key: &ObjectKey) {
    if let Some(objs) = map.get_mut(value) {
        objs.remove(key.as_str());
        if objs.is_empty() {
            map.remove(value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn x2_values_are_deduplicated_in_order() {
        let f: IndexFunc<()> =
            IndexFunc::Infallible(Arc::new(|_| vec!["b".into(), "a".into(), "b".into()]));
        assert_eq!(f.values(&()).unwrap(), ["b", "a"]);
        let many: Vec<String> = (0..20).map(|i| (i % 5).to_string()).collect();
        let f: IndexFunc<()> = IndexFunc::Infallible(Arc::new(move |_| many.clone()));
        assert_eq!(f.values(&()).unwrap(), ["0", "1", "2", "3", "4"]);
    }

    #[test]
    fn x2_fallible_error_is_returned() {
        let f: IndexFunc<()> = IndexFunc::Fallible(Arc::new(|_| Err("boom".into())));
        assert_eq!(f.values(&()).unwrap_err().to_string(), "boom");
    }

    #[test]
    fn x4_empty_value_sets_are_removed() {
        let mut map = IndexMap::new();
        let a = ObjectKey::parse("ns/a").unwrap();
        let b = ObjectKey::parse("ns/b").unwrap();
        let v1 = index_insert(&mut map, "v", &a, &Arc::new(1));
        let v2 = index_insert(&mut map, "v", &b, &Arc::new(2));
        assert!(Arc::ptr_eq(&v1, &v2), "value strings are interned");
        index_remove(&mut map, "v", &a);
        assert_eq!(map["v"].len(), 1);
        index_remove(&mut map, "v", &b);
        assert!(map.is_empty());
    }
}
