//! UI test: missing kind.

use informer_derive::Informer;

#[derive(Informer)]
#[informer(group = "example.com", version = "v1")]
pub struct Foo;

fn main() {}
