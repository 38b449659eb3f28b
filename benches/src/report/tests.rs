//! The report's goals (medians and ratios) and the reading of older results files.

use super::fixtures::run;
use super::*;

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
    let mut report = Report::new("rev".into(), 0, host, config, runs);
    crate::goals::judge(&mut report, None);
    let by_name = |n: &str| {
        report
            .earlier_goals
            .iter()
            .chain(&report.goals)
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
    // client-go's default: the compact Pod's bytes against it (over JSON, as only that ran).
    assert_eq!(by_name("compact Pod bytes").value, Some(0.4));
    assert_eq!(by_name("compact Pod bytes").met, Some(false));
    assert!(
        report
            .table()
            .contains("compact Pod bytes per Pod / client-go's")
    );
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
    assert!(!header.contains("client-go-json"), "{header}");
    assert!(!header.contains("ours-streaming"), "{header}");
}

#[test]
fn a_schema_1_file_reads_with_todays_client_go_names() {
    let (host, config) = fixtures::host_and_config();
    // Every run before schema 3 listed in pages: today's scenario 1b.
    let report = Report::new(
        "rev".into(),
        0,
        host,
        config,
        vec![
            run(Scenario::SyncPaged, Impl::ClientGo, &[("sync_s", 2.0)]),
            run(Scenario::SyncPaged, Impl::ClientGoJson, &[("sync_s", 8.0)]),
        ],
    );
    // The same run as schema 1 wrote it: no `schema`, the scenario named `sync`, the
    // forced-JSON column named `client-go`, the protobuf one `client-go-proto`.
    let old_name = |name: &str| match name {
        "client-go" => "client-go-proto".to_string(),
        "client-go-json" => "client-go".to_string(),
        other => other.to_string(),
    };
    let mut old = serde_json::to_value(&report).expect("a report serializes");
    old.as_object_mut().expect("an object").remove("schema");
    for r in old["runs"].as_array_mut().expect("runs") {
        let name = old_name(r["impl"].as_str().expect("impl"));
        r["impl"] = name.into();
        r["scenario"] = "sync".into();
    }
    let summary = old["summary"].as_object_mut().expect("summary");
    let mut rows = summary.remove("sync-paged").expect("sync-paged");
    let sync = rows.as_object_mut().expect("sync");
    let by_impl: Vec<_> = std::mem::take(sync).into_iter().collect();
    for (name, row) in by_impl {
        sync.insert(old_name(&name), row);
    }
    summary.insert("sync".into(), rows);
    assert!(old["summary"]["sync"]["client-go-proto"].is_object());
    let read = Report::from_json(&old.to_string()).expect("a schema-1 file reads");
    assert_eq!(read, report);
    assert_eq!(
        read.median(Scenario::SyncPaged, Impl::ClientGo, "sync_s"),
        Some(2.0)
    );
    assert_eq!(read.median(Scenario::Sync, Impl::ClientGo, "sync_s"), None);
    // A current file reads unchanged.
    let text = serde_json::to_string(&report).expect("a report serializes");
    assert_eq!(
        Report::from_json(&text).expect("a current file reads"),
        report
    );
}

#[test]
fn a_schema_2_files_sync_reads_as_the_paged_scenario() {
    let (host, config) = fixtures::host_and_config();
    let report = Report::new(
        "rev".into(),
        0,
        host,
        config,
        vec![run(Scenario::Sync, Impl::ClientGo, &[("sync_s", 2.0)])],
    );
    let mut old = serde_json::to_value(&report).expect("a report serializes");
    old["schema"] = 2.into();
    let read = Report::from_json(&old.to_string()).expect("a schema-2 file reads");
    assert_eq!(read.schema, SCHEMA);
    assert_eq!(read.runs[0].scenario, Scenario::SyncPaged);
    assert_eq!(
        read.median(Scenario::SyncPaged, Impl::ClientGo, "sync_s"),
        Some(2.0)
    );
    assert_eq!(read.median(Scenario::Sync, Impl::ClientGo, "sync_s"), None);
}
