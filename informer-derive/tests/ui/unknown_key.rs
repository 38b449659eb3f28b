//! UI test: unknown key.

use informer_derive::Informer;

#[derive(Informer)]
#[informer(group = "example.com", version = "v1", kind = "Foo", plurl = "foos")]
pub struct Foo;

fn main() {}
