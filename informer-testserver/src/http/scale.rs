//! The `scale` subresource (`autoscaling/v1 Scale`) of Deployments, ReplicaSets, StatefulSets
//! and ReplicationControllers, which `kubectl scale` reads and patches.

use std::sync::Arc;

use axum::extract::Request;
use axum::response::Response;
use http::{StatusCode, header};
use serde_json::{Value, json};

use super::codec::request_object;
use super::{Target, header_text, json_response};
use crate::log::Verb;
use crate::ops::{self, Part};
use crate::patch::{self, PatchKind};
use crate::resources::ResourceInfo;
use crate::state::Shared;
use crate::status::ApiError;

/// The Scale view of an object.
fn scale_of(obj: &Value) -> Value {
    let meta = obj.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let pick = |k: &str| meta.get(k).cloned().unwrap_or(Value::Null);
    let sel = obj.pointer("/spec/selector");
    let labels = sel.and_then(|s| s.get("matchLabels")).or(sel);
    let selector = crate::selectors::equality_selector(labels);
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": pick("name"),
            "namespace": pick("namespace"),
            "uid": pick("uid"),
            "resourceVersion": pick("resourceVersion"),
            "creationTimestamp": pick("creationTimestamp"),
        },
        "spec": {"replicas": obj.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1)},
        "status": {
            "replicas": obj.pointer("/status/replicas").and_then(Value::as_i64).unwrap_or(0),
            "selector": selector,
        },
    })
}

fn current(sh: &Shared, t: &Target, name: &str) -> Result<Value, ApiError> {
    let ns = if t.info.namespaced {
        t.namespace.clone().unwrap_or_default()
    } else {
        String::new()
    };
    sh.store
        .get(&t.info.storage_key(), &(ns, name.to_owned()))
        .ok_or_else(|| ApiError::not_found(&t.info, name))?
        .value()
}

/// Writes `replicas` (with the Scale's resourceVersion as precondition, when it has one).
fn write(
    sh: &Shared,
    info: &Arc<ResourceInfo>,
    ns: Option<&str>,
    name: &str,
    scale: &Value,
) -> Result<Value, ApiError> {
    let replicas = scale
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .ok_or_else(|| {
            ApiError::new(
                422,
                "Invalid",
                format!("Scale.autoscaling \"{name}\" is invalid: spec.replicas: Required value"),
            )
        })?;
    if replicas < 0 {
        return Err(ApiError::new(
            422,
            "Invalid",
            format!(
                "Scale.autoscaling \"{name}\" is invalid: spec.replicas: Invalid value: {replicas}: must be greater than or equal to 0"
            ),
        ));
    }
    let mut merge = json!({"spec": {"replicas": replicas}});
    if let Some(rv) = scale
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        merge["metadata"] = json!({"resourceVersion": rv});
    }
    let body = serde_json::to_vec(&merge).map_err(|e| ApiError::internal(e.to_string()))?;
    let obj = ops::patch(sh, info, ns, name, PatchKind::Merge, &body, Part::Main)?;
    obj.value()
}

/// Serves GET, PUT and PATCH of `…/{name}/scale`.
pub(crate) async fn handle(
    sh: &Arc<Shared>,
    t: &Target,
    verb: Verb,
    req: Request,
) -> Result<Response, ApiError> {
    let name = t.name.as_deref().unwrap_or_default();
    let ns = t.namespace.as_deref();
    let ct = header_text(&req, header::CONTENT_TYPE);
    let body = || async {
        axum::body::to_bytes(req.into_body(), 1 << 20)
            .await
            .map_err(|e| ApiError::bad_request(format!("unable to read the request body: {e}")))
    };
    let out = match verb {
        Verb::Get => current(sh, t, name)?,
        Verb::Update => {
            let scale = request_object(&ct, &body().await?)?;
            write(sh, &t.info, ns, name, &scale)?
        }
        Verb::Patch => {
            let kind = PatchKind::from_content_type(&ct)?;
            let mut scale = scale_of(&current(sh, t, name)?);
            // The patch's own resourceVersion (if any) is the precondition, not the current one.
            if let Some(m) = scale.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("resourceVersion");
            }
            patch::apply(kind, &mut scale, &body().await?)?;
            write(sh, &t.info, ns, name, &scale)?
        }
        _ => {
            return Err(ApiError::method_not_allowed(&format!(
                "{}/scale",
                t.info.plural
            )));
        }
    };
    let bytes =
        serde_json::to_vec(&scale_of(&out)).map_err(|e| ApiError::internal(e.to_string()))?;
    Ok(json_response(StatusCode::OK, bytes.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_view_of_a_deployment() {
        let d = json!({"metadata": {"name": "web", "namespace": "x", "resourceVersion": "7"},
                       "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}},
                       "status": {"replicas": 1}});
        let s = scale_of(&d);
        assert_eq!(s["spec"]["replicas"], 2);
        assert_eq!(s["status"]["selector"], "app=web");
        assert_eq!(s["status"]["replicas"], 1);
        assert_eq!(s["metadata"]["resourceVersion"], "7");
    }
}
