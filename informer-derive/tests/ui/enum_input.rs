//! UI test: enum input.

use informer_derive::Informer;

#[derive(Informer)]
#[informer(group = "example.com", version = "v1", kind = "Foo")]
pub enum Foo {
    A,
}

fn main() {}
