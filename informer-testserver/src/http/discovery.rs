//! Discovery: /version, /api, /api/v1, /apis, /apis/{group}, /apis/{group}/{version} (legacy and
//! aggregated `apidiscovery.k8s.io/v2`), and minimal OpenAPI documents.

use axum::response::Response;
use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};

use super::json_response;
use crate::resources::ResourceInfo;
use crate::state::Shared;
use crate::status::ApiError;

/// The Kubernetes version the server reports (kubectl picks its own version from it).
pub(crate) const GIT_VERSION: &str = "v1.37.0";

const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

fn bytes(v: &Value) -> Bytes {
    Bytes::from(serde_json::to_vec(v).unwrap_or_default())
}

/// `/version`.
pub(crate) fn version() -> Bytes {
    bytes(&json!({
        "major": "1",
        "minor": "37",
        "emulationMajor": "1",
        "emulationMinor": "37",
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": "36",
        "gitVersion": GIT_VERSION,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.25.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    }))
}

fn wants_aggregated(accept: &str) -> bool {
    accept
        .split(',')
        .next()
        .is_some_and(|first| first.contains("as=APIGroupDiscoveryList") && first.contains("v=v2"))
}

fn aggregated_response(body: Value) -> Response {
    let mut resp = json_response(StatusCode::OK, bytes(&body));
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(AGGREGATED));
    resp
}

/// `/api`.
pub(crate) fn core_versions(sh: &Shared, accept: &str, host: Option<&HeaderValue>) -> Response {
    if wants_aggregated(accept) {
        return aggregated_response(json!({
            "kind": "APIGroupDiscoveryList",
            "apiVersion": "apidiscovery.k8s.io/v2",
            "metadata": {},
            "items": [aggregated_group(sh, "")],
        }));
    }
    let host = host.and_then(|h| h.to_str().ok()).unwrap_or("127.0.0.1");
    json_response(
        StatusCode::OK,
        bytes(&json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": host}],
        })),
    )
}

fn group_entry(sh: &Shared, group: &str) -> Value {
    let versions = sh.registry().versions(group);
    let gv = |v: &str| json!({"groupVersion": format!("{group}/{v}"), "version": v});
    json!({
        "name": group,
        "versions": versions.iter().map(|v| gv(v)).collect::<Vec<_>>(),
        "preferredVersion": versions.first().map(|v| gv(v)).unwrap_or(Value::Null),
    })
}

/// `/apis`.
pub(crate) fn groups(sh: &Shared, accept: &str) -> Response {
    let names = sh.registry().group_names();
    if wants_aggregated(accept) {
        return aggregated_response(json!({
            "kind": "APIGroupDiscoveryList",
            "apiVersion": "apidiscovery.k8s.io/v2",
            "metadata": {},
            "items": names.iter().map(|g| aggregated_group(sh, g)).collect::<Vec<_>>(),
        }));
    }
    json_response(
        StatusCode::OK,
        bytes(&json!({
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": names.iter().map(|g| group_entry(sh, g)).collect::<Vec<_>>(),
        })),
    )
}

/// `/apis/{group}`.
pub(crate) fn group(sh: &Shared, group: &str) -> Result<Bytes, ApiError> {
    if sh.registry().versions(group).is_empty() {
        return Err(ApiError::no_route(&format!("/apis/{group}")));
    }
    let mut v = group_entry(sh, group);
    v["kind"] = json!("APIGroup");
    v["apiVersion"] = json!("v1");
    Ok(bytes(&v))
}

/// `/api/v1`, `/apis/{group}/{version}`.
pub(crate) fn resources(sh: &Shared, group: &str, version: &str) -> Bytes {
    let list: Vec<Value> = sh
        .registry()
        .resources(group, version)
        .iter()
        .flat_map(|r| r.discovery_entries())
        .collect();
    let gv = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    bytes(&json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": gv,
        "resources": list,
    }))
}

fn aggregated_resource(r: &ResourceInfo) -> Value {
    let kind = json!({"group": r.group, "version": r.version, "kind": r.kind});
    let mut v = json!({
        "resource": r.plural,
        "responseKind": kind,
        "scope": if r.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": r.singular,
        "verbs": r.verbs,
    });
    if !r.short_names.is_empty() {
        v["shortNames"] = json!(r.short_names);
    }
    if !r.categories.is_empty() {
        v["categories"] = json!(r.categories);
    }
    let mut subresources = Vec::new();
    if r.status_subresource {
        subresources.push(json!({"subresource": "status", "responseKind": kind, "verbs": ["get", "patch", "update"]}));
    }
    if r.scale_subresource() {
        subresources.push(json!({"subresource": "scale", "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"}, "verbs": ["get", "patch", "update"]}));
    }
    if !subresources.is_empty() {
        v["subresources"] = Value::Array(subresources);
    }
    v
}

