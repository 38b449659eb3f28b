//! UI test: an unknown key in `#[projection(...)]`, reported together with a missing `of`.

use informer_derive::Projection;

#[derive(Projection, Clone, Debug)]
#[projection(source = k8s_openapi::api::core::v1::Pod)]
pub struct PodView {
    pub metadata: informer_runtime::projection::SlimMeta,
}

fn main() {}
