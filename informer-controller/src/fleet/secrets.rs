//! [`SecretProvider`]: clusters from kubeconfig Secrets in a management cluster, watched with an
//! informer.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use informer_runtime::delta_fifo::DeletedObject;
use informer_runtime::factory::CacheScope;
use informer_runtime::informer::ResourceEventHandler;
use informer_runtime::{ObjectKey, SharedInformerFactory};
use k8s_openapi::api::core::v1::Secret;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::kubeconfig::{self, KubeconfigPolicy};
use super::provider::{ClusterName, ClusterSink, ClusterSpec, Provider, ProviderError};

/// Which Secrets hold clusters' kubeconfigs, and what the clusters are called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Convention {
    /// Cluster API: type `cluster.x-k8s.io/secret`, label `cluster.x-k8s.io/cluster-name`,
    /// named `<cluster>-kubeconfig`, the kubeconfig under `value`.
    ClusterApi,
    /// multicluster-runtime's kubeconfig provider: label
    /// `sigs.k8s.io/multicluster-runtime-kubeconfig=true`, the kubeconfig under `kubeconfig`,
    /// the cluster named after the Secret.
    MulticlusterRuntime,
}

const CAPI_TYPE: &str = "cluster.x-k8s.io/secret";
const CAPI_CLUSTER_LABEL: &str = "cluster.x-k8s.io/cluster-name";
const MCR_LABEL: &str = "sigs.k8s.io/multicluster-runtime-kubeconfig";

impl Convention {
    /// The data key that holds the kubeconfig.
    fn key(self) -> &'static str {
        match self {
            Convention::ClusterApi => "value",
            Convention::MulticlusterRuntime => "kubeconfig",
        }
    }

    /// The fleet's name for the cluster whose kubeconfig `secret` holds, or `None` if the
    /// Secret holds none by this convention.
    fn cluster_of(self, secret: &Secret) -> Option<ClusterName> {
        let meta = &secret.metadata;
        let name = meta.name.as_deref()?;
        let label = |key: &str| meta.labels.as_ref()?.get(key).map(String::as_str);
        match self {
            Convention::ClusterApi => {
                // `<cluster>-user-kubeconfig` and the like carry the same label: only the
                // Secret named after its label's cluster is the cluster's own.
                let cluster = label(CAPI_CLUSTER_LABEL)?;
                let ours = name.strip_suffix("-kubeconfig") == Some(cluster)
                    && secret.type_.as_deref() == Some(CAPI_TYPE);
                let namespace = meta.namespace.as_deref().unwrap_or_default();
                ours.then(|| format!("{namespace}/{cluster}").into())
            }
            Convention::MulticlusterRuntime => {
                (label(MCR_LABEL) == Some("true")).then(|| name.into())
            }
        }
    }
}

/// The clusters whose kubeconfigs are Secrets in a management cluster, watched with an
/// informer: a Secret added engages its cluster, a changed kubeconfig re-engages it (the old
/// generation is disengaged first), a Secret deleted disengages it.
///
/// Two conventions are built in:
/// - [`cluster_api`](Self::cluster_api): Cluster API's `<cluster>-kubeconfig` Secrets (type
///   `cluster.x-k8s.io/secret`, label `cluster.x-k8s.io/cluster-name`, key `value`), in every
///   namespace or [one](Self::namespace); the cluster is `<namespace>/<cluster>`;
/// - [`multicluster_runtime`](Self::multicluster_runtime): the Secrets of multicluster-runtime's
///   kubeconfig provider in one namespace (label
///   `sigs.k8s.io/multicluster-runtime-kubeconfig=true`, key `kubeconfig`); the cluster is the
///   Secret's name.
///
/// The informer caches only the kubeconfig key of each Secret, without managed fields. A
/// Secret whose kubeconfig does not parse or is refused is logged (its name and why, never
/// its content) and leaves its cluster as it was: the last kubeconfig that worked keeps
/// serving. Kubeconfigs from Secrets are held to [`KubeconfigPolicy::InlineOnly`] unless
/// [`policy`](Self::policy) says otherwise.
///
/// ```no_run
/// # async fn demo(management: kube::Client) {
/// use informer_controller::fleet::{Fleet, SecretProvider};
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// let fleet = Fleet::builder().informer::<ConfigMap>().build();
/// let provider = SecretProvider::cluster_api(management).namespace("fleet");
/// let cancel = tokio_util::sync::CancellationToken::new();
/// let _ = fleet.run(provider, cancel).await;
/// # }
/// ```
pub struct SecretProvider {
    client: kube::Client,
    convention: Convention,
    namespace: Option<String>,
    policy: KubeconfigPolicy,
}

