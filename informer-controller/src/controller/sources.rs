//! The informers a controller reads and how their events become primary keys (C4): the
//! primary kind itself, owned kinds (controller owner references) and watched kinds (a mapper).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use informer_runtime::factory::{InformerId, ScopeKind};
use informer_runtime::informer::{
    DeletedObject, HandlerOptions, HandlerRegistration, SharedIndexInformer, handler_fn,
};
use informer_runtime::key::ObjectKey;
use informer_runtime::object::HasScope;
use informer_runtime::workqueue::RateLimitingQueue;
use informer_runtime::{Meta, Object, SharedInformerFactory};

/// A mapper from an object of a watched kind to the primary keys it concerns.
pub(crate) type Mapper<S> = Arc<dyn Fn(&S) -> Vec<ObjectKey> + Send + Sync>;

/// One informer the controller uses, with its event-to-key mapping, type-erased.
pub(crate) trait Source: Send + Sync {
    /// The factory's id of the informer (to stop it if the controller started it, C7).
    fn id(&self) -> InformerId;
    /// Registers the handler that feeds `queue`; the returned handle unregisters it.
    fn register(
        &self,
        factory: &SharedInformerFactory,
        queue: &RateLimitingQueue<ObjectKey>,
        controller: &str,
    ) -> Result<Box<dyn Registered>, informer_runtime::informer::Error>;
}

/// A live registration of a [`Source`].
pub(crate) trait Registered: Send + Sync {
    /// Resolves once the informer has synced and the handler has queued every initial key (H6).
    fn wait_for_sync(&self) -> Pin<Box<dyn Future<Output = bool> + Send + '_>>;
    /// Stops delivery to the handler (H7).
    fn remove(&self);
}

/// How events of one kind map to primary keys.
pub(crate) enum Mapping<S> {
    /// The primary kind: its own key, tombstones included (H12).
    Primary,
    /// Any other kind: the keys the mapper returns for the object (both old and new on update).
    Mapped(Mapper<S>),
}

pub(crate) struct InformerSource<S> {
    pub(crate) mapping: Mapping<S>,
}

impl<S: Object> InformerSource<S> {
    fn informer(factory: &SharedInformerFactory) -> Arc<SharedIndexInformer<S>> {
        factory.informer_for::<S>()
    }
}

impl<S: Object> Source for InformerSource<S> {
    fn id(&self) -> InformerId {
        InformerId::of::<S>()
    }

    fn register(
        &self,
        factory: &SharedInformerFactory,
        queue: &RateLimitingQueue<ObjectKey>,
        controller: &str,
    ) -> Result<Box<dyn Registered>, informer_runtime::informer::Error> {
        let informer = Self::informer(factory);
        let name = format!(
            "controller-{controller}-{}",
            std::any::type_name::<S>()
                .rsplit("::")
                .next()
                .unwrap_or("object")
        );
        let (q_add, q_update, q_delete) = (queue.clone(), queue.clone(), queue.clone());
        let handler = match &self.mapping {
            Mapping::Primary => handler_fn::<S>()
                .on_add(move |obj: &Arc<S>, _| enqueue_own(&q_add, &**obj))
                .on_update(move |_, new: &Arc<S>| enqueue_own(&q_update, &**new))
                .on_delete(move |deleted: &DeletedObject<S>| {
                    // A tombstone still carries the key, which is all a reconcile needs (C5).
                    if let Ok(key) = deleted.key() {
                        q_delete.add(key);
                    }
                }),
            Mapping::Mapped(mapper) => {
                let (m_add, m_update, m_delete) = (mapper.clone(), mapper.clone(), mapper.clone());
                handler_fn::<S>()
                    .on_add(move |obj: &Arc<S>, _| enqueue_all(&q_add, m_add(obj)))
                    .on_update(move |old: &Arc<S>, new: &Arc<S>| {
                        // Both: a changed owner or label must reach the old primary too.
                        enqueue_all(&q_update, m_update(old));
                        enqueue_all(&q_update, m_update(new));
                    })
                    .on_delete(move |deleted: &DeletedObject<S>| {
                        if let Some(obj) = deleted.last_known() {
                            enqueue_all(&q_delete, m_delete(obj));
                        }
                    })
            }
        };
        let registration =
            informer.add_event_handler_with(handler, HandlerOptions::new().name(name))?;
        Ok(Box::new(Registration {
            informer,
            registration,
        }))
    }
}

