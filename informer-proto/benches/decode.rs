//! Decoding one object, protobuf against JSON, into each cached form: the k8s-openapi `Pod`,
//! informer-k8s's compact `Pod` and the benchmark's projection. The ratio of a form's protobuf
//! time to its JSON time is what decision record 15's fast path is measured by (no cached form
//! slower over protobuf than over JSON).
//!
//! Run: `cargo bench -p informer-proto --bench decode`; add `-- --profile-time 10 <filter>` to
//! run one case long enough for a profiler.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput};
use informer_benches::CompactPod;
use informer_benches::corpus::Corpus;
use informer_benches::podset::PodSet;
use informer_benches::projection::PodView;
use informer_proto::frame::Envelope;
use k8s_openapi::api::core::v1::Pod;
use serde::de::DeserializeOwned;

/// Pods per measured run: one LIST page.
const PAGE: usize = 500;

/// `PAGE` Pods of `corpus` as JSON texts and as protobuf messages (no envelope).
fn corpus(corpus: Corpus) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let set = PodSet::new(PAGE, 10, corpus);
    let mut json = Vec::with_capacity(PAGE);
    let mut proto = Vec::with_capacity(PAGE);
    for i in 0..PAGE {
        let mut pod = set.pod_json(i);
        pod["apiVersion"] = "v1".into();
        pod["kind"] = "Pod".into();
        json.push(serde_json::to_vec(&pod).expect("JSON"));
        let body = informer_testserver::encode_protobuf(&pod).expect("protobuf");
        let env = Envelope::read(&body).expect("envelope");
        proto.push(env.raw.to_vec());
    }
    (json, proto)
}

fn json_page<K: DeserializeOwned>(items: &[Vec<u8>]) -> Vec<K> {
    items
        .iter()
        .map(|b| serde_json::from_slice(b).expect("decodes"))
        .collect()
}

fn proto_page<K: DeserializeOwned>(items: &[Vec<u8>]) -> Vec<K> {
    let message = informer_proto::for_kind("v1", "Pod").expect("built in");
    items
        .iter()
        .map(|b| informer_proto::from_slice(message, b).expect("decodes"))
        .collect()
}

fn bench(c: &mut Criterion) {
    for (name, which) in [
        ("distinct", Corpus::Distinct),
        ("realistic", Corpus::Realistic),
    ] {
        let (json, proto) = corpus(which);
        let mut group = c.benchmark_group(format!("decode-{name}"));
        group
            .throughput(Throughput::Elements(PAGE as u64))
            .measurement_time(Duration::from_secs(5));
        group.bench_function("pod/json", |b| {
            b.iter(|| black_box(json_page::<Pod>(&json)))
        });
        group.bench_function("pod/protobuf", |b| {
            b.iter(|| black_box(proto_page::<Pod>(&proto)))
        });
        group.bench_function("compact/json", |b| {
            b.iter(|| black_box(json_page::<CompactPod>(&json)))
        });
        group.bench_function("compact/protobuf", |b| {
            b.iter(|| black_box(proto_page::<CompactPod>(&proto)))
        });
        group.bench_function("projection/json", |b| {
            b.iter(|| black_box(json_page::<PodView>(&json)))
        });
        group.bench_function("projection/protobuf", |b| {
            b.iter(|| black_box(proto_page::<PodView>(&proto)))
        });
        group.finish();
    }
}

// A hand-written main instead of `criterion_group!`, whose generated `pub fn` has no docs.
fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c);
    c.final_summary();
}