fn aggregated_group(sh: &Shared, group: &str) -> Value {
    let reg = sh.registry();
    let versions: Vec<Value> = reg
        .versions(group)
        .iter()
        .map(|v| {
            json!({
                "version": v,
                "resources": reg.resources(group, v).iter().map(|r| aggregated_resource(r)).collect::<Vec<_>>(),
                "freshness": "Current",
            })
        })
        .collect();
    let metadata = if group.is_empty() {
        json!({"creationTimestamp": null})
    } else {
        json!({"name": group, "creationTimestamp": null})
    };
    json!({"metadata": metadata, "versions": versions})
}

/// `/openapi/v2`: a valid document without definitions (kubectl then skips client-side schema
/// validation of the kind). kubectl asks for protobuf; an empty message is a valid empty
/// `openapi_v2.Document`.
pub(crate) fn openapi_v2(accept: &str) -> Response {
    if accept.contains("protobuf") {
        let mut resp = json_response(StatusCode::OK, Bytes::new());
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/com.github.proto-openapi.spec.v2.v1.0+protobuf"),
        );
        return resp;
    }
    json_response(
        StatusCode::OK,
        bytes(&json!({
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": GIT_VERSION},
            "paths": {},
            "definitions": {},
        })),
    )
}

/// `/openapi/v3` (the index of group-versions) and `/openapi/v3/{api/v1|apis/g/v}`: every kind
/// gets a schema that accepts any field, tagged with its group/version/kind.
pub(crate) fn openapi_v3(sh: &Shared, rest: &str) -> Result<Bytes, ApiError> {
    let reg = sh.registry();
    let mut gvs: Vec<(String, String)> = vec![("".into(), "v1".into())];
    for g in reg.group_names() {
        for v in reg.versions(&g) {
            gvs.push((g.clone(), v));
        }
    }
    let path_of = |g: &str, v: &str| {
        if g.is_empty() {
            format!("api/{v}")
        } else {
            format!("apis/{g}/{v}")
        }
    };
    if rest.is_empty() {
        let paths: serde_json::Map<String, Value> = gvs
            .iter()
            .map(|(g, v)| {
                let p = path_of(g, v);
                (
                    p.clone(),
                    json!({"serverRelativeURL": format!("/openapi/v3/{p}?hash=0")}),
                )
            })
            .collect();
        return Ok(bytes(&json!({"paths": paths})));
    }
    let Some((g, v)) = gvs.iter().find(|(g, v)| path_of(g, v) == rest) else {
        return Err(ApiError::no_route(&format!("/openapi/v3/{rest}")));
    };
    let mut schemas = serde_json::Map::new();
    let mut paths = serde_json::Map::new();
    for r in reg.resources(g, v) {
        // kubectl checks PATCH operations for a `fieldValidation` parameter to decide that the
        // server validates fields itself (and skips client-side schema validation).
        let gvk_one = json!({"group": r.group, "version": r.version, "kind": r.kind});
        let base = if r.group.is_empty() {
            format!("/api/{}", r.version)
        } else {
            format!("/apis/{}/{}", r.group, r.version)
        };
        let item = if r.namespaced {
            format!("{base}/namespaces/{{namespace}}/{}/{{name}}", r.plural)
        } else {
            format!("{base}/{}/{{name}}", r.plural)
        };
        paths.insert(
            item,
            json!({"patch": {
                "x-kubernetes-group-version-kind": gvk_one,
                "x-kubernetes-action": "patch",
                "parameters": [{"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": true}}],
                "responses": {"200": {"description": "OK"}},
            }}),
        );
        let gvk = json!([{"group": r.group, "version": r.version, "kind": r.kind}]);
        let name = format!(
            "{}.{}.{}",
            if r.group.is_empty() { "core" } else { &r.group },
            r.version,
            r.kind
        );
        schemas.insert(
            name,
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true, "x-kubernetes-group-version-kind": gvk}),
        );
    }
    Ok(bytes(&json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": GIT_VERSION},
        "paths": paths,
        "components": {"schemas": schemas},
    })))
}
