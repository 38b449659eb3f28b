//! The controller projection of a Pod that the benchmark caches beside the full k8s-openapi `Pod`
//! (P4): slim metadata, `spec.nodeName`, the containers' names and images, `status.phase` and the
//! conditions, as a typical controller reads them.

use informer_runtime::Projection;
use informer_runtime::projection::{IStr, SlimMeta};
use k8s_openapi::api::core::v1::{Container, Pod, PodCondition, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// A typical controller's view of a Pod.
#[derive(Projection, Clone, Debug)]
#[projection(of = Pod)]
pub struct PodView {
    /// Name, namespace, uid, resourceVersion, generation, labels, annotations, owners, finalizers.
    pub metadata: SlimMeta,
    /// Where it runs and what it runs.
    pub spec: Option<PodSpecView>,
    /// How it is.
    pub status: Option<PodStatusView>,
}

/// `spec.nodeName` and the containers.
#[derive(Projection, Clone, Debug)]
#[projection(of = PodSpec)]
pub struct PodSpecView {
    /// `spec.nodeName`.
    pub node_name: Option<IStr>,
    /// `spec.containers[*].{name,image}`.
    pub containers: Box<[ContainerView]>,
}

/// A container's name and image.
#[derive(Projection, Clone, Debug)]
#[projection(of = Container)]
pub struct ContainerView {
    /// `name`.
    pub name: IStr,
    /// `image`.
    pub image: Option<IStr>,
}

/// `status.phase` and `status.conditions`.
#[derive(Projection, Clone, Debug)]
#[projection(of = PodStatus)]
pub struct PodStatusView {
    /// `status.phase`.
    pub phase: Option<IStr>,
    /// `status.conditions`.
    pub conditions: Option<Box<[ConditionView]>>,
}

/// One Pod condition.
#[derive(Projection, Clone, Debug)]
#[projection(of = PodCondition)]
pub struct ConditionView {
    /// `type`.
    pub type_: IStr,
    /// `status`.
    pub status: IStr,
    /// `reason`.
    pub reason: Option<IStr>,
    /// `lastTransitionTime`.
    pub last_transition_time: Option<Time>,
}
