//! Generic read-only listers over an informer's indexer (L1–L5).
//!
//! [`Lister<K>`] answers `list(&selector)` and, depending on the kind's scope, `get(name)`
//! (cluster-scoped, L4) or [`namespaced(ns)`](Lister::namespaced) (namespaced kinds, L2, L3).
//! Every result is the shared `Arc<K>` the store holds (L5, X7). Generated listers are thin
//! wrappers over these types.
//!
//! ```
//! use std::sync::Arc;
//! use informer_runtime::indexer::Indexer;
//! use informer_runtime::lister::{Error, Lister};
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::core::Selector;
//!
//! let indexer = Arc::new(Indexer::<ConfigMap>::new());
//! let lister = Lister::from_indexer(indexer);
//! assert!(lister.list(&Selector::default()).is_empty());
//! let err = lister.namespaced("prod").get("missing").unwrap_err();
//! assert!(err.is_not_found());
//! assert_eq!(err.to_string(), "configmaps \"missing\" not found");
//! ```

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use kube::core::{ClusterResourceScope, DynamicResourceScope, Selector};

use crate::indexer::{self, Indexer, NAMESPACE_INDEX};
use crate::key::ObjectKey;
use crate::object::{HasScope, LabelMatcher, Meta};

pub use kube::core::NamespaceScope;

/// Why a lister call failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No object with that name (in that namespace) is cached (L3). Not retryable as such; the
    /// object may appear once the informer sees it. Matches Kubernetes' NotFound message.
    #[error("{group_resource} \"{name}\" not found")]
    NotFound {
        /// The resource that was looked up.
        group_resource: GroupResource,
        /// The name that was looked up.
        name: String,
    },
    /// An index query failed (unknown index name, failing index function).
    #[error(transparent)]
    Index(#[from] indexer::Error),
}

impl Error {
    /// Whether this is [`Error::NotFound`] (L3).
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::NotFound { .. })
    }
}

/// The result type of this module.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A group and a resource (plural), as in `deployments.apps`; the core group is `""`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct GroupResource {
    /// The API group, `""` for the core group.
    pub group: String,
    /// The resource (lowercase plural).
    pub resource: String,
}

impl GroupResource {
    /// A group/resource pair.
    pub fn new(group: impl Into<String>, resource: impl Into<String>) -> Self {
        GroupResource {
            group: group.into(),
            resource: resource.into(),
        }
    }

    /// The group/resource of a statically typed kind, from `kube::Resource` (plural).
    pub fn of<K: kube::Resource<DynamicType = ()>>() -> Self {
        GroupResource::new(K::group(&()), K::plural(&()))
    }
}

impl fmt::Display for GroupResource {
    /// `resource.group`, or `resource` for the core group (as Kubernetes prints it).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.resource)
        } else {
            write!(f, "{}.{}", self.resource, self.group)
        }
    }
}

/// Scopes whose objects are looked up by bare name: cluster-scoped kinds and dynamic objects
/// (L4). Namespaced kinds use [`NamespaceScope`] and [`Lister::namespaced`] instead.
pub trait ClusterScope {}
impl ClusterScope for ClusterResourceScope {}
impl ClusterScope for DynamicResourceScope {}

/// A lister over an informer's indexer (L1–L5). Cheap to clone.
pub struct Lister<K> {
    indexer: Arc<Indexer<K>>,
    group_resource: Arc<GroupResource>,
    /// Warn only once when the namespace index is missing (L2).
    warned_no_namespace_index: Arc<AtomicBool>,
}

impl<K> Clone for Lister<K> {
    fn clone(&self) -> Self {
        Lister {
            indexer: self.indexer.clone(),
            group_resource: self.group_resource.clone(),
            warned_no_namespace_index: self.warned_no_namespace_index.clone(),
        }
    }
}

impl<K> fmt::Debug for Lister<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lister")
            .field("group_resource", &*self.group_resource)
            .finish()
    }
}

/// The objects `objs` produces whose labels match `selector` (L1), reading labels through
/// `meta` (typed and type-erased objects alike). `objs` runs only when something can match:
/// the empty selector returns it unfiltered, and a selector with `key in ()` returns nothing
/// without collecting anything.
pub(crate) fn select_by<T>(
    objs: impl FnOnce() -> Vec<T>,
    selector: &Selector,
    meta: impl Fn(&T) -> &dyn Meta,
) -> Vec<T> {
    if selector.selects_all() {
        return objs();
    }
    let matcher = LabelMatcher::new(selector);
    if matcher.matches_nothing() {
        return Vec::new();
    }
    objs()
        .into_iter()
        .filter(|o| {
            let m = meta(o);
            matcher.matches(|key| m.object_label(key))
        })
        .collect()
}

impl<K: crate::object::Meta> Lister<K> {
    /// A lister over `indexer`, reporting misses for `group_resource` (L3).
    pub fn new(indexer: Arc<Indexer<K>>, group_resource: GroupResource) -> Self {
        Lister {
            indexer,
            group_resource: Arc::new(group_resource),
            warned_no_namespace_index: Arc::new(AtomicBool::new(false)),
        }
    }

    /// A lister over `indexer`, taking the group and plural from the object's source kind
    /// (the kind itself, or a projection's source).
    pub fn from_indexer(indexer: Arc<Indexer<K>>) -> Self
    where
        K: crate::object::Object,
    {
        Self::new(indexer, GroupResource::of::<K::Source>())
    }

    /// The indexer behind this lister.
    pub fn indexer(&self) -> &Arc<Indexer<K>> {
        &self.indexer
    }

    /// The group/resource used in [`Error::NotFound`].
    pub fn group_resource(&self) -> &GroupResource {
        &self.group_resource
    }

