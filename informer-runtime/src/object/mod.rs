//! What the cache reads of an object: its identity, resourceVersion and labels ([`Meta`]), and
//! which types can be cached at all ([`Object`], with the scope it is listed in, [`ScopeKind`]);
//! what a controller reads besides (controller owner, finalizers, deletion timestamp: [`Meta`]
//! too), and which cached forms hold the whole object ([`Lossless`]).
//!
//! The runtime is generic over this trait rather than over `kube::Resource`, whose `meta()` hands
//! out a full `ObjectMeta`: a projection (P4, P6) keeps a slim, interned metadata of its own and
//! still has the source object's key, UID and resourceVersion. Every `kube::Resource` implements
//! [`Meta`] through its `ObjectMeta`; `#[derive(Projection)]` implements it for projections.

mod controlled;
mod scope;

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::ObjectMeta;
use kube::core::{Expression, Selector};

pub use controlled::{Finalizers, Lossless, OwnerRef};
pub use scope::ScopeKind;

/// The metadata the cache needs from an object (X1 keys, R* resourceVersions, L1 label selection,
/// M8 reuse of unchanged objects).
///
/// The methods carry an `object_` prefix so that they never clash with `kube::ResourceExt`'s
/// `name_any()`, `namespace()` or `uid()` on types that implement both.
pub trait Meta: Send + Sync + 'static {
    /// `metadata.name`.
    fn object_name(&self) -> Option<&str>;
    /// `metadata.namespace`; `None` for cluster-scoped objects.
    fn object_namespace(&self) -> Option<&str>;
    /// `metadata.uid`.
    fn object_uid(&self) -> Option<&str>;
    /// `metadata.resourceVersion`.
    fn object_resource_version(&self) -> Option<&str>;
    /// The value of the label `key`, if the object has it.
    fn object_label(&self, key: &str) -> Option<&str>;
    /// The owner reference with `controller: true`, if any: the object a controller that owns
    /// this kind reconciles when it changes (C4).
    fn object_controller_ref(&self) -> Option<OwnerRef<'_>>;
    /// `metadata.finalizers`, in order (C9).
    fn object_finalizers(&self) -> Finalizers<'_>;
    /// `metadata.deletionTimestamp`: set once the object is being deleted (C9).
    fn object_deletion_timestamp(&self) -> Option<&Time>;
    /// `metadata.labels`, every pair, in key order (every form keeps them sorted).
    fn object_labels(&self) -> impl Iterator<Item = (&str, &str)>
    where
        Self: Sized;
    /// `metadata.annotations`, every pair, in key order.
    /// A projection whose metadata is [`SlimMeta`](crate::projection::SlimMeta) keeps them.
    fn object_annotations(&self) -> impl Iterator<Item = (&str, &str)>
    where
        Self: Sized;
    /// `metadata.ownerReferences`, in order; [`object_controller_ref`](Self::object_controller_ref)
    /// is the one with `controller: true`.
    fn object_owner_references(&self) -> impl Iterator<Item = OwnerRef<'_>>
    where
        Self: Sized;
    /// `metadata.generation`: the spec's version, which `status.observedGeneration` echoes.
    fn object_generation(&self) -> Option<i64>;
    /// The full `ObjectMeta`, for objects that keep one (every `kube::Resource`); projections
    /// return `None`.
    fn object_meta(&self) -> Option<&ObjectMeta> {
        None
    }
    /// The full `ObjectMeta`, mutably, for transforms (D8, F8); projections return `None`.
    fn object_meta_mut(&mut self) -> Option<&mut ObjectMeta> {
        None
    }
}

