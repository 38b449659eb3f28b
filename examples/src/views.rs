//! Projections the example operator caches instead of full objects (P4).
//!
//! The operator only counts Pods and reports where they run, so it caches this slim view (about
//! 1 KiB per Pod) rather than the k8s-openapi `Pod` (about 100 KiB with managedFields).

use informer_runtime::Projection;
use informer_runtime::projection::{IStr, SlimMeta};
use k8s_openapi::api::core::v1::{Pod, PodSpec, PodStatus};

/// What the operator reads of a Pod: its metadata, node and phase.
#[derive(Projection, Clone, Debug)]
#[projection(of = Pod, index(name = "by_node", function = node_of))]
pub struct PodSummary {
    /// Name, namespace, labels, owners, …
    pub metadata: SlimMeta,
    /// `spec.nodeName`.
    pub spec: Option<PodSummarySpec>,
    /// `status.phase`.
    pub status: Option<PodSummaryStatus>,
}

/// `spec.nodeName`.
#[derive(Projection, Clone, Debug)]
#[projection(of = PodSpec)]
pub struct PodSummarySpec {
    /// The node the Pod is bound to.
    pub node_name: Option<IStr>,
}

/// `status.phase`.
#[derive(Projection, Clone, Debug)]
#[projection(of = PodStatus)]
pub struct PodSummaryStatus {
    /// `Pending`, `Running`, …
    pub phase: Option<IStr>,
}

/// The `by_node` index: the node a Pod runs on.
pub fn node_of(pod: &PodSummary) -> Vec<String> {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .map(|n| vec![n.to_owned()])
        .unwrap_or_default()
}
