//! The harness end to end at toy size: every scenario runs for every implementation and reports.
//!
//! This proves the orchestration (server, seeding, child processes, the scenario handshakes, the
//! report) works; the numbers at this size mean nothing. `cargo xtask bench --quick` is the
//! release-mode version CI runs.

use std::process::Command;

/// Runs `informer-bench orchestrate ARGS` (a child timeout of 120 s, results in `out` under the
/// test's temporary folder), asserts it succeeded, and returns the results JSON.
fn orchestrate(out: &str, args: &[&str]) -> serde_json::Value {
    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(out);
    let _ = std::fs::remove_file(&out);
    let status = Command::new(env!("CARGO_BIN_EXE_informer-bench"))
        .arg("orchestrate")
        .args(args)
        .args(["--child-timeout-s", "120", "--out"])
        .arg(&out)
        .status()
        .expect("run informer-bench");
    assert!(status.success(), "orchestrate failed: {status}");
    serde_json::from_slice(&std::fs::read(&out).expect("results file")).expect("results JSON")
}

#[test]
fn every_scenario_runs_for_every_implementation_and_the_report_is_written() {
    let report = orchestrate(
        "harness-results.json",
        &[
            "--quick",
            "--pods",
            "40",
            "--namespaces",
            "4",
            "--reps",
            "1",
            "--deployments",
            "4",
            "--clusters",
            "2",
            "--cluster-pods",
            "20",
        ],
    );
    let runs = report["runs"].as_array().expect("runs");
    // 12 scenarios: 2 implementations each, 3 for `four` (ordered FIFO), 4 for `relist` (ordered
    // FIFO, the compact Pod over protobuf), 7 for
    // `sync` (compact, projection, and the typed, compact and projected Pod over protobuf), 5 for
    // `sync-paged` (ours and kube, the three over protobuf), 8 for `updates` (compact,
    // projection, ordered FIFO, and the three over protobuf), 1 for `decode`, 6 for `shard` (1,
    // 2 and 4 replicas, server and client filtering), 1 for `operator` (informer-rs;
    // controller-runtime is a Go child this test does not build), 1 for `clusters` (the
    // fleet; client-go is a Go child this test does not build).
    assert_eq!(runs.len(), 42, "{runs:#?}");
    let failed: Vec<_> = runs.iter().filter(|r| !r["error"].is_null()).collect();
    assert!(failed.is_empty(), "failed runs: {failed:#?}");
    for r in runs {
        let objects = r["metrics"]["objects"].as_f64();
        if r["scenario"] != "updates" && r["scenario"] != "operator" {
            assert!(objects.is_some_and(|n| n > 0.0), "no objects in {r}");
        }
    }
    assert_eq!(report["summary"]["four"]["ours"]["watches"]["median"], 1.0);
    // Scenario 12: the fleet synced both clusters' 20 Pods, streaming, in protobuf.
    let clusters = &report["summary"]["clusters"]["ours"];
    assert_eq!(clusters["objects"]["median"], 40.0, "{clusters}");
    assert_eq!(clusters["clusters"]["median"], 2.0, "{clusters}");
    assert_eq!(clusters["list_requests"]["median"], 0.0, "{clusters}");
    assert_eq!(clusters["protobuf_share"]["median"], 1.0, "{clusters}");
    for variant in [
        "ours-projection",
        "ours-compact",
        "ours-proto",
        "ours-compact-proto",
        "ours-projection-proto",
    ] {
        assert_eq!(
            report["summary"]["sync"][variant]["objects"]["median"], 40.0,
            "{variant}"
        );
    }
    assert_eq!(report["summary"]["four"]["kube"]["watches"]["median"], 4.0);
    // Scenario 1 at each side's default: informer-rs streams (no LIST), kube-runtime pages;
    // scenario 1b: every side lists.
    for variant in ["ours", "ours-compact-proto"] {
        assert_eq!(
            report["summary"]["sync"][variant]["list_requests"]["median"], 0.0,
            "{variant}"
        );
        assert_eq!(
            report["summary"]["sync-paged"][variant]["list_requests"]["median"], 1.0,
            "{variant}"
        );
    }
    assert_eq!(
        report["summary"]["sync"]["kube"]["list_requests"]["median"],
        1.0
    );
    // Scenario 9: the whole collection in one shard, some of it in 1 of 4, in both modes; the
    // mode is the server's.
    for mode in ["server", "client"] {
        let shard = &report["summary"]["shard"];
        assert_eq!(shard[format!("shard1-{mode}")]["objects"]["median"], 40.0);
        let quarter = shard[format!("shard4-{mode}")]["objects"]["median"]
            .as_f64()
            .expect("objects");
        assert!(quarter > 0.0 && quarter < 40.0, "{mode}: {quarter}");
        let server = if mode == "server" { 1.0 } else { 0.0 };
        assert_eq!(
            shard[format!("shard4-{mode}")]["server_sharded"]["median"],
            server
        );
    }
    let skip = report["summary"]["decode"]["serde-json"]["skip_over_decode"]["median"]
        .as_f64()
        .expect("skip_over_decode");
    assert!(
        skip > 0.0 && skip < 1.0,
        "skipping is cheaper than decoding: {skip}"
    );
    // The decode goal's figure: the runtime's page decode on a pool of two (the default) against
    // inline, the same 40 compact Pods both ways.
    let decode = &report["summary"]["decode"]["serde-json"];
    assert_eq!(decode["pool_threads"]["median"], 2.0);
    let speedup = decode["pool_speedup"]["median"]
        .as_f64()
        .expect("pool_speedup");
    assert!(speedup > 0.0, "{speedup}");
    assert!(report["revision"].is_string() && report["host"]["nproc"].as_u64() > Some(0));
    assert_eq!(report["config"]["corpus"], "distinct", "the default corpus");
}

