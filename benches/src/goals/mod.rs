//! The goals a run is held to, each met, missed or not measured (and why), computed from that
//! run's medians alone: one revision, one server, one corpus, client-go in the same run.
//!
//! Every ratio against client-go is against its default column (`client-go`: no content type
//! set, so Pods are read as protobuf). informer-rs's cached forms are taken as its users get
//! them too, over protobuf, the runtime's default for built-in kinds (`ours-proto`,
//! `ours-compact-proto`, `ours-projection-proto`); a goal's `why` also names the same form over
//! JSON where it ran. Goals are results: a missed one never fails a run, and none is ever
//! asserted in a timed test.
//!
//! [`current`] are the goals of the benchmark today; [`earlier`] those of earlier rounds that
//! no current goal supersedes, kept as regression checks.

mod clusters;
mod operator;

use crate::baseline::{self, Baseline, BaselineEntry};
use crate::corpus::Corpus;
use crate::protocol::{Impl, Scenario};
use crate::report::{Goal, Report, fmt_num};

impl Goal {
    fn new(
        name: &str,
        target: &str,
        ok: impl Fn(f64) -> bool,
        value: Result<(f64, String), String>,
    ) -> Self {
        let (value, why) = match value {
            Ok((v, why)) => (Some(v), why),
            Err(why) => (None, why),
        };
        Goal {
            name: name.to_string(),
            value,
            target: target.to_string(),
            met: value.map(ok),
            why,
        }
    }
}

/// Judges `report` by the goals: [`current`] (with `baseline` where a goal compares with an
/// earlier run) and [`earlier`], written into its `goals` and `earlier_goals`.
pub fn judge(report: &mut Report, baseline: Option<&Baseline>) {
    report.goals = current(report, baseline);
    report.goals.extend(operator::goals(report));
    report.goals.extend(clusters::goals(report));
    report.earlier_goals = earlier(report);
}

/// The scale goals hold for this many Pods.
pub const SCALE_PODS: usize = 1_000_000;

/// Whether the run synced from kube-apiserver.
fn on_kube_apiserver(r: &Report) -> bool {
    r.config.server.starts_with("kube-apiserver")
}

/// `metric`'s median of (`scenario`, `imp`), or why it is missing.
fn median(r: &Report, scenario: Scenario, imp: Impl, metric: &str) -> Result<f64, String> {
    r.median(scenario, imp, metric)
        .ok_or_else(|| format!("{imp} did not run in scenario {scenario}"))
}

/// The sync rate of `imp`, or why it is missing.
fn rate(r: &Report, imp: Impl) -> Result<f64, String> {
    r.sync_rate(imp)
        .ok_or_else(|| format!("{imp} did not run in scenario sync"))
}

fn ratio(ours: f64, theirs: f64) -> Result<f64, String> {
    if theirs > 0.0 {
        Ok(ours / theirs)
    } else {
        Err("the reference measured zero".into())
    }
}

/// `ours`'s sync rate over client-go's, with the JSON column of the same form beside it.
fn sync_vs_client_go(r: &Report, ours: Impl, json: Impl) -> Result<(f64, String), String> {
    let (mine, go) = (rate(r, ours)?, rate(r, Impl::ClientGo)?);
    let mut why = format!(
        "{} objects/s against client-go's {}",
        fmt_num(mine),
        fmt_num(go)
    );
    if let Ok(j) = rate(r, json) {
        why.push_str(&format!(
            "; the same form over JSON {} ({:.2}x)",
            fmt_num(j),
            j / go
        ));
    }
    Ok((ratio(mine, go)?, why))
}

/// The baseline entry for this run, or why there is none.
fn entry<'a>(r: &Report, baseline: Option<&'a Baseline>) -> Result<&'a BaselineEntry, String> {
    let c = &r.config;
    baseline
        .ok_or_else(|| "no baseline file (benches/baseline.json, --baseline)".to_string())?
        .entry_for(c)
        .ok_or_else(|| {
            format!(
                "the baseline has no entry for {} Pods of the {} corpus on {}",
                c.pods,
                c.corpus.name(),
                c.server
            )
        })
}