impl SecretProvider {
    /// Cluster API's kubeconfig Secrets, in every namespace the client can list.
    pub fn cluster_api(management: kube::Client) -> Self {
        SecretProvider {
            client: management,
            convention: Convention::ClusterApi,
            namespace: None,
            policy: KubeconfigPolicy::InlineOnly,
        }
    }

    /// multicluster-runtime's kubeconfig Secrets in `namespace`.
    pub fn multicluster_runtime(management: kube::Client, namespace: impl Into<String>) -> Self {
        SecretProvider {
            client: management,
            convention: Convention::MulticlusterRuntime,
            namespace: Some(namespace.into()),
            policy: KubeconfigPolicy::InlineOnly,
        }
    }

    /// Watches Secrets in `namespace` only.
    #[must_use]
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// What the kubeconfigs may ask of this process; [`KubeconfigPolicy::InlineOnly`] by
    /// default.
    #[must_use]
    pub fn policy(mut self, policy: KubeconfigPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The informer's scope: the convention's Secrets, each reduced to its kubeconfig.
    fn scope(&self) -> CacheScope {
        let mut scope = match &self.namespace {
            Some(ns) => CacheScope::new().namespace(ns.clone()),
            None => CacheScope::new().all_namespaces(),
        };
        scope = match self.convention {
            Convention::ClusterApi => scope
                .label_selector(CAPI_CLUSTER_LABEL)
                .field_selector(format!("type={CAPI_TYPE}")),
            Convention::MulticlusterRuntime => scope.label_selector(format!("{MCR_LABEL}=true")),
        };
        let key = self.convention.key();
        scope.transform(move |obj| {
            if let Some(secret) = obj.as_any_mut().downcast_mut::<Secret>() {
                if let Some(data) = &mut secret.data {
                    data.retain(|k, _| k == key);
                }
                secret.string_data = None;
                secret.metadata.managed_fields = None;
                secret.metadata.annotations = None;
            }
        })
    }
}

impl fmt::Debug for SecretProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretProvider")
            .field("convention", &self.convention)
            .field("namespace", &self.namespace)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

/// What the Secret informer saw, in order.
enum Seen {
    Upsert(Arc<Secret>),
    Gone(ObjectKey),
}

/// Forwards the informer's events to the provider's loop.
struct Forward(mpsc::UnboundedSender<Seen>);

impl ResourceEventHandler<Secret> for Forward {
    fn on_add(&self, obj: &Arc<Secret>, _: bool) {
        let _ = self.0.send(Seen::Upsert(obj.clone()));
    }

    fn on_update(&self, _: &Arc<Secret>, new: &Arc<Secret>) {
        let _ = self.0.send(Seen::Upsert(new.clone()));
    }

