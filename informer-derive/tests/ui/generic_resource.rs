//! UI test: generic resource.

use informer_derive::Informer;

#[derive(Informer)]
#[informer(group = "example.com", version = "v1", kind = "Foo")]
pub struct Foo<T> {
    pub t: T,
}

fn main() {}
