//! Pass test: kube `CustomResource` + `Informer` with every index kind; namespaced shape (G3, G7).

use std::sync::Arc;

use informer_derive::Informer;
use informer_runtime::SharedInformerFactory;
use kube::CustomResource;
use kube::core::Selector;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

fn by_replicas(foo: &Foo) -> Vec<String> {
    vec![foo.spec.replicas.to_string()]
}

#[derive(CustomResource, Informer, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Foo", namespaced)]
#[informer(index(name = "by_node", path = spec.node_name))]
#[informer(index(name = "by_owner", owner = "ReplicaSet"))]
#[informer(index(name = "by_replicas", function = by_replicas))]
pub struct FooSpec {
    pub node_name: Option<String>,
    pub replicas: i32,
}

/// A cluster-scoped kind with kube-derive's default plural.
#[derive(CustomResource, Informer, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "ClusterPolicy")]
pub struct ClusterPolicySpec {
    pub rules: Vec<String>,
}

#[allow(dead_code)]
fn use_it(factory: &SharedInformerFactory) {
    let foos = FooInformer::new(factory);
    let _informer: Arc<informer_runtime::informer::SharedIndexInformer<Foo>> = foos.informer();
    let lister: FooLister = foos.lister();
    let _: Vec<Arc<Foo>> = lister.list(&Selector::default());
    let _: Result<Arc<Foo>, informer_runtime::lister::Error> = lister.namespaced("prod").get("web");
    let _: Result<Vec<Arc<Foo>>, _> = lister.by_node("n1");
    let _ = (lister.by_owner("rs"), lister.by_replicas("3"));
    let policies = ClusterPolicyInformer::new(factory).lister();
    let _: Result<Arc<ClusterPolicy>, _> = policies.get("p");
}

fn main() {
    assert_eq!(<Foo as kube::Resource>::plural(&()), "foos");
    assert_eq!(<ClusterPolicy as kube::Resource>::plural(&()), "clusterpolicies");
}
