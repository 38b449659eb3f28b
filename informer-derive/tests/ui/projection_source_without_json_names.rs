//! UI test: a projection of a type that does not say how its fields are named in JSON (no
//! `ProjectionSource`) is an error at `of` (P5).

use informer_derive::Projection;

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Source {
    pub replica_count: i32,
}

#[derive(Projection, Clone, Debug)]
#[projection(of = Source)]
pub struct View {
    pub replica_count: i32,
}

fn main() {}
