//! GET, POST, PUT, PATCH, DELETE and DELETE-collection of objects and their status subresource.

use std::sync::Arc;

use axum::body::to_bytes;
use axum::extract::Request;
use axum::response::Response;
use bytes::{BufMut, Bytes, BytesMut};
use http::{StatusCode, header};
use serde_json::Value;

use super::codec::request_object;
use super::list::selectors;
use super::{Mode, Target, header_text, json_response, object_bytes};
use crate::log::{QueryParams, Verb};
use crate::ops::{self, DeleteOptions, Part, Propagation};
use crate::patch::PatchKind;
use crate::state::Shared;
use crate::status::ApiError;

/// Largest accepted request body.
const MAX_BODY: usize = 64 * 1024 * 1024;

fn part(t: &Target) -> Result<Part, ApiError> {
    match t.subresource.as_deref() {
        None => Ok(Part::Main),
        Some("status") if t.info.status_subresource => Ok(Part::Status),
        Some(other) => Err(ApiError::new(
            404,
            "NotFound",
            format!(
                "the server could not find the requested resource ({}/{other})",
                t.info.plural
            ),
        )),
    }
}

async fn body_bytes(req: Request) -> Result<Bytes, ApiError> {
    to_bytes(req.into_body(), MAX_BODY)
        .await
        .map_err(|e| ApiError::bad_request(format!("unable to read the request body: {e}")))
}

fn content_type(req: &Request) -> String {
    header_text(req, header::CONTENT_TYPE)
}

fn need_verb(t: &Target, verb: &str) -> Result<(), ApiError> {
    if t.info.allows(verb) {
        Ok(())
    } else {
        Err(ApiError::method_not_allowed(&format!(
            "{verb} {}",
            t.info.plural
        )))
    }
}

