//! The results: per-run records, medians and spreads, the goals ([`goals`](crate::goals)), a
//! table and JSON.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::corpus::Corpus;
use crate::orchestrate::sizes::PodSizes;
use crate::protocol::{Impl, Metrics, Scenario};
use crate::stats::Summary;
use crate::sys::HostFacts;

/// One goal, evaluated on one run's medians ([`goals`](crate::goals) judges them).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Goal {
    /// What is compared.
    pub name: String,
    /// The measured value (a ratio, a rate, a size).
    pub value: Option<f64>,
    /// The target, as text (`>= 2.0x`).
    pub target: String,
    /// Whether the target is met (`None`: not measured in this run).
    pub met: Option<bool>,
    /// The figures behind the value, or why there is none.
    #[serde(default)]
    pub why: String,
}

/// One child run.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunRecord {
    /// The scenario.
    pub scenario: Scenario,
    /// The implementation.
    #[serde(rename = "impl")]
    pub imp: Impl,
    /// Repetition number, from 0.
    pub rep: usize,
    /// The metrics (empty when the run failed).
    pub metrics: Metrics,
    /// Why the run failed, if it did.
    pub error: Option<String>,
}

impl RunRecord {
    /// The record of one run that ended with `result`: its metrics, or why it failed.
    pub(crate) fn of(
        scenario: Scenario,
        imp: Impl,
        rep: usize,
        result: anyhow::Result<Metrics>,
    ) -> Self {
        let (metrics, error) = match result {
            Ok(m) => (m, None),
            Err(e) => (Metrics::new(), Some(format!("{e:#}"))),
        };
        RunRecord {
            scenario,
            imp,
            rep,
            metrics,
            error,
        }
    }
}

/// How the run was configured.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunConfig {
    /// `--quick`.
    pub quick: bool,
    /// Seeded Pods.
    pub pods: usize,
    /// Namespaces they are spread over.
    pub namespaces: usize,
    /// Repetitions per (scenario, implementation).
    pub reps: usize,
    /// Watch updates in scenario 2.
    pub updates: u64,
    /// Pods in the subset that scenarios 2, 3 and 4 watch.
    pub subset: usize,
    /// LIST page size of both implementations.
    pub page_size: u32,
    /// Mean JSON size of one seeded Pod, in bytes.
    pub pod_json_bytes: f64,
    /// Heap bytes of one decoded Pod in each cached shape.
    pub pod_sizes: PodSizes,
    /// Seconds it took to seed the server.
    pub seed_s: f64,
    /// Resident set of the server after seeding, MiB: the orchestrator hosting
    /// informer-testserver, or the process holding kube-apiserver and etcd.
    #[serde(default)]
    pub server_rss_mib: f64,
    /// The server the children synced from (`informer-testserver`, `kube-apiserver v1.37.2`).
    #[serde(default = "default_server")]
    pub server: String,
    /// Whether the children offered gzip (`--gzip`).
    #[serde(default)]
    pub gzip: bool,
    /// Which Pods were seeded (`--corpus`; the earliest runs seeded the all-distinct ones).
    #[serde(default)]
    pub corpus: Corpus,
    /// The decode threads asked of the informer-rs children (`--decode-threads`; `None`: the
    /// runtime's default).
    #[serde(default)]
    pub decode_threads: Option<usize>,
    /// Scenario 11's server and objects, when it ran.
    #[serde(default)]
    pub operator: Option<FleetFacts>,
    /// Scenario 12's servers and Pods, when it ran.
    #[serde(default)]
    pub clusters: Option<ClustersFacts>,
}

/// Scenario 12's servers, one per cluster: what they were seeded with and what that cost.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ClustersFacts {
    /// Clusters (one informer-testserver each).
    pub clusters: usize,
    /// Distinct Pods on each cluster.
    pub pods_each: usize,
    /// Namespaces on each cluster.
    pub namespaces: usize,
    /// Seconds it took to seed every server.
    pub seed_s: f64,
    /// Resident set of the process hosting every server after seeding, MiB.
    pub server_rss_mib: f64,
    /// The server every cluster has one of (`informer-testserver`).
    pub server: String,
}

