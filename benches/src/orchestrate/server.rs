//! The benchmark's server: informer-testserver (seeding, updates, the forced 410 and watch
//! counting), or a real kube-apiserver (`--kube-apiserver`, see [`real`](super::real)), whose
//! hooks the orchestrator's proxy provides ([`proxy`](super::proxy)).

use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, bail};
use futures::{StreamExt, TryStreamExt};
use informer_testserver::{FaultTarget, TestServer};
use serde_json::{Value, json};

use super::real::RealServer;
use crate::fleet::Fleet;
use crate::pods::{namespace_name, pod_json};
use crate::podset::PodSet;
use crate::protocol::{GENERATION_ANNOTATION, Scenario};

/// Request counts seen by the server.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RequestCounts {
    pub(crate) lists: usize,
    pub(crate) watches: usize,
    /// LISTs and WATCHes the server answered in protobuf.
    pub(crate) protobuf: usize,
}

/// The server plus what the orchestrator learned about its speed.
pub(crate) struct BenchServer {
    backend: Backend,
    /// Seconds per patch on kube-apiserver, measured after seeding (sizes the bound of the
    /// watch hold of scenario 2 behind the proxy); unused on informer-testserver.
    patch_s: f64,
}

/// Which server the children sync from.
enum Backend {
    /// informer-testserver, hosted in this process: every scenario.
    Test(TestServer),
    /// kube-apiserver with etcd (informer-envtest), and the proxy that gives it the hooks.
    Real(Box<RealServer>),
}

impl BenchServer {
    /// Starts a server whose history can replay `updates` events (scenario 2 replays them all).
    /// `compress`: keep the server's objects LZ4-compressed and their protobuf encoded only on
    /// first use (the scale run, which reads JSON only).
    pub(crate) async fn start(updates: usize, compress: bool) -> anyhow::Result<Self> {
        let server = TestServer::builder()
            .history_size(updates + 10_000)
            .compress_objects(compress)
            // Protobuf encoded at the write, as the JSON is: kube-apiserver keeps objects in
            // etcd as protobuf, so neither format may pay the server's first encoding. Not in
            // the scale run: its child reads JSON, and a second copy of every object would not fit.
            .eager_protobuf(!compress)
            // The first list (resourceVersion "0") comes whole from the watch cache, as from
            // kube-apiserver; not in the scale run, whose one body of 15 GB this server would
            // build in memory beside the million objects (kube-apiserver streams it).
            .watch_cache(!compress)
            // Bookmarks every 5 s (the default) would only add noise to short runs; 60 s keeps them rare.
            .bookmark_interval(Duration::from_secs(60))
            .start()
            .await
            .context("starting informer-testserver")?;
        Ok(BenchServer {
            backend: Backend::Test(server),
            patch_s: 0.0,
        })
    }

    /// Starts kube-apiserver and etcd (informer-envtest) and writes the children's kubeconfig
    /// to `kubeconfig`.
    pub(crate) async fn start_kube_apiserver(kubeconfig: PathBuf) -> anyhow::Result<Self> {
        Ok(BenchServer {
            backend: Backend::Real(Box::new(RealServer::start(kubeconfig).await?)),
            patch_s: 0.0,
        })
    }

    /// The server, for the report: `informer-testserver` or `kube-apiserver v1.37.2`.
    pub(crate) fn name(&self) -> String {
        match &self.backend {
            Backend::Test(_) => "informer-testserver".into(),
            Backend::Real(_) => format!("kube-apiserver {}", informer_envtest::KUBERNETES_VERSION),
        }
    }

    /// The kubeconfig children of `scenario` connect with: kube-apiserver's (TLS and a token)
    /// unless they go through the proxy, which needs none; none for the test server.
    pub(crate) fn kubeconfig(&self, scenario: Scenario) -> Option<&Path> {
        match &self.backend {
            Backend::Real(real) if !scenario.uses_server_hooks() => Some(real.kubeconfig()),
            _ => None,
        }
    }

    /// Whether this is kube-apiserver.
    pub(crate) fn is_kube_apiserver(&self) -> bool {
        matches!(self.backend, Backend::Real(_))
    }

    /// The server's resident set after seeding, MiB: this process when it hosts the test
    /// server (the orchestrator adds a few MiB), else the launcher's.
    pub(crate) fn rss_mib(&self) -> f64 {
        match &self.backend {
            Backend::Test(_) => crate::sys::rss().current_kib as f64 / 1024.0,
            Backend::Real(real) => real.rss_mib(),
        }
    }

