//! Per-resource scope (F11): what the informers of one resource list, watch and keep, in place of
//! the factory's namespace, selectors and transform (controller-runtime's `cache.ByObject`).

use std::fmt;
use std::sync::Arc;

use super::{AnyObject, FactoryTransform};

/// What the informers of one resource list, watch and keep, where it differs from the rest of
/// the factory (F11): give it to
/// [`SharedInformerFactoryBuilder::scope_for`](super::SharedInformerFactoryBuilder::scope_for).
/// Each setting left alone keeps the factory's; a setting given replaces the factory's for that
/// resource only (as controller-runtime's `ByObject` replaces its `DefaultNamespaces`,
/// `DefaultLabelSelector`, `DefaultFieldSelector` and `DefaultTransform`).
///
/// A scope applies to every informer the factory holds of its resource, whichever form it caches
/// (the kind, its compact form, a projection, the metadata-only and the dynamic informer), so
/// they all see the same objects, and they stay shared: one informer per form, whoever asks for
/// it (F1).
///
/// ```no_run
/// # fn demo(client: kube::Client) {
/// use informer_runtime::SharedInformerFactory;
/// use informer_runtime::factory::CacheScope;
/// use k8s_openapi::api::core::v1::{ConfigMap, Secret};
///
/// // Deployments in every namespace, but only the ConfigMaps of `team-a` labelled for this
/// // operator, and Secrets of `team-a` only.
/// let factory = SharedInformerFactory::builder(client)
///     .scope_for::<ConfigMap>(CacheScope::new().namespace("team-a").label_selector("app=web"))
///     .scope_for::<Secret>(CacheScope::new().namespace("team-a"))
///     .build();
/// # let _ = factory; }
/// ```
#[derive(Clone, Default)]
pub struct CacheScope {
    /// `None`: the factory's; `Some(None)`: every namespace.
    namespace: Option<Option<String>>,
    /// `None`: the factory's; `Some(None)`: no selector.
    label_selector: Option<Option<String>>,
    /// `None`: the factory's; `Some(None)`: no selector.
    field_selector: Option<Option<String>>,
    /// `None`: the factory's; `Some(None)`: no factory transform for this resource.
    transform: Option<Option<FactoryTransform>>,
    /// The transform is [`CacheScope::strip_managed_fields`]'s (T7 then applies).
    strips_managed_fields: bool,
}

impl CacheScope {
    /// A scope that changes nothing yet: every setting is the factory's.
    pub fn new() -> Self {
        CacheScope::default()
    }

    /// Lists and watches one namespace only (F6's `namespace`, for this resource). Cluster-scoped
    /// kinds ignore it. An empty name means every namespace.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        let ns = namespace.into();
        self.namespace = Some((!ns.is_empty()).then_some(ns));
        self
    }

    /// Lists and watches every namespace, even when the factory watches one.
    pub fn all_namespaces(mut self) -> Self {
        self.namespace = Some(None);
        self
    }

    /// The label selector of this resource's LISTs and WATCHes, in place of the factory's (its
    /// reflector settings' or its list-options tweak's). An empty one selects everything.
    pub fn label_selector(mut self, selector: impl Into<String>) -> Self {
        let s = selector.into();
        self.label_selector = Some((!s.is_empty()).then_some(s));
        self
    }

    /// The field selector of this resource's LISTs and WATCHes, in place of the factory's. An
    /// empty one selects everything.
    pub fn field_selector(mut self, selector: impl Into<String>) -> Self {
        let s = selector.into();
        self.field_selector = Some((!s.is_empty()).then_some(s));
        self
    }

    /// The transform this resource's informers apply before their own (F8), in place of the
    /// factory's. It must be idempotent (D8).
    pub fn transform(
        mut self,
        transform: impl Fn(&mut dyn AnyObject) + Send + Sync + 'static,
    ) -> Self {
        let transform: FactoryTransform = Arc::new(transform);
        self.transform = Some(Some(transform));
        self.strips_managed_fields = false;
        self
    }

    /// No factory transform for this resource, even when the factory has one.
    pub fn no_transform(mut self) -> Self {
        self.transform = Some(None);
        self.strips_managed_fields = false;
        self
    }

    /// A transform that drops `metadata.managedFields`, in place of the factory's, and asks the
    /// server to leave them out (M8, T7), as the factory's
    /// [`strip_managed_fields`](super::SharedInformerFactoryBuilder::strip_managed_fields).
    pub fn strip_managed_fields(self) -> Self {
        let mut scope = self.transform(|obj: &mut dyn AnyObject| {
            if let Some(meta) = obj.object_meta_mut() {
                meta.managed_fields = None;
            }
        });
        scope.strips_managed_fields = true;
        scope
    }

    /// This scope's settings over the factory's `defaults`.
    pub(super) fn over(&self, defaults: Resolved) -> Resolved {
        let (transform, strips_managed_fields) = match &self.transform {
            Some(transform) => (transform.clone(), self.strips_managed_fields),
            None => (defaults.transform, defaults.strips_managed_fields),
        };
        Resolved {
            selection: Selection {
                namespace: self
                    .namespace
                    .clone()
                    .unwrap_or(defaults.selection.namespace),
                label_selector: self
                    .label_selector
                    .clone()
                    .unwrap_or(defaults.selection.label_selector),
                field_selector: self
                    .field_selector
                    .clone()
                    .unwrap_or(defaults.selection.field_selector),
            },
            transform,
            strips_managed_fields,
        }
    }
}

