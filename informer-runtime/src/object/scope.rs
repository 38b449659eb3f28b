//! Runtime knowledge of a resource's scope, so one generic accessor serves namespaced and cluster-scoped kinds.

use kube::Api;
use kube::core::{ClusterResourceScope, DynamicResourceScope, NamespaceResourceScope};

/// The scope types of `kube::Resource::Scope`, and how a factory namespace applies to each:
/// namespaced kinds are constrained to it, cluster-scoped kinds ignore it.
pub trait ScopeKind: Sized {
    /// Whether objects of this scope live in namespaces.
    const NAMESPACED: bool;

    /// `api` restricted to `namespace` when this scope is namespaced and one is given.
    fn constrain<K: kube::Resource<Scope = Self>>(api: Api<K>, namespace: Option<&str>) -> Api<K>;
}

impl ScopeKind for NamespaceResourceScope {
    const NAMESPACED: bool = true;

    fn constrain<K: kube::Resource<Scope = Self>>(api: Api<K>, namespace: Option<&str>) -> Api<K> {
        match namespace {
            Some(ns) => api.constrain(ns),
            None => api,
        }
    }
}

impl ScopeKind for ClusterResourceScope {
    const NAMESPACED: bool = false;

    fn constrain<K: kube::Resource<Scope = Self>>(api: Api<K>, _namespace: Option<&str>) -> Api<K> {
        api
    }
}

impl ScopeKind for DynamicResourceScope {
    const NAMESPACED: bool = true;

    fn constrain<K: kube::Resource<Scope = Self>>(api: Api<K>, namespace: Option<&str>) -> Api<K> {
        match namespace {
            Some(ns) => api.constrain(ns),
            None => api,
        }
    }
}
