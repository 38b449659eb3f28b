//! UI test: bad version.

use informer_derive::Informer;

#[derive(Informer)]
#[informer(group = "example.com", version = "1.0", kind = "Foo")]
pub struct Foo;

fn main() {}
