//! UI test: an index function with the wrong signature is reported at the function path.

use informer_derive::Informer;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

fn by_size(foo: &Foo) -> i32 {
    foo.spec.size
}

#[derive(CustomResource, Informer, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Foo", namespaced)]
#[informer(index(name = "by_size", function = by_size))]
pub struct FooSpec {
    pub size: i32,
}

fn main() {}
