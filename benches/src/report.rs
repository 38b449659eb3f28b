//! The results: per-run records, medians and spreads, the goals of issue #7, a table and JSON.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::corpus::Corpus;
use crate::orchestrate::sizes::PodSizes;
use crate::protocol::{Impl, Metrics, Scenario};
use crate::stats::Summary;
use crate::sys::HostFacts;

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
    /// Which Pods were seeded (`--corpus`; runs before issue 27 seeded the all-distinct ones).
    #[serde(default)]
    pub corpus: Corpus,
}

fn default_server() -> String {
    "informer-testserver".into()
}

/// One goal of issue #7, evaluated on this run's medians.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Goal {
    /// What is compared.
    pub name: String,
    /// The measured value (a ratio, or a share).
    pub value: Option<f64>,
    /// The target, as text (`<= 0.9x`).
    pub target: String,
    /// Whether the target is met (`None` when a side is missing).
    pub met: Option<bool>,
}

/// Everything written to the JSON file.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Report {
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
    /// The goals of issue #7.
    pub goals: Vec<Goal>,
}

impl Report {
    /// Builds the summary and the goals from `runs`.
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
        let mut report = Report {
            revision,
            started_unix,
            host,
            config,
            runs,
            summary,
            goals: Vec::new(),
        };
        report.goals = report.evaluate_goals();
        report
    }

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

    fn ratio(&self, scenario: Scenario, metric: &str) -> Option<f64> {
        self.ratio_to(scenario, metric, Impl::Kube)
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

    fn evaluate_goals(&self) -> Vec<Goal> {
        let goal = |name: &str, value: Option<f64>, target: &str, ok: fn(f64) -> bool| Goal {
            name: name.to_string(),
            value,
            target: target.to_string(),
            met: value.map(ok),
        };
        let sync_throughput = self
            .median(Scenario::Sync, Impl::Ours, "objects")
            .and_then(|n| {
                let secs = self.median(Scenario::Sync, Impl::Ours, "sync_s")?;
                let decode = self.median(Scenario::Decode, Impl::SerdeJson, "objects_per_s")?;
                Some(n / secs / decode)
            });
        let query_speedup = self
            .median(Scenario::NsQuery, Impl::Kube, "query_us")
            .zip(self.median(Scenario::NsQuery, Impl::Ours, "query_us"))
            .map(|(kube, ours)| kube / ours.max(1e-9));
        let projection_speedup = self
            .median(Scenario::Sync, Impl::Ours, "sync_s")
            .zip(self.median(Scenario::Sync, Impl::OursProjection, "sync_s"))
            .map(|(typed, projected)| typed / projected.max(1e-9));
        let compact_sync = self
            .median(Scenario::Sync, Impl::OursCompact, "sync_s")
            .zip(self.median(Scenario::Sync, Impl::Ours, "sync_s"))
            .map(|(compact, typed)| compact / typed.max(1e-9));
        // Scenario 9: one replica of 4 over the whole collection (one replica of 1).
        let quarter = |imp4: Impl, imp1: Impl, metric: &str| {
            self.median(Scenario::Shard, imp4, metric)
                .zip(self.median(Scenario::Shard, imp1, metric))
                .map(|(part, whole)| part / whole.max(1e-9))
        };
        // client-go, same run: the compact Pod's bytes against client-go's Pod (the wire format
        // does not change what is cached), throughput against client-go on JSON, ours' format.
        let compact_vs_client_go = self
            .median(Scenario::Sync, Impl::OursCompact, "heap_bytes_per_object")
            .zip(self.median(Scenario::Sync, Impl::ClientGo, "heap_bytes_per_object"))
            .map(|(compact, go)| compact / go.max(1e-9));
        let sync_vs_client_go = self
            .ratio_to(Scenario::Sync, "sync_s", Impl::ClientGo)
            .map(|time| 1.0 / time.max(1e-9));
        // Issue 24 (W): each cached form over protobuf against client-go over protobuf.
        let rate_vs_go_proto = |imp: Impl| {
            self.sync_rate(imp)
                .zip(self.sync_rate(Impl::ClientGoProto))
                .map(|(ours, go)| ours / go.max(1e-9))
        };
        // Bytes on the wire for the sync; the target is for a run with gzip (`--gzip`).
        let received_vs_go_proto = self
            .median(Scenario::Sync, Impl::OursProto, "received_mib")
            .zip(self.median(Scenario::Sync, Impl::ClientGoProto, "received_mib"))
            .filter(|_| self.config.gzip)
            .map(|(ours, go)| ours / go.max(1e-9));
        vec![
            goal(
                "(1) sync time, ours/kube",
                self.ratio(Scenario::Sync, "sync_s"),
                "<= 0.9x",
                |v| v <= 0.9,
            ),
            goal(
                "(1) peak heap, ours/kube",
                self.ratio(Scenario::Sync, "heap_peak_mib"),
                "<= 0.7x",
                |v| v <= 0.7,
            ),
            goal(
                "(2) update throughput, ours/kube",
                self.ratio(Scenario::Updates, "events_per_s"),
                ">= 1.2x",
                |v| v >= 1.2,
            ),
            goal(
                "(3) four consumers, heap ours/kube",
                self.ratio(Scenario::Four, "heap_mib"),
                "<= 0.35x",
                |v| v <= 0.35,
            ),
            goal(
                "(3) four consumers, watches (ours)",
                self.median(Scenario::Four, Impl::Ours, "watches"),
                "== 1",
                |v| v == 1.0,
            ),
            goal(
                "(4) relist peak / steady store (ours)",
                self.median(Scenario::Relist, Impl::Ours, "relist_peak_over_steady"),
                "<= 1.3x",
                |v| v <= 1.3,
            ),
            goal(
                "(5) namespaced query speed-up, kube/ours time",
                query_speedup,
                ">= 100x",
                |v| v >= 100.0,
            ),
            goal(
                "(6) sync throughput / pure decode (ours)",
                sync_throughput,
                ">= 0.70",
                |v| v >= 0.7,
            ),
            goal(
                "(8) compact: bytes per cached Pod",
                Some(self.config.pod_sizes.compact_heap_bytes).filter(|b| *b > 0.0),
                "<= 16384",
                |v| v <= 16384.0,
            ),
            goal(
                "(8) compact: sync time / typed Pod (ours)",
                compact_sync,
                "<= 1.0x",
                |v| v <= 1.0,
            ),
            goal(
                "(8) projection: bytes per cached Pod",
                Some(self.config.pod_sizes.projection_heap_bytes).filter(|b| *b > 0.0),
                "<= 2048",
                |v| v <= 2048.0,
            ),
            goal(
                "(8) projection: sync speed-up over the typed Pod (ours)",
                projection_speedup,
                ">= 2x",
                |v| v >= 2.0,
            ),
            goal(
                "(9) server sharding: heap, 1 of 4 / 1 of 1",
                quarter(Impl::Shard4Server, Impl::Shard1Server, "heap_mib"),
                "<= 0.275",
                |v| v <= 0.275,
            ),
            goal(
                "(9) server sharding: bytes received, 1 of 4 / 1 of 1",
                quarter(Impl::Shard4Server, Impl::Shard1Server, "received_mib"),
                "<= 0.275",
                |v| v <= 0.275,
            ),
            goal(
                "(9) client filtering: heap, 1 of 4 / 1 of 1",
                quarter(Impl::Shard4Client, Impl::Shard1Client, "heap_mib"),
                "<= 0.275",
                |v| v <= 0.275,
            ),
            goal(
                "(9) client filtering: skipped object / full decode",
                self.median(Scenario::Decode, Impl::SerdeJson, "skip_over_decode"),
                "<= 0.1",
                |v| v <= 0.1,
            ),
            goal(
                "(C) compact: bytes per Pod / client-go's",
                compact_vs_client_go,
                "<= 0.5",
                |v| v <= 0.5,
            ),
            goal(
                "(C) sync throughput, ours/client-go (JSON)",
                sync_vs_client_go,
                ">= 1.0x",
                |v| v >= 1.0,
            ),
            goal(
                "(C) update throughput, ours/client-go (JSON)",
                self.ratio_to(Scenario::Updates, "events_per_s", Impl::ClientGo),
                ">= 1.0x",
                |v| v >= 1.0,
            ),
            goal(
                "(W) typed Pod, protobuf: sync rate / client-go's (protobuf)",
                rate_vs_go_proto(Impl::OursProto),
                ">= 1.0x",
                |v| v >= 1.0,
            ),
            goal(
                "(W) compact Pod, protobuf: sync rate / client-go's (protobuf)",
                rate_vs_go_proto(Impl::OursCompactProto),
                ">= 2.0x",
                |v| v >= 2.0,
            ),
            goal(
                "(W) projection, protobuf: sync rate / client-go's (protobuf)",
                rate_vs_go_proto(Impl::OursProjectionProto),
                ">= 4.0x",
                |v| v >= 4.0,
            ),
            goal(
                "(W) one-thread decode time, compact Pod / prost (protobuf)",
                self.median(Scenario::Decode, Impl::SerdeJson, "pb_compact_over_prost"),
                "<= 1.5x",
                |v| v <= 1.5,
            ),
            goal(
                "(W) bytes received with gzip, ours/client-go (protobuf)",
                received_vs_go_proto,
                "<= 1.1x",
                |v| v <= 1.1,
            ),
            // Issue 27: the goals hold for 1 000 000 Pods; a smaller scale run reports n/a.
            goal(
                "(S) scale, 1M compact Pods: objects/s",
                self.median(Scenario::Scale, Impl::OursCompact, "objects_per_s")
                    .filter(|_| self.config.pods >= 1_000_000),
                ">= 20000",
                |v| v >= 20_000.0,
            ),
            goal(
                "(S) scale, 1M compact Pods: informer peak RSS, GiB",
                self.median(Scenario::Scale, Impl::OursCompact, "rss_peak_mib")
                    .filter(|_| self.config.pods >= 1_000_000)
                    .map(|mib| mib / 1024.0),
                "<= 10",
                |v| v <= 10.0,
            ),
        ]
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
        let _ = writeln!(out, "cells: median (spread = (max-min)/median)");
        if self.runs.iter().any(|r| r.imp.is_client_go()) {
            let _ = writeln!(
                out,
                "client-go: JSON; client-go-proto: protobuf LISTs and watches"
            );
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
                (Impl::ClientGoProto, "ours/cg-proto"),
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
        let _ = writeln!(out, "\ngoals (issue #7):");
        for g in &self.goals {
            let value = g
                .value
                .map_or_else(|| "-".to_string(), |v| format!("{v:.3}"));
            let met = match g.met {
                Some(true) => "met",
                Some(false) => "MISSED",
                None => "n/a",
            };
            let _ = writeln!(
                out,
                "  {:<46} {:>10}  target {:<8} {}",
                g.name, value, g.target, met
            );
        }
        out
    }
}

/// The metrics shown in the table for each scenario (the JSON has all of them).
fn table_metrics(scenario: Scenario) -> &'static [&'static str] {
    match scenario {
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
        Scenario::Sync | Scenario::SyncStrip | Scenario::SyncMeta => &[
            "sync_s",
            "objects",
            "objects_per_s",
            "heap_peak_mib",
            "heap_mib",
            "heap_bytes_per_object",
            "rss_peak_mib",
            "received_mib",
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
        ],
    }
}

