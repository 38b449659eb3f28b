//! Scenario 11's phase: the same operator in Go (controller-runtime) and in Rust
//! (informer-controller), on a server of its own seeded with a [`Fleet`].
//!
//! The phase starts a fresh server (informer-testserver, or kube-apiserver with
//! `--kube-apiserver`), so the operator's cluster-wide Pod informer caches the fleet's Pods and
//! nothing the other scenarios seeded, and seeds it once. Each run then:
//!
//! 1. deletes every ConfigMap an earlier run wrote (by the [`MANAGED_BY`] label) and waits until
//!    none is listed;
//! 2. opens the orchestrator's own watch of those ConfigMaps and waits for its initial list;
//! 3. starts the child and times from just before its start;
//! 4. checks every ConfigMap the watch delivers against the fleet ([`Fleet::check`]: data,
//!    label, owner reference) and stops the clock when every Deployment's ConfigMap is right;
//! 5. tells the child to report (`proceed`): its peak RSS, heap, CPU seconds and counts.
//!
//! Completion is detected here, on the server, rather than reported by each child: one detector
//! for both sides, written once, that sees what was written (not what a child believes it
//! wrote), verifies every ConfigMap's content on every run, and times both children from the
//! same instant with the same watch latency. A child whose reconcile is wrong never completes
//! and its run fails at the child timeout.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use tokio::sync::oneshot;

use super::Plan;
use super::run::{Running, check_wire_format, command, say};
use super::server::BenchServer;
use crate::fleet::{Expected, Fleet, MANAGED_BY, key_of};
use crate::pods::namespace_name;
use crate::protocol::{ChildMsg, Command, Impl, Metrics, Scenario};
use crate::report::{FleetFacts, RunRecord};

/// Runs scenario 11 for every implementation and repetition of `plan` on a fresh server.
pub(super) async fn phase(
    plan: &Plan,
    exe: &Path,
    kubeconfig: PathBuf,
) -> anyhow::Result<(Vec<RunRecord>, FleetFacts)> {
    let fleet = &plan.fleet;
    let server = if plan.kube_apiserver {
        BenchServer::start_kube_apiserver(kubeconfig).await?
    } else {
        BenchServer::start(0, false).await?
    };
    eprintln!(
        "informer-bench: operator: {} at {}; seeding {} Deployments and {} Pods in {} namespaces",
        server.name(),
        server.url(Scenario::Operator),
        fleet.deployments,
        fleet.pods,
        fleet.namespaces
    );
    let t = Instant::now();
    server.seed_fleet(fleet).await?;
    let facts = FleetFacts {
        deployments: fleet.deployments,
        pods: fleet.pods,
        namespaces: fleet.namespaces,
        seed_s: t.elapsed().as_secs_f64(),
        server_rss_mib: server.rss_mib(),
        server: server.name(),
    };
    eprintln!(
        "informer-bench: operator: seeded in {:.1} s; server RSS {:.0} MiB",
        facts.seed_s, facts.server_rss_mib
    );
    let client = server.client().await?;
    let expected: Arc<Expected> = Arc::new(fleet.expected());
    let run = |imp, rep| Run {
        plan,
        exe,
        server: &server,
        client: client.clone(),
        expected: Arc::clone(&expected),
        imp,
        rep,
    };
    // A full run discards one run of each side first (each is its own binary, whose first start
    // pays for the page cache); the quick run measures nothing worth it.
    if !plan.quick {
        for imp in plan.impls_of(Scenario::Operator) {
            let record = run(imp, 0).record().await;
            eprintln!(
                "informer-bench: operator warm-up run ({imp}) discarded{}",
                record.error.map(|e| format!(": {e}")).unwrap_or_default()
            );
        }
    }
    let mut runs = Vec::new();
    for rep in 0..plan.reps {
        for imp in plan.impls_of(Scenario::Operator) {
            let t = Instant::now();
            let record = run(imp, rep).record().await;
            say(&record, t.elapsed());
            runs.push(record);
        }
    }
    server.shutdown().await;
    Ok((runs, facts))
}

/// One run of one side.
struct Run<'a> {
    plan: &'a Plan,
    exe: &'a Path,
    server: &'a BenchServer,
    client: kube::Client,
    expected: Arc<Expected>,
    imp: Impl,
    rep: usize,
}

