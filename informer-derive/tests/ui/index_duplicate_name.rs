//! UI test: index duplicate name.

use informer_derive::Informer;

#[derive(Informer)]
#[informer(group = "example.com", version = "v1", kind = "Foo")]
#[informer(index(name = "by_node", path = spec.node))]
#[informer(index(name = "by_node", owner = "ReplicaSet"))]
pub struct Foo;

fn main() {}
