//! Scenario 12's phase: many clusters in one process, informer-rs's fleet against one client-go
//! factory per cluster, on informer-testservers of its own.
//!
//! The phase starts one informer-testserver per cluster, all hosted in this process as the main
//! phase's server is (never in a measured child), and seeds each with its own share of the
//! distinct corpus: cluster `c` holds Pods `c * n .. (c + 1) * n` of one [`PodSet`], so no two
//! clusters share a Pod's name, UID or any other per-Pod string, and every cluster has the same
//! namespaces (one per 100 Pods). Each run then starts one child with every server's URL
//! (`--cluster-urls`); the child reports once every cluster has synced: the time from its start,
//! the heap it holds then, its peak RSS and CPU seconds. The servers' request logs, summed,
//! check that both sides read protobuf and streamed their initial lists (their defaults).
//!
//! The scenario is in [`Scenario::ALL`]: at the full sizes (20 clusters of 2 000 Pods) its
//! seeding and six runs take well under a minute beside the main phase's 50 000 Pods, and the
//! quick run's 4 clusters of 500 Pods a few seconds.

use std::ops::Range;
use std::path::Path;
use std::time::Instant;

use anyhow::bail;

use super::Plan;
use super::run::{
    Running, check_initial_list, check_wire_format, command, decode_thread_args, say,
};
use super::server::{BenchServer, RequestCounts};
use crate::podset::PodSet;
use crate::protocol::{ChildMsg, Impl, Metrics, Scenario};
use crate::report::{ClustersFacts, RunRecord};

/// Scenario 12's clusters: how many, and how many Pods each holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Clusters {
    /// Clusters, one server each (at least one).
    pub(crate) n: usize,
    /// Pods on each cluster.
    pub(crate) pods_each: usize,
}

impl Clusters {
    pub(crate) fn new(n: usize, pods_each: usize) -> Self {
        Clusters {
            n: n.max(1),
            pods_each,
        }
    }

    /// Every cluster's Pods as one set of distinct Pods, one namespace per 100 Pods of a cluster.
    pub(crate) fn pods(&self) -> PodSet {
        PodSet::distinct(self.n * self.pods_each, (self.pods_each / 100).max(1))
    }

    /// The Pods of cluster `c` in [`pods`](Self::pods).
    pub(crate) fn range(&self, c: usize) -> Range<usize> {
        c * self.pods_each..(c + 1) * self.pods_each
    }
}

/// Runs scenario 12 for every implementation and repetition of `plan` on servers of its own.
pub(super) async fn phase(
    plan: &Plan,
    exe: &Path,
) -> anyhow::Result<(Vec<RunRecord>, ClustersFacts)> {
    let clusters = &plan.clusters;
    let pods = clusters.pods();
    let mut servers = Vec::with_capacity(clusters.n);
    for _ in 0..clusters.n {
        servers.push(BenchServer::start(0, false).await?);
    }
    eprintln!(
        "informer-bench: clusters: {} informer-testservers; seeding {} distinct Pods in {} namespaces on each",
        clusters.n, clusters.pods_each, pods.namespaces
    );
    let t = Instant::now();
    for (c, server) in servers.iter().enumerate() {
        server.seed_cluster(&pods, clusters.range(c)).await?;
    }
    let facts = ClustersFacts {
        clusters: clusters.n,
        pods_each: clusters.pods_each,
        namespaces: pods.namespaces,
        seed_s: t.elapsed().as_secs_f64(),
        // Every server lives in this process: its resident set is theirs (and a few MiB more).
        server_rss_mib: crate::sys::rss().current_kib as f64 / 1024.0,
        server: servers.first().map_or_else(String::new, BenchServer::name),
    };
    eprintln!(
        "informer-bench: clusters: seeded in {:.1} s; servers' RSS {:.0} MiB",
        facts.seed_s, facts.server_rss_mib
    );
    // As in scenario 11: a full run discards one run of each side first (each is its own
    // binary, whose first start pays for the page cache).
    if !plan.quick {
        for imp in plan.impls_of(Scenario::Clusters) {
            let record = record(plan, exe, &servers, imp, 0).await;
            eprintln!(
                "informer-bench: clusters warm-up run ({imp}) discarded{}",
                record.error.map(|e| format!(": {e}")).unwrap_or_default()
            );
        }
    }
    let mut runs = Vec::new();
    for rep in 0..plan.reps {
        for imp in plan.impls_of(Scenario::Clusters) {
            let t = Instant::now();
            let record = record(plan, exe, &servers, imp, rep).await;
            say(&record, t.elapsed());
            runs.push(record);
        }
    }
    for server in servers {
        server.shutdown().await;
    }
    Ok((runs, facts))
}

