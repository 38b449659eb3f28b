//! The kube-apiserver backend (`orchestrate --kube-apiserver`): a real kube-apiserver and etcd
//! from informer-envtest, seeded over HTTP as a cluster's own controllers would have written the
//! Pods.
//!
//! A Pod reaches a real cluster in two writes: its controller creates it (kube-apiserver resets
//! `status` on create) and the kubelet reports its status through the `status` subresource. The
//! seed does the same with the same field managers (`kube-controller-manager`, then `kubelet`),
//! so what kube-apiserver serves back carries a spec, a running status and two managedFields
//! entries, like the Pods informer-testserver serves. Fields the server sets (`uid`,
//! `resourceVersion`, `creationTimestamp`, `generation`, `managedFields`) are stripped before
//! the create: the server writes its own.
//!
//! The scenarios that need a hook in the server (a held watch, a forced 410, counted watches)
//! reach kube-apiserver through the orchestrator's proxy ([`proxy`](super::proxy)); the
//! orchestrator writes the updates and the relist sentinel over HTTP, as a controller would.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use futures::{StreamExt, TryStreamExt};
use informer_envtest::{Envtest, Options};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::core::Request;
use serde_json::{Value, json};

use super::proxy::Proxy;
use crate::fleet::Fleet;
use crate::pods::namespace_name;
use crate::podset::PodSet;

/// Requests in flight while seeding (kube-apiserver and etcd share the machine's cores).
pub(crate) const SEED_CONCURRENCY: usize = 32;

/// A running kube-apiserver with etcd, and the kubeconfig children connect with.
pub(crate) struct RealServer {
    env: Envtest,
    kubeconfig: PathBuf,
    client: kube::Client,
    proxy: Proxy,
}

impl RealServer {
    /// Builds (if needed) and starts the launcher, and writes its kubeconfig to `kubeconfig`.
    pub(crate) async fn start(kubeconfig: PathBuf) -> anyhow::Result<Self> {
        let env = Envtest::start(Options::default())
            .await
            .context("starting kube-apiserver (informer-envtest; needs Go 1.26+ for its build)")?;
        if let Some(dir) = kubeconfig.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        env.write_kubeconfig(&kubeconfig)
            .context("writing the kubeconfig")?;
        let client = env.client().await.context("the kube-apiserver client")?;
        let proxy = Proxy::start(client.clone()).await?;
        Ok(RealServer {
            env,
            kubeconfig,
            client,
            proxy,
        })
    }

    /// The API server's URL.
    pub(crate) fn url(&self) -> &str {
        self.env.server_url()
    }

    /// The kubeconfig children use (TLS verified against the launcher's CA, bearer token).
    pub(crate) fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// The proxy the scenarios with server hooks go through.
    pub(crate) fn proxy(&self) -> &Proxy {
        &self.proxy
    }

    /// A client of the orchestrator's own runtime.
    pub(crate) fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// The launcher's resident set (etcd and kube-apiserver are one process), MiB.
    pub(crate) fn rss_mib(&self) -> f64 {
        crate::sys::rss_of(self.env.pid()).current_kib as f64 / 1024.0
    }

    /// Creates the namespaces and Pods over HTTP and returns the mean JSON size of a Pod as the
    /// server serves it back (its own managedFields and timestamps included).
    pub(crate) async fn seed(&self, pods: &PodSet) -> anyhow::Result<f64> {
        self.create_namespaces(pods.namespaces).await?;
        futures::stream::iter(0..pods.n)
            .map(|i| async move {
                self.seed_pod(pods.pod_json(i))
                    .await
                    .with_context(|| format!("seeding Pod {i} ({})", pods.name_of(i)))
            })
            .buffer_unordered(SEED_CONCURRENCY)
            .try_collect::<()>()
            .await?;
        self.served_pod_bytes().await
    }

