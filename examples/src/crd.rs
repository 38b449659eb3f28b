//! The example `Foo` CRD: kube's `CustomResource` plus `#[derive(Informer)]` with a typed index.

use informer_runtime::Informer;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Desired state of a `Foo` (`example.com/v1`, namespaced).
#[derive(CustomResource, Informer, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Foo", namespaced)]
#[informer(index(name = "by_node", path = spec.node_name))]
#[serde(rename_all = "camelCase")]
pub struct FooSpec {
    /// The node this `Foo` runs on; indexed as `by_node`.
    pub node_name: Option<String>,
    /// Number of replicas.
    pub replicas: i32,
}
