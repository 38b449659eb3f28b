//! UI test: `#[derive(ProjectionSource)]` names serde's rename rules exactly; another spelling is
//! an error at the rule.

use informer_derive::ProjectionSource;

#[derive(ProjectionSource)]
#[serde(rename_all = "camelcase")]
pub struct Source {
    pub replica_count: i32,
}

fn main() {}