    /// Creates scenario 11's namespaces, Deployments and Pods over HTTP (each Pod as
    /// [`seed`](Self::seed) writes one: the controller's create, then the kubelet's status).
    pub(crate) async fn seed_fleet(&self, fleet: &Fleet) -> anyhow::Result<()> {
        self.create_namespaces(fleet.namespaces).await?;
        futures::stream::iter(0..fleet.deployments)
            .map(|d| async move {
                let (create, _) = for_create(fleet.deployment_json(d))?;
                let collection = format!(
                    "/apis/apps/v1/namespaces/{}/deployments",
                    fleet.namespace_of(d)
                );
                self.post(&collection, Some("kubectl"), &create)
                    .await
                    .with_context(|| format!("seeding Deployment {d}"))
                    .map(drop)
            })
            .buffer_unordered(SEED_CONCURRENCY)
            .try_collect::<()>()
            .await?;
        futures::stream::iter(0..fleet.pods)
            .map(|p| async move {
                self.seed_pod(fleet.pod_json(p))
                    .await
                    .with_context(|| format!("seeding Pod {p}"))
            })
            .buffer_unordered(SEED_CONCURRENCY)
            .try_collect::<()>()
            .await
    }

    /// Applies `patch` (a JSON merge patch) to Pod `ns/name`.
    pub(crate) async fn patch_pod(
        &self,
        ns: &str,
        name: &str,
        patch: &Value,
    ) -> anyhow::Result<()> {
        let req = Request::new(format!("/api/v1/namespaces/{ns}/pods"))
            .patch(name, &PatchParams::default(), &Patch::Merge(patch))
            .context("building the patch")?;
        self.client
            .request_text(req)
            .await
            .with_context(|| format!("patching Pod {ns}/{name}"))?;
        Ok(())
    }

    /// Creates `pod` as its controller would (no status).
    pub(crate) async fn create_pod(&self, pod: Value) -> anyhow::Result<()> {
        let (create, _status) = for_create(pod)?;
        let ns = create["metadata"]["namespace"]
            .as_str()
            .context("the Pod has no namespace")?
            .to_owned();
        self.post(&format!("/api/v1/namespaces/{ns}/pods"), None, &create)
            .await?;
        Ok(())
    }

    /// Deletes Pod `ns/name` at once.
    pub(crate) async fn delete_pod(&self, ns: &str, name: &str) -> anyhow::Result<()> {
        let req = Request::new(format!("/api/v1/namespaces/{ns}/pods"))
            .delete(name, &DeleteParams::default().grace_period(0))
            .context("building the delete")?;
        self.client
            .request_text(req)
            .await
            .with_context(|| format!("deleting Pod {ns}/{name}"))?;
        Ok(())
    }

