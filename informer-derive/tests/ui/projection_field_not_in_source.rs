//! UI test: a projection field that the source type does not have (P5).

use informer_derive::Projection;
use informer_runtime::projection::IStr;
use k8s_openapi::api::core::v1::PodSpec;

#[derive(Projection, Clone, Debug)]
#[projection(of = PodSpec)]
pub struct PodSpecView {
    pub node_nam: Option<IStr>,
}

fn main() {}