    /// Up to `n` Pods as kube-apiserver serves them (`None` for the test server, which serves
    /// the seeded Pods unchanged).
    pub(crate) async fn served_pods(&self, n: u32) -> anyhow::Result<Option<Vec<Vec<u8>>>> {
        match &self.backend {
            Backend::Test(_) => Ok(None),
            Backend::Real(real) => real.served_pods(n).await.map(Some),
        }
    }

    /// The in-process test server, for what only it can do (feature gates, the scale run).
    fn test(&self) -> anyhow::Result<&TestServer> {
        match &self.backend {
            Backend::Test(server) => Ok(server),
            Backend::Real(_) => bail!("this needs informer-testserver"),
        }
    }

    /// A client of the orchestrator's runtime.
    pub(crate) async fn client(&self) -> anyhow::Result<kube::Client> {
        match &self.backend {
            Backend::Test(server) => crate::child::client(&server.base_url(), None).await,
            Backend::Real(real) => Ok(real.client()),
        }
    }

    /// Lists every Pod once over HTTP, page by page, and discards the bodies (untimed), so the
    /// first measured run does not pay the server's first-touch costs (its allocator growing
    /// to a page's size) and the first repetition is not an outlier for either implementation.
    pub(crate) async fn warm_up(&self, page_size: u32) -> anyhow::Result<()> {
        #[derive(serde::Deserialize)]
        struct Meta {
            metadata: kube::core::ListMeta,
        }
        let client = self.client().await?;
        let request = kube::core::Request::new("/api/v1/pods");
        let mut continue_token: Option<String> = None;
        loop {
            let mut lp = kube::api::ListParams::default().limit(page_size);
            if let Some(token) = continue_token.take() {
                lp = lp.continue_token(&token);
            }
            let text = client
                .request_text(request.list(&lp)?)
                .await
                .context("warm-up LIST page")?;
            let page: Meta = serde_json::from_str(&text).context("warm-up page metadata")?;
            match page.metadata.continue_ {
                Some(token) if !token.is_empty() => continue_token = Some(token),
                _ => return Ok(()),
            }
        }
    }

    /// Puts the server in the same state before every repetition: on kube-apiserver, a full
    /// garbage collection ([`RealServer::collect_garbage`]); informer-testserver has no collector.
    pub(crate) async fn settle(&self) -> anyhow::Result<()> {
        match &self.backend {
            Backend::Test(_) => Ok(()),
            Backend::Real(real) => real.collect_garbage().await,
        }
    }

    /// The base URL children of `scenario` connect to: on kube-apiserver, the proxy's for the
    /// scenarios with server hooks.
    pub(crate) fn url(&self, scenario: Scenario) -> String {
        match &self.backend {
            Backend::Test(server) => server.base_url(),
            Backend::Real(real) if scenario.uses_server_hooks() => real.proxy().url().to_owned(),
            Backend::Real(real) => real.url().to_owned(),
        }
    }

