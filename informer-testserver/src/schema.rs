//! Custom objects against their CRD's structural schema, as kube-apiserver's apiextensions
//! server treats them on every write: unknown fields pruned (unless the schema preserves them),
//! `null` dropped where the schema is not `nullable`, then types, `enum` and `required`
//! validated, with kube-apiserver's 422 messages. Formats, bounds, patterns, defaults and CEL
//! rules are not checked (documented in the crate README).

use serde_json::{Map, Value, json};

use crate::resources::ResourceInfo;
use crate::status::ApiError;

/// The top-level fields the API machinery owns; the schema never prunes them.
const TYPE_AND_OBJECT_META: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// Prunes and validates the custom object `obj` (named `name`) of `info` against `schema` (its
/// version's `openAPIV3Schema`).
pub(crate) fn apply(
    info: &ResourceInfo,
    name: &str,
    schema: &Value,
    obj: &mut Value,
) -> Result<(), ApiError> {
    let mut errors = Vec::new();
    if let Some(fields) = obj.as_object_mut() {
        let keep = |k: &str| TYPE_AND_OBJECT_META.contains(&k);
        object(schema, fields, "", &mut errors, keep);
    }
    if errors.is_empty() {
        return Ok(());
    }
    let causes = if errors.len() == 1 {
        errors[0].clone()
    } else {
        format!("[{}]", errors.join(", "))
    };
    Err(ApiError::new(
        422,
        "Invalid",
        format!(
            "{}.{} \"{name}\" is invalid: {causes}",
            info.kind, info.group
        ),
    )
    .with_details(json!({"name": name, "group": info.group, "kind": info.kind})))
}

fn flag(schema: &Value, name: &str) -> bool {
    schema.get(name).and_then(Value::as_bool) == Some(true)
}

fn join(path: &str, field: &str) -> String {
    if path.is_empty() {
        field.to_owned()
    } else {
        format!("{path}.{field}")
    }
}

/// The fields of an object: each known one validated, unknown ones pruned unless the schema
/// keeps them (`additionalProperties`, `x-kubernetes-preserve-unknown-fields`, the type and
/// object metadata of an embedded resource, or `keep`), non-nullable nulls dropped, `required`
/// checked.
fn object(
    schema: &Value,
    fields: &mut Map<String, Value>,
    path: &str,
    errors: &mut Vec<String>,
    keep: impl Fn(&str) -> bool,
) {
    let properties = schema.get("properties").and_then(Value::as_object);
    let additional = schema.get("additionalProperties");
    let preserve = flag(schema, "x-kubernetes-preserve-unknown-fields")
        || additional.and_then(Value::as_bool) == Some(true);
    let embedded = flag(schema, "x-kubernetes-embedded-resource");
    let names: Vec<String> = fields.keys().cloned().collect();
    for field in names {
        // The API machinery's own fields are never pruned nor checked against the schema, even
        // where the schema declares them (CRDs commonly say `metadata: {type: object}`).
        if keep(&field) || (embedded && TYPE_AND_OBJECT_META.contains(&field.as_str())) {
            continue;
        }
        let child_schema = properties
            .and_then(|p| p.get(&field))
            .or_else(|| additional.filter(|a| a.is_object()));
        let Some(child_schema) = child_schema else {
            if !preserve {
                fields.remove(&field);
            }
            continue;
        };
        let Some(child) = fields.get_mut(&field) else {
            continue;
        };
        if child.is_null() && !flag(child_schema, "nullable") {
            fields.remove(&field);
            continue;
        }
        value(child_schema, child, &join(path, &field), errors);
    }
    let required = schema.get("required").and_then(Value::as_array);
    for field in required.into_iter().flatten().filter_map(Value::as_str) {
        if !fields.contains_key(field) {
            errors.push(format!("{}: Required value", join(path, field)));
        }
    }
}