/// Scenario 11's own server: what it was seeded with and what that cost.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FleetFacts {
    /// Deployments (one ConfigMap each).
    pub deployments: usize,
    /// Pods the Deployments select.
    pub pods: usize,
    /// Namespaces they are spread over.
    pub namespaces: usize,
    /// Seconds it took to seed the server.
    pub seed_s: f64,
    /// Resident set of the server after seeding, MiB.
    pub server_rss_mib: f64,
    /// The server (`informer-testserver`, `kube-apiserver v1.37.2`).
    pub server: String,
}

fn schema_1() -> u32 {
    1
}

fn default_server() -> String {
    "informer-testserver".into()
}

/// The layout of the results file. 3: scenario `sync` is each side's default initial list (the
/// streaming list for informer-rs and client-go) and `sync-paged` the paged LIST; files of
/// schema 2 and before ran `sync` paged, and are read with it renamed `sync-paged`. 2: the
/// `client-go` column is client-go's default (protobuf for Pods) and `client-go-json` the
/// forced-JSON one; files without a `schema` (1) named the forced-JSON column `client-go` and
/// the protobuf one `client-go-proto`.
pub const SCHEMA: u32 = 3;

/// Everything written to the JSON file.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Report {
    /// The layout of this file ([`SCHEMA`]; 1 when absent).
    #[serde(default = "schema_1")]
    pub schema: u32,
    /// `git rev-parse HEAD`, with `-dirty` for local changes.
    pub revision: String,
    /// Unix time the run started.
    pub started_unix: u64,
    /// The host.
    pub host: HostFacts,
    /// The configuration.
    pub config: RunConfig,
    /// Every child run.
    pub runs: Vec<RunRecord>,
    /// Median and spread by scenario, implementation and metric.
    pub summary: BTreeMap<String, BTreeMap<String, BTreeMap<String, Summary>>>,
    /// The goals of the benchmark today ([`goals::current`](crate::goals::current)).
    pub goals: Vec<Goal>,
    /// Goals of earlier rounds kept as regression checks ([`goals::earlier`](crate::goals::earlier)).
    #[serde(default)]
    pub earlier_goals: Vec<Goal>,
}

impl Report {
    /// Builds the summary from `runs`; the goals stay empty until
    /// [`goals::judge`](crate::goals::judge) evaluates them.
    pub fn new(
        revision: String,
        started_unix: u64,
        host: HostFacts,
        config: RunConfig,
        runs: Vec<RunRecord>,
    ) -> Self {
        let mut samples: BTreeMap<(Scenario, Impl), BTreeMap<String, Vec<f64>>> = BTreeMap::new();
        for r in runs.iter().filter(|r| r.error.is_none()) {
            let by_metric = samples.entry((r.scenario, r.imp)).or_default();
            for (k, v) in &r.metrics {
                by_metric.entry(k.clone()).or_default().push(*v);
            }
        }
        let mut summary: BTreeMap<String, BTreeMap<String, BTreeMap<String, Summary>>> =
            BTreeMap::new();
        for ((scenario, imp), metrics) in samples {
            let row = summary
                .entry(scenario.name().to_string())
                .or_default()
                .entry(imp.name().to_string())
                .or_default();
            for (k, v) in metrics {
                if let Some(s) = Summary::of(&v) {
                    row.insert(k, s);
                }
            }
        }
        Report {
            schema: SCHEMA,
            revision,
            started_unix,
            host,
            config,
            runs,
            summary,
            goals: Vec::new(),
            earlier_goals: Vec::new(),
        }
    }