impl<K: kube::Resource + Send + Sync + 'static> Meta for K {
    fn object_name(&self) -> Option<&str> {
        kube::Resource::meta(self).name.as_deref()
    }
    fn object_namespace(&self) -> Option<&str> {
        kube::Resource::meta(self).namespace.as_deref()
    }
    fn object_uid(&self) -> Option<&str> {
        kube::Resource::meta(self).uid.as_deref()
    }
    fn object_resource_version(&self) -> Option<&str> {
        kube::Resource::meta(self).resource_version.as_deref()
    }
    fn object_label(&self, key: &str) -> Option<&str> {
        kube::Resource::meta(self)
            .labels
            .as_ref()?
            .get(key)
            .map(String::as_str)
    }
    fn object_controller_ref(&self) -> Option<OwnerRef<'_>> {
        OwnerRef::controller_of(kube::Resource::meta(self).owner_references.as_deref())
    }
    fn object_finalizers(&self) -> Finalizers<'_> {
        kube::Resource::meta(self).finalizers.as_deref().into()
    }
    fn object_deletion_timestamp(&self) -> Option<&Time> {
        kube::Resource::meta(self).deletion_timestamp.as_ref()
    }
    fn object_labels(&self) -> impl Iterator<Item = (&str, &str)> {
        string_pairs(kube::Resource::meta(self).labels.as_ref())
    }
    fn object_annotations(&self) -> impl Iterator<Item = (&str, &str)> {
        string_pairs(kube::Resource::meta(self).annotations.as_ref())
    }
    fn object_owner_references(&self) -> impl Iterator<Item = OwnerRef<'_>> {
        OwnerRef::all_of(kube::Resource::meta(self).owner_references.as_deref())
    }
    fn object_generation(&self) -> Option<i64> {
        kube::Resource::meta(self).generation
    }
    fn object_meta(&self) -> Option<&ObjectMeta> {
        Some(kube::Resource::meta(self))
    }
    fn object_meta_mut(&mut self) -> Option<&mut ObjectMeta> {
        Some(kube::Resource::meta_mut(self))
    }
}

/// The pairs of k8s-openapi's labels or annotations map, as `&str`s.
pub(crate) fn string_pairs(
    map: Option<&BTreeMap<String, String>>,
) -> impl Iterator<Item = (&str, &str)> {
    map.into_iter()
        .flatten()
        .map(|(k, v)| (k.as_str(), v.as_str()))
}

/// The scope of an object's kind: `NamespaceResourceScope`, `ClusterResourceScope` or
/// `DynamicResourceScope`. Listers offer `namespaced(ns)` or `get(name)` by it (L4).
///
/// Every `kube::Resource` has its own; a projection has its source kind's.
pub trait HasScope {
    /// The scope type.
    type Scope;
}

impl<K: kube::Resource> HasScope for K {
    type Scope = <K as kube::Resource>::Scope;
}

/// A named index function without captures, as generated code declares them (X2).
pub type StaticIndexer<K> = (&'static str, fn(&K) -> Vec<String>);

/// Every type the factory can build a typed informer for.
///
/// Two kinds of types are objects:
/// - every `kube::Resource` with a static type and a known scope (k8s-openapi types, kube
///   `CustomResource`s): its own [`Source`](Object::Source), through a blanket impl;
/// - projections (`#[derive(Projection)]`, P4): a slim struct decoded straight from the wire
///   of its source kind, whose endpoint the informer lists and watches;
/// - compact forms (informer-gen's `compact-kinds`, informer-k8s's `compact` feature): every
///   field of the source kind in a compact layout (P1), its [`Source`](Object::Source) the
///   k8s-openapi kind, and [`Lossless`] besides.
pub trait Object:
    Meta + HasScope<Scope: ScopeKind> + Clone + serde::de::DeserializeOwned + fmt::Debug
{
    /// The kind whose endpoint is listed and watched, and whose group, version and plural name
    /// the informer (F1) and its lister's errors (L3): `Self` for Kubernetes types, the source
    /// kind for projections (P6: same key, UID and resourceVersion as the source object).
    type Source: kube::Resource<DynamicType = (), Scope = <Self as HasScope>::Scope>
        + Clone
        + serde::de::DeserializeOwned
        + fmt::Debug
        + Send
        + Sync
        + 'static;

    /// Indexes the type declares for itself (a projection's `#[projection(index(...))]`), which
    /// [`SharedInformerFactory::informer_for`](crate::SharedInformerFactory::informer_for) registers (X2). None for Kubernetes types.
    fn indexers() -> &'static [StaticIndexer<Self>] {
        &[]
    }

    /// Whether the cached form keeps `metadata.managedFields`: `false` for a projection whose
    /// metadata is [`SlimMeta`](crate::projection::SlimMeta), so the factory asks the server to
    /// leave them out (T7). True for Kubernetes types and compact types (lossless).
    fn keeps_managed_fields() -> bool {
        true
    }
}

