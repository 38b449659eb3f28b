//! UI test: index bad owner kind.

use informer_derive::Informer;

#[derive(Informer)]
#[informer(group = "example.com", version = "v1", kind = "Foo")]
#[informer(index(name = "by_owner", owner = "replica set"))]
pub struct Foo;

fn main() {}
