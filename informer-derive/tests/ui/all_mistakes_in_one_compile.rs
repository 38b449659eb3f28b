//! UI test: all mistakes in one compile.

use informer_derive::Informer;

#[derive(Informer)]
#[informer(group = "Bad_Group", version = "one", plurl = "x", namespaced)]
#[informer(namespaced, index(name = "get", path = spec.a), index(name = "by-x"))]
pub struct Foo;

// The stub types exist, so naming them does not add errors.
pub type Handle = FooInformer;

fn main() {}
