//! UI test: a standalone resource declared `namespaced` whose `Resource::Scope` is cluster-scoped.

use informer_derive::Informer;
use k8s_openapi::api::core::v1::NodeSpec;
use kube::api::ObjectMeta;

#[derive(Clone, Debug, serde::Deserialize)]
#[derive(Informer)]
#[informer(group = "example.com", version = "v1", kind = "Machine", namespaced)]
pub struct Machine {
    pub metadata: ObjectMeta,
    pub spec: NodeSpec,
}

impl kube::Resource for Machine {
    type DynamicType = ();
    type Scope = kube::core::ClusterResourceScope;
    fn kind(_: &()) -> std::borrow::Cow<'_, str> { "Machine".into() }
    fn group(_: &()) -> std::borrow::Cow<'_, str> { "example.com".into() }
    fn version(_: &()) -> std::borrow::Cow<'_, str> { "v1".into() }
    fn plural(_: &()) -> std::borrow::Cow<'_, str> { "machines".into() }
    fn meta(&self) -> &ObjectMeta { &self.metadata }
    fn meta_mut(&mut self) -> &mut ObjectMeta { &mut self.metadata }
}

fn main() {}
