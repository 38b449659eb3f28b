//! Pass test: a top-level projection with nested projections and a path index is an `Object`.

use informer_derive::Projection;
use informer_runtime::projection::{IStr, SlimMeta};
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};

#[derive(Projection, Clone, Debug)]
#[projection(of = Pod, index(name = "by_name", path = metadata.name))]
pub struct PodView {
    pub metadata: SlimMeta,
    pub spec: Option<PodSpecView>,
}

#[derive(Projection, Clone, Debug)]
#[projection(of = PodSpec)]
pub struct PodSpecView {
    pub node_name: Option<IStr>,
    pub containers: Vec<ContainerView>,
}

#[derive(Projection, Clone, Debug)]
#[projection(of = Container)]
pub struct ContainerView {
    pub name: Box<str>,
    pub image: Option<String>,
}

#[allow(dead_code)]
fn use_it(factory: &informer_runtime::SharedInformerFactory) {
    let informer = factory.informer_for::<PodView>();
    let lister = informer_runtime::lister::Lister::from_indexer(informer.indexer().clone());
    let _ = lister.namespaced("default").get("web");
    let _ = lister.by_index("by_name", "web");
}

fn main() {}
