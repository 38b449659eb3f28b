//! UI test: index unknown key.

use informer_derive::Informer;

#[derive(Informer)]
#[informer(group = "example.com", version = "v1", kind = "Foo")]
#[informer(index(name = "by_node", field = spec.node))]
pub struct Foo;

fn main() {}
