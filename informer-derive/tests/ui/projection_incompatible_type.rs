//! UI test: a projection field whose type cannot hold the source field (P5).

use informer_derive::Projection;
use k8s_openapi::api::core::v1::PodSpec;

#[derive(Projection, Clone, Debug)]
#[projection(of = PodSpec)]
pub struct PodSpecView {
    pub node_name: Option<i64>,
}

fn main() {}