    /// Creates the namespaces and Pods and returns the mean JSON size of a Pod. The test server
    /// is seeded through its store path (no HTTP, same events and RVs as an HTTP create);
    /// kube-apiserver over HTTP.
    pub(crate) async fn seed(&mut self, pods: &PodSet) -> anyhow::Result<f64> {
        let server = match &self.backend {
            Backend::Test(server) => server,
            Backend::Real(real) => {
                let bytes = real.seed(pods).await?;
                // The cost of one patch with as many in flight as the updates have (sizes the
                // watch hold of scenario 2); generation 0 adds the restart annotation.
                let probe = pods.n.min(200);
                let t = Instant::now();
                self.patch_many(pods, 0..probe, 0).await?;
                self.patch_s = t.elapsed().as_secs_f64() / probe.max(1) as f64;
                return Ok(bytes);
            }
        };
        for n in 0..pods.namespaces {
            server
                .create_json(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace_name(n)}}))
                .context("creating a namespace")?;
        }
        let mut sampled = (0usize, 0usize);
        for i in 0..pods.n {
            let pod = pods.pod_json(i);
            if i % 97 == 0 {
                sampled.0 += serde_json::to_vec(&pod)?.len();
                sampled.1 += 1;
            }
            server
                .create_json(pod)
                .with_context(|| format!("creating Pod {i}"))?;
            if i % 4096 == 4095 {
                // Let the server's own tasks run between batches.
                tokio::task::yield_now().await;
            }
        }
        // No patch calibration: scenario 2's hold here is the bound `MAX_HOLD`, ended by
        // `release_held_watches` when the updates are in (see `hold_for`).
        Ok(sampled.0 as f64 / sampled.1.max(1) as f64)
    }

    /// Scenario 12: creates every namespace of `pods` and Pods `which` of it, through the test
    /// server's store path (one cluster's share of the distinct corpus).
    pub(crate) async fn seed_cluster(
        &self,
        pods: &PodSet,
        which: std::ops::Range<usize>,
    ) -> anyhow::Result<()> {
        let server = self.test()?;
        for n in 0..pods.namespaces {
            server
                .create_json(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace_name(n)}}))
                .context("creating a namespace")?;
        }
        for i in which {
            server
                .create_json(pods.pod_json(i))
                .with_context(|| format!("creating Pod {i}"))?;
            if i % 4096 == 4095 {
                tokio::task::yield_now().await;
            }
        }
        Ok(())
    }

    /// Creates scenario 11's namespaces, Deployments and Pods: through the test server's store
    /// path, or over HTTP on kube-apiserver.
    pub(crate) async fn seed_fleet(&self, fleet: &Fleet) -> anyhow::Result<()> {
        let server = match &self.backend {
            Backend::Test(server) => server,
            Backend::Real(real) => return real.seed_fleet(fleet).await,
        };
        for n in 0..fleet.namespaces {
            server
                .create_json(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace_name(n)}}))
                .context("creating a namespace")?;
        }
        for d in 0..fleet.deployments {
            server
                .create_json(fleet.deployment_json(d))
                .with_context(|| format!("creating Deployment {d}"))?;
        }
        for p in 0..fleet.pods {
            server
                .create_json(fleet.pod_json(p))
                .with_context(|| format!("creating Pod {p}"))?;
            if p % 4096 == 4095 {
                tokio::task::yield_now().await;
            }
        }
        Ok(())
    }

    /// Scenario 11: the LISTs and WATCHes of the child since the last
    /// [`clear_requests`](Self::clear_requests), without the orchestrator's own ConfigMap watch
    /// (the one with the [`MANAGED_BY`](crate::fleet::MANAGED_BY) selector), and how many of
    /// the WATCHes asked for the streaming initial list (`sendInitialEvents=true`). `None` on
    /// kube-apiserver, whose requests this process does not see.
    pub(crate) fn operator_requests(&self) -> Option<(RequestCounts, usize)> {
        let Backend::Test(server) = &self.backend else {
            return None;
        };
        let log = server.requests();
        let child: Vec<_> = log
            .iter()
            .filter(|r| r.is_list() || r.is_watch())
            .filter(|r| r.query.label_selector.as_deref() != Some(crate::fleet::MANAGED_BY))
            .collect();
        let streaming = child
            .iter()
            .filter(|r| r.is_watch() && r.query.send_initial_events == Some(true))
            .count();
        Some((
            RequestCounts {
                lists: child.iter().filter(|r| r.is_list()).count(),
                watches: child.iter().filter(|r| r.is_watch()).count(),
                protobuf: child.iter().filter(|r| r.protobuf).count(),
            },
            streaming,
        ))
    }

    fn patch_generation(&self, pods: &PodSet, i: usize, generation: u64) -> anyhow::Result<()> {
        self.test()?
            .patch_json(
                "v1",
                "Pod",
                Some(&pods.namespace_of(i)),
                &pods.name_of(i),
                &generation_patch(i, generation),
            )
            .with_context(|| format!("patching Pod {i}"))?;
        Ok(())
    }

    /// Patches Pods `which` to `generation`: in process on the test server, over HTTP with
    /// [`SEED_CONCURRENCY`](super::real::SEED_CONCURRENCY) in flight on kube-apiserver.
    async fn patch_many(
        &self,
        pods: &PodSet,
        which: impl Iterator<Item = usize>,
        generation: u64,
    ) -> anyhow::Result<()> {
        match &self.backend {
            Backend::Test(_) => {
                for i in which {
                    self.patch_generation(pods, i, generation)?;
                    if i % 4096 == 4095 {
                        tokio::task::yield_now().await;
                    }
                }
                Ok(())
            }
            Backend::Real(real) => {
                futures::stream::iter(which)
                    .map(|i| async move {
                        real.patch_pod(
                            &pods.namespace_of(i),
                            &pods.name_of(i),
                            &generation_patch(i, generation),
                        )
                        .await
                    })
                    .buffer_unordered(super::real::SEED_CONCURRENCY)
                    .try_collect::<()>()
                    .await
            }
        }
    }

    /// Scenario 2: every Pod of the subset goes through each generation of `generations`, in rounds.
    pub(crate) async fn update_subset(
        &self,
        pods: &PodSet,
        generations: RangeInclusive<u64>,
    ) -> anyhow::Result<()> {
        for generation in generations {
            self.patch_many(pods, pods.subset(), generation).await?;
        }
        Ok(())
    }

    /// Scenario 2: while on, the next WATCH is answered only once the updates have gone in
    /// ([`release_held_watches`](Self::release_held_watches)), or after `hold` at the latest.
    /// The watch then replays them from the history as one backlog, so the child consumes at
    /// its own full speed instead of at the producer's. informer-testserver holds the WATCH
    /// itself, its response headers included (a delay, `Faults::delay`); on kube-apiserver the
    /// proxy forwards the watch at once and holds back its deliveries instead, with the same
    /// effect for the child. `None` ends the hold, releasing what it holds.
    pub(crate) fn hold_watches(&self, hold: Option<Duration>) {
        match (&self.backend, hold) {
            (Backend::Test(_), None) => self.release_held_watches(),
            (Backend::Test(server), Some(d)) => server.faults().delay(FaultTarget::Watch, d),
            (Backend::Real(real), hold) => real.proxy().hold_watches(hold),
        }
    }

    /// Scenario 2: the updates have all gone in, so the held watch goes on now rather than at
    /// the end of the hold (which only bounds the wait): informer-testserver answers the WATCH
    /// held in its delay (`Faults::release_delays`), kube-apiserver's proxy delivers the held
    /// events. A WATCH that comes later (a child slower to sync than the updates to go in) is
    /// not held: it replays the same backlog from the history.
    pub(crate) fn release_held_watches(&self) {
        match &self.backend {
            Backend::Test(server) => {
                // The delay is removed first, so no WATCH arriving meanwhile starts a new one.
                server.faults().delay(FaultTarget::Watch, Duration::ZERO);
                server.faults().release_delays();
            }
            Backend::Real(real) => real.proxy().release_watches(),
        }
    }

    /// The bound of the hold of the child's watch for `updates` updates after a sync of about
    /// `sync_s`; [`release_held_watches`](Self::release_held_watches) ends it when the updates
    /// are in. informer-testserver withholds the watch's response headers, so its hold is
    /// [`MAX_HOLD`], well short of the child's wait for them; the proxy in front of kube-apiserver
    /// sends them at once and holds the events back, for an estimate of how long the updates
    /// take to write, at most [`PROXY_MAX_HOLD`]. Updates that take longer than the bound
    /// are partly paced by the producer, which `hold_overrun_s` reports.
    pub(crate) fn hold_for(&self, updates: u64, sync_s: f64) -> Duration {
        match &self.backend {
            Backend::Test(_) => MAX_HOLD,
            Backend::Real(_) => hold_duration(sync_s, self.patch_s, updates, PROXY_MAX_HOLD),
        }
    }

    /// When the first WATCH since the last [`clear_requests`](Self::clear_requests) arrived.
    pub(crate) fn first_watch_at(&self) -> Option<SystemTime> {
        match &self.backend {
            Backend::Test(server) => server
                .requests()
                .iter()
                .find(|r| r.is_watch())
                .map(|r| r.time),
            Backend::Real(real) => real
                .proxy()
                .requests()
                .iter()
                .find(|r| r.watch)
                .map(|r| r.time),
        }
    }

    /// Turns the server's `ShardedListAndWatch` feature on or off (scenario 9).
    /// kube-apiserver keeps its gate as started (on).
    pub(crate) fn set_sharded_list_and_watch(&self, on: bool) {
        if let Backend::Test(server) = &self.backend {
            server.set_sharded_list_and_watch(on);
        }
    }

    /// Forgets the request log (called before each child).
    pub(crate) fn clear_requests(&self) {
        match &self.backend {
            Backend::Test(server) => server.clear_requests(),
            Backend::Real(real) => real.proxy().clear(),
        }
    }

    /// LISTs and WATCHes of `scenario`'s child since the last
    /// [`clear_requests`](Self::clear_requests) (`None` where the child talked to kube-apiserver
    /// directly, whose requests this process does not see).
    pub(crate) fn request_counts(&self, scenario: Scenario) -> Option<RequestCounts> {
        match &self.backend {
            Backend::Test(server) => {
                let log = server.requests();
                Some(RequestCounts {
                    lists: log.iter().filter(|r| r.is_list()).count(),
                    watches: log.iter().filter(|r| r.is_watch()).count(),
                    protobuf: log
                        .iter()
                        .filter(|r| (r.is_list() || r.is_watch()) && r.protobuf)
                        .count(),
                })
            }
            Backend::Real(real) if scenario.uses_server_hooks() => {
                let log = real.proxy().requests();
                Some(RequestCounts {
                    lists: log.iter().filter(|r| r.list).count(),
                    watches: log.iter().filter(|r| r.watch).count(),
                    protobuf: log.iter().filter(|r| r.protobuf).count(),
                })
            }
            Backend::Real(_) => None,
        }
    }

    /// Watches open now (the proxy's, on kube-apiserver).
    fn active_watches(&self) -> usize {
        match &self.backend {
            Backend::Test(server) => server.active_watches(),
            Backend::Real(real) => real.proxy().active_watches(),
        }
    }

    /// (is a LIST, is a WATCH) of every request since the last clear.
    fn request_kinds(&self) -> Vec<(bool, bool)> {
        match &self.backend {
            Backend::Test(server) => server
                .requests()
                .iter()
                .map(|r| (r.is_list(), r.is_watch()))
                .collect(),
            Backend::Real(real) => real
                .proxy()
                .requests()
                .iter()
                .map(|r| (r.list, r.watch))
                .collect(),
        }
    }

    /// Scenario 3: open watch connections once they settle (at least `want`, or after 10 s).
    pub(crate) async fn settled_watches(&self, want: usize) -> anyhow::Result<usize> {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.active_watches() < want && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // A straggler opening a further watch would show up within this grace period.
        tokio::time::sleep(Duration::from_millis(500)).await;
        Ok(self.active_watches())
    }

    /// Scenario 4: sends a 410 ERROR event to the open watch and waits until the client has
    /// relisted and is watching again (a LIST, then a WATCH, after the 410).
    /// On kube-apiserver the proxy ends the open watch and answers the client's next WATCH with
    /// 410 Gone, as kube-apiserver does when a watch's resourceVersion is too old.
    pub(crate) async fn force_relist(&self) -> anyhow::Result<()> {
        // The client may report "synced" a moment before its watch is open; a 410 sent to no
        // watch would be lost, so wait for the watch first.
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.active_watches() == 0 {
            if Instant::now() > deadline {
                bail!("the child opened no watch within 60 s of its sync");
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let before = self.request_kinds().len();
        match &self.backend {
            Backend::Test(server) => server.faults().expire_open_watches(),
            Backend::Real(real) => real.proxy().expire_open_watches().await,
        }
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            let log = self.request_kinds();
            let new = log.get(before..).unwrap_or_default();
            if let Some(list) = new.iter().position(|(list, _)| *list)
                && new[list..].iter().any(|(_, watch)| *watch)
                && self.active_watches() > 0
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("no relist within 300 s of the forced 410");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Scenario 4: creates the Pod whose arrival tells the child the relist is behind it.
    pub(crate) async fn create_sentinel(&self, name: &str) -> anyhow::Result<()> {
        // Seed 0 puts it in shard 0, inside the subset the relist scenario watches.
        let pod = pod_json(&namespace_name(0), name, 0, 0);
        match &self.backend {
            Backend::Test(server) => server.create_json(pod).map(drop).map_err(Into::into),
            Backend::Real(real) => real.create_pod(pod).await,
        }
        .context("creating the sentinel Pod")
    }

    /// Deletes the sentinel again, so every run sees the same Pods.
    pub(crate) async fn delete_sentinel(&self, name: &str) {
        let ns = namespace_name(0);
        let res = match &self.backend {
            Backend::Test(server) => server
                .delete_json("v1", "Pod", Some(&ns), name)
                .map(drop)
                .map_err(Into::into),
            Backend::Real(real) => real.delete_pod(&ns, name).await,
        };
        if let Err(e) = res {
            tracing::debug!("deleting the sentinel {name}: {e:#}");
        }
    }

    /// Stops the server.
    pub(crate) async fn shutdown(self) {
        match self.backend {
            Backend::Test(server) => server.shutdown().await,
            // Dropping the launcher stops kube-apiserver and etcd and removes their data.
            Backend::Real(real) => drop(real),
        }
    }
}

/// Scenario 2's change to Pod `i`, like a status update: the generation annotation and the
/// restart time.
fn generation_patch(i: usize, generation: u64) -> Value {
    json!({"metadata": {"annotations": {
        GENERATION_ANNOTATION: generation.to_string(),
        "kubectl.kubernetes.io/restartedAt": format!("2026-11-21T{:02}:{:02}:00Z", generation % 24, i % 60),
    }}})
}

/// The hold of a child's watch on informer-testserver, which holds the response headers back,
/// unless [`BenchServer::release_held_watches`] ends it first: half the wait for response
/// headers after which informer-rs gives a WATCH up as a dead connection (T4, R7). A longer
/// hold made the child drop the held watch and ask again, to be held again, until the phase
/// timed out: scenario 2 run first at 50 000 Pods, before any sync had measured `sync_s`, held
/// for about 92 s. A backlog that takes longer to write is then partly paced by the producer,
/// which `hold_overrun_s` reports.
pub(crate) const MAX_HOLD: Duration =
    Duration::from_secs(informer_runtime::list_watch::DEFAULT_RESPONSE_HEAD_TIMEOUT.as_secs() / 2);

/// The longest hold of a child's watch behind the proxy (kube-apiserver), whose headers are
/// sent at once: a bound for a hold computed from a wrong estimate, far above the 72-96 s
/// kube-apiserver took to accept 20 000 updates.
pub(crate) const PROXY_MAX_HOLD: Duration = Duration::from_secs(15 * 60);

/// The hold behind the proxy for `updates` updates of `patch_s` each after a sync of about
/// `sync_s`, at most `cap`.
fn hold_duration(sync_s: f64, patch_s: f64, updates: u64, cap: Duration) -> Duration {
    let want = sync_s * 1.5 + patch_s * updates as f64 * 1.5 + 2.0;
    Duration::try_from_secs_f64(want).map_or(cap, |d| d.min(cap))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scenario 2 on informer-testserver: the held WATCH is answered when the updates are in
    /// (`release_held_watches`), not at the end of the hold, which is only a bound, shorter
    /// than the child's wait for response headers; a WATCH that comes after the release is
    /// not held.
    #[tokio::test]
    async fn a_held_watch_is_answered_once_released() {
        use k8s_openapi::api::core::v1::ConfigMap;
        use kube::api::{Api, WatchParams};

        let server = BenchServer::start(10, false)
            .await
            .expect("the test server starts");
        // Scenario 2 first at 50 000 Pods: the 5 ms-per-Pod guess for 10 000 Pods.
        let hold = server.hold_for(20_000, 50.0);
        assert_eq!(hold, MAX_HOLD);
        assert!(MAX_HOLD < informer_runtime::list_watch::DEFAULT_RESPONSE_HEAD_TIMEOUT);
        server.hold_watches(Some(hold));
        let api: Api<ConfigMap> =
            Api::namespaced(server.client().await.expect("a client"), "default");
        let held = tokio::spawn({
            let api = api.clone();
            async move { api.watch(&WatchParams::default(), "0").await.map(drop) }
        });
        let faults = server.test().expect("informer-testserver").faults();
        assert!(
            faults
                .wait_for_delayed_requests(1, Duration::from_secs(10))
                .await,
            "the watch was not held"
        );
        server.release_held_watches();
        tokio::time::timeout(Duration::from_secs(10), held)
            .await
            .expect("answered within 10 s of the release, not at the hold's end")
            .expect("the task ran")
            .expect("the watch opened");
        // A later WATCH is answered at once.
        let _open = tokio::time::timeout(
            Duration::from_secs(10),
            api.watch(&WatchParams::default(), "0"),
        )
        .await
        .expect("a later watch is not held")
        .expect("the watch opened");
        assert_eq!(faults.delayed_requests(), 0);
        server.shutdown().await;
    }

    #[test]
    fn behind_the_proxy_a_watch_is_held_as_long_as_the_updates_take() {
        // kube-apiserver accepted 20 000 updates in 72-96 s (4.3 ms each): the proxy sends the
        // headers at once, so the hold covers them all rather than stopping at MAX_HOLD.
        let held = hold_duration(4.0, 0.0043, 20_000, PROXY_MAX_HOLD);
        assert!(held > Duration::from_secs(120), "{held:?}");
        assert!(held > MAX_HOLD);
        // Absurd figures give the bound, never an overflow.
        assert_eq!(
            hold_duration(f64::MAX, f64::MAX, u64::MAX, PROXY_MAX_HOLD),
            PROXY_MAX_HOLD
        );
    }
}