/// Serves every non-list, non-watch resource verb.
pub(crate) async fn handle(
    sh: &Arc<Shared>,
    t: &Target,
    verb: Verb,
    q: &QueryParams,
    mode: Mode,
    req: Request,
) -> Result<Response, ApiError> {
    if t.subresource.as_deref() == Some("scale") && t.info.scale_subresource() {
        return super::scale::handle(sh, t, verb, req).await;
    }
    let ns = t.namespace.as_deref();
    let p = part(t)?;
    let ok = |status: StatusCode, obj: &crate::store::Stored| {
        json_response(status, object_bytes(obj, t, mode))
    };
    match verb {
        Verb::Get => {
            let name = t.name.as_deref().unwrap_or_default();
            let key = if t.info.namespaced {
                (ns.unwrap_or_default().to_owned(), name.to_owned())
            } else {
                (String::new(), name.to_owned())
            };
            let obj = sh
                .store
                .get(&t.info.storage_key(), &key)
                .ok_or_else(|| ApiError::not_found(&t.info, name))?;
            if mode == Mode::Table {
                let table = super::table::TableRenderer::new(sh, &t.info, q)?;
                return Ok(json_response(StatusCode::OK, table.render_one(&obj)));
            }
            Ok(ok(StatusCode::OK, &obj))
        }
        Verb::Create => {
            need_verb(t, "create")?;
            if t.name.is_some() || (t.info.namespaced && ns.is_none()) {
                return Err(ApiError::method_not_allowed(&format!(
                    "create {}",
                    t.info.plural
                )));
            }
            let ct = content_type(&req);
            let body = request_object(&ct, &body_bytes(req).await?)?;
            let obj = ops::create(sh, &t.info, ns, body, q.dry_run)?;
            Ok(ok(StatusCode::CREATED, &obj))
        }
        Verb::Update => {
            need_verb(t, "update")?;
            let name = t.name.as_deref().unwrap_or_default();
            let ct = content_type(&req);
            let body = request_object(&ct, &body_bytes(req).await?)?;
            let obj = ops::update(sh, &t.info, ns, name, body, p)?;
            Ok(ok(StatusCode::OK, &obj))
        }
        Verb::Patch => {
            need_verb(t, "patch")?;
            let name = t.name.as_deref().unwrap_or_default();
            let ct = content_type(&req);
            let kind = PatchKind::from_content_type(&ct)?;
            let body = body_bytes(req).await?;
            let existed = sh
                .store
                .get(
                    &t.info.storage_key(),
                    &(
                        if t.info.namespaced {
                            ns.unwrap_or_default().to_owned()
                        } else {
                            String::new()
                        },
                        name.to_owned(),
                    ),
                )
                .is_some();
            let obj = ops::patch(sh, &t.info, ns, name, kind, &body, p)?;
            let status = if existed {
                StatusCode::OK
            } else {
                StatusCode::CREATED
            };
            Ok(ok(status, &obj))
        }
        Verb::Delete => {
            need_verb(t, "delete")?;
            let name = t.name.as_deref().unwrap_or_default();
            let ct = content_type(&req);
            let body = body_bytes(req).await?;
            let options = delete_options(q, &ct, &body)?;
            let (obj, gone) = ops::delete(sh, &t.info, ns, name, &options)?;
            // kube-apiserver answers 202 only to a cascading delete asked for with the old
            // `orphanDependents: false` that did not delete at once.
            let status = if !gone && options.orphan_dependents == Some(false) {
                StatusCode::ACCEPTED
            } else {
                StatusCode::OK
            };
            Ok(ok(status, &obj))
        }
        Verb::DeleteCollection => {
            need_verb(t, "deletecollection")?;
            let sel = selectors(sh, t, q, super::list::ShardGate::List)?;
            // Each object is deleted with the request's DeleteOptions, as kube-apiserver does.
            let ct = content_type(&req);
            let body = body_bytes(req).await?;
            let options = delete_options(q, &ct, &body)?;
            let deleted = ops::delete_collection(sh, &t.info, ns, &sel, &options)?;
            let mut buf = BytesMut::new();
            buf.put_slice(
                format!(
                    "{{\"kind\":\"{}\",\"apiVersion\":\"{}\",\"metadata\":{{\"resourceVersion\":\"{}\"}},\"items\":[",
                    t.info.list_kind(),
                    t.info.api_version(),
                    sh.store.current_rv()
                )
                .as_bytes(),
            );
            for (i, o) in deleted.iter().enumerate() {
                if i > 0 {
                    buf.put_u8(b',');
                }
                buf.put_slice(&object_bytes(o, t, mode));
            }
            buf.put_slice(b"]}");
            Ok(json_response(StatusCode::OK, buf.freeze()))
        }
        _ => Err(ApiError::method_not_allowed(&t.info.plural)),
    }
}

/// Reads `DeleteOptions` from the query and then from an optional body, which wins, as
/// kube-apiserver reads them.
fn delete_options(
    q: &QueryParams,
    content_type: &str,
    body: &[u8],
) -> Result<DeleteOptions, ApiError> {
    let mut options = DeleteOptions::default();
    for (k, v) in &q.raw {
        match k.as_str() {
            "propagationPolicy" => options.propagation = Some(Propagation::parse(v)?),
            "orphanDependents" => options.orphan_dependents = Some(v == "true" || v == "1"),
            _ => {}
        }
    }
    if !body.iter().all(u8::is_ascii_whitespace) {
        let v = request_object(content_type, body)?;
        let pre = v.get("preconditions");
        let text = |k: &str| {
            pre.and_then(|p| p.get(k))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        options.uid = text("uid");
        options.resource_version = text("resourceVersion");
        if let Some(p) = v.get("propagationPolicy").and_then(Value::as_str) {
            options.propagation = Some(Propagation::parse(p)?);
        }
        if let Some(o) = v.get("orphanDependents").and_then(Value::as_bool) {
            options.orphan_dependents = Some(o);
        }
    }
    if let (Some(p), Some(_)) = (options.propagation, options.orphan_dependents) {
        return Err(ApiError::new(
            422,
            "Invalid",
            format!(
                "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Invalid value: \"{p:?}\": orphanDependents and deletionPropagation cannot be both set"
            ),
        ));
    }
    Ok(options)
}