/// One run of one side; a failure is recorded, never propagated.
async fn record(
    plan: &Plan,
    exe: &Path,
    servers: &[BenchServer],
    imp: Impl,
    rep: usize,
) -> RunRecord {
    RunRecord::of(
        Scenario::Clusters,
        imp,
        rep,
        measure(plan, exe, servers, imp).await,
    )
}

async fn measure(
    plan: &Plan,
    exe: &Path,
    servers: &[BenchServer],
    imp: Impl,
) -> anyhow::Result<Metrics> {
    for server in servers {
        server.clear_requests();
    }
    let mut child = spawn(plan, exe, servers, imp)?;
    let res = done(&mut child).await;
    child.finish().await;
    let mut metrics = res?;
    let mut counts = RequestCounts::default();
    for server in servers {
        if let Some(c) = server.request_counts(Scenario::Clusters) {
            counts.lists += c.lists;
            counts.watches += c.watches;
            counts.protobuf += c.protobuf;
        }
    }
    metrics.insert("list_requests".into(), counts.lists as f64);
    metrics.insert("watch_requests".into(), counts.watches as f64);
    check_wire_format(Scenario::Clusters, imp, counts, &mut metrics)?;
    check_initial_list(Scenario::Clusters, imp, counts)?;
    Ok(metrics)
}

/// The child's report: it says nothing until every cluster has synced, then `done`.
async fn done(child: &mut Running) -> anyhow::Result<Metrics> {
    match child.next().await? {
        ChildMsg::Done { metrics } => Ok(metrics),
        ChildMsg::Failed { error } => bail!("{error}"),
        other => bail!("expected `done`, got {other:?}"),
    }
}

fn spawn(plan: &Plan, exe: &Path, servers: &[BenchServer], imp: Impl) -> anyhow::Result<Running> {
    let clusters = &plan.clusters;
    let urls: Vec<String> = servers.iter().map(|s| s.url(Scenario::Clusters)).collect();
    let exe = match &plan.client_go {
        Some(go) if imp.is_client_go() => go.as_path(),
        _ => exe,
    };
    let total = (clusters.n * clusters.pods_each).to_string();
    let mut process = command(exe);
    process
        .arg("child")
        .args([
            "--scenario",
            Scenario::Clusters.name(),
            "--impl",
            imp.name(),
        ])
        .args(["--url", urls.first().map_or("", String::as_str)])
        .args(["--cluster-urls", &urls.join(",")])
        .args(["--pods", &total, "--objects", &total])
        .args(["--namespaces", &clusters.pods().namespaces.to_string()])
        .args(["--page-size", &plan.page_size.to_string()])
        .args(plan.gzip.then_some("--gzip"))
        .args(decode_thread_args(plan, imp));
    Running::start(process, exe, plan.child_timeout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cluster_holds_pods_of_its_own_in_the_same_namespaces() {
        let clusters = Clusters::new(3, 250);
        let pods = clusters.pods();
        assert_eq!((pods.n, pods.namespaces), (750, 2));
        assert_eq!(clusters.range(0), 0..250);
        assert_eq!(clusters.range(2), 500..750);
        let names: std::collections::HashSet<String> =
            (0..pods.n).map(|i| pods.name_of(i)).collect();
        assert_eq!(names.len(), 750, "no two clusters share a Pod name");
        for c in 0..3 {
            let mut namespaces: Vec<String> =
                clusters.range(c).map(|i| pods.namespace_of(i)).collect();
            namespaces.sort();
            namespaces.dedup();
            assert_eq!(namespaces, ["bench-000", "bench-001"]);
        }
        assert_eq!(Clusters::new(0, 10).n, 1);
    }
}