impl<T> Object for T
where
    T: kube::Resource<DynamicType = (), Scope: ScopeKind>
        + Clone
        + serde::de::DeserializeOwned
        + fmt::Debug
        + Send
        + Sync
        + 'static,
{
    type Source = T;
}

/// A label selector prepared for matching many objects through [`Meta::object_label`], with
/// exactly `kube::core::Selector`'s semantics (L1): every expression must hold.
#[derive(Debug, Clone)]
pub(crate) struct LabelMatcher {
    exprs: Vec<Expression>,
}

impl LabelMatcher {
    /// The expressions of `selector`.
    pub(crate) fn new(selector: &Selector) -> Self {
        LabelMatcher {
            exprs: selector.clone().into_iter().collect(),
        }
    }

    /// Whether no object can match: one expression is `key in ()` (L1).
    pub(crate) fn matches_nothing(&self) -> bool {
        self.exprs
            .iter()
            .any(|e| matches!(e, Expression::In(_, v) if v.is_empty()))
    }

    /// Whether the labels that `label` looks up satisfy every expression.
    pub(crate) fn matches<'a>(&self, label: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.exprs.iter().all(|e| match e {
            Expression::In(key, values) => label(key).is_some_and(|v| values.contains(v)),
            Expression::NotIn(key, values) => label(key).is_none_or(|v| !values.contains(v)),
            Expression::Exists(key) => label(key).is_some(),
            Expression::DoesNotExist(key) => label(key).is_none(),
            Expression::Equal(key, value) => label(key) == Some(value.as_str()),
            Expression::NotEqual(key, value) => label(key) != Some(value.as_str()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::SelectorExt;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// Looks `key` up in an optional label map.
    fn map_label<'a>(labels: Option<&'a BTreeMap<String, String>>, key: &str) -> Option<&'a str> {
        labels?.get(key).map(String::as_str)
    }

    fn selector_strategy() -> impl Strategy<Value = Selector> {
        let key = prop::sample::select(vec!["a", "b", "c"]);
        let val = prop::sample::select(vec!["1", "2", "3"]);
        let set = prop::collection::btree_set(val.clone().prop_map(String::from), 0..3);
        let expr = prop_oneof![
            (key.clone(), set.clone()).prop_map(|(k, s)| Expression::In(k.into(), s)),
            (key.clone(), set).prop_map(|(k, s)| Expression::NotIn(k.into(), s)),
            key.clone().prop_map(|k| Expression::Exists(k.into())),
            key.clone().prop_map(|k| Expression::DoesNotExist(k.into())),
            (key.clone(), val.clone()).prop_map(|(k, v)| Expression::Equal(k.into(), v.into())),
            (key, val).prop_map(|(k, v)| Expression::NotEqual(k.into(), v.into())),
        ];
        prop::collection::vec(expr, 0..4).prop_map(Selector::from_iter)
    }

    proptest! {
        /// L1: matching through `object_label` agrees with kube's `Selector::matches` on maps.
        #[test]
        fn label_matcher_agrees_with_kube_selector(
            selector in selector_strategy(),
            labels in prop::collection::btree_map(
                prop::sample::select(vec!["a", "b", "c"]).prop_map(String::from),
                prop::sample::select(vec!["1", "2", "3"]).prop_map(String::from),
                0..3,
            ),
        ) {
            let matcher = LabelMatcher::new(&selector);
            prop_assert_eq!(
                matcher.matches(|k| map_label(Some(&labels), k)),
                selector.matches(&labels)
            );
        }
    }
}
