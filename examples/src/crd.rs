//! The example `Foo` CRD: kube's `CustomResource` plus `#[derive(Informer)]` with a typed index.
//!
//! The operator (`operator.rs`) makes each Foo own a ConfigMap holding `spec.message`, and
//! reports that in `status`.

use informer_runtime::Informer;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Desired state of a `Foo` (`example.com/v1`, namespaced).
#[derive(CustomResource, Informer, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "example.com",
    version = "v1",
    kind = "Foo",
    namespaced,
    status = "FooStatus",
    shortname = "foo"
)]
#[informer(index(name = "by_node", path = spec.node_name))]
#[serde(rename_all = "camelCase")]
pub struct FooSpec {
    /// Copied into the owned ConfigMap's `data.message`.
    pub message: String,
    /// The node this `Foo` is about, if any; indexed as `by_node` (`lister.by_node("n1")`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
}

/// What the operator observed when it last reconciled a [`Foo`].
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FooStatus {
    /// The name of the ConfigMap the Foo owns.
    pub config_map: Option<String>,
    /// The `metadata.generation` the status describes.
    pub observed_generation: Option<i64>,
    /// True once the ConfigMap holds the current message.
    pub ready: bool,
}
