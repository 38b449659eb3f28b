//! Listing a kind across the fleet: each object with its cluster, and the clusters that could
//! not answer named rather than left out silently.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use informer_runtime::Object;
use informer_runtime::lister::{Lister, NamespaceScope};
use informer_runtime::object::HasScope;
use kube::core::Selector;

use super::{ClusterName, ClusterState, Fleet};

/// An object and the cluster it is cached from.
#[derive(Debug)]
pub struct Clustered<K> {
    /// The cluster.
    pub cluster: ClusterName,
    /// The cached object, shared with the cluster's cache.
    pub object: Arc<K>,
}

impl<K> Clone for Clustered<K> {
    fn clone(&self) -> Self {
        Clustered {
            cluster: self.cluster.clone(),
            object: Arc::clone(&self.object),
        }
    }
}

/// Why a cluster is missing from a [`FleetList`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Skipped {
    /// Its informer for the kind has not synced yet: a list now would be partial.
    NotSynced,
    /// The cluster cannot serve ([`ClusterState::Failed`]).
    Unavailable(String),
    /// Its factory has no informer for the kind (not declared with
    /// [`FleetBuilder::informer`](super::FleetBuilder::informer)).
    NoInformer,
}

/// What a fleet-wide list found.
#[derive(Debug)]
pub struct FleetList<K> {
    /// The objects of every cluster that answered, in cluster name order.
    pub items: Vec<Clustered<K>>,
    /// The clusters that did not, and why.
    pub skipped: Vec<(ClusterName, Skipped)>,
}

/// Lists a kind across every engaged cluster: [`Fleet::lister`]. It reads the fleet at each
/// call, so clusters engaged later are included and clusters that left are not.
pub struct FleetLister<K> {
    fleet: Fleet,
    kind: PhantomData<fn() -> K>,
}

impl<K> Clone for FleetLister<K> {
    fn clone(&self) -> Self {
        FleetLister {
            fleet: self.fleet.clone(),
            kind: PhantomData,
        }
    }
}

impl<K> fmt::Debug for FleetLister<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FleetLister").finish_non_exhaustive()
    }
}

impl<K: Object> FleetLister<K> {
    pub(super) fn new(fleet: Fleet) -> Self {
        FleetLister {
            fleet,
            kind: PhantomData,
        }
    }

    /// Every cached `K` matching `selector`, in every cluster whose informer has synced.
    pub fn list(&self, selector: &Selector) -> FleetList<K> {
        self.collect(|lister| lister.list(selector))
    }

    /// The same, in namespace `namespace` of each cluster.
    pub fn list_namespaced(&self, namespace: &str, selector: &Selector) -> FleetList<K>
    where
        <K as HasScope>::Scope: NamespaceScope,
    {
        self.collect(|lister| lister.namespaced(namespace).list(selector))
    }

    fn collect(&self, list: impl Fn(&Lister<K>) -> Vec<Arc<K>>) -> FleetList<K> {
        let mut out = FleetList {
            items: Vec::new(),
            skipped: Vec::new(),
        };
        for (name, handle, state) in self.fleet.handles() {
            let informer = match (handle, state) {
                (_, ClusterState::Failed(reason) | ClusterState::BackingOff { reason, .. }) => {
                    out.skipped.push((name, Skipped::Unavailable(reason)));
                    continue;
                }
                (None, _) => {
                    out.skipped
                        .push((name, Skipped::Unavailable("no client".to_owned())));
                    continue;
                }
                (Some(handle), _) => handle.factory().existing_informer::<K>(),
            };
            let Some(informer) = informer else {
                out.skipped.push((name, Skipped::NoInformer));
                continue;
            };
            if !informer.has_synced() {
                out.skipped.push((name, Skipped::NotSynced));
                continue;
            }
            let lister = Lister::from_indexer(informer.indexer());
            out.items
                .extend(list(&lister).into_iter().map(|object| Clustered {
                    cluster: name.clone(),
                    object,
                }));
        }
        out
    }
}