    /// Reads a results file of any schema, renaming the client-go columns of a schema-1 file to
    /// today's names (its `client-go` was forced to JSON, its `client-go-proto` the protobuf
    /// setting that client-go's default sends for Pods), so an old run is never drawn with its
    /// JSON figures under the default's name; and the paged initial sync of a file before
    /// schema 3 to `sync-paged`, so it is never read as the default's.
    pub fn from_json(text: &str) -> Result<Report, serde_json::Error> {
        let mut value: serde_json::Value = serde_json::from_str(text)?;
        let schema = value.get("schema").and_then(serde_json::Value::as_u64);
        if schema.is_none_or(|s| s < 2) {
            let rename = |name: &str| match name {
                "client-go" => Some("client-go-json"),
                "client-go-proto" => Some("client-go"),
                _ => None,
            };
            if let Some(runs) = value
                .get_mut("runs")
                .and_then(serde_json::Value::as_array_mut)
            {
                for run in runs {
                    let new = run.get("impl").and_then(|i| rename(i.as_str()?));
                    if let Some(new) = new {
                        run["impl"] = new.into();
                    }
                }
            }
            if let Some(scenarios) = value
                .get_mut("summary")
                .and_then(serde_json::Value::as_object_mut)
            {
                for by_impl in scenarios
                    .values_mut()
                    .filter_map(serde_json::Value::as_object_mut)
                {
                    let old: Vec<(String, serde_json::Value)> =
                        std::mem::take(by_impl).into_iter().collect();
                    for (name, row) in old {
                        let name = rename(&name).map_or(name, String::from);
                        by_impl.insert(name, row);
                    }
                }
            }
        }
        if schema.is_none_or(|s| s < 3) {
            rename_scenario(&mut value, Scenario::Sync, Scenario::SyncPaged);
        }
        value["schema"] = SCHEMA.into();
        serde_json::from_value(value)
    }
}

/// Renames scenario `from` to `to` in the runs and the summary of a results file.
fn rename_scenario(value: &mut serde_json::Value, from: Scenario, to: Scenario) {
    if let Some(runs) = value
        .get_mut("runs")
        .and_then(serde_json::Value::as_array_mut)
    {
        for run in runs {
            if run.get("scenario").and_then(serde_json::Value::as_str) == Some(from.name()) {
                run["scenario"] = to.name().into();
            }
        }
    }
    if let Some(summary) = value
        .get_mut("summary")
        .and_then(serde_json::Value::as_object_mut)
        && let Some(rows) = summary.remove(from.name())
    {
        summary.insert(to.name().into(), rows);
    }
}

impl Report {
    /// The median of `metric` for (`scenario`, `imp`).
    pub fn median(&self, scenario: Scenario, imp: Impl, metric: &str) -> Option<f64> {
        Some(
            self.summary
                .get(scenario.name())?
                .get(imp.name())?
                .get(metric)?
                .median,
        )
    }

    /// ours / `other` for the median of `metric` in `scenario`.
    fn ratio_to(&self, scenario: Scenario, metric: &str, other: Impl) -> Option<f64> {
        let ours = self.median(scenario, Impl::Ours, metric)?;
        let theirs = self.median(scenario, other, metric)?;
        (theirs != 0.0).then(|| ours / theirs)
    }

    /// Objects per second of `imp`'s initial sync (`objects / sync_s` where a child reports no
    /// rate).
    pub fn sync_rate(&self, imp: Impl) -> Option<f64> {
        self.median(Scenario::Sync, imp, "objects_per_s")
            .or_else(|| {
                let objects = self.median(Scenario::Sync, imp, "objects")?;
                let secs = self.median(Scenario::Sync, imp, "sync_s")?;
                (secs > 0.0).then(|| objects / secs)
            })
    }

    /// Whether any run of (`scenario`, `imp`) succeeded.
    fn measured(&self, scenario: Scenario, imp: Impl) -> bool {
        self.summary
            .get(scenario.name())
            .is_some_and(|by_impl| by_impl.contains_key(imp.name()))
    }