/// The worst ratio (by `worse`) of this run's informer-rs forms over their baseline figures.
fn against_baseline(
    r: &Report,
    e: &BaselineEntry,
    scenario: Scenario,
    metric: &str,
    figures: &std::collections::BTreeMap<String, f64>,
    higher_is_worse: bool,
) -> Result<(f64, String), String> {
    let mut worst: Option<(f64, Impl, f64, f64)> = None;
    let mut compared = 0;
    for imp in baseline::ours(scenario) {
        let (Some(now), Some(before)) = (r.median(scenario, imp, metric), figures.get(imp.name()))
        else {
            continue;
        };
        let Ok(x) = ratio(now, *before) else { continue };
        compared += 1;
        let is_worse = |w: f64| if higher_is_worse { x > w } else { x < w };
        if worst.is_none_or(|(w, ..)| is_worse(w)) {
            worst = Some((x, imp, now, *before));
        }
    }
    let (x, imp, now, before) = worst.ok_or_else(|| {
        format!(
            "no informer-rs form ran in scenario {scenario} both here and in the {}",
            e.describe()
        )
    })?;
    Ok((
        x,
        format!(
            "worst of {compared} forms: {imp}, {} against {}; {}",
            fmt_num(now),
            fmt_num(before),
            e.describe()
        ),
    ))
}