    /// Creates namespaces `bench-000` … up to `n`.
    async fn create_namespaces(&self, n: usize) -> anyhow::Result<()> {
        for n in 0..n {
            let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace_name(n)}});
            self.post("/api/v1/namespaces", None, &ns)
                .await
                .with_context(|| format!("creating namespace {}", namespace_name(n)))?;
        }
        Ok(())
    }

    /// One Pod: the controller's create, then the kubelet's status.
    async fn seed_pod(&self, pod: Value) -> anyhow::Result<()> {
        let (create, status) = for_create(pod)?;
        let ns = create["metadata"]["namespace"]
            .as_str()
            .context("the Pod has no namespace")?
            .to_owned();
        let name = create["metadata"]["name"]
            .as_str()
            .context("the Pod has no name")?
            .to_owned();
        let collection = format!("/api/v1/namespaces/{ns}/pods");
        let mut created = self
            .post(&collection, Some("kube-controller-manager"), &create)
            .await?;
        created["status"] = status;
        let pp = PostParams {
            field_manager: Some("kubelet".into()),
            ..PostParams::default()
        };
        let req = Request::new(&collection)
            .replace_subresource("status", &name, &pp, serde_json::to_vec(&created)?)
            .context("building the status update")?;
        self.client
            .request_text(req)
            .await
            .context("the kubelet's status update")?;
        Ok(())
    }

    async fn post(
        &self,
        collection: &str,
        manager: Option<&str>,
        body: &Value,
    ) -> anyhow::Result<Value> {
        let pp = PostParams {
            field_manager: manager.map(String::from),
            ..PostParams::default()
        };
        let req = Request::new(collection)
            .create(&pp, serde_json::to_vec(body)?)
            .context("building the create")?;
        let text = self.client.request_text(req).await?;
        serde_json::from_str(&text).context("the created object")
    }

    /// Runs a full garbage collection in the launcher's one Go process (etcd and kube-apiserver):
    /// kube-apiserver serves Go's `/debug/pprof/heap` (`--profiling`, on by default), and
    /// `gc=1` collects before it profiles. Each sync allocates a sizeable share of a GC cycle on
    /// the server, so without this its collections land on whichever repetition crosses the
    /// threshold, and the alternating order of the children can put them on one side's runs
    /// again and again (a collection takes about 1.5 cores for 2 s at 20 000 Pods).
    pub(crate) async fn collect_garbage(&self) -> anyhow::Result<()> {
        let req = http::Request::get("/debug/pprof/heap?gc=1")
            .body(Vec::new())
            .context("building the GC request")?;
        let res = self
            .client
            .send(req.map(kube::client::Body::from))
            .await
            .context("GET /debug/pprof/heap?gc=1")?;
        let status = res.status();
        // The profile itself is not needed; reading it lets the connection be reused.
        http_body_util::BodyExt::collect(res.into_body())
            .await
            .context("reading the heap profile")?;
        if !status.is_success() {
            bail!("GET /debug/pprof/heap?gc=1 answered {status}");
        }
        Ok(())
    }

    /// The mean size of one Pod as served (the first 500 a LIST returns).
    async fn served_pod_bytes(&self) -> anyhow::Result<f64> {
        let docs = self.served_pods(500).await?;
        Ok(docs.iter().map(Vec::len).sum::<usize>() as f64 / docs.len() as f64)
    }

    /// The first `n` Pods a LIST returns, each as its JSON (never empty).
    pub(crate) async fn served_pods(&self, n: u32) -> anyhow::Result<Vec<Vec<u8>>> {
        let req = Request::new("/api/v1/pods")
            .list(&ListParams::default().limit(n.max(1)))
            .context("building the LIST")?;
        let page: Value =
            serde_json::from_str(&self.client.request_text(req).await?).context("the LIST page")?;
        let Some(items) = page["items"].as_array().filter(|i| !i.is_empty()) else {
            bail!("kube-apiserver lists no Pods after seeding");
        };
        // A LIST's items carry no kind; the decoders measured do not need one.
        items
            .iter()
            .map(|item| serde_json::to_vec(item).context("re-encoding a Pod"))
            .collect()
    }
}

/// Splits a benchmark Pod into what its controller creates (without the fields the server
/// sets, and without `status`, which a create resets) and the status the kubelet reports.
pub(crate) fn for_create(mut pod: Value) -> anyhow::Result<(Value, Value)> {
    let Some(meta) = pod.get_mut("metadata").and_then(Value::as_object_mut) else {
        bail!("the Pod has no metadata");
    };
    for server_set in [
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "generation",
        "managedFields",
        "selfLink",
    ] {
        meta.remove(server_set);
    }
    let status = pod
        .as_object_mut()
        .and_then(|o| o.remove("status"))
        .unwrap_or(Value::Null);
    Ok((pod, status))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_create_carries_no_server_set_field_and_the_status_goes_apart() {
        let pod = PodSet::distinct(3, 1).pod_json(1);
        assert!(pod["metadata"]["uid"].is_string() && pod["status"].is_object());
        let (create, status) = for_create(pod.clone()).expect("a Pod");
        for field in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "managedFields",
        ] {
            assert!(
                create["metadata"].get(field).is_none(),
                "{field} must not be sent"
            );
        }
        assert!(create.get("status").is_none());
        assert_eq!(status, pod["status"]);
        assert_eq!(create["spec"], pod["spec"]);
        assert_eq!(create["metadata"]["labels"], pod["metadata"]["labels"]);
        assert!(for_create(json!({"kind": "Pod"})).is_err());
    }
}
