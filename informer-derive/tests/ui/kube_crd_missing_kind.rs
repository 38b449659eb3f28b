//! UI test: kube crd missing kind.

use informer_derive::Informer;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(CustomResource, Informer, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[kube(group = "example.com", version = "v1", namespaced)]
pub struct FooSpec {
    pub size: i32,
}

fn main() {}
