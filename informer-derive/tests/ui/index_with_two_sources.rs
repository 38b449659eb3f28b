//! UI test: index with two sources.

use informer_derive::Informer;

#[derive(Informer)]
#[informer(group = "example.com", version = "v1", kind = "Foo")]
#[informer(index(name = "by_node", path = spec.node, owner = "Node"))]
pub struct Foo;

fn main() {}
