//! Scenario 11's Rust operator against informer-testserver at toy size: the orchestrator seeds a
//! handful of Deployments and Pods, runs the operator child, and completes the run only when
//! every Deployment's ConfigMap on the server holds the right replicas and Pod count, its label
//! and its owner reference (`Fleet::check`); a wrong reconcile fails the run at the child
//! timeout, and so this test.

use std::process::Command;

#[test]
fn the_rust_operator_writes_every_config_map_right() {
    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("operator-results.json");
    let _ = std::fs::remove_file(&out);
    let status = Command::new(env!("CARGO_BIN_EXE_informer-bench"))
        .args(["orchestrate", "--scenarios", "operator", "--reps", "2"])
        .args(["--deployments", "6", "--deployment-pods", "75"])
        .args(["--child-timeout-s", "120", "--out"])
        .arg(&out)
        .status()
        .expect("run informer-bench");
    assert!(status.success(), "orchestrate failed: {status}");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&out).expect("results file")).expect("results JSON");
    let runs = report["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 2, "{runs:#?}");
    for r in runs {
        assert!(r["error"].is_null(), "failed: {r}");
        let m = &r["metrics"];
        assert_eq!(m["deployments"], 6.0, "{r}");
        // Every ConfigMap written once; the second repetition found none left by the first.
        assert_eq!(m["writes"], 6.0, "{r}");
        assert_eq!(m["reconcile_errors"], 0.0, "{r}");
        for metric in ["reconciled_s", "rss_peak_mib", "cpu_s", "heap_peak_mib"] {
            assert!(
                m[metric].as_f64().is_some_and(|v| v > 0.0),
                "{metric} in {r}"
            );
        }
        // informer-rs's defaults, as the server logged them: the streaming initial list (V1) of
        // each of the three kinds, no LIST, protobuf (T1).
        assert_eq!(m["watch_list"], 1.0, "{r}");
        assert_eq!(m["watch_list_requests"], 3.0, "{r}");
        assert_eq!(m["list_requests"], 0.0, "{r}");
        assert_eq!(m["protobuf_share"], 1.0, "{r}");
    }
    let fleet = &report["config"]["operator"];
    assert_eq!(
        (fleet["deployments"].as_u64(), fleet["pods"].as_u64()),
        (Some(6), Some(75))
    );
}