    /// The human-readable table: one block per scenario, one line per metric.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "informer-bench: {} Pods of the {} corpus ({:.1} KiB JSON each) in {} namespaces (scenarios 2-4: {} of them, {} updates), {} reps, page size {}{}",
            self.config.pods,
            self.config.corpus.name(),
            self.config.pod_json_bytes / 1024.0,
            self.config.namespaces,
            self.config.subset,
            self.config.updates,
            self.config.reps,
            self.config.page_size,
            if self.config.quick { ", QUICK" } else { "" },
        );
        let _ = writeln!(
            out,
            "revision {}; {} x {}; load {:.2}",
            self.revision, self.host.nproc, self.host.cpu_model, self.host.load_average_1m
        );
        let _ = writeln!(
            out,
            "server: {}, seeded in {:.1} s, resident set {:.0} MiB",
            self.config.server, self.config.seed_s, self.config.server_rss_mib
        );
        let s = &self.config.pod_sizes;
        let _ = writeln!(
            out,
            "one Pod in memory: {:.1} KiB typed, {:.1} KiB without managedFields, {:.1} KiB metadata only, {:.2} KiB compact, {:.2} KiB projection",
            s.typed_heap_bytes / 1024.0,
            s.typed_heap_no_managed_fields_bytes / 1024.0,
            s.metadata_only_heap_bytes / 1024.0,
            s.compact_heap_bytes / 1024.0,
            s.projection_heap_bytes / 1024.0,
        );
        if let Some(f) = &self.config.operator {
            let _ = writeln!(
                out,
                "operator (11): {} Deployments, {} Pods in {} namespaces on its own {}, seeded in {:.1} s, resident set {:.0} MiB",
                f.deployments, f.pods, f.namespaces, f.server, f.seed_s, f.server_rss_mib
            );
            let _ = writeln!(out, "operator (11): {}", self.operator_modes());
        }
        if let Some(c) = &self.config.clusters {
            let _ = writeln!(
                out,
                "clusters (12): {} clusters of {} distinct Pods in {} namespaces, one {} each, seeded in {:.1} s, resident set {:.0} MiB",
                c.clusters, c.pods_each, c.namespaces, c.server, c.seed_s, c.server_rss_mib
            );
        }
        let _ = writeln!(out, "cells: median (spread = (max-min)/median)");
        if self.runs.iter().any(|r| r.imp.is_client_go()) {
            let _ = writeln!(
                out,
                "client-go: its default (no content type set: protobuf for Pods), every ratio and goal is against it; client-go-json: forced to JSON"
            );
        }
        if self.runs.iter().any(|r| r.imp.is_ours()) {
            let _ = writeln!(
                out,
                "the default path: ours-compact-proto, what `factory.core().v1().pods()` caches (the compact Pod over protobuf)"
            );
        }
        let _ = writeln!(
            out,
            "initial list: scenario 1 each side's default (informer-rs and client-go stream, kube-runtime pages); 1b, 2, 4, 9, 10 paged"
        );
        // The most any informer-rs child decoded with, beside what was asked.
        let ran = self
            .runs
            .iter()
            .filter_map(|r| r.metrics.get("decode_threads"))
            .fold(0.0_f64, |a, b| a.max(*b));
        match self.config.decode_threads {
            Some(asked) if ran as usize == asked => {
                let _ = writeln!(out, "decode threads (T6): {asked}");
            }
            Some(asked) if ran > 0.0 => {
                let _ = writeln!(
                    out,
                    "decode threads (T6): {asked} asked, NOT APPLIED: informer-rs decoded on {ran:.0}"
                );
            }
            None if ran > 0.0 => {
                let _ = writeln!(
                    out,
                    "decode threads (T6): {ran:.0} (the runtime's default, one per core)"
                );
            }
            _ => {}
        }
        for scenario in Scenario::ALL {
            let Some(by_impl) = self.summary.get(scenario.name()) else {
                continue;
            };
            // Only the implementations this run measured get a column.
            let impls: Vec<Impl> = scenario
                .impls()
                .iter()
                .copied()
                .filter(|i| self.measured(scenario, *i))
                .collect();
            let ours = impls.contains(&Impl::Ours);
            let ratios: Vec<(Impl, &str)> = [
                (Impl::Kube, "ours/kube"),
                (Impl::ClientGo, "ours/client-go"),
                (Impl::ClientGoJson, "ours/cg-json"),
                (Impl::ControllerRuntime, "ours/c-r"),
            ]
            .into_iter()
            .filter(|(i, _)| ours && impls.contains(i))
            .collect();
            let _ = writeln!(out, "\n{}", scenario.title());
            let mut header = format!("  {:<26}", "metric");
            for imp in &impls {
                let _ = write!(header, " {:>20}", imp.name());
            }
            for (_, name) in &ratios {
                let _ = write!(header, " {name:>14}");
            }
            let _ = writeln!(out, "{header}");
            for metric in table_metrics(scenario) {
                if !impls.iter().any(|i| {
                    by_impl
                        .get(i.name())
                        .is_some_and(|m| m.contains_key(*metric))
                }) {
                    continue;
                }
                let mut line = format!("  {metric:<26}");
                for imp in &impls {
                    let cell = by_impl
                        .get(imp.name())
                        .and_then(|m| m.get(*metric))
                        .map_or_else(
                            || "-".to_string(),
                            |s| format!("{} ±{:.0}%", fmt_num(s.median), s.spread_pct),
                        );
                    let _ = write!(line, " {cell:>20}");
                }
                for (other, _) in &ratios {
                    let ratio = self
                        .ratio_to(scenario, metric, *other)
                        .map_or_else(|| "-".to_string(), |r| format!("{r:.3}x"));
                    let _ = write!(line, " {ratio:>14}");
                }
                let _ = writeln!(out, "{line}");
            }
        }
        let failures: Vec<&RunRecord> = self.runs.iter().filter(|r| r.error.is_some()).collect();
        if !failures.is_empty() {
            let _ = writeln!(out, "\nfailed runs:");
            for r in failures {
                let _ = writeln!(
                    out,
                    "  {} / {} rep {}: {}",
                    r.scenario,
                    r.imp,
                    r.rep,
                    r.error.as_deref().unwrap_or("")
                );
            }
        }
        let _ = writeln!(
            out,
            "\ngoals (both sides at their defaults: client-go's, informer-rs over protobuf and, in scenario 1, streaming):"
        );
        for g in &self.goals {
            write_goal(&mut out, g, true);
        }
        let _ = writeln!(out, "\nearlier goals (regression checks):");
        for g in &self.earlier_goals {
            write_goal(&mut out, g, false);
        }
        out
    }
}