/// Three significant digits, without scientific notation for the usual ranges.
fn fmt_num(v: f64) -> String {
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
    use super::{HostFacts, PodSizes, RunConfig};

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
        };
        (host, config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(scenario: Scenario, imp: Impl, metrics: &[(&str, f64)]) -> RunRecord {
        RunRecord {
            scenario,
            imp,
            rep: 0,
            metrics: metrics.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            error: None,
        }
    }

    #[test]
    fn goals_use_medians_and_ratios() {
        let (host, mut config) = fixtures::host_and_config();
        config.quick = true;
        config.pods = 10;
        config.namespaces = 2;
        config.reps = 1;
        config.updates = 20;
        config.subset = 4;
        config.pod_json_bytes = 12000.0;
        config.pod_sizes.json_bytes = 12000.0;
        let runs = vec![
            run(
                Scenario::Sync,
                Impl::Ours,
                &[("sync_s", 1.0), ("objects", 100.0), ("heap_peak_mib", 50.0)],
            ),
            run(
                Scenario::Sync,
                Impl::Kube,
                &[("sync_s", 2.0), ("objects", 100.0), ("heap_peak_mib", 60.0)],
            ),
            run(
                Scenario::Decode,
                Impl::SerdeJson,
                &[("objects_per_s", 125.0)],
            ),
            run(Scenario::NsQuery, Impl::Ours, &[("query_us", 2.0)]),
            run(Scenario::NsQuery, Impl::Kube, &[("query_us", 1000.0)]),
            run(
                Scenario::Sync,
                Impl::ClientGo,
                &[("sync_s", 4.0), ("heap_bytes_per_object", 30000.0)],
            ),
            run(
                Scenario::Sync,
                Impl::OursCompact,
                &[("sync_s", 0.5), ("heap_bytes_per_object", 12000.0)],
            ),
        ];
        let report = Report::new("rev".into(), 0, host, config, runs);
        let by_name = |n: &str| {
            report
                .goals
                .iter()
                .find(|g| g.name.starts_with(n))
                .cloned()
                .expect("goal")
        };
        assert_eq!(by_name("(1) sync time").value, Some(0.5));
        assert_eq!(by_name("(1) sync time").met, Some(true));
        assert_eq!(by_name("(1) peak heap").met, Some(false));
        assert_eq!(by_name("(5)").value, Some(500.0));
        assert_eq!(by_name("(6)").value, Some(0.8));
        assert_eq!(by_name("(2)").met, None);
        assert!(report.table().contains("(1) initial sync"));
        // client-go: ratio columns where it ran, goals against its JSON figures.
        assert_eq!(by_name("(C) sync throughput").value, Some(4.0));
        assert_eq!(by_name("(C) compact").value, Some(0.4));
        assert_eq!(by_name("(C) compact").met, Some(true));
        assert_eq!(by_name("(C) update throughput").met, None);
        let table = report.table();
        let sync = table
            .lines()
            .find(|l| l.trim_start().starts_with("sync_s"))
            .expect("sync_s line");
        assert!(sync.contains("0.500x") && sync.contains("0.250x"), "{sync}");
        let header = table
            .lines()
            .find(|l| l.contains("ours/client-go"))
            .expect("a client-go ratio column");
        // Only measured implementations get columns.
        assert!(!header.contains("client-go-proto"), "{header}");
        assert!(!header.contains("ours-streaming"), "{header}");
    }
}