impl Run<'_> {
    /// Runs it; a failure is recorded, never propagated.
    async fn record(self) -> RunRecord {
        RunRecord::of(Scenario::Operator, self.imp, self.rep, self.measure().await)
    }

    async fn measure(&self) -> anyhow::Result<Metrics> {
        clear_config_maps(&self.client, &self.plan.fleet).await?;
        let (ready_tx, ready) = oneshot::channel();
        let watch = tokio::spawn(all_written(
            self.client.clone(),
            Arc::clone(&self.expected),
            ready_tx,
        ));
        let _abort = AbortOnDrop(watch.abort_handle());
        tokio::time::timeout(Duration::from_secs(60), ready)
            .await
            .context("the ConfigMap watch did not list within 60 s")?
            .context("the ConfigMap watch ended before its list")?;
        self.server.clear_requests();
        let start = Instant::now();
        let mut child = self.spawn()?;
        let res = self.drive(&mut child, watch, start).await;
        child.finish().await;
        res
    }

    /// Waits for every ConfigMap (or the child's failure), then for the child's report.
    async fn drive(
        &self,
        child: &mut Running,
        watch: tokio::task::JoinHandle<anyhow::Result<Instant>>,
        start: Instant,
    ) -> anyhow::Result<Metrics> {
        let done = tokio::select! {
            done = watch => done.context("the ConfigMap watch")??,
            // A child says nothing until told to report: a message now is a failure, and no
            // message for the child timeout fails the run too.
            msg = child.next() => match msg? {
                ChildMsg::Failed { error } => bail!("{error}"),
                other => bail!("the child reported before every ConfigMap was written: {other:?}"),
            },
        };
        let reconciled_s = done.duration_since(start).as_secs_f64();
        child.send(Command::Proceed).await?;
        let mut metrics = match child.next().await? {
            ChildMsg::Done { metrics } => metrics,
            ChildMsg::Failed { error } => bail!("{error}"),
            other => bail!("expected `done`, got {other:?}"),
        };
        metrics.insert("reconciled_s".into(), reconciled_s);
        metrics.insert("deployments".into(), self.expected.len() as f64);
        if let Some((counts, streaming)) = self.server.operator_requests() {
            metrics.insert("list_requests".into(), counts.lists as f64);
            metrics.insert("watch_requests".into(), counts.watches as f64);
            metrics.insert("watch_list_requests".into(), streaming as f64);
            check_wire_format(Scenario::Operator, self.imp, counts, &mut metrics)?;
        }
        Ok(metrics)
    }

    fn spawn(&self) -> anyhow::Result<Running> {
        let plan = self.plan;
        let exe = match &plan.controller_runtime {
            Some(go) if self.imp.is_controller_runtime() => go.as_path(),
            _ => self.exe,
        };
        let mut process = command(exe);
        process
            .arg("child")
            .args(["--scenario", Scenario::Operator.name(), "--impl"])
            .arg(self.imp.name())
            .arg("--url")
            .arg(self.server.url(Scenario::Operator))
            .arg("--pods")
            .arg(plan.fleet.pods.to_string())
            .arg("--namespaces")
            .arg(plan.fleet.namespaces.to_string())
            .arg("--objects")
            .arg(plan.fleet.deployments.to_string())
            .args(super::run::decode_thread_args(plan, self.imp))
            .args(
                self.server
                    .kubeconfig(Scenario::Operator)
                    .iter()
                    .flat_map(|k| [std::ffi::OsStr::new("--kubeconfig"), k.as_os_str()]),
            );
        Running::start(process, exe, plan.child_timeout)
    }
}

/// Aborts a task when dropped (the orchestrator's watch, however the run ends).
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Deletes every ConfigMap the operator wrote, namespace by namespace, and waits until none is
/// listed (kube-apiserver has no garbage collector here to act on the owner references).
async fn clear_config_maps(client: &kube::Client, fleet: &Fleet) -> anyhow::Result<()> {
    let ours = ListParams::default().labels(MANAGED_BY);
    for n in 0..fleet.namespaces {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace_name(n));
        api.delete_collection(&DeleteParams::default(), &ours)
            .await
            .with_context(|| format!("deleting the ConfigMaps of {}", namespace_name(n)))?;
    }
    let api: Api<ConfigMap> = Api::all(client.clone());
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let left = api.list(&ours.clone().limit(1)).await?;
        if left.items.is_empty() {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("the operator's ConfigMaps were still listed 60 s after their deletion");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Watches the operator's ConfigMaps and returns the instant every one of `expected` was right
/// at once. Says `ready` once its initial list is in.
async fn all_written(
    client: kube::Client,
    expected: Arc<Expected>,
    ready: oneshot::Sender<()>,
) -> anyhow::Result<Instant> {
    let api: Api<ConfigMap> = Api::all(client);
    let events =
        watcher::watcher(api, watcher::Config::default().labels(MANAGED_BY)).default_backoff();
    let mut events = std::pin::pin!(events);
    let mut ready = Some(ready);
    let mut right: HashSet<String> = HashSet::new();
    while let Some(event) = events.next().await {
        let event = match event {
            Ok(event) => event,
            // The watcher retries with backoff; a transient error only delays detection.
            Err(e) => {
                tracing::debug!("the ConfigMap watch: {e}");
                continue;
            }
        };
        match event {
            Event::Init => right.clear(),
            Event::InitDone => {
                if let Some(ready) = ready.take() {
                    let _ = ready.send(());
                }
            }
            Event::InitApply(cm) | Event::Apply(cm) => {
                if let Some(key) = Fleet::check(&expected, &cm) {
                    right.insert(key);
                } else if let Some(key) = key_of(&cm) {
                    right.remove(&key);
                }
            }
            Event::Delete(cm) => {
                if let Some(key) = key_of(&cm) {
                    right.remove(&key);
                }
            }
        }
        if ready.is_none() && right.len() == expected.len() {
            return Ok(Instant::now());
        }
    }
    bail!("the ConfigMap watch ended")
}
