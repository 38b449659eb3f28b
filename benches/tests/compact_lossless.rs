//! P1/P2 for the generated compact Pod: on every Pod of the benchmark's corpus and on
//! proptest-mutated Pods, the compact value serializes to the same JSON value as the k8s-openapi
//! value decoded from the same bytes, and the generated conversions agree both ways.
//!
//! Run with `cargo test -p informer-benches --test compact_lossless`.

// The mutator's helpers index documents they just walked; a miss is a bug in the test.
#![allow(clippy::unwrap_used)]

use informer_benches::CompactPod;
use informer_benches::corpus::Corpus;
use informer_benches::pods;
use informer_benches::podset::PodSet;
use k8s_openapi::api::core::v1::Pod;
use proptest::prelude::*;
use serde_json::Value;

/// The P1/P2 check for one document; `Ok(false)` when k8s-openapi itself rejects it.
fn lossless(bytes: &[u8]) -> Result<bool, TestCaseError> {
    let Ok(full) = serde_json::from_slice::<Pod>(bytes) else {
        return Ok(false);
    };
    let compact: CompactPod = serde_json::from_slice(bytes).map_err(|e| {
        TestCaseError::fail(format!(
            "k8s-openapi decodes it, the compact Pod does not: {e}"
        ))
    })?;
    let full_json = serde_json::to_value(&full).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let compact_json =
        serde_json::to_value(&compact).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(&compact_json, &full_json, "P1: same JSON value");
    // Byte for byte too: the field order is k8s-openapi's and free-form JSON is re-sorted as
    // k8s-openapi's `Value` sorts it.
    prop_assert_eq!(
        serde_json::to_string(&compact).ok(),
        serde_json::to_string(&full).ok()
    );
    prop_assert_eq!(&CompactPod::from(&full), &compact, "P2: from k8s-openapi");
    prop_assert_eq!(&Pod::from(&compact), &full, "P2: into k8s-openapi");
    Ok(true)
}

#[test]
fn p1_every_pod_of_the_benchmark_corpus_round_trips() {
    for corpus in [Corpus::Distinct, Corpus::Realistic, Corpus::Exemplar] {
        let set = PodSet::new(1_000, 50, corpus);
        for i in 0..set.n {
            let bytes = serde_json::to_vec(&set.pod_json(i)).unwrap();
            assert!(
                lossless(&bytes).unwrap(),
                "{corpus:?} corpus Pod {i} decodes"
            );
        }
    }
    // The watch updates of scenario 2 (annotations, restart counts, transition times change).
    for generation in 1..4 {
        let doc = pods::pod_json("bench-001", "web-x", 7, generation);
        assert!(lossless(&serde_json::to_vec(&doc).unwrap()).unwrap());
    }
}

/// One edit at a pseudo-random place of a document.
#[derive(Debug, Clone)]
enum Edit {
    Remove,
    Null,
    Text(String),
    Int(i64),
    Float(f64),
    EmptyList,
    EmptyMap,
    UnknownField(String),
    DuplicateFirst,
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        Just(Edit::Remove),
        Just(Edit::Null),
        "\\PC{0,12}".prop_map(Edit::Text),
        any::<i64>().prop_map(Edit::Int),
        (-1e9f64..1e9).prop_map(Edit::Float),
        Just(Edit::EmptyList),
        Just(Edit::EmptyMap),
        "[a-zA-Z]{1,10}".prop_map(Edit::UnknownField),
        Just(Edit::DuplicateFirst),
    ]
}

/// Walks down `doc` choosing children by `seed` and applies `edit` at the place reached.
fn apply(doc: &mut Value, mut seed: u64, edit: &Edit) {
    let mut at = doc;
    loop {
        let (len, stop) = match &*at {
            Value::Object(m) => (m.len(), m.is_empty() || seed.is_multiple_of(5)),
            Value::Array(a) => (a.len(), a.is_empty() || seed.is_multiple_of(5)),
            _ => (0, true),
        };
        if !stop {
            let i = ((seed / 5) % len as u64) as usize;
            seed = seed.rotate_right(7) ^ 0x9e37_79b9_7f4a_7c15;
            let next_is_leaf = match &*at {
                Value::Object(m) => !m
                    .values()
                    .nth(i)
                    .is_some_and(|v| v.is_object() || v.is_array()),
                Value::Array(a) => !a[i].is_object() && !a[i].is_array(),
                _ => true,
            };
            if !next_is_leaf || !seed.is_multiple_of(3) {
                at = match at {
                    Value::Object(m) => m.values_mut().nth(i).unwrap(),
                    Value::Array(a) => &mut a[i],
                    _ => unreachable!(),
                };
                continue;
            }
            // Edit the chosen leaf inside its container.
            let slot: &mut Value = match at {
                Value::Object(m) => {
                    if matches!(edit, Edit::Remove) {
                        let key = m.keys().nth(i).cloned().unwrap();
                        m.remove(&key);
                        return;
                    }
                    m.values_mut().nth(i).unwrap()
                }
                Value::Array(a) => {
                    if matches!(edit, Edit::Remove) {
                        a.remove(i);
                        return;
                    }
                    &mut a[i]
                }
                _ => unreachable!(),
            };
            set(slot, edit);
            return;
        }
        set(at, edit);
        return;
    }
}

