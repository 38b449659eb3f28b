//! UI test: bad kind.

use informer_derive::Informer;

#[derive(Informer)]
#[informer(group = "example.com", version = "v1", kind = "foo-bar")]
pub struct Foo;

fn main() {}
