//! UI test: bad plural.

use informer_derive::Informer;

#[derive(Informer)]
#[informer(group = "example.com", version = "v1", kind = "Foo", plural = "Foos")]
pub struct Foo;

fn main() {}
