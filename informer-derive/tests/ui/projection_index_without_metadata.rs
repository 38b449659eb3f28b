//! UI test: an index on a nested projection (indexes need a top-level projection with `metadata`).

use informer_derive::Projection;
use informer_runtime::projection::IStr;
use k8s_openapi::api::core::v1::PodSpec;

#[derive(Projection, Clone, Debug)]
#[projection(of = PodSpec, index(name = "by_node", path = node_name))]
pub struct PodSpecView {
    pub node_name: Option<IStr>,
}

fn main() {
    let _ = std::mem::size_of::<PodSpec>();
}
