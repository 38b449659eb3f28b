//! Patch application: JSON merge patch, JSON patch, strategic merge patch (approximated, see
//! below) and server-side apply (treated as a strategic merge of the applied configuration).
//!
//! Strategic merge patch without the Go type schema: maps merge like a merge patch; a list of
//! objects whose elements all carry one of the usual merge keys (`name`, `containerPort`, `port`,
//! `mountPath`, `devicePath`, `ip`, `type`) merges element by element on that key (honouring
//! `$patch: delete|replace`); `finalizers` merges as a set; every other list is replaced.
//! `$setElementOrder/...` is ignored, `$retainKeys` and `$deleteFromPrimitiveList/...` are honoured.
//! This covers what `kubectl apply` sends for built-in kinds.

use serde_json::{Map, Value};

use crate::status::ApiError;

/// The patch formats the server accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PatchKind {
    /// `application/merge-patch+json` (RFC 7386).
    Merge,
    /// `application/json-patch+json` (RFC 6902).
    Json,
    /// `application/strategic-merge-patch+json`.
    Strategic,
    /// `application/apply-patch+yaml` (server-side apply).
    Apply,
}

impl PatchKind {
    /// Maps a Content-Type to a patch kind (415 otherwise).
    pub(crate) fn from_content_type(ct: &str) -> Result<Self, ApiError> {
        let base = ct.split(';').next().unwrap_or_default().trim();
        match base {
            "application/merge-patch+json" => Ok(PatchKind::Merge),
            "application/json-patch+json" => Ok(PatchKind::Json),
            "application/strategic-merge-patch+json" => Ok(PatchKind::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+cbor" => Ok(PatchKind::Apply),
            _ => Err(ApiError::unsupported_media_type(ct)),
        }
    }
}

/// Parses a patch body that must be JSON.
fn parse_json(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))
}

/// Parses an apply body (YAML, which includes JSON).
pub(crate) fn parse_apply(body: &[u8]) -> Result<Value, ApiError> {
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        return Ok(v);
    }
    let text = std::str::from_utf8(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    serde_saphyr::from_str::<Value>(text)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))
}

/// Applies `body` of kind `kind` to `target`.
pub(crate) fn apply(kind: PatchKind, target: &mut Value, body: &[u8]) -> Result<(), ApiError> {
    match kind {
        PatchKind::Merge => {
            let p = parse_json(body)?;
            if !p.is_object() {
                return Err(ApiError::bad_request(
                    "error decoding patch: merge patch must be a JSON object",
                ));
            }
            json_patch::merge(target, &p);
        }
        PatchKind::Json => {
            let p: json_patch::Patch = serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            json_patch::patch(target, &p).map_err(|e| {
                ApiError::new(
                    422,
                    "Invalid",
                    format!("the server rejected our request due to an error in our request: {e}"),
                )
            })?;
        }
        PatchKind::Strategic => {
            let p = parse_json(body)?;
            if !p.is_object() {
                return Err(ApiError::bad_request(
                    "error decoding patch: strategic merge patch must be a JSON object",
                ));
            }
            strategic_merge(target, &p);
        }
        PatchKind::Apply => {
            let p = parse_apply(body)?;
            if !p.is_object() {
                return Err(ApiError::bad_request(
                    "error decoding apply configuration: not an object",
                ));
            }
            strategic_merge(target, &p);
        }
    }
    Ok(())
}

const MERGE_KEYS: &[&str] = &[
    "name",
    "containerPort",
    "port",
    "mountPath",
    "devicePath",
    "ip",
    "type",
];