impl Report {
    /// Which initial list and wire format each side of scenario 11 used: as its child reported
    /// them (`watch_list`, `protobuf`: 1 or 0), and where the server logged the child's
    /// requests (informer-testserver), as the server saw them.
    pub fn operator_modes(&self) -> String {
        let sides: Vec<String> = Scenario::Operator
            .impls()
            .iter()
            .filter(|i| self.measured(Scenario::Operator, **i))
            .map(|imp| {
                let m = |k: &str| self.median(Scenario::Operator, *imp, k);
                let list = match m("watch_list") {
                    Some(v) if v > 0.0 => "streaming initial list (watch-list)",
                    Some(_) => "paged LIST then WATCH",
                    None => "initial list not reported",
                };
                let format = match m("protobuf") {
                    Some(v) if v >= 1.0 => "protobuf",
                    Some(_) => "JSON",
                    None => "format not reported",
                };
                let seen = match (
                    m("watch_list_requests"),
                    m("list_requests"),
                    m("protobuf_share"),
                ) {
                    (Some(w), Some(l), Some(p)) => format!(
                        " (server log: {w:.0} watch-list WATCHes, {l:.0} LISTs, {:.0}% protobuf)",
                        p * 100.0
                    ),
                    _ => String::new(),
                };
                format!("{imp}: {list}, {format}{seen}")
            })
            .collect();
        if sides.is_empty() {
            "no side ran".into()
        } else {
            sides.join("; ")
        }
    }
}

/// One goal's line: name, value, target, met/MISSED/n/a, and (`why`) the figures or the reason.
fn write_goal(out: &mut String, g: &Goal, why: bool) {
    let value = g
        .value
        .map_or_else(|| "-".to_string(), |v| format!("{v:.3}"));
    let met = match g.met {
        Some(true) => "met",
        Some(false) => "MISSED",
        None => "n/a",
    };
    let _ = write!(
        out,
        "  {:<56} {:>10}  target {:<8} {:<6}",
        g.name, value, g.target, met
    );
    if why && !g.why.is_empty() {
        let _ = write!(out, "  {}", g.why);
    }
    let _ = writeln!(out);
}

