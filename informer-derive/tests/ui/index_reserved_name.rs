//! UI test: index reserved name.

use informer_derive::Informer;

#[derive(Informer)]
#[informer(group = "example.com", version = "v1", kind = "Foo", namespaced)]
#[informer(index(name = "namespace", path = metadata.namespace))]
pub struct Foo;

fn main() {}
