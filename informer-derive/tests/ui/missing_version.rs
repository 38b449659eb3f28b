//! UI test: missing version.

use informer_derive::Informer;

#[derive(Informer)]
#[informer(group = "example.com", kind = "Foo")]
pub struct Foo;

fn main() {}
