//! UI test: root outside kube.

use informer_derive::Informer;

#[derive(Informer)]
#[informer(group = "example.com", version = "v1", kind = "Foo", root = "Bar")]
pub struct Foo;

fn main() {}
