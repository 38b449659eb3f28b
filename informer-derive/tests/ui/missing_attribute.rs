//! UI test: missing attribute.

use informer_derive::Informer;

#[derive(Informer)]
pub struct Foo;

fn main() {}
