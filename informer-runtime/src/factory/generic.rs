//! Type-erased informers and listers for `for_resource` (F9) and factory-wide transforms (F8).

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use kube::core::Selector;

use crate::indexer::NAMESPACE_INDEX;
use crate::informer::SharedIndexInformer;
use crate::lister::{self, GroupResource};
use crate::object::Meta;

/// Any cached object, type-erased: its metadata ([`Meta`]), and a downcast to the concrete type.
///
/// Implemented for every [`Meta`] type (every `kube::Resource`, and projections); an `Arc<K>` from a
/// cache converts into an `Arc<dyn AnyObject>` without copying the object (X7). Factory-wide
/// transforms (F8) reach the full `ObjectMeta` through [`Meta::object_meta_mut`], which is `None`
/// for projections.
pub trait AnyObject: Meta + Any {
    /// The object as `Any`, to downcast to its concrete type.
    fn as_any(&self) -> &dyn Any;
    /// The object as mutable `Any`, to downcast to its concrete type.
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<K: Meta> AnyObject for K {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

impl fmt::Debug for dyn AnyObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnyObject")
            .field("namespace", &self.object_namespace())
            .field("name", &self.object_name())
            .finish_non_exhaustive()
    }
}

/// What a generic informer can do without knowing its object type.
trait Erased: Send + Sync {
    fn informer_any(&self) -> Arc<dyn Any + Send + Sync>;
    fn name(&self) -> &str;
    fn has_synced(&self) -> bool;
    fn wait_for_sync(&self) -> futures::future::BoxFuture<'static, bool>;
    fn list(&self) -> Vec<Arc<dyn AnyObject>>;
    fn list_namespace(&self, namespace: &str) -> Vec<Arc<dyn AnyObject>>;
    fn get_by_key(&self, key: &str) -> Option<Arc<dyn AnyObject>>;
    fn is_started(&self) -> bool;
    fn is_stopped(&self) -> bool;
    fn last_store_resource_version(&self) -> Option<String>;
    fn wait_for_store_resource_version(&self, rv: u64)
    -> futures::future::BoxFuture<'static, bool>;
}

struct Typed<K> {
    informer: Arc<SharedIndexInformer<K>>,
}

impl<K> Erased for Typed<K>
where
    K: crate::object::Meta + Clone + serde::de::DeserializeOwned + fmt::Debug,
{
    fn informer_any(&self) -> Arc<dyn Any + Send + Sync> {
        self.informer.clone()
    }
    fn name(&self) -> &str {
        self.informer.name()
    }
    fn has_synced(&self) -> bool {
        self.informer.has_synced()
    }
    fn wait_for_sync(&self) -> futures::future::BoxFuture<'static, bool> {
        let informer = Arc::clone(&self.informer);
        Box::pin(async move { informer.wait_for_sync().await })
    }
    fn list(&self) -> Vec<Arc<dyn AnyObject>> {
        erase(self.informer.indexer().list())
    }
    fn list_namespace(&self, namespace: &str) -> Vec<Arc<dyn AnyObject>> {
        let indexer = self.informer.indexer();
        match indexer.by_index(NAMESPACE_INDEX, namespace) {
            Ok(objs) => erase(objs),
            Err(_) => erase(
                indexer
                    .list()
                    .into_iter()
                    .filter(|o| o.object_namespace() == Some(namespace))
                    .collect(),
            ),
        }
    }
    fn get_by_key(&self, key: &str) -> Option<Arc<dyn AnyObject>> {
        self.informer
            .indexer()
            .get_by_key(key)
            .map(|o| o as Arc<dyn AnyObject>)
    }
    fn is_started(&self) -> bool {
        self.informer.is_started()
    }
    fn is_stopped(&self) -> bool {
        self.informer.is_stopped()
    }
    fn last_store_resource_version(&self) -> Option<String> {
        self.informer.last_store_resource_version()
    }
    fn wait_for_store_resource_version(
        &self,
        rv: u64,
    ) -> futures::future::BoxFuture<'static, bool> {
        let informer = Arc::clone(&self.informer);
        Box::pin(async move { informer.wait_for_store_resource_version(rv).await })
    }
}

fn erase<K: crate::object::Meta>(objs: Vec<Arc<K>>) -> Vec<Arc<dyn AnyObject>> {
    objs.into_iter().map(|o| o as Arc<dyn AnyObject>).collect()
}

/// A type-erased informer with a type-erased lister, as `for_resource` returns it (F9).
///
/// ```no_run
/// # use informer_runtime::SharedInformerFactory;
/// # use kube::api::{DynamicObject, GroupVersionResource};
/// # async fn demo(factory: SharedInformerFactory) -> Result<(), Box<dyn std::error::Error>> {
/// let gvr = GroupVersionResource::gvr("example.com", "v1", "foos");
/// let foos = factory.for_resource(&gvr).await?;
/// factory.start();
/// foos.wait_for_sync().await;
/// for obj in foos.lister().list(&Default::default()) {
///     println!("{:?}", obj.object_name());
/// }
/// let typed = foos.informer::<DynamicObject>().expect("for_resource builds DynamicObject informers");
/// # let _ = typed; Ok(()) }
/// ```
#[derive(Clone)]
pub struct GenericInformer {
    erased: Arc<dyn Erased>,
    group_resource: Arc<GroupResource>,
}

