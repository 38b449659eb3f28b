//! UI test: bad group.

use informer_derive::Informer;

#[derive(Informer)]
#[informer(group = "Example.COM", version = "v1", kind = "Foo")]
pub struct Foo;

fn main() {}
