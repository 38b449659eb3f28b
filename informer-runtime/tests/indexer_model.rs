//! Model-based property test of the indexer (X4, X5, X6, X8): random add/update/delete/replace
//! and a late `add_indexers`, checked after every step against a `BTreeMap` model and
//! brute-force recomputed indices. Run: `cargo test -p informer-runtime --test indexer_model`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use informer_runtime::indexer::{Indexer, Indexers, NAMESPACE_INDEX};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;
use proptest::prelude::*;

/// An object: (namespace 0..3, name 0..8, tags as a bit set over 5 tags).
type Spec = (u8, u8, u8);

#[derive(Debug, Clone)]
enum Op {
    Upsert(Spec),
    Delete(u8, u8),
    Replace(Vec<Spec>),
    /// Register the late `by_first_tag` index (a no-op after the first time, checked as an error).
    AddIndexer,
}

fn spec() -> impl Strategy<Value = Spec> {
    (0u8..3, 0u8..8, 0u8..32)
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => spec().prop_map(Op::Upsert),
        3 => (0u8..3, 0u8..8).prop_map(|(ns, name)| Op::Delete(ns, name)),
        1 => proptest::collection::vec(spec(), 0..12).prop_map(Op::Replace),
        1 => Just(Op::AddIndexer),
    ]
}

fn key(ns: u8, name: u8) -> String {
    format!("ns{ns}/o{name}")
}

fn object((ns, name, tags): Spec) -> Arc<ConfigMap> {
    let tags: Vec<String> = (0..5)
        .filter(|t| tags & (1 << t) != 0)
        .map(|t| format!("t{t}"))
        .collect();
    Arc::new(ConfigMap {
        metadata: ObjectMeta {
            name: Some(format!("o{name}")),
            namespace: Some(format!("ns{ns}")),
            labels: Some([("tags".to_string(), tags.join(","))].into()),
            ..Default::default()
        },
        ..Default::default()
    })
}

fn tags(cm: &ConfigMap) -> Vec<String> {
    cm.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("tags"))
        .map(|t| {
            t.split(',')
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn first_tag(cm: &ConfigMap) -> Vec<String> {
    tags(cm).into_iter().take(1).collect()
}

fn check(indexer: &Indexer<ConfigMap>, model: &BTreeMap<String, Arc<ConfigMap>>, late: bool) {
    let view = indexer.read();
    let stored: BTreeMap<String, Arc<ConfigMap>> = view
        .entries()
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    assert_eq!(
        stored.keys().collect::<Vec<_>>(),
        model.keys().collect::<Vec<_>>()
    );
    for (k, obj) in model {
        assert!(
            Arc::ptr_eq(&stored[k], obj),
            "X7: the stored Arc is the one written"
        );
    }
    type IndexFn = fn(&ConfigMap) -> Vec<String>;
    let namespace: IndexFn = |cm| vec![cm.metadata.namespace.clone().unwrap_or_default()];
    let mut indices = vec![(NAMESPACE_INDEX, namespace), ("tags", tags as IndexFn)];
    if late {
        indices.push(("by_first_tag", first_tag));
    }
    for (index, func) in indices {
        let mut expected: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (k, obj) in model {
            for v in func(obj) {
                expected.entry(v).or_default().insert(k.clone());
            }
        }
        let mut actual: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for v in view.list_index_values(index).expect("registered") {
            let keys: BTreeSet<String> = view
                .index_keys(index, &v)
                .expect("registered")
                .iter()
                .map(|k| k.to_string())
                .collect();
            assert!(!keys.is_empty(), "X4: empty value `{v}` in `{index}`");
            let found = view.by_index(index, &v).expect("registered");
            assert_eq!(found.len(), keys.len());
            for obj in &found {
                let k = format!(
                    "{}/{}",
                    obj.metadata.namespace.as_deref().unwrap_or_default(),
                    obj.metadata.name.as_deref().unwrap_or_default()
                );
                assert!(
                    keys.contains(&k) && Arc::ptr_eq(obj, &model[&k]),
                    "X5/X7: `{index}={v}` returns the current object of {k}"
                );
            }
            actual.insert(v.to_string(), keys);
        }
        assert_eq!(actual, expected, "index `{index}`");
    }
}

fn run(ops: Vec<Op>) {
    let indexer = Indexer::<ConfigMap>::builder()
        .indexers(Indexers::new().with("tags", tags))
        .build()
        .expect("unique names");
    let mut model: BTreeMap<String, Arc<ConfigMap>> = BTreeMap::new();
    let mut late = false;
    for op in ops {
        match op {
            Op::Upsert(s) => {
                let obj = object(s);
                let old = indexer.add(obj.clone()).expect("valid object");
                let model_old = model.insert(key(s.0, s.1), obj);
                assert_eq!(old.is_some(), model_old.is_some(), "H2: add vs update");
                if let (Some(a), Some(b)) = (old, model_old) {
                    assert!(Arc::ptr_eq(&a, &b));
                }
            }
            Op::Delete(ns, name) => {
                let removed = indexer.delete_key(&key(ns, name));
                assert_eq!(removed.is_some(), model.remove(&key(ns, name)).is_some());
            }
            Op::Replace(specs) => {
                let objs: Vec<Arc<ConfigMap>> = specs.iter().copied().map(object).collect();
                indexer.replace(objs.clone()).expect("valid objects");
                model = specs
                    .iter()
                    .zip(objs)
                    .map(|(s, o)| (key(s.0, s.1), o))
                    .collect();
            }
            Op::AddIndexer => {
                let res = indexer.add_indexers(Indexers::new().with("by_first_tag", first_tag));
                assert_eq!(
                    res.is_ok(),
                    !late,
                    "X6: a second registration is a duplicate"
                );
                late = true;
            }
        }
        check(&indexer, &model, late);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn x4_x6_random_writes_keep_indices_equal_to_brute_force(
        ops in proptest::collection::vec(op(), 1..40)
    ) {
        run(ops);
    }
}
