//! UI test: key in both kube and informer.

use informer_derive::Informer;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(CustomResource, Informer, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Foo", namespaced)]
#[informer(version = "v2")]
pub struct FooSpec {
    pub size: i32,
}

fn main() {}