/// The goals of the benchmark today, evaluated on `r` (and `baseline` where a goal compares
/// with an earlier run).
pub fn current(r: &Report, baseline: Option<&Baseline>) -> Vec<Goal> {
    let kube = on_kube_apiserver(r);
    let server = r.config.server.clone();
    let only_on = |want_kube: bool| -> Result<(), String> {
        match (want_kube, kube) {
            (true, false) => Err("evaluated on kube-apiserver (--kube-apiserver)".into()),
            (false, true) => Err("evaluated on informer-testserver".into()),
            _ => Ok(()),
        }
    };
    let compact_sync = || sync_vs_client_go(r, Impl::OursCompactProto, Impl::OursCompact);
    let scale = |metric: &str| -> Result<f64, String> {
        if kube {
            return Err(format!(
                "not on kube-apiserver: {SCALE_PODS} Pods in etcd and kube-apiserver's cache beside the informer exceed the benchmark machine (BENCHMARKS.md)"
            ));
        }
        if r.config.pods < SCALE_PODS || r.config.corpus != Corpus::Realistic {
            return Err(format!(
                "needs the scale run (--scale: {SCALE_PODS} Pods of the realistic corpus); this run has {} of the {} corpus",
                r.config.pods,
                r.config.corpus.name()
            ));
        }
        median(r, Scenario::Scale, Impl::OursCompact, metric)
    };
    let threads = r.config.decode_threads.unwrap_or(2);
    // A memory figure of every informer-rs form, at most 1% above its baseline.
    let no_worse =
        |name: &str,
         scenario: Scenario,
         metric: &str,
         figures: fn(&BaselineEntry) -> &std::collections::BTreeMap<String, f64>| {
            Goal::new(
                name,
                "<= 1.01x",
                |v| v <= 1.01,
                entry(r, baseline)
                    .and_then(|e| against_baseline(r, e, scenario, metric, figures(e), true)),
            )
        };
    vec![
        Goal::new(
            "compact Pod sync / client-go, informer-testserver",
            ">= 2.0x",
            |v| v >= 2.0,
            only_on(false).and_then(|()| compact_sync()),
        ),
        Goal::new(
            "compact Pod sync / client-go, kube-apiserver",
            ">= 1.5x",
            |v| v >= 1.5,
            only_on(true).and_then(|()| compact_sync()),
        ),
        Goal::new(
            "k8s-openapi Pod sync / client-go",
            ">= 1.0x",
            |v| v >= 1.0,
            sync_vs_client_go(r, Impl::OursProto, Impl::Ours),
        ),
        Goal::new(
            "projection sync / client-go",
            ">= 6.0x",
            |v| v >= 6.0,
            sync_vs_client_go(r, Impl::OursProjectionProto, Impl::OursProjection),
        ),
        Goal::new(
            "update events/s, compact Pod / client-go",
            ">= 2.0x",
            |v| v >= 2.0,
            (|| {
                let ours = median(r, Scenario::Updates, Impl::OursCompactProto, "events_per_s")?;
                let go = median(r, Scenario::Updates, Impl::ClientGo, "events_per_s")?;
                let mut why = format!(
                    "{} events/s against client-go's {}",
                    fmt_num(ours),
                    fmt_num(go)
                );
                if let Some(j) = r.median(Scenario::Updates, Impl::OursCompact, "events_per_s") {
                    why.push_str(&format!("; over JSON {} ({:.2}x)", fmt_num(j), j / go));
                }
                Ok((ratio(ours, go)?, why))
            })(),
        ),
        Goal::new(
            "update events/s, every form / its baseline",
            ">= 1.0x",
            |v| v >= 1.0,
            entry(r, baseline).and_then(|e| {
                if (e.cpu_model.as_str(), e.nproc) != (r.host.cpu_model.as_str(), r.host.nproc) {
                    return Err(format!(
                        "the {} was measured on another host ({} x {}): rates do not carry over",
                        e.describe(),
                        e.nproc,
                        e.cpu_model
                    ));
                }
                against_baseline(
                    r,
                    e,
                    Scenario::Updates,
                    "events_per_s",
                    &e.updates_events_per_s,
                    false,
                )
            }),
        ),
        Goal::new(
            "1 000 000 realistic compact Pods: objects/s",
            ">= 20000",
            |v| v >= 20_000.0,
            scale("objects_per_s")
                .map(|v| (v, format!("{} Pods, ours-compact over JSON", r.config.pods))),
        ),
        Goal::new(
            "1 000 000 realistic compact Pods: peak RSS, GiB",
            "<= 5",
            |v| v <= 5.0,
            scale("rss_peak_mib")
                .map(|mib| (mib / 1024.0, "the informer process's VmHWM".to_string())),
        ),
        Goal::new(
            &format!("decode, {threads} threads / one"),
            ">= 1.7x",
            |v| v >= 1.7,
            if !r.summary.contains_key(Scenario::Decode.name()) {
                Err("the decode scenario did not run".into())
            } else if threads < 2 {
                Err(format!(
                    "--decode-threads {threads}: no pool to compare with one thread"
                ))
            } else {
                median(r, Scenario::Decode, Impl::SerdeJson, "pool_speedup")
                    .map(|v| {
                        let rate = |m| {
                            r.median(Scenario::Decode, Impl::SerdeJson, m)
                                .map_or_else(|| "?".to_string(), fmt_num)
                        };
                        (
                            v,
                            format!(
                                "informer-runtime's page decode (T6), the compact Pod over protobuf: {} objects/s on the pool, {} inline",
                                rate("pool_objects_per_s"),
                                rate("pool_inline_objects_per_s")
                            ),
                        )
                    })
                    .map_err(|_| "the decode scenario reported no pool_speedup".to_string())
            },
        ),
        Goal::new(
            "compact Pod bytes per Pod / client-go's",
            "<= 0.2x",
            |v| v <= 0.2,
            (|| {
                let imp = if r
                    .median(
                        Scenario::Sync,
                        Impl::OursCompactProto,
                        "heap_bytes_per_object",
                    )
                    .is_some()
                {
                    Impl::OursCompactProto
                } else {
                    Impl::OursCompact
                };
                let ours = median(r, Scenario::Sync, imp, "heap_bytes_per_object")?;
                let go = median(r, Scenario::Sync, Impl::ClientGo, "heap_bytes_per_object")?;
                Ok((
                    ratio(ours, go)?,
                    format!(
                        "{} bytes against client-go's {}, on {}'s {} Pods",
                        fmt_num(ours),
                        fmt_num(go),
                        server,
                        r.config.corpus.name()
                    ),
                ))
            })(),
        ),
        no_worse(
            "memory: bytes per Pod, every form / its baseline",
            Scenario::Sync,
            "heap_bytes_per_object",
            |e| &e.sync_bytes_per_object,
        ),
        no_worse(
            "memory: relist peak / steady, every form / its baseline",
            Scenario::Relist,
            "relist_peak_over_steady",
            |e| &e.relist_peak_over_steady,
        ),
    ]
}

