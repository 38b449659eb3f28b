//! Pass test: a projection of a kube `CustomResource` kind, whose root and spec state their JSON
//! names with `#[derive(ProjectionSource)]` (the root through `#[kube(derive = …)]`), decodes the
//! spec's camelCase and renamed keys.

use informer_derive::{Projection, ProjectionSource};
use informer_runtime::Meta;
use informer_runtime::projection::{IStr, SlimMeta};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(
    CustomResource, ProjectionSource, Clone, Debug, Serialize, Deserialize, JsonSchema,
)]
#[kube(
    group = "example.com",
    version = "v1",
    kind = "Widget",
    namespaced,
    derive = "ProjectionSource"
)]
#[serde(rename_all = "camelCase")]
pub struct WidgetSpec {
    pub node_name: Option<String>,
    #[serde(rename = "$ref")]
    pub reference: Option<String>,
}

#[derive(Projection, Clone, Debug)]
#[projection(of = Widget)]
pub struct WidgetView {
    pub metadata: SlimMeta,
    pub spec: WidgetSpecView,
}

#[derive(Projection, Clone, Debug, Default)]
#[projection(of = WidgetSpec)]
pub struct WidgetSpecView {
    pub node_name: Option<IStr>,
    pub reference: Option<IStr>,
}

fn main() {
    let json = serde_json::json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "prod"},
        "spec": {"nodeName": "n1", "$ref": "#/r", "reference": "no"}
    });
    let view: WidgetView = serde_json::from_value(json).unwrap();
    assert_eq!(view.object_name(), Some("w"));
    assert_eq!(view.spec.node_name.as_deref(), Some("n1"));
    assert_eq!(view.spec.reference.as_deref(), Some("#/r"));
}