fn set(slot: &mut Value, edit: &Edit) {
    match edit {
        Edit::Remove | Edit::Null => *slot = Value::Null,
        Edit::Text(s) => *slot = Value::from(s.clone()),
        Edit::Int(n) => *slot = Value::from(*n),
        Edit::Float(f) => *slot = Value::from(*f),
        Edit::EmptyList => *slot = Value::Array(Vec::new()),
        Edit::EmptyMap => *slot = Value::Object(Default::default()),
        Edit::UnknownField(k) => {
            if let Value::Object(m) = slot {
                m.insert(format!("x-{k}"), Value::from(k.clone()));
            }
        }
        Edit::DuplicateFirst => {
            if let Value::Array(a) = slot
                && let Some(first) = a.first().cloned()
            {
                a.push(first);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// P1 on Pods the corpus does not contain: fields removed, nulled, emptied, retyped,
    /// unknown fields added, lists grown, strings of any Unicode.
    #[test]
    fn p1_mutated_pods_round_trip(
        pod in 0usize..64,
        edits in prop::collection::vec((any::<u64>(), edit()), 1..8),
    ) {
        let set = PodSet::distinct(64, 4);
        let mut doc = set.pod_json(pod);
        for (seed, e) in &edits {
            apply(&mut doc, *seed, e);
        }
        let bytes = serde_json::to_vec(&doc).unwrap();
        lossless(&bytes)?;
    }
}

#[test]
fn the_mutator_produces_documents_k8s_openapi_accepts() {
    // Guard against a mutator that only ever breaks documents (which would make the property
    // vacuous): most single edits keep a valid Pod.
    let set = PodSet::distinct(8, 2);
    let mut accepted = 0;
    for seed in 0..400u64 {
        let mut doc = set.pod_json((seed % 8) as usize);
        let e = match seed % 4 {
            0 => Edit::Remove,
            1 => Edit::Null,
            2 => Edit::Text("é\"\\\n".into()),
            _ => Edit::UnknownField("zz".into()),
        };
        apply(&mut doc, seed.wrapping_mul(0x2545_f491_4f6c_dd1d), &e);
        if lossless(&serde_json::to_vec(&doc).unwrap()).unwrap() {
            accepted += 1;
        }
    }
    assert!(
        accepted > 200,
        "only {accepted} of 400 edited Pods were valid"
    );
}

#[test]
fn quantities_written_as_json_numbers_round_trip() {
    // k8s-openapi's `Quantity` reads a JSON number and writes its text back as a string; so must
    // the compact Pod (P1). A case proptest once found, then every quantity-holding shape.
    let set = PodSet::distinct(64, 4);
    let mut doc = set.pod_json(0);
    apply(&mut doc, 8025606575270717067, &Edit::Int(0));
    assert!(lossless(&serde_json::to_vec(&doc).unwrap()).unwrap());

    let mut doc = set.pod_json(1);
    let container = &mut doc["spec"]["containers"][0];
    container["resources"] = serde_json::json!({
        "requests": {"memory": 0, "cpu": 1.5},
        "limits": {"memory": 18446744073709551615u64, "cpu": -3},
    });
    doc["spec"]["overhead"] = serde_json::json!({"cpu": 2});
    doc["spec"]["volumes"] = serde_json::json!([{"name": "v", "emptyDir": {"sizeLimit": 7}}]);
    let bytes = serde_json::to_vec(&doc).unwrap();
    assert!(lossless(&bytes).unwrap(), "k8s-openapi refused the Pod");
    let compact: CompactPod = serde_json::from_slice(&bytes).unwrap();
    let json = serde_json::to_value(&compact).unwrap();
    assert_eq!(
        json["spec"]["containers"][0]["resources"]["requests"]["memory"],
        "0"
    );
    assert_eq!(json["spec"]["volumes"][0]["emptyDir"]["sizeLimit"], "7");
}