/// The goals of earlier rounds that no current goal supersedes (against kube-runtime, the
/// decoders, sharding, gzip), kept as regression checks.
pub fn earlier(r: &Report) -> Vec<Goal> {
    let goal = |name: &str, value: Option<f64>, target: &str, ok: fn(f64) -> bool| Goal {
        name: name.to_string(),
        value,
        target: target.to_string(),
        met: value.map(ok),
        why: String::new(),
    };
    let ours_over = |scenario: Scenario, metric: &str, other: Impl| {
        let ours = r.median(scenario, Impl::Ours, metric)?;
        let theirs = r.median(scenario, other, metric)?;
        (theirs != 0.0).then(|| ours / theirs)
    };
    let kube = |scenario, metric| ours_over(scenario, metric, Impl::Kube);
    let sync_throughput = r
        .median(Scenario::Sync, Impl::Ours, "objects")
        .and_then(|n| {
            let secs = r.median(Scenario::Sync, Impl::Ours, "sync_s")?;
            let decode = r.median(Scenario::Decode, Impl::SerdeJson, "objects_per_s")?;
            Some(n / secs / decode)
        });
    let query_speedup = r
        .median(Scenario::NsQuery, Impl::Kube, "query_us")
        .zip(r.median(Scenario::NsQuery, Impl::Ours, "query_us"))
        .map(|(kube, ours)| kube / ours.max(1e-9));
    let over = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| a / b.max(1e-9));
    let sync_s = |imp| r.median(Scenario::Sync, imp, "sync_s");
    // Scenario 9: one replica of 4 over the whole collection (one replica of 1).
    let quarter = |imp4: Impl, imp1: Impl, metric: &str| {
        over(
            r.median(Scenario::Shard, imp4, metric),
            r.median(Scenario::Shard, imp1, metric),
        )
    };
    // Bytes on the wire for the sync; the target is for a run with gzip (`--gzip`).
    let received = over(
        r.median(Scenario::Sync, Impl::OursProto, "received_mib"),
        r.median(Scenario::Sync, Impl::ClientGo, "received_mib"),
    )
    .filter(|_| r.config.gzip);
    vec![
        goal(
            "(1) sync time, ours/kube",
            kube(Scenario::Sync, "sync_s"),
            "<= 0.9x",
            |v| v <= 0.9,
        ),
        goal(
            "(1) peak heap, ours/kube",
            kube(Scenario::Sync, "heap_peak_mib"),
            "<= 0.7x",
            |v| v <= 0.7,
        ),
        goal(
            "(2) update throughput, ours/kube",
            kube(Scenario::Updates, "events_per_s"),
            ">= 1.2x",
            |v| v >= 1.2,
        ),
        goal(
            "(3) four consumers, heap ours/kube",
            kube(Scenario::Four, "heap_mib"),
            "<= 0.35x",
            |v| v <= 0.35,
        ),
        goal(
            "(3) four consumers, watches (ours)",
            r.median(Scenario::Four, Impl::Ours, "watches"),
            "== 1",
            |v| v == 1.0,
        ),
        goal(
            "(4) relist peak / steady store (ours)",
            r.median(Scenario::Relist, Impl::Ours, "relist_peak_over_steady"),
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
            Some(r.config.pod_sizes.compact_heap_bytes).filter(|b| *b > 0.0),
            "<= 16384",
            |v| v <= 16384.0,
        ),
        goal(
            "(8) compact: sync time / typed Pod (ours)",
            over(sync_s(Impl::OursCompact), sync_s(Impl::Ours)),
            "<= 1.0x",
            |v| v <= 1.0,
        ),
        goal(
            "(8) projection: bytes per cached Pod",
            Some(r.config.pod_sizes.projection_heap_bytes).filter(|b| *b > 0.0),
            "<= 2048",
            |v| v <= 2048.0,
        ),
        goal(
            "(8) projection: sync speed-up over the typed Pod (ours)",
            over(sync_s(Impl::Ours), sync_s(Impl::OursProjection)),
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
            r.median(Scenario::Decode, Impl::SerdeJson, "skip_over_decode"),
            "<= 0.1",
            |v| v <= 0.1,
        ),
        goal(
            "(W) one-thread decode time, compact Pod / prost (protobuf)",
            r.median(Scenario::Decode, Impl::SerdeJson, "pb_compact_over_prost"),
            "<= 1.5x",
            |v| v <= 1.5,
        ),
        goal(
            "(W) bytes received with gzip, ours-proto/client-go",
            received,
            "<= 1.1x",
            |v| v <= 1.1,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::RunRecord;
    use crate::report::fixtures::{host_and_config, run};

    /// A report of `runs`, judged.
    fn judged(
        revision: String,
        started_unix: u64,
        host: crate::sys::HostFacts,
        config: crate::report::RunConfig,
        runs: Vec<RunRecord>,
        baseline: Option<&Baseline>,
    ) -> Report {
        let mut r = Report::new(revision, started_unix, host, config, runs);
        judge(&mut r, baseline);
        r
    }

    fn goal<'a>(r: &'a Report, name: &str) -> &'a Goal {
        r.goals
            .iter()
            .find(|g| g.name.starts_with(name))
            .unwrap_or_else(|| panic!("no goal {name}"))
    }

    /// A run of the sync, updates and decode scenarios with client-go's default beside.
    fn runs() -> Vec<RunRecord> {
        let rate = |imp, v| {
            run(
                Scenario::Sync,
                imp,
                &[("objects_per_s", v), ("heap_bytes_per_object", 4_000.0)],
            )
        };
        vec![
            run(
                Scenario::Sync,
                Impl::ClientGo,
                &[
                    ("objects_per_s", 5_000.0),
                    ("heap_bytes_per_object", 40_000.0),
                ],
            ),
            rate(Impl::OursCompactProto, 9_000.0),
            rate(Impl::OursCompact, 11_000.0),
            rate(Impl::OursProto, 5_500.0),
            rate(Impl::OursProjectionProto, 25_000.0),
            run(
                Scenario::Updates,
                Impl::OursCompactProto,
                &[("events_per_s", 30_000.0)],
            ),
            run(
                Scenario::Updates,
                Impl::ClientGo,
                &[("events_per_s", 10_000.0)],
            ),
            run(
                Scenario::Decode,
                Impl::SerdeJson,
                &[("objects_per_s", 4_000.0)],
            ),
        ]
    }

    #[test]
    fn every_ratio_is_against_client_gos_default_and_ours_over_protobuf() {
        let (host, config) = host_and_config();
        let r = judged("rev".into(), 0, host, config, runs(), None);
        let compact = goal(&r, "compact Pod sync / client-go, informer-testserver");
        assert_eq!(compact.value, Some(1.8));
        assert_eq!(compact.met, Some(false));
        assert!(
            compact.why.contains("over JSON 11000 (2.20x)"),
            "{}",
            compact.why
        );
        assert_eq!(goal(&r, "k8s-openapi Pod sync").value, Some(1.1));
        assert_eq!(goal(&r, "k8s-openapi Pod sync").met, Some(true));
        assert_eq!(goal(&r, "projection sync").value, Some(5.0));
        assert_eq!(goal(&r, "projection sync").met, Some(false));
        assert_eq!(goal(&r, "update events/s, compact").value, Some(3.0));
        assert_eq!(goal(&r, "update events/s, compact").met, Some(true));
        assert_eq!(goal(&r, "compact Pod bytes").value, Some(0.1));
        assert_eq!(goal(&r, "compact Pod bytes").met, Some(true));
        // Not this server's goal, not this run's size, no pool, no baseline: n/a and why.
        let kube = goal(&r, "compact Pod sync / client-go, kube-apiserver");
        assert_eq!((kube.value, kube.met), (None, None));
        assert!(kube.why.contains("--kube-apiserver"), "{}", kube.why);
        let scale = goal(&r, "1 000 000 realistic compact Pods: objects/s");
        assert_eq!(scale.met, None);
        assert!(scale.why.contains("--scale"), "{}", scale.why);
        let decode = goal(&r, "decode, 2 threads");
        assert_eq!(decode.met, None);
        assert!(decode.why.contains("no pool_speedup"), "{}", decode.why);
        let memory = goal(&r, "memory: bytes per Pod");
        assert_eq!(memory.met, None);
        assert!(memory.why.contains("no baseline file"), "{}", memory.why);
        // Without client-go every ratio against it is n/a, and says so.
        let (host, config) = host_and_config();
        let alone: Vec<RunRecord> = runs()
            .into_iter()
            .filter(|r| !r.imp.is_client_go())
            .collect();
        let r = judged("rev".into(), 0, host, config, alone, None);
        let g = goal(&r, "projection sync");
        assert_eq!(g.met, None);
        assert!(g.why.contains("client-go did not run"), "{}", g.why);
    }

    #[test]
    fn on_kube_apiserver_the_compact_goal_is_kube_apiservers() {
        let (host, mut config) = host_and_config();
        config.server = "kube-apiserver v1.37.2".into();
        let r = judged("rev".into(), 0, host, config, runs(), None);
        let kube = goal(&r, "compact Pod sync / client-go, kube-apiserver");
        assert_eq!((kube.value, kube.met), (Some(1.8), Some(true)));
        assert_eq!(
            goal(&r, "compact Pod sync / client-go, informer-testserver").met,
            None
        );
        assert!(goal(&r, "1 000 000").why.contains("not on kube-apiserver"));
    }

    #[test]
    fn the_scale_goals_need_a_million_realistic_pods() {
        let (host, mut config) = host_and_config();
        config.pods = SCALE_PODS;
        config.corpus = Corpus::Realistic;
        let scale = vec![run(
            Scenario::Scale,
            Impl::OursCompact,
            &[("objects_per_s", 21_000.0), ("rss_peak_mib", 6_144.0)],
        )];
        let r = judged("rev".into(), 0, host, config, scale, None);
        assert_eq!(
            goal(&r, "1 000 000 realistic compact Pods: objects/s").met,
            Some(true)
        );
        let rss = goal(&r, "1 000 000 realistic compact Pods: peak RSS");
        assert_eq!((rss.value, rss.met), (Some(6.0), Some(false)));
    }

    #[test]
    fn the_decode_goal_reads_the_pool_speed_up_when_there_is_one() {
        let (host, mut config) = host_and_config();
        config.decode_threads = Some(4);
        let decode = vec![run(
            Scenario::Decode,
            Impl::SerdeJson,
            &[("pool_speedup", 1.9)],
        )];
        let r = judged(
            "rev".into(),
            0,
            host.clone(),
            config.clone(),
            decode.clone(),
            None,
        );
        let g = goal(&r, "decode, 4 threads / one");
        assert_eq!((g.value, g.met), (Some(1.9), Some(true)));
        // One thread has nothing to compare with: n/a, and why.
        config.decode_threads = Some(1);
        let r = judged("rev".into(), 0, host, config, decode, None);
        let g = goal(&r, "decode, 1 threads / one");
        assert_eq!(g.met, None);
        assert!(g.why.contains("no pool"), "{}", g.why);
    }

    #[test]
    fn memory_and_rates_compare_with_the_baseline_of_the_same_run_shape() {
        let (host, config) = host_and_config();
        let mut runs = runs();
        runs.push(run(
            Scenario::Updates,
            Impl::Ours,
            &[("events_per_s", 8_000.0)],
        ));
        runs.push(run(
            Scenario::Relist,
            Impl::Ours,
            &[("relist_peak_over_steady", 1.2)],
        ));
        let before = judged(
            "old".into(),
            0,
            host.clone(),
            config.clone(),
            runs.clone(),
            None,
        );
        let mut entry = BaselineEntry::from_report(&before, "quiet".into());
        // Since then: the compact Pod grew by 10% over protobuf, the typed Pod's updates slowed.
        entry
            .sync_bytes_per_object
            .insert("ours-compact-proto".into(), 4_000.0 / 1.1);
        entry.updates_events_per_s.insert("ours".into(), 10_000.0);
        let baseline = Baseline {
            entries: vec![entry.clone()],
        };
        let r = judged(
            "new".into(),
            0,
            host.clone(),
            config.clone(),
            runs.clone(),
            Some(&baseline),
        );
        let bytes = goal(&r, "memory: bytes per Pod");
        assert!(
            (bytes.value.expect("a value") - 1.1).abs() < 1e-9,
            "{bytes:?}"
        );
        assert_eq!(bytes.met, Some(false));
        assert!(
            bytes.why.contains("ours-compact-proto") && bytes.why.contains("baseline old"),
            "{}",
            bytes.why
        );
        let rates = goal(&r, "update events/s, every form");
        assert_eq!((rates.value, rates.met), (Some(0.8), Some(false)));
        assert!(
            rates.why.contains("worst of 2 forms: ours,"),
            "{}",
            rates.why
        );
        assert_eq!(goal(&r, "memory: relist peak").met, Some(true));
        // Rates from another host do not carry over; memory does.
        let mut elsewhere = entry.clone();
        elsewhere.cpu_model = "another cpu".into();
        let baseline = Baseline {
            entries: vec![elsewhere],
        };
        let r = judged(
            "new".into(),
            0,
            host.clone(),
            config.clone(),
            runs.clone(),
            Some(&baseline),
        );
        assert_eq!(goal(&r, "update events/s, every form").met, None);
        assert!(
            goal(&r, "update events/s, every form")
                .why
                .contains("another host")
        );
        assert_eq!(goal(&r, "memory: bytes per Pod").met, Some(false));
        // Another size: no entry.
        let mut other = config;
        other.pods = 2_000;
        let r = judged("new".into(), 0, host, other, runs, Some(&baseline));
        assert!(
            goal(&r, "memory: bytes per Pod")
                .why
                .contains("no entry for 2000 Pods")
        );
    }
}
