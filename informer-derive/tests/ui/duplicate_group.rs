//! UI test: duplicate group.

use informer_derive::Informer;

#[derive(Informer)]
#[informer(group = "example.com", version = "v1", kind = "Foo")]
#[informer(group = "example.org")]
pub struct Foo;

fn main() {}
