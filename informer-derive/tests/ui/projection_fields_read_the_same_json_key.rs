//! UI test: two projection fields whose source fields have the same JSON name are an error at
//! the second one (P5): one key can fill only one field.

use informer_derive::Projection;
use informer_runtime::projection::{IStr, JsonNames, ProjectionSource};

pub struct Source {
    pub foo_bar: Option<String>,
    pub foo_bar_alias: Option<String>,
}

impl ProjectionSource for Source {
    const JSON_NAMES: JsonNames =
        JsonNames::Exact(&[("foo_bar", "fooBar"), ("foo_bar_alias", "fooBar")]);
}

#[derive(Projection, Clone, Debug)]
#[projection(of = Source)]
pub struct View {
    pub foo_bar: Option<IStr>,
    pub foo_bar_alias: Option<IStr>,
}

fn main() {}