impl fmt::Debug for CacheScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CacheScope")
            .field("namespace", &self.namespace)
            .field("label_selector", &self.label_selector)
            .field("field_selector", &self.field_selector)
            .field("transform", &self.transform.as_ref().map(|t| t.is_some()))
            .field("strips_managed_fields", &self.strips_managed_fields)
            .finish()
    }
}

/// Which objects of one resource a factory's informers list and watch (F6, F11): from
/// [`SharedInformerFactory::selection_of`](super::SharedInformerFactory::selection_of).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Selection {
    /// The one namespace listed, or `None` for every namespace.
    pub namespace: Option<String>,
    /// The label selector, if any (never empty).
    pub label_selector: Option<String>,
    /// The field selector, if any (never empty).
    pub field_selector: Option<String>,
}

/// Everything a new informer of one resource takes from the factory and its scope.
#[derive(Clone)]
pub(super) struct Resolved {
    pub(super) selection: Selection,
    pub(super) transform: Option<FactoryTransform>,
    pub(super) strips_managed_fields: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults() -> Resolved {
        Resolved {
            selection: Selection {
                namespace: Some("prod".into()),
                label_selector: Some("app=web".into()),
                field_selector: None,
            },
            transform: Some(Arc::new(|_: &mut dyn AnyObject| {})),
            strips_managed_fields: true,
        }
    }

    #[test]
    fn an_empty_scope_keeps_every_factory_setting() {
        let r = CacheScope::new().over(defaults());
        assert_eq!(r.selection, defaults().selection);
        assert!(r.transform.is_some());
        assert!(r.strips_managed_fields);
    }

    #[test]
    fn each_setting_given_replaces_the_factorys_and_only_that_one() {
        let r = CacheScope::new()
            .all_namespaces()
            .field_selector("metadata.name=x")
            .no_transform()
            .over(defaults());
        assert_eq!(r.selection.namespace, None);
        assert_eq!(r.selection.label_selector.as_deref(), Some("app=web"));
        assert_eq!(
            r.selection.field_selector.as_deref(),
            Some("metadata.name=x")
        );
        assert!(r.transform.is_none());
        assert!(!r.strips_managed_fields);

        let r = CacheScope::new()
            .namespace("a")
            .label_selector("")
            .over(defaults());
        assert_eq!(r.selection.namespace.as_deref(), Some("a"));
        assert_eq!(
            r.selection.label_selector, None,
            "an empty selector is none"
        );
        assert!(r.strips_managed_fields);
    }

    #[test]
    fn a_scope_transform_replaces_the_factory_strip() {
        let r = CacheScope::new().transform(|_| {}).over(defaults());
        assert!(r.transform.is_some());
        assert!(!r.strips_managed_fields, "T7 only for the strip transform");
        let r = CacheScope::new().strip_managed_fields().over(Resolved {
            transform: None,
            strips_managed_fields: false,
            ..defaults()
        });
        assert!(r.transform.is_some() && r.strips_managed_fields);
    }
}
