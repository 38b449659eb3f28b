//! The `Widget` custom resource (`example.com/v1`, namespaced).

use informer_runtime::Informer;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A Widget asks for a ConfigMap of the same name holding `spec.message`.
#[derive(CustomResource, Informer, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
pub struct WidgetSpec {
    /// Copied into the owned ConfigMap's `data.message`.
    pub message: String,
}