    fn on_delete(&self, gone: &DeletedObject<Secret>) {
        if let Ok(key) = gone.key() {
            let _ = self.0.send(Seen::Gone(key));
        }
    }
}

/// A cluster a Secret engaged.
struct Engaged {
    cluster: ClusterName,
    /// The hash of the kubeconfig last engaged.
    revision: u64,
}

impl Provider for SecretProvider {
    async fn run(self, sink: ClusterSink, cancel: CancellationToken) -> Result<(), ProviderError> {
        let factory = SharedInformerFactory::builder(self.client.clone())
            .informer_name("fleet-secrets")
            .scope_for::<Secret>(self.scope())
            .build();
        let (tx, mut rx) = mpsc::unbounded_channel();
        // The registration lives as long as the factory, which stops below.
        factory
            .informer_for::<Secret>()
            .add_event_handler(Forward(tx))
            .map_err(|e| ProviderError(format!("watching kubeconfig Secrets: {e}")))?;
        factory.start();
        let mut engaged: BTreeMap<ObjectKey, Engaged> = BTreeMap::new();
        loop {
            let seen = tokio::select! {
                () = cancel.cancelled() => break,
                seen = rx.recv() => seen,
            };
            match seen {
                Some(Seen::Upsert(secret)) => {
                    self.upsert(&secret, &mut engaged, &sink).await;
                }
                Some(Seen::Gone(key)) => {
                    if let Some(gone) = engaged.remove(&key) {
                        sink.disengage(gone.cluster);
                    }
                }
                None => break,
            }
        }
        factory.shutdown().await;
        Ok(())
    }
}

impl SecretProvider {
    /// Engages, re-engages or disengages the cluster of a Secret that was added or changed.
    async fn upsert(
        &self,
        secret: &Secret,
        engaged: &mut BTreeMap<ObjectKey, Engaged>,
        sink: &ClusterSink,
    ) {
        let Ok(key) = ObjectKey::from_resource(secret) else {
            return;
        };
        let cluster = self
            .convention
            .cluster_of(secret)
            .filter(|_| secret.metadata.deletion_timestamp.is_none());
        // A Secret that no longer names a cluster (a label changed, or it is being deleted)
        // takes the cluster it engaged with it; one naming another cluster moves it.
        let current = engaged.get(&key).map(|e| e.cluster.clone());
        if let Some(previous) = current.filter(|c| Some(c) != cluster.as_ref()) {
            engaged.remove(&key);
            sink.disengage(previous);
        }
        let Some(cluster) = cluster else {
            return;
        };
        let field = self.convention.key();
        let Some(bytes) = secret.data.as_ref().and_then(|d| d.get(field)) else {
            tracing::warn!(secret = %key, %cluster, key = field,
                "fleet: a kubeconfig Secret has no kubeconfig; the cluster stays as it was");
            return;
        };
        let revision = kubeconfig::revision_of(&bytes.0);
        if engaged.get(&key).is_some_and(|e| e.revision == revision) {
            return;
        }
        let loaded = match std::str::from_utf8(&bytes.0) {
            Ok(text) => kubeconfig::load(text, self.policy).await.map_err(|e| {
                tracing::debug!(secret = %key, detail = e.detail(), "fleet: kubeconfig not used");
                e.reason()
            }),
            Err(_) => Err("it is not UTF-8".to_owned()),
        };
        match loaded {
            Ok(config) => {
                sink.engage(cluster.clone(), ClusterSpec::new(config).revision(revision));
                engaged.insert(key, Engaged { cluster, revision });
            }
            Err(reason) => tracing::warn!(secret = %key, %cluster, %reason,
                "fleet: a kubeconfig Secret was not used; the cluster stays as it was"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn secret(name: &str, type_: &str, labels: &[(&str, &str)]) -> Secret {
        Secret {
            metadata: ObjectMeta {
                namespace: Some("fleet".into()),
                name: Some(name.into()),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                        .collect(),
                ),
                ..ObjectMeta::default()
            },
            type_: Some(type_.into()),
            ..Secret::default()
        }
    }

    #[test]
    fn conventions_name_their_clusters() {
        let capi = Convention::ClusterApi;
        let label = [(CAPI_CLUSTER_LABEL, "east")];
        let name = |c: Convention, s: &Secret| c.cluster_of(s).map(|n| n.to_string());
        assert_eq!(
            name(capi, &secret("east-kubeconfig", CAPI_TYPE, &label)).as_deref(),
            Some("fleet/east")
        );
        // The user kubeconfig, another type, a name that is not the label's cluster.
        assert_eq!(
            name(capi, &secret("east-user-kubeconfig", CAPI_TYPE, &label)),
            None
        );
        assert_eq!(
            name(capi, &secret("east-kubeconfig", "Opaque", &label)),
            None
        );
        assert_eq!(
            name(capi, &secret("west-kubeconfig", CAPI_TYPE, &label)),
            None
        );
        assert_eq!(name(capi, &secret("east-ca", CAPI_TYPE, &label)), None);
        let mcr = Convention::MulticlusterRuntime;
        let on = [(MCR_LABEL, "true")];
        assert_eq!(
            name(mcr, &secret("east", "Opaque", &on)).as_deref(),
            Some("east")
        );
        assert_eq!(
            name(mcr, &secret("east", "Opaque", &[(MCR_LABEL, "false")])),
            None
        );
    }
}
