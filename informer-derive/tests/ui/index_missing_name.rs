//! UI test: index missing name.

use informer_derive::Informer;

#[derive(Informer)]
#[informer(group = "example.com", version = "v1", kind = "Foo", index(path = spec.node))]
pub struct Foo;

fn main() {}