/// Strategic merge of `patch` into `target` (see the module docs for what is approximated).
pub(crate) fn strategic_merge(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if p.get("$patch").and_then(Value::as_str) == Some("replace") {
        *target = strip_directives(patch);
        return;
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Some(t) = target.as_object_mut() else {
        return;
    };
    if let Some(Value::Array(keep)) = p.get("$retainKeys") {
        let keep: Vec<&str> = keep.iter().filter_map(Value::as_str).collect();
        t.retain(|k, _| keep.contains(&k.as_str()) || p.contains_key(k));
    }
    for (k, v) in p {
        if k == "$patch" || k == "$retainKeys" || k.starts_with("$setElementOrder/") {
            continue;
        }
        if let Some(field) = k.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(list)), Value::Array(del)) = (t.get_mut(field), v) {
                list.retain(|x| !del.contains(x));
            }
            continue;
        }
        match v {
            Value::Null => {
                t.remove(k);
            }
            Value::Object(_) => {
                let slot = t.entry(k.clone()).or_insert(Value::Null);
                strategic_merge(slot, v);
            }
            Value::Array(pa) => match t.get_mut(k) {
                Some(Value::Array(ta)) => merge_list(k, ta, pa),
                _ => {
                    let items = pa
                        .iter()
                        .filter(|e| e.get("$patch").is_none())
                        .map(strip_directives)
                        .collect();
                    t.insert(k.clone(), Value::Array(items));
                }
            },
            other => {
                t.insert(k.clone(), other.clone());
            }
        }
    }
}

fn merge_list(field: &str, target: &mut Vec<Value>, patch: &[Value]) {
    if patch
        .iter()
        .any(|e| e.get("$patch").and_then(Value::as_str) == Some("replace"))
    {
        *target = patch
            .iter()
            .filter(|e| e.get("$patch").is_none())
            .map(strip_directives)
            .collect();
        return;
    }
    if field == "finalizers" && patch.iter().all(Value::is_string) {
        for e in patch {
            if !target.contains(e) {
                target.push(e.clone());
            }
        }
        return;
    }
    let all_objects = !patch.is_empty() && patch.iter().all(Value::is_object);
    let key = all_objects
        .then(|| {
            MERGE_KEYS.iter().find(|k| {
                patch.iter().all(|e| e.get(**k).is_some())
                    && target.iter().all(|e| e.get(**k).is_some())
            })
        })
        .flatten();
    let Some(key) = key else {
        *target = patch.iter().map(strip_directives).collect();
        return;
    };
    for pe in patch {
        let id = pe.get(*key);
        let pos = target.iter().position(|te| te.get(*key) == id);
        let delete = pe.get("$patch").and_then(Value::as_str) == Some("delete");
        match (pos, delete) {
            (Some(i), true) => {
                target.remove(i);
            }
            (None, true) => {}
            (Some(i), false) => strategic_merge(&mut target[i], pe),
            (None, false) => target.push(strip_directives(pe)),
        }
    }
}

/// Removes `$...` directive keys recursively.
fn strip_directives(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !k.starts_with('$'))
                .map(|(k, v)| (k.clone(), strip_directives(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_directives).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strategic_merges_containers_by_name() {
        let mut t = json!({"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]},
                           "metadata": {"finalizers": ["f1"], "labels": {"k": "v", "old": "1"}}});
        let p = json!({"spec": {"$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
                                 "containers": [{"name": "b", "image": "z"}, {"name": "a", "$patch": "delete"}]},
                       "metadata": {"finalizers": ["f2"], "labels": {"old": null}}});
        strategic_merge(&mut t, &p);
        assert_eq!(
            t,
            json!({"spec": {"containers": [{"name": "b", "image": "z"}]},
                             "metadata": {"finalizers": ["f1", "f2"], "labels": {"k": "v"}}})
        );
    }

    #[test]
    fn json_and_merge_patch() {
        let mut t = json!({"a": 1, "b": [1, 2]});
        apply(
            PatchKind::Json,
            &mut t,
            br#"[{"op":"add","path":"/b/-","value":3}]"#,
        )
        .expect("json patch");
        apply(PatchKind::Merge, &mut t, br#"{"a":null,"c":"x"}"#).expect("merge");
        assert_eq!(t, json!({"b": [1, 2, 3], "c": "x"}));
        let err = apply(
            PatchKind::Json,
            &mut t,
            br#"[{"op":"test","path":"/c","value":"y"}]"#,
        )
        .expect_err("test op");
        assert_eq!(err.code, 422);
        assert_eq!(
            apply(PatchKind::Merge, &mut t, b"{nope")
                .expect_err("bad")
                .code,
            400
        );
    }
}
