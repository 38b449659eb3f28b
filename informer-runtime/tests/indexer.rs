//! Indexer behaviour tests, one per semantics rule (X1–X8). Run: `cargo test -p informer-runtime --test indexer`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use informer_runtime::indexer::{Error, IndexFunc, Indexer, Indexers, NAMESPACE_INDEX};
use informer_runtime::key::{KeyError, ObjectKey};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;

fn cm(ns: &str, name: &str, labels: &[(&str, &str)]) -> Arc<ConfigMap> {
    Arc::new(ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(ns.into()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..Default::default()
        },
        ..Default::default()
    })
}

fn label(cm: &ConfigMap, key: &str) -> Option<String> {
    cm.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(key).cloned())
}

/// A multi-valued index: the comma-separated values of label `tags`.
fn by_tag(cm: &ConfigMap) -> Vec<String> {
    label(cm, "tags")
        .map(|t| {
            t.split(',')
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn tag_indexer() -> Indexer<ConfigMap> {
    Indexer::builder()
        .indexers(Indexers::new().with("by_tag", by_tag))
        .build()
        .expect("test fixture")
}

fn sorted_names(objs: Vec<Arc<ConfigMap>>) -> Vec<String> {
    let mut names: Vec<String> = objs
        .iter()
        .map(|o| o.metadata.name.clone().expect("test fixture"))
        .collect();
    names.sort();
    names
}

fn sorted_values(values: Vec<Arc<str>>) -> Vec<String> {
    let mut v: Vec<String> = values.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}

#[test]
fn x1_object_without_name_is_an_error_not_a_panic() {
    let indexer = Indexer::<ConfigMap>::new();
    let nameless = Arc::new(ConfigMap::default());
    assert!(matches!(
        indexer.add(nameless.clone()),
        Err(Error::Key(KeyError::MissingName))
    ));
    assert!(matches!(
        indexer.delete(&nameless),
        Err(Error::Key(KeyError::MissingName))
    ));
    assert!(indexer.replace(vec![cm("a", "x", &[]), nameless]).is_err());
    assert!(
        indexer.is_empty(),
        "a failed replace leaves the store unchanged"
    );
}

#[test]
fn x2_multi_valued_index_follows_value_changes() {
    let indexer = tag_indexer();
    indexer.add(cm("ns", "a", &[("tags", "red,blue")])).unwrap();
    indexer.add(cm("ns", "b", &[("tags", "blue")])).unwrap();
    assert_eq!(
        sorted_names(indexer.by_index("by_tag", "blue").unwrap()),
        ["a", "b"]
    );
    assert_eq!(
        sorted_names(indexer.by_index("by_tag", "red").unwrap()),
        ["a"]
    );

    indexer
        .update(cm("ns", "a", &[("tags", "green,blue")]))
        .unwrap();
    assert_eq!(
        sorted_names(indexer.by_index("by_tag", "green").unwrap()),
        ["a"]
    );
    assert!(indexer.by_index("by_tag", "red").unwrap().is_empty());
    // X4: the emptied value is gone, not left with an empty set.
    assert_eq!(
        sorted_values(indexer.list_index_values("by_tag").unwrap()),
        ["blue", "green"]
    );
}

#[test]
fn x2_index_function_with_no_values_leaves_object_unindexed() {
    let indexer = tag_indexer();
    indexer.add(cm("ns", "a", &[])).unwrap();
    assert!(indexer.list_index_values("by_tag").unwrap().is_empty());
    assert_eq!(indexer.len(), 1);
}

#[test]
fn x2_fallible_index_function_error_is_returned_and_write_not_applied() {
    let indexer = Indexer::<ConfigMap>::builder()
        .indexers(Indexers::new().with_fallible("strict", |cm: &ConfigMap| {
            label(cm, "app")
                .map(|v| vec![v])
                .ok_or_else(|| "missing label `app`".into())
        }))
        .build()
        .unwrap();
    indexer.add(cm("ns", "a", &[("app", "web")])).unwrap();
    let err = indexer.update(cm("ns", "a", &[])).unwrap_err();
    match &err {
        Error::IndexFn { index, key, .. } => {
            assert_eq!((index.as_str(), key.as_str()), ("strict", "ns/a"))
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(err.to_string().contains("missing label `app`"));
    // The old object and its entries are untouched (atomic, X8).
    assert_eq!(
        label(&indexer.get_by_key("ns/a").unwrap(), "app").as_deref(),
        Some("web")
    );
    assert_eq!(indexer.by_index("strict", "web").unwrap().len(), 1);
    assert!(indexer.add(cm("ns", "b", &[])).is_err());
    assert_eq!(indexer.len(), 1);
}

#[test]
fn x3_namespace_index_is_registered_by_default_and_optional() {
    let indexer = Indexer::<ConfigMap>::new();
    assert_eq!(indexer.index_names(), [NAMESPACE_INDEX]);
    indexer.add(cm("a", "x", &[])).unwrap();
    indexer.add(cm("b", "y", &[])).unwrap();
    assert_eq!(
        sorted_names(indexer.by_index(NAMESPACE_INDEX, "a").unwrap()),
        ["x"]
    );

    let bare = Indexer::<ConfigMap>::builder()
        .without_namespace_index()
        .build()
        .unwrap();
    assert!(bare.index_names().is_empty());
    assert!(
        matches!(bare.by_index(NAMESPACE_INDEX, "a"), Err(Error::UnknownIndex(n)) if n == NAMESPACE_INDEX)
    );
}

#[test]
fn x4_delete_removes_entries_and_empty_values() {
    let indexer = tag_indexer();
    indexer.add(cm("ns", "a", &[("tags", "x,y")])).unwrap();
    indexer.add(cm("ns", "b", &[("tags", "y")])).unwrap();
    let removed = indexer.delete_key("ns/a").unwrap();
    assert_eq!(removed.metadata.name.as_deref(), Some("a"));
    assert_eq!(
        sorted_values(indexer.list_index_values("by_tag").unwrap()),
        ["y"]
    );
    indexer.delete(&cm("ns", "b", &[])).unwrap();
    assert!(indexer.list_index_values("by_tag").unwrap().is_empty());
    assert!(
        indexer
            .list_index_values(NAMESPACE_INDEX)
            .unwrap()
            .is_empty()
    );
    assert!(indexer.delete_key("ns/b").is_none());
}

#[test]
fn x4_add_returns_previous_object_for_h2() {
    let indexer = Indexer::<ConfigMap>::new();
    let first = cm("ns", "a", &[]);
    assert!(indexer.add(first.clone()).unwrap().is_none());
    let old = indexer
        .update(cm("ns", "a", &[("v", "2")]))
        .unwrap()
        .unwrap();
    assert!(Arc::ptr_eq(&old, &first));
}

#[test]
fn x4_replace_rebuilds_every_index() {
    let indexer = tag_indexer();
    indexer.add(cm("ns", "a", &[("tags", "old")])).unwrap();
    indexer.add(cm("ns", "b", &[("tags", "old")])).unwrap();
    indexer
        .replace(vec![
            cm("ns2", "b", &[("tags", "new")]),
            cm("ns2", "c", &[("tags", "new,x")]),
        ])
        .unwrap();
    assert_eq!(sorted_names(indexer.list()), ["b", "c"]);
    assert_eq!(
        sorted_values(indexer.list_index_values("by_tag").unwrap()),
        ["new", "x"]
    );
    assert_eq!(
        sorted_values(indexer.list_index_values(NAMESPACE_INDEX).unwrap()),
        ["ns2"]
    );
    assert!(indexer.get_by_key("ns/a").is_none());
}

#[test]
fn x5_queries_and_unknown_index() {
    let indexer = tag_indexer();
    indexer.add(cm("ns", "a", &[("tags", "x,y")])).unwrap();
    indexer.add(cm("ns", "b", &[("tags", "y,z")])).unwrap();
    indexer.add(cm("ns", "c", &[("tags", "z")])).unwrap();
    let mut keys: Vec<String> = indexer
        .index_keys("by_tag", "y")
        .unwrap()
        .iter()
        .map(|k| k.to_string())
        .collect();
    keys.sort();
    assert_eq!(keys, ["ns/a", "ns/b"]);
    // index(name, obj): union without duplicates over the probe's values (b appears under y and z once).
    let probe = cm("other", "probe", &[("tags", "y,z")]);
    assert_eq!(
        sorted_names(indexer.index("by_tag", &probe).unwrap()),
        ["a", "b", "c"]
    );
    assert_eq!(
        sorted_values(indexer.list_index_values("by_tag").unwrap()),
        ["x", "y", "z"]
    );
    assert!(matches!(
        indexer.by_index("nope", "x"),
        Err(Error::UnknownIndex(_))
    ));
    assert!(matches!(
        indexer.index_keys("nope", "x"),
        Err(Error::UnknownIndex(_))
    ));
    assert!(matches!(
        indexer.list_index_values("nope"),
        Err(Error::UnknownIndex(_))
    ));
    assert!(matches!(
        indexer.index("nope", &probe),
        Err(Error::UnknownIndex(_))
    ));
    assert!(indexer.by_index("by_tag", "absent").unwrap().is_empty());
}

#[test]
fn x6_add_indexers_backfills_1000_items() {
    let indexer = Indexer::<ConfigMap>::new();
    for i in 0..1000 {
        let parity = if i % 2 == 0 { "even" } else { "odd" };
        indexer
            .add(cm("ns", &format!("cm-{i}"), &[("parity", parity)]))
            .unwrap();
    }
    indexer
        .add_indexers(Indexers::new().with("parity", |cm: &ConfigMap| {
            label(cm, "parity").into_iter().collect()
        }))
        .unwrap();
    assert_eq!(indexer.by_index("parity", "even").unwrap().len(), 500);
    assert_eq!(indexer.by_index("parity", "odd").unwrap().len(), 500);
    // Later writes maintain the back-filled index.
    indexer
        .update(cm("ns", "cm-0", &[("parity", "odd")]))
        .unwrap();
    assert_eq!(indexer.by_index("parity", "odd").unwrap().len(), 501);
    indexer.delete_key("ns/cm-1");
    assert_eq!(indexer.by_index("parity", "odd").unwrap().len(), 500);
}

#[test]
fn x6_duplicate_index_name_and_stopped_are_errors() {
    let indexer = tag_indexer();
    let dup = indexer.add_indexers(Indexers::new().with("by_tag", by_tag));
    assert!(matches!(dup, Err(Error::DuplicateIndex(n)) if n == "by_tag"));
    let twice = indexer.add_indexers(Indexers::new().with("n", by_tag).with("n", by_tag));
    assert!(matches!(twice, Err(Error::DuplicateIndex(n)) if n == "n"));
    assert_eq!(
        indexer.index_names(),
        [NAMESPACE_INDEX, "by_tag"],
        "a failed call adds nothing"
    );
    let ns_dup = Indexer::<ConfigMap>::builder()
        .indexers(Indexers::new().with(NAMESPACE_INDEX, by_tag))
        .build();
    assert!(matches!(ns_dup, Err(Error::DuplicateIndex(_))));

    indexer.stop();
    assert!(indexer.is_stopped());
    assert!(matches!(
        indexer.add_indexers(Indexers::new().with("late", by_tag)),
        Err(Error::Stopped)
    ));
}

#[test]
fn x6_failing_backfill_adds_no_index() {
    let indexer = Indexer::<ConfigMap>::new();
    indexer.add(cm("ns", "a", &[])).unwrap();
    let res = indexer
        .add_indexers(Indexers::new().with_fallible("bad", |_: &ConfigMap| Err("no".into())));
    assert!(matches!(res, Err(Error::IndexFn { .. })));
    assert!(!indexer.has_index("bad"));
}

#[test]
fn x7_every_read_returns_the_same_arc() {
    let indexer = tag_indexer();
    let obj = cm("ns", "a", &[("tags", "t")]);
    indexer.add(obj.clone()).unwrap();
    let key = ObjectKey::parse("ns/a").unwrap();
    assert!(Arc::ptr_eq(&indexer.get(&key).unwrap(), &obj));
    assert!(Arc::ptr_eq(&indexer.list()[0], &obj));
    assert!(Arc::ptr_eq(
        &indexer.by_index("by_tag", "t").unwrap()[0],
        &obj
    ));
    assert!(Arc::ptr_eq(
        &indexer.by_indices(&[("by_tag", "t")]).unwrap()[0],
        &obj
    ));
}

#[test]
fn x8_and_query_across_indices() {
    let indexer = tag_indexer();
    indexer.add(cm("a", "1", &[("tags", "x,y")])).unwrap();
    indexer.add(cm("a", "2", &[("tags", "x")])).unwrap();
    indexer.add(cm("b", "3", &[("tags", "x,y")])).unwrap();
    let hits = indexer
        .by_indices(&[("by_tag", "x"), ("by_tag", "y"), (NAMESPACE_INDEX, "a")])
        .unwrap();
    assert_eq!(sorted_names(hits), ["1"]);
    assert!(
        indexer
            .by_indices(&[("by_tag", "x"), (NAMESPACE_INDEX, "c")])
            .unwrap()
            .is_empty()
    );
    assert!(indexer.by_indices(&[]).unwrap().is_empty());
    assert!(matches!(
        indexer.by_indices(&[("by_tag", "absent"), ("nope", "x")]),
        Err(Error::UnknownIndex(_))
    ));
}

#[test]
fn x8_index_functions_run_outside_the_write_lock() {
    // An index function that reads the indexer would deadlock if it ran under the write lock.
    let indexer: Arc<Indexer<ConfigMap>> = Arc::new(Indexer::new());
    let weak = Arc::downgrade(&indexer);
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    indexer
        .add_indexers(Indexers::new().with("reentrant", move |_: &ConfigMap| {
            seen.fetch_add(1, Ordering::SeqCst);
            if let Some(idx) = weak.upgrade() {
                let _ = idx.len();
            }
            Vec::new()
        }))
        .unwrap();
    indexer.add(cm("ns", "a", &[])).unwrap();
    indexer.replace(vec![cm("ns", "b", &[])]).unwrap();
    assert!(calls.load(Ordering::SeqCst) >= 2);
}

/// X8: with one writer and several readers, a reader never sees an object without its index
/// entries, nor an index entry whose object disagrees. Every object's label `v` must equal the
/// value it is indexed under in `by_v`, and the namespace index must list exactly the objects.
#[test]
fn x8_concurrent_readers_always_see_consistent_object_and_index_entries() {
    let indexer: Arc<Indexer<ConfigMap>> = Arc::new(
        Indexer::builder()
            .indexers(Indexers::new().with("by_v", |cm: &ConfigMap| {
                label(cm, "v").into_iter().collect()
            }))
            .build()
            .unwrap(),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let checks = Arc::new(AtomicUsize::new(0));
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let (indexer, stop, checks) = (indexer.clone(), stop.clone(), checks.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Acquire) {
                    let view = indexer.read();
                    let objs = view.list();
                    let mut by_v: BTreeMap<String, usize> = BTreeMap::new();
                    for obj in &objs {
                        let v = label(obj, "v").unwrap();
                        let key = ObjectKey::from_resource(&**obj).unwrap();
                        assert!(
                            view.index_keys("by_v", &v).unwrap().contains(&key),
                            "object without its entry"
                        );
                        *by_v.entry(v).or_default() += 1;
                    }
                    for v in view.list_index_values("by_v").unwrap() {
                        let hits = view.by_index("by_v", &v).unwrap();
                        assert!(!hits.is_empty(), "empty value set left behind");
                        assert_eq!(
                            hits.len(),
                            by_v.get(&*v).copied().unwrap_or(0),
                            "entry without its object"
                        );
                        for hit in hits {
                            assert_eq!(label(&hit, "v").as_deref(), Some(&*v));
                        }
                    }
                    assert_eq!(
                        view.by_index(NAMESPACE_INDEX, "ns").unwrap().len(),
                        objs.len()
                    );
                    checks.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for round in 0..3000u32 {
        let name = format!("o{}", round % 50);
        let v = (round % 7).to_string();
        match round % 10 {
            0..=5 => drop(indexer.add(cm("ns", &name, &[("v", &v)])).unwrap()),
            6..=8 => drop(indexer.delete_key(&format!("ns/{name}"))),
            _ => indexer
                .replace(
                    (0..20)
                        .map(|i| {
                            cm(
                                "ns",
                                &format!("o{i}"),
                                &[("v", &((i + round) % 5).to_string())],
                            )
                        })
                        .collect(),
                )
                .unwrap(),
        }
    }
    // Let readers run at least a few full checks against the final state.
    let target = checks.load(Ordering::Relaxed) + 3;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while checks.load(Ordering::Relaxed) < target && std::time::Instant::now() < deadline {
        std::thread::yield_now();
    }
    stop.store(true, Ordering::Release);
    for r in readers {
        r.join().expect("reader saw an inconsistent state");
    }
    assert!(checks.load(Ordering::Relaxed) >= 3);
}

#[test]
fn count_by_index_counts_a_value_without_collecting_and_follows_updates() {
    // The index is given as a ready-made `IndexFunc`, the form `with_func` takes.
    let indexer: Indexer<ConfigMap> = Indexer::builder()
        .indexers(Indexers::new().with_func("by_tag", IndexFunc::Infallible(Arc::new(by_tag))))
        .build()
        .expect("test fixture");
    indexer.add(cm("ns", "a", &[("tags", "red,blue")])).unwrap();
    indexer.add(cm("ns", "b", &[("tags", "blue")])).unwrap();
    assert_eq!(indexer.read().count_by_index("by_tag", "blue").unwrap(), 2);
    assert_eq!(indexer.read().count_by_index("by_tag", "red").unwrap(), 1);
    assert_eq!(indexer.read().count_by_index("by_tag", "green").unwrap(), 0);

    indexer.update(cm("ns", "a", &[("tags", "green")])).unwrap();
    assert_eq!(indexer.read().count_by_index("by_tag", "blue").unwrap(), 1);
    assert_eq!(indexer.read().count_by_index("by_tag", "red").unwrap(), 0);
    assert_eq!(indexer.read().count_by_index("by_tag", "green").unwrap(), 1);
    assert_eq!(
        indexer.read().count_by_index("by_tag", "blue").unwrap(),
        indexer.by_index("by_tag", "blue").unwrap().len()
    );
    assert!(matches!(
        indexer.read().count_by_index("no_such_index", "x"),
        Err(Error::UnknownIndex(_))
    ));
}
