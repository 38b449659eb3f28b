//! UI test: for a source whose JSON keys are matched as normalized names (k8s-openapi's rule,
//! `JsonNames::Normalized`), two fields that are the same name ignoring case and `_` are an
//! error at the second one (P5): the decoder could not tell their keys apart.

use informer_derive::Projection;
use informer_runtime::projection::{IStr, JsonNames, ProjectionSource};

pub struct Source {
    pub foo_bar: Option<String>,
    pub foobar: Option<String>,
}

impl ProjectionSource for Source {
    const JSON_NAMES: JsonNames = JsonNames::Normalized;
}

#[derive(Projection, Clone, Debug)]
#[projection(of = Source)]
pub struct View {
    pub foo_bar: Option<IStr>,
    pub foobar: Option<IStr>,
}

fn main() {}