/// The metrics shown in the table for each scenario (the JSON has all of them).
fn table_metrics(scenario: Scenario) -> &'static [&'static str] {
    match scenario {
        Scenario::Operator => &[
            "reconciled_s",
            "rss_peak_mib",
            "cpu_s",
            "heap_peak_mib",
            "heap_mib",
            "first_reconcile_s",
            "reconciles",
            "writes",
            "reconcile_errors",
            "list_requests",
            "watch_list_requests",
            "protobuf_share",
        ],
        Scenario::Clusters => &[
            "sync_s",
            "clusters",
            "objects",
            "objects_per_s",
            "heap_mib",
            "heap_peak_mib",
            "heap_bytes_per_object",
            "rss_peak_mib",
            "cpu_s",
            "watch_requests",
            "list_requests",
            "protobuf_share",
        ],
        Scenario::Scale => &[
            "sync_s",
            "objects",
            "objects_per_s",
            "rss_peak_mib",
            "heap_peak_mib",
            "heap_bytes_per_object",
            "server_rss_mib",
            "server_rss_peak_mib",
            "received_mib",
        ],
        Scenario::Sync | Scenario::SyncPaged | Scenario::SyncStrip | Scenario::SyncMeta => &[
            "sync_s",
            "objects",
            "objects_per_s",
            "heap_peak_mib",
            "heap_mib",
            "heap_bytes_per_object",
            "rss_peak_mib",
            "received_mib",
            "child_cpu_s",
            "host_busy_share",
            "list_requests",
            "watch_requests",
        ],
        Scenario::Updates => &[
            "events_per_s",
            "deliver_s",
            "handler_calls",
            "producer_s",
            "steady_heap_mib",
            "heap_peak_mib",
            "rss_peak_mib",
        ],
        Scenario::Four => &[
            "heap_mib",
            "heap_peak_mib",
            "rss_peak_mib",
            "watches",
            "list_requests",
            "sync_s",
        ],
        Scenario::Relist => &[
            "steady_heap_mib",
            "relist_heap_peak_mib",
            "relist_peak_over_steady",
            "heap_after_mib",
            "steady_rss_mib",
            "relist_rss_peak_mib",
        ],
        Scenario::NsQuery => &["query_us", "results_per_query", "queries", "sync_s"],
        Scenario::Shard => &[
            "sync_s",
            "objects",
            "heap_mib",
            "heap_peak_mib",
            "received_mib",
            "rss_peak_mib",
            "server_sharded",
        ],
        Scenario::Decode => &[
            "decode_s",
            "objects_per_s",
            "mib_per_s",
            "json_bytes_per_object",
            "typed_heap_bytes_per_object",
            "heap_peak_mib",
            "ours_decode_s",
            "skip_decode_s",
            "skip_over_decode",
            "pb_mib",
            "prost_objects_per_s",
            "pb_typed_objects_per_s",
            "pb_compact_objects_per_s",
            "pb_projection_objects_per_s",
            "pb_compact_over_prost",
            "to_full_ns_per_pod",
            "to_compact_ns_per_pod",
            "to_full_differs",
        ],
    }
}

/// Three significant digits, without scientific notation for the usual ranges.
pub(crate) fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    }
}

/// What the report's and the chart's tests build reports from.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::{HostFacts, Impl, PodSizes, RunConfig, RunRecord, Scenario};

    /// One successful run of (`scenario`, `imp`) with `metrics`.
    pub(crate) fn run(scenario: Scenario, imp: Impl, metrics: &[(&str, f64)]) -> RunRecord {
        RunRecord {
            scenario,
            imp,
            rep: 0,
            metrics: metrics.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            error: None,
        }
    }

    /// A host and a full-size run configuration (50 000 Pods, 3 repetitions).
    pub(crate) fn host_and_config() -> (HostFacts, RunConfig) {
        let host = HostFacts {
            nproc: 2,
            memory_mib: 1,
            cpu_model: "cpu".into(),
            kernel: "k".into(),
            rustc: "r".into(),
            load_average_1m: 0.0,
        };
        let config = RunConfig {
            quick: false,
            pods: 50_000,
            namespaces: 500,
            reps: 3,
            updates: 0,
            subset: 0,
            page_size: 500,
            pod_json_bytes: 15_564.0,
            pod_sizes: PodSizes {
                json_bytes: 15_564.0,
                typed_heap_bytes: 1.0,
                typed_heap_no_managed_fields_bytes: 1.0,
                metadata_only_heap_bytes: 1.0,
                projection_heap_bytes: 1.0,
                compact_heap_bytes: 1.0,
            },
            seed_s: 1.0,
            server_rss_mib: 1.0,
            server: super::default_server(),
            gzip: false,
            corpus: crate::corpus::Corpus::Distinct,
            decode_threads: None,
            operator: None,
            clusters: None,
        };
        (host, config)
    }
}

#[cfg(test)]
mod tests;
