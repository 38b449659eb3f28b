//! UI test: a projection that does not name its source type.

use informer_derive::Projection;

#[derive(Projection, Clone, Debug)]
pub struct PodView {
    pub metadata: informer_runtime::projection::SlimMeta,
}

fn main() {}
