//! UI test: missing group.

use informer_derive::Informer;

#[derive(Informer)]
#[informer(version = "v1", kind = "Foo", namespaced)]
pub struct Foo;

fn main() {}
