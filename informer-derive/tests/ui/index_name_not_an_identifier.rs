//! UI test: index name not an identifier.

use informer_derive::Informer;

#[derive(Informer)]
#[informer(group = "example.com", version = "v1", kind = "Foo")]
#[informer(index(name = "by-node", path = spec.node))]
pub struct Foo;

fn main() {}