fn enqueue_own<S: Object>(queue: &RateLimitingQueue<ObjectKey>, obj: &S) {
    if let Ok(key) = ObjectKey::from_resource(obj) {
        queue.add(key);
    }
}

fn enqueue_all(queue: &RateLimitingQueue<ObjectKey>, keys: Vec<ObjectKey>) {
    for key in keys {
        queue.add(key);
    }
}

struct Registration<S: Object> {
    informer: Arc<SharedIndexInformer<S>>,
    registration: HandlerRegistration<S>,
}

impl<S: Object> Registered for Registration<S> {
    fn wait_for_sync(&self) -> Pin<Box<dyn Future<Output = bool> + Send + '_>> {
        Box::pin(self.registration.wait_for_sync())
    }

    fn remove(&self) {
        self.informer.remove_event_handler(&self.registration);
    }
}

/// C7: a run's registrations end with the run, also when its future is dropped (a leader's term
/// aborted after the drain limit, a `select!` that lost): the informers outlive the run, and a
/// registration left behind would keep its handler's thread and queue every event into a
/// workqueue nobody reads. Removing twice is harmless.
impl<S: Object> Drop for Registration<S> {
    fn drop(&mut self) {
        self.informer.remove_event_handler(&self.registration);
    }
}

/// The key of `owned`'s controller owner reference if it points at the primary kind `K` (C4,
/// controller-runtime's `Owns`: group and kind must match, the version may differ). `owned` is
/// any cached form (the kind, its compact form, a projection): the reference is read through
/// the runtime's `Meta`.
pub(crate) fn controller_owner_keys<K, C>(owned: &C) -> Vec<ObjectKey>
where
    K: Object,
    C: Meta,
{
    use kube::Resource;
    let Some(owner) = owned.object_controller_ref() else {
        return Vec::new();
    };
    if owner.kind != K::Source::kind(&()) || owner.group() != K::Source::group(&()) {
        return Vec::new();
    }
    let namespace = if <<K as HasScope>::Scope as ScopeKind>::NAMESPACED {
        owned.object_namespace()
    } else {
        None
    };
    vec![ObjectKey::new(namespace, owner.name)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    fn owned(refs: Vec<OwnerReference>) -> ConfigMap {
        let mut cm = ConfigMap::default();
        cm.metadata.namespace = Some("ns".into());
        cm.metadata.name = Some("child".into());
        cm.metadata.owner_references = Some(refs);
        cm
    }

    fn owner(
        api_version: &str,
        kind: &str,
        name: &str,
        controller: Option<bool>,
    ) -> OwnerReference {
        OwnerReference {
            api_version: api_version.into(),
            kind: kind.into(),
            name: name.into(),
            uid: "u".into(),
            controller,
            block_owner_deletion: None,
        }
    }

    #[test]
    fn c4_only_the_controller_reference_of_the_primary_group_and_kind_maps() {
        let key = |refs: Vec<OwnerReference>| -> Vec<String> {
            controller_owner_keys::<Deployment, _>(&owned(refs))
                .iter()
                .map(|k| k.as_str().to_owned())
                .collect()
        };
        assert_eq!(
            key(vec![
                owner("apps/v1", "Deployment", "not-controller", None),
                owner("apps/v1", "Deployment", "web", Some(true)),
            ]),
            ["ns/web"]
        );
        // The version may differ (controller-runtime's Owns).
        assert_eq!(
            key(vec![owner(
                "apps/v1beta2",
                "Deployment",
                "other-version",
                Some(true)
            )]),
            ["ns/other-version"]
        );
        for other in [
            owner(
                "extensions/v1beta1",
                "Deployment",
                "other-group",
                Some(true),
            ),
            owner("apps/v1", "ReplicaSet", "other-kind", Some(true)),
            owner("apps/v1", "Deployment", "not-controller", Some(false)),
        ] {
            assert!(key(vec![other.clone()]).is_empty(), "{other:?}");
        }
    }
}
