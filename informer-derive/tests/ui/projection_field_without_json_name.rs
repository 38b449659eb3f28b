//! UI test: a projection field whose source field has no JSON key of its own (here a flattened
//! map, left out of the source's JSON names) is an error at the field (P5).

use std::collections::BTreeMap;

use informer_derive::Projection;
use informer_runtime::projection::{JsonNames, ProjectionSource};

pub struct Source {
    pub size: i32,
    pub rest: BTreeMap<String, String>,
}

impl ProjectionSource for Source {
    const JSON_NAMES: JsonNames = JsonNames::Exact(&[("size", "size")]);
}

#[derive(Projection, Clone, Debug)]
#[projection(of = Source)]
pub struct View {
    pub size: i32,
    pub rest: BTreeMap<String, String>,
}

fn main() {}
