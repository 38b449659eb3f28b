//! UI test: an index path naming a field that does not exist is reported at the path.

use informer_derive::Informer;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(CustomResource, Informer, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Foo", namespaced)]
#[informer(index(name = "by_node", path = spec.node))]
pub struct FooSpec {
    pub node_name: Option<String>,
}

fn main() {}
