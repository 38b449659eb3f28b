//! UI test: a cluster-scoped kind's lister has no `namespaced()` (L4).

use informer_derive::Informer;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(CustomResource, Informer, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Cluster")]
pub struct ClusterSpec {
    pub size: i32,
}

fn use_it(lister: ClusterLister) {
    let _ = lister.namespaced("default");
}

fn main() {}
