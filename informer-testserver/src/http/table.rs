//! `meta.k8s.io/v1 Table` responses (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`),
//! as `kubectl get` asks for them: for get, list and every watch event, with the columns of
//! [`printers`](crate::printers) and each row's object as `includeObject` says.

use bytes::Bytes;
use serde_json::{Map, Value, json};

use super::object_bytes_of;
use crate::log::QueryParams;
use crate::printers::{self, Column};
use crate::resources::ResourceInfo;
use crate::state::Shared;
use crate::status::ApiError;
use crate::store::Stored;

/// What a row carries besides its cells (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Include {
    None,
    Metadata,
    Object,
}

fn include(q: &QueryParams) -> Result<Include, ApiError> {
    match q
        .raw
        .iter()
        .find(|(k, _)| k == "includeObject")
        .map(|(_, v)| v.as_str())
    {
        None | Some("" | "Metadata") => Ok(Include::Metadata),
        Some("None") => Ok(Include::None),
        Some("Object") => Ok(Include::Object),
        Some(other) => Err(ApiError::bad_request(format!(
            "unrecognized includeObject value: {other:?}"
        ))),
    }
}

/// The columns and row options of one request, computed once (a watch renders many events).
#[derive(Debug, Clone)]
pub(crate) struct TableRenderer {
    info: std::sync::Arc<ResourceInfo>,
    columns: Vec<Column>,
    include: Include,
}

impl TableRenderer {
    /// Looks up the resource's columns (a CRD's are read from its definition).
    pub(crate) fn new(
        sh: &Shared,
        info: &std::sync::Arc<ResourceInfo>,
        q: &QueryParams,
    ) -> Result<Self, ApiError> {
        Ok(TableRenderer {
            info: info.clone(),
            columns: printers::columns(sh, info),
            include: include(q)?,
        })
    }

    /// A Table of `objs` with list metadata `meta` (`resourceVersion`, `continue`).
    pub(crate) fn render<'a>(
        &self,
        objs: impl IntoIterator<Item = &'a Stored>,
        meta: Value,
    ) -> Bytes {
        let now = jiff::Timestamp::now().as_second();
        let defs: Vec<Value> = self
            .columns
            .iter()
            .map(|c| {
                json!({
                    "name": c.name,
                    "type": c.ty,
                    "format": c.format,
                    "description": c.description,
                    "priority": c.priority,
                })
            })
            .collect();
        let rows: Vec<Value> = objs.into_iter().map(|o| self.row(o, now)).collect();
        let table = json!({
            "kind": "Table",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": meta,
            "columnDefinitions": defs,
            "rows": rows,
        });
        Bytes::from(serde_json::to_vec(&table).unwrap_or_default())
    }

    /// A Table holding one object (GET and watch events).
    pub(crate) fn render_one(&self, obj: &Stored) -> Bytes {
        self.render([obj], json!({"resourceVersion": obj.rv.to_string()}))
    }

    fn row(&self, obj: &Stored, now: i64) -> Value {
        let value = obj.value().unwrap_or_else(|_| Value::Object(Map::new()));
        let cells = printers::cells(&self.info, &self.columns, &value, now);
        let mut row = json!({"cells": cells});
        let object = match self.include {
            Include::None => None,
            Include::Metadata => serde_json::from_slice::<Value>(&obj.metadata_json()).ok(),
            Include::Object => serde_json::from_slice::<Value>(&object_bytes_of(
                obj,
                &self.info,
                super::Mode::Full,
                false,
            ))
            .ok(),
        };
        if let Some(o) = object {
            row["object"] = o;
        }
        row
    }
}
