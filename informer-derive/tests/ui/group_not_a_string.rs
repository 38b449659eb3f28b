//! UI test: group not a string.

use informer_derive::Informer;

#[derive(Informer)]
#[informer(group = example, version = "v1", kind = "Foo")]
pub struct Foo;

fn main() {}
