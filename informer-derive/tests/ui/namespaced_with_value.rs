//! UI test: namespaced with value.

use informer_derive::Informer;

#[derive(Informer)]
#[informer(group = "example.com", version = "v1", kind = "Foo", namespaced = true)]
pub struct Foo;

fn main() {}