/// The scale run (scenario 10) at toy size, on the realistic corpus: both of its variants sync every
/// Pod, and the report carries the informer's and the server's memory apart.
#[test]
fn the_scale_run_syncs_the_realistic_corpus_and_reports_the_server_apart() {
    let report = orchestrate(
        "harness-scale.json",
        &[
            "--scenarios",
            "scale",
            "--corpus",
            "realistic",
            "--pods",
            "120",
            "--namespaces",
            "3",
            "--reps",
            "1",
        ],
    );
    assert_eq!(report["config"]["corpus"], "realistic");
    let runs = report["runs"].as_array().expect("runs");
    let variants: Vec<&str> = runs.iter().filter_map(|r| r["impl"].as_str()).collect();
    assert_eq!(variants, ["ours-compact", "ours-projection"], "{runs:#?}");
    for r in runs {
        assert!(r["error"].is_null(), "failed: {r}");
        let m = &r["metrics"];
        assert_eq!(m["objects"], 120.0, "{r}");
        for metric in ["objects_per_s", "rss_peak_mib", "server_rss_mib"] {
            assert!(
                m[metric].as_f64().is_some_and(|v| v > 0.0),
                "{metric} in {r}"
            );
        }
        let (now, peak) = (
            m["server_rss_mib"].as_f64(),
            m["server_rss_peak_mib"].as_f64(),
        );
        assert!(now.zip(peak).is_some_and(|(now, peak)| peak >= now), "{r}");
    }
}

/// The exemplar corpus (upstream's exemplar Pod) seeds and syncs like the others, and the report
/// names it and evaluates the goals without client-go (saying why each ratio is missing).
#[test]
fn the_exemplar_corpus_syncs_and_the_goals_say_what_is_missing() {
    let report = orchestrate(
        "harness-exemplar.json",
        &[
            "--scenarios",
            "sync",
            "--impls",
            "ours-compact-proto,ours-proto",
            "--corpus",
            "exemplar",
            "--pods",
            "60",
            "--namespaces",
            "3",
            "--reps",
            "1",
            "--decode-threads",
            "2",
        ],
    );
    assert_eq!(report["config"]["corpus"], "exemplar");
    assert_eq!(report["config"]["decode_threads"], 2);
    let json_bytes = report["config"]["pod_json_bytes"]
        .as_f64()
        .expect("pod_json_bytes");
    assert!((14_000.0..15_000.0).contains(&json_bytes), "{json_bytes}");
    for imp in ["ours-compact-proto", "ours-proto"] {
        let sync = &report["summary"]["sync"][imp];
        assert_eq!(sync["objects"]["median"], 60.0, "{imp}");
        // Served in protobuf, as the column says, and decoded on the pool asked for (T6).
        assert_eq!(sync["protobuf_share"]["median"], 1.0, "{imp}");
        assert_eq!(sync["decode_threads"]["median"], 2.0, "{imp}");
    }
    let goals = report["goals"].as_array().expect("goals");
    let compact = goals
        .iter()
        .find(|g| g["name"] == "compact Pod sync / client-go, informer-testserver")
        .expect("the compact goal");
    assert!(compact["met"].is_null(), "{compact}");
    assert!(
        compact["why"]
            .as_str()
            .is_some_and(|w| w.contains("client-go did not run")),
        "{compact}"
    );
}
