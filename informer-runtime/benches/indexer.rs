//! Indexer and lister benchmarks: index lookups versus full scans on 50k objects in 500 namespaces,
//! and write throughput with 3 indices. Run: `cargo bench -p informer-runtime --bench indexer`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput};
use informer_runtime::indexer::{Indexer, Indexers, NAMESPACE_INDEX};
use informer_runtime::lister::Lister;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;
use kube::core::{Expression, Selector};

const OBJECTS: usize = 50_000;
const NAMESPACES: usize = 500;
const APPS: usize = 50;

fn cm(i: usize, generation: usize) -> Arc<ConfigMap> {
    Arc::new(ConfigMap {
        metadata: ObjectMeta {
            name: Some(format!("cm-{i}")),
            namespace: Some(format!("ns-{}", i % NAMESPACES)),
            labels: Some(
                [
                    (
                        "app".to_string(),
                        format!("app-{}", (i + generation) % APPS),
                    ),
                    (
                        "tier".to_string(),
                        ["front", "back", "batch"][i % 3].to_string(),
                    ),
                ]
                .into(),
            ),
            resource_version: Some(generation.to_string()),
            ..Default::default()
        },
        ..Default::default()
    })
}

fn label(cm: &ConfigMap, key: &str) -> Vec<String> {
    cm.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(key).cloned())
        .into_iter()
        .collect()
}

/// The namespace index plus two label indices: 3 indices.
fn indexer() -> Indexer<ConfigMap> {
    Indexer::builder()
        .indexers(
            Indexers::new()
                .with("by_app", |cm: &ConfigMap| label(cm, "app"))
                .with("by_tier", |cm: &ConfigMap| label(cm, "tier")),
        )
        .build()
        .expect("unique index names")
}

fn filled() -> Arc<Indexer<ConfigMap>> {
    let indexer = indexer();
    indexer
        .replace((0..OBJECTS).map(|i| cm(i, 0)).collect())
        .expect("valid objects");
    Arc::new(indexer)
}

fn queries(c: &mut Criterion) {
    let indexer = filled();
    let lister = Lister::from_indexer(indexer.clone());
    let mut group = c.benchmark_group("query_50k_objects_500_namespaces");
    group
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1));

    group.bench_function("by_index_namespace_100_hits", |b| {
        b.iter(|| {
            black_box(
                indexer
                    .by_index(NAMESPACE_INDEX, black_box("ns-42"))
                    .expect("index"),
            )
        })
    });
    group.bench_function("namespaced_list_100_hits", |b| {
        let ns = lister.namespaced("ns-42");
        let all = Selector::default();
        b.iter(|| black_box(ns.list(&all)))
    });
    group.bench_function("full_scan_namespace_filter", |b| {
        b.iter(|| {
            let hits: Vec<_> = indexer
                .list()
                .into_iter()
                .filter(|o| o.metadata.namespace.as_deref() == Some(black_box("ns-42")))
                .collect();
            black_box(hits)
        })
    });
    group.bench_function("by_index_app_1000_hits", |b| {
        b.iter(|| {
            black_box(
                indexer
                    .by_index("by_app", black_box("app-7"))
                    .expect("index"),
            )
        })
    });
    group.bench_function("namespaced_list_with_selector", |b| {
        let ns = lister.namespaced("ns-42");
        let front: Selector = Expression::Equal("tier".into(), "front".into()).into();
        b.iter(|| black_box(ns.list(&front)))
    });
    group.bench_function("lister_list_selector_full_scan", |b| {
        let app: Selector = Expression::Equal("app".into(), "app-7".into()).into();
        b.iter(|| black_box(lister.list(&app)))
    });
    group.bench_function("by_indices_and_namespace_app", |b| {
        b.iter(|| {
            black_box(
                indexer
                    .by_indices(&[(NAMESPACE_INDEX, "ns-42"), ("by_tier", "front")])
                    .expect("index"),
            )
        })
    });
    group.bench_function("get_by_key", |b| {
        b.iter(|| black_box(indexer.get_by_key(black_box("ns-42/cm-42"))))
    });
    group.finish();
}

fn writes(c: &mut Criterion) {
    const BATCH: usize = 10_000;
    let mut group = c.benchmark_group("write_3_indices");
    group
        .measurement_time(Duration::from_secs(4))
        .warm_up_time(Duration::from_secs(1))
        .sample_size(20)
        .throughput(Throughput::Elements(BATCH as u64));
    let fresh: Vec<Arc<ConfigMap>> = (0..BATCH).map(|i| cm(i, 0)).collect();
    group.bench_function("insert_10k", |b| {
        b.iter_batched(
            indexer,
            |idx| {
                for obj in &fresh {
                    idx.add(obj.clone()).expect("insert");
                }
                idx
            },
            BatchSize::LargeInput,
        )
    });
    // Updates that move every object to another `app` value (an index change per write).
    let moved: Vec<Arc<ConfigMap>> = (0..BATCH).map(|i| cm(i, 1)).collect();
    group.bench_function("update_10k_changing_one_index", |b| {
        b.iter_batched(
            || {
                let idx = indexer();
                idx.replace(fresh.clone()).expect("replace");
                idx
            },
            |idx| {
                for obj in &moved {
                    idx.update(obj.clone()).expect("update");
                }
                idx
            },
            BatchSize::LargeInput,
        )
    });
    // Updates with unchanged index values (a resync or a data-only change): the fast path.
    group.bench_function("update_10k_same_index_values", |b| {
        let idx = indexer();
        idx.replace(fresh.clone()).expect("replace");
        b.iter(|| {
            for obj in &fresh {
                idx.update(obj.clone()).expect("update");
            }
        })
    });
    group.bench_function("replace_10k", |b| {
        let idx = indexer();
        b.iter(|| idx.replace(fresh.clone()).expect("replace"))
    });
    group.finish();
}

// A hand-written main instead of `criterion_group!`, whose generated `pub fn` has no docs.
fn main() {
    let mut c = Criterion::default().configure_from_args();
    queries(&mut c);
    writes(&mut c);
    c.final_summary();
}