impl fmt::Debug for GenericInformer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GenericInformer")
            .field("name", &self.erased.name())
            .field("group_resource", &self.group_resource)
            .finish()
    }
}

impl GenericInformer {
    /// Type-erases a typed informer (F9).
    pub fn new<K>(informer: Arc<SharedIndexInformer<K>>) -> Self
    where
        K: super::Object,
    {
        Self::with_group_resource(informer, GroupResource::of::<K::Source>())
    }

    /// Type-erases any informer, naming its resource for `NotFound` errors (L3).
    pub fn with_group_resource<K>(
        informer: Arc<SharedIndexInformer<K>>,
        group_resource: GroupResource,
    ) -> Self
    where
        K: Meta + Clone + serde::de::DeserializeOwned + fmt::Debug,
    {
        GenericInformer {
            erased: Arc::new(Typed { informer }),
            group_resource: Arc::new(group_resource),
        }
    }

    /// The typed informer behind this handle, if its objects are `K` (e.g. `DynamicObject` for
    /// informers created through discovery).
    pub fn informer<K: Send + Sync + 'static>(&self) -> Option<Arc<SharedIndexInformer<K>>> {
        self.erased
            .informer_any()
            .downcast::<SharedIndexInformer<K>>()
            .ok()
    }

    /// The informer's name.
    pub fn name(&self) -> &str {
        self.erased.name()
    }

    /// The resource the informer caches.
    pub fn group_resource(&self) -> &GroupResource {
        &self.group_resource
    }

    /// Whether the informer has synced (D7).
    pub fn has_synced(&self) -> bool {
        self.erased.has_synced()
    }

    /// Waits for the informer to sync; `false` if it stopped first.
    pub async fn wait_for_sync(&self) -> bool {
        self.erased.wait_for_sync().await
    }

    /// Whether the informer was started (H1).
    pub fn is_started(&self) -> bool {
        self.erased.is_started()
    }

    /// Whether the informer was stopped.
    pub fn is_stopped(&self) -> bool {
        self.erased.is_stopped()
    }

    /// The resourceVersion the informer's store reflects (K4, V4).
    pub fn last_store_resource_version(&self) -> Option<String> {
        self.erased.last_store_resource_version()
    }

    /// Waits until the store reflects `resource_version` or a later one; `false` if the
    /// informer stops first (K3, as
    /// [`SharedIndexInformer::wait_for_store_resource_version`]).
    pub fn wait_for_store_resource_version(
        &self,
        resource_version: u64,
    ) -> impl std::future::Future<Output = bool> + Send + 'static {
        self.erased
            .wait_for_store_resource_version(resource_version)
    }

    /// A type-erased lister over the informer's cache.
    pub fn lister(&self) -> GenericLister {
        GenericLister {
            informer: self.clone(),
        }
    }
}

/// A type-erased lister (F9): the same shared objects as the typed lister, as `Arc<dyn AnyObject>`.
#[derive(Clone, Debug)]
pub struct GenericLister {
    informer: GenericInformer,
}

impl GenericLister {
    /// Every cached object whose labels match `selector` (L1).
    pub fn list(&self, selector: &Selector) -> Vec<Arc<dyn AnyObject>> {
        select(|| self.informer.erased.list(), selector)
    }

    /// The object stored under the key `name` (cluster-scoped resources, L4).
    pub fn get(&self, name: &str) -> lister::Result<Arc<dyn AnyObject>> {
        self.informer
            .erased
            .get_by_key(name)
            .ok_or_else(|| self.not_found(name))
    }

    /// A lister restricted to `namespace` (L2).
    pub fn namespaced(&self, namespace: &str) -> GenericNamespaceLister {
        GenericNamespaceLister {
            lister: self.clone(),
            namespace: namespace.to_owned(),
        }
    }

    fn not_found(&self, name: &str) -> lister::Error {
        lister::Error::NotFound {
            group_resource: self.informer.group_resource().clone(),
            name: name.to_owned(),
        }
    }
}

/// A type-erased lister restricted to one namespace (L2, L3).
#[derive(Clone, Debug)]
pub struct GenericNamespaceLister {
    lister: GenericLister,
    namespace: String,
}

impl GenericNamespaceLister {
    /// The objects in this namespace whose labels match `selector`, via the namespace index.
    pub fn list(&self, selector: &Selector) -> Vec<Arc<dyn AnyObject>> {
        select(
            || self.lister.informer.erased.list_namespace(&self.namespace),
            selector,
        )
    }

    /// The object `namespace/name`; a miss is `NotFound` (L3).
    pub fn get(&self, name: &str) -> lister::Result<Arc<dyn AnyObject>> {
        let key = crate::key::ObjectKey::new(Some(&self.namespace), name);
        self.lister
            .informer
            .erased
            .get_by_key(key.as_str())
            .ok_or_else(|| self.lister.not_found(name))
    }
}

fn select(
    objs: impl FnOnce() -> Vec<Arc<dyn AnyObject>>,
    selector: &Selector,
) -> Vec<Arc<dyn AnyObject>> {
    lister::select_by(objs, selector, |o| &**o as &dyn Meta)
}
