//! The in-memory cost of one benchmark Pod, measured with the counting allocator.

use k8s_openapi::api::core::v1::Pod;
use kube::core::PartialObjectMeta;
use serde::de::DeserializeOwned;

use crate::alloc::heap_stats;
use crate::podset::PodSet;

/// Heap bytes per decoded Pod in its three cached shapes, and JSON bytes per Pod.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PodSizes {
    /// Serialized JSON.
    pub json_bytes: f64,
    /// A typed `Pod` (k8s-openapi), as both caches hold it.
    pub typed_heap_bytes: f64,
    /// The same with `metadata.managedFields` removed (scenario 7a).
    pub typed_heap_no_managed_fields_bytes: f64,
    /// `PartialObjectMeta<Pod>` decoded from the full object (scenario 7b keeps this much).
    pub metadata_only_heap_bytes: f64,
    /// The controller projection [`PodView`](crate::projection::PodView), decoded from the full
    /// object (P4), with its share of the interned strings.
    #[serde(default)]
    pub projection_heap_bytes: f64,
    /// The generated compact Pod ([`CompactPod`](crate::CompactPod), P1), decoded from the full
    /// object, with its share of the interned strings and JSON documents.
    #[serde(default)]
    pub compact_heap_bytes: f64,
}

/// Decodes `n` Pods of `set` in each shape and reports the mean heap per object. Meaningful only
/// when [`CountingAlloc`](crate::alloc::CountingAlloc) is the global allocator.
pub fn measure(set: &PodSet, n: usize) -> Result<PodSizes, serde_json::Error> {
    let n = n.min(set.n).max(1);
    // Spread over the whole set: the realistic corpus's groups lie in index order.
    let docs: Vec<Vec<u8>> = (0..n)
        .map(|k| serde_json::to_vec(&set.pod_json(k * set.n / n)))
        .collect::<Result<_, _>>()?;
    measure_docs(&docs)
}

/// [`measure`] for Pods as a server served them (kube-apiserver adds its own managedFields and
/// defaults, so its Pods differ from the seeded ones). `docs` must not be empty.
pub fn measure_docs(docs: &[Vec<u8>]) -> Result<PodSizes, serde_json::Error> {
    let n = docs.len().max(1);
    let json_bytes = docs.iter().map(Vec::len).sum::<usize>() as f64 / n as f64;
    let typed = per_object::<Pod>(docs, |_| {})?;
    let stripped = per_object::<Pod>(docs, |p| p.metadata.managed_fields = None)?;
    let meta = per_object::<PartialObjectMeta<Pod>>(docs, |_| {})?;
    // Interned strings count for the objects that first used them, as in a cache.
    informer_runtime::projection::Interner::global().sweep();
    let projection = per_object::<crate::projection::PodView>(docs, |_| {})?;
    informer_runtime::projection::Interner::global().sweep();
    let compact = per_object::<crate::CompactPod>(docs, |_| {})?;
    Ok(PodSizes {
        json_bytes,
        typed_heap_bytes: typed,
        typed_heap_no_managed_fields_bytes: stripped,
        metadata_only_heap_bytes: meta,
        projection_heap_bytes: projection,
        compact_heap_bytes: compact,
    })
}

fn per_object<K: DeserializeOwned>(
    docs: &[Vec<u8>],
    mut transform: impl FnMut(&mut K),
) -> Result<f64, serde_json::Error> {
    let before = heap_stats().current;
    // The Vec's buffer counts: a store holds each object in an `Arc<K>`, the same inline size
    // plus two counters.
    let mut kept: Vec<K> = Vec::with_capacity(docs.len());
    for d in docs {
        let mut obj: K = serde_json::from_slice(d)?;
        transform(&mut obj);
        kept.push(obj);
    }
    let bytes = heap_stats().current.saturating_sub(before);
    drop(kept);
    Ok(bytes as f64 / docs.len() as f64)
}
