//! UI test: index not a list.

use informer_derive::Informer;

#[derive(Informer)]
#[informer(group = "example.com", version = "v1", kind = "Foo", index = "by_node")]
pub struct Foo;

fn main() {}
