//! Pass test: `#[derive(ProjectionSource)]` reads serde's names (`rename_all`, `rename`,
//! `rename(deserialize = …)`, `skip`, `flatten`), and a projection of the type decodes by them.

use std::collections::BTreeMap;

use informer_derive::{Projection, ProjectionSource};
use informer_runtime::projection::{IStr, JsonNames, ProjectionSource as _};

#[derive(serde::Deserialize, ProjectionSource)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct Source {
    pub replica_count: i32,
    #[serde(rename = "$ref")]
    pub r#ref: Option<String>,
    pub foo_bar: Option<String>,
    #[serde(rename(serialize = "fooBar2", deserialize = "foo_bar"))]
    pub foo_bar_2: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r#type: Option<String>,
    #[serde(skip)]
    pub local: u8,
    #[serde(flatten)]
    pub rest: BTreeMap<String, serde_json::Value>,
}

#[derive(Projection, Clone, Debug, PartialEq)]
#[projection(of = Source)]
pub struct View {
    pub replica_count: i32,
    pub r#ref: Option<IStr>,
    pub foo_bar: Option<IStr>,
    pub foo_bar_2: Option<IStr>,
    pub r#type: Option<IStr>,
}

fn main() {
    assert_eq!(
        Source::JSON_NAMES,
        JsonNames::Exact(&[
            ("replica_count", "replicaCount"),
            ("ref", "$ref"),
            ("foo_bar", "fooBar"),
            ("foo_bar_2", "foo_bar"),
            ("type", "type"),
        ])
    );
    let json = serde_json::json!({
        "replicaCount": 3, "$ref": "#/r", "foo_bar": "snake", "fooBar": "camel", "type": "t",
        "replica_count": 9, "ref": "no", "foobar": "no"
    });
    let view: View = serde_json::from_value(json).unwrap();
    assert_eq!(
        view,
        View {
            replica_count: 3,
            r#ref: Some(IStr::new("#/r")),
            foo_bar: Some(IStr::new("camel")),
            foo_bar_2: Some(IStr::new("snake")),
            r#type: Some(IStr::new("t")),
        }
    );
}