    /// Every cached object whose labels match `selector`, in unspecified order (L1). The empty
    /// selector returns everything without matching.
    pub fn list(&self, selector: &Selector) -> Vec<Arc<K>> {
        select_by(|| self.indexer.list(), selector, |o| &**o as &dyn Meta)
    }

    /// The objects under `value` in the index `index_name` (for declarative indexes).
    pub fn by_index(&self, index_name: &str, value: &str) -> Result<Vec<Arc<K>>> {
        Ok(self.indexer.by_index(index_name, value)?)
    }

    /// The objects under every `(index, value)` pair (an AND query, X8 \[ours\]).
    pub fn by_indices(&self, pairs: &[(&str, &str)]) -> Result<Vec<Arc<K>>> {
        Ok(self.indexer.by_indices(pairs)?)
    }

    /// The object stored under the raw key `namespace/name` or `name`.
    pub fn get_by_key(&self, key: &str) -> Result<Arc<K>> {
        self.indexer.get_by_key(key).ok_or_else(|| Error::NotFound {
            group_resource: (*self.group_resource).clone(),
            name: key.rsplit('/').next().unwrap_or(key).to_owned(),
        })
    }

    /// The cluster-scoped object called `name` (L4). Not available for namespaced kinds:
    ///
    /// ```compile_fail
    /// # use std::sync::Arc;
    /// # use informer_runtime::{indexer::Indexer, lister::Lister};
    /// let cms = Lister::from_indexer(Arc::new(Indexer::<k8s_openapi::api::core::v1::ConfigMap>::new()));
    /// cms.get("name"); // error: `NamespaceResourceScope: ClusterScope` is not satisfied
    /// ```
    pub fn get(&self, name: &str) -> Result<Arc<K>>
    where
        K: HasScope,
        <K as HasScope>::Scope: ClusterScope,
    {
        self.indexer
            .get_by_key(name)
            .ok_or_else(|| self.not_found(name))
    }

    /// A lister restricted to namespace `namespace` (L2). `""` means all namespaces, as
    /// client-go's `NamespaceAll`. Not available for cluster-scoped kinds (L4):
    ///
    /// ```compile_fail
    /// # use std::sync::Arc;
    /// # use informer_runtime::{indexer::Indexer, lister::Lister};
    /// let nodes = Lister::from_indexer(Arc::new(Indexer::<k8s_openapi::api::core::v1::Node>::new()));
    /// nodes.namespaced("default"); // error: `ClusterResourceScope: NamespaceScope` is not satisfied
    /// ```
    pub fn namespaced(&self, namespace: &str) -> NamespacedLister<K>
    where
        K: HasScope,
        <K as HasScope>::Scope: NamespaceScope,
    {
        NamespacedLister {
            lister: self.clone(),
            namespace: Arc::from(namespace),
        }
    }

    fn not_found(&self, name: &str) -> Error {
        Error::NotFound {
            group_resource: (*self.group_resource).clone(),
            name: name.to_owned(),
        }
    }

    /// The objects in `namespace` via the namespace index, or a scan (warned once) without it (L2).
    fn list_namespace(&self, namespace: &str) -> Vec<Arc<K>> {
        if namespace.is_empty() {
            return self.indexer.list();
        }
        match self.indexer.by_index(NAMESPACE_INDEX, namespace) {
            Ok(objs) => objs,
            Err(_) => {
                if !self.warned_no_namespace_index.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        resource = %self.group_resource,
                        "namespace index `{NAMESPACE_INDEX}` is missing; namespaced lists scan the whole cache"
                    );
                }
                self.indexer
                    .list()
                    .into_iter()
                    .filter(|o| o.object_namespace() == Some(namespace))
                    .collect()
            }
        }
    }
}

/// A lister restricted to one namespace (L2, L3). Cheap to clone.
pub struct NamespacedLister<K> {
    lister: Lister<K>,
    namespace: Arc<str>,
}

impl<K> Clone for NamespacedLister<K> {
    fn clone(&self) -> Self {
        NamespacedLister {
            lister: self.lister.clone(),
            namespace: self.namespace.clone(),
        }
    }
}

impl<K> fmt::Debug for NamespacedLister<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamespacedLister")
            .field("group_resource", &*self.lister.group_resource)
            .field("namespace", &&*self.namespace)
            .finish()
    }
}

impl<K: crate::object::Meta> NamespacedLister<K> {
    /// The namespace this lister is restricted to.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The objects in this namespace whose labels match `selector` (L1, L2).
    pub fn list(&self, selector: &Selector) -> Vec<Arc<K>> {
        select_by(
            || self.lister.list_namespace(&self.namespace),
            selector,
            |o| &**o as &dyn Meta,
        )
    }

    /// The object `namespace/name`; a miss is [`Error::NotFound`] (L3).
    pub fn get(&self, name: &str) -> Result<Arc<K>> {
        let key = ObjectKey::new(Some(&self.namespace), name);
        self.lister
            .indexer
            .get(&key)
            .ok_or_else(|| self.lister.not_found(name))
    }

    /// The objects of this namespace under `value` in index `index_name`.
    pub fn by_index(&self, index_name: &str, value: &str) -> Result<Vec<Arc<K>>> {
        if self.namespace.is_empty() {
            return self.lister.by_index(index_name, value);
        }
        if self.lister.indexer.has_index(NAMESPACE_INDEX) {
            return self
                .lister
                .by_indices(&[(index_name, value), (NAMESPACE_INDEX, &self.namespace)]);
        }
        let objs = self.lister.by_index(index_name, value)?;
        Ok(objs
            .into_iter()
            .filter(|o| o.object_namespace() == Some(&*self.namespace))
            .collect())
    }
}