/// One value: its type, its `enum`, then its fields or items.
fn value(schema: &Value, v: &mut Value, path: &str, errors: &mut Vec<String>) {
    if v.is_null() {
        return;
    }
    let int_or_string = flag(schema, "x-kubernetes-int-or-string");
    let ty = schema.get("type").and_then(Value::as_str);
    let fits = match (int_or_string, ty) {
        (true, _) => v.is_string() || v.is_i64() || v.is_u64(),
        (false, Some("object")) => v.is_object(),
        (false, Some("array")) => v.is_array(),
        (false, Some("string")) => v.is_string(),
        (false, Some("integer")) => v.is_i64() || v.is_u64(),
        (false, Some("number")) => v.is_number(),
        (false, Some("boolean")) => v.is_boolean(),
        (false, _) => true,
    };
    if !fits {
        let ty = if int_or_string {
            "integer or string"
        } else {
            ty.unwrap_or_default()
        };
        let got = match v {
            Value::Object(_) => "object",
            Value::Array(_) => "array",
            Value::String(_) => "string",
            Value::Number(n) if n.is_f64() => "number",
            Value::Number(_) => "integer",
            Value::Bool(_) => "boolean",
            Value::Null => "null",
        };
        errors.push(format!(
            "{path}: Invalid value: \"{got}\": {path} in body must be of type {ty}: \"{got}\""
        ));
        return;
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(v)
    {
        let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
        errors.push(format!(
            "{path}: Unsupported value: {v}: supported values: {}",
            list.join(", ")
        ));
        return;
    }
    match v {
        Value::Object(fields) => object(schema, fields, path, errors, |_| false),
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter_mut().enumerate() {
                    value(item_schema, item, &format!("{path}[{i}]"), errors);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> ResourceInfo {
        ResourceInfo {
            group: "example.com".into(),
            version: "v1".into(),
            kind: "Widget".into(),
            plural: "widgets".into(),
            singular: "widget".into(),
            namespaced: true,
            status_subresource: false,
            short_names: Vec::new(),
            categories: Vec::new(),
            verbs: Vec::new(),
            custom: true,
        }
    }

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "metadata": {"type": "object"},
            "spec": {"type": "object", "required": ["size"], "properties": {
                "size": {"type": "integer"},
                "phase": {"type": "string", "enum": ["Pending", "Running"]},
                "port": {"x-kubernetes-int-or-string": true},
                "note": {"type": "string", "nullable": true},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "items": {"type": "array", "items": {"type": "object", "properties": {
                    "name": {"type": "string"}}}},
                "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                             "properties": {"spec": {"type": "object",
                                                     "x-kubernetes-preserve-unknown-fields": true}}}
            }}
        }})
    }

    #[test]
    fn prunes_unknown_fields_and_non_nullable_nulls_keeps_what_the_schema_keeps() {
        let mut obj = json!({
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "labels": {"a": "b"}},
            "unknownTop": 1,
            "spec": {"size": 1, "port": "http", "note": null, "phase": null, "extra": true,
                     "labels": {"a": "b"}, "free": {"x": {"y": 1}},
                     "items": [{"name": "i", "drop": 1}],
                     "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "t"},
                                  "spec": {"c": 1}, "other": 2}}
        });
        apply(&info(), "w", &schema(), &mut obj).expect("valid");
        assert_eq!(
            obj,
            json!({
                "apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "w", "labels": {"a": "b"}},
                "spec": {"size": 1, "port": "http", "note": null,
                         "labels": {"a": "b"}, "free": {"x": {"y": 1}},
                         "items": [{"name": "i"}],
                         "template": {"apiVersion": "v1", "kind": "Pod",
                                      "metadata": {"name": "t"}, "spec": {"c": 1}}}
            })
        );
    }

    #[test]
    fn rejects_as_kube_apiserver_does() {
        let mut obj = json!({"spec": {"phase": "Paused", "port": 1.5, "labels": {"a": 1}}});
        let err = apply(&info(), "w", &schema(), &mut obj).expect_err("invalid");
        assert_eq!(err.code, 422);
        assert!(
            err.message
                .starts_with("Widget.example.com \"w\" is invalid: ["),
            "{}",
            err.message
        );
        for cause in [
            "spec.phase: Unsupported value: \"Paused\": supported values: \"Pending\", \"Running\"",
            "spec.port: Invalid value: \"number\": spec.port in body must be of type integer or string: \"number\"",
            "spec.labels.a: Invalid value: \"integer\": spec.labels.a in body must be of type string: \"integer\"",
            "spec.size: Required value",
        ] {
            assert!(err.message.contains(cause), "{cause} in {}", err.message);
        }
        let mut one = json!({"spec": {"size": "big"}});
        let err = apply(&info(), "w", &schema(), &mut one).expect_err("invalid");
        assert_eq!(
            err.message,
            "Widget.example.com \"w\" is invalid: spec.size: Invalid value: \"string\": \
             spec.size in body must be of type integer: \"string\""
        );
    }
}
