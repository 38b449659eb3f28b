//! Custom objects against their CRD's structural schema, as kube-apiserver's apiextensions
//! server treats them on every write: unknown fields pruned (unless the schema preserves
//! them), `null` dropped where the schema is neither `nullable` nor defaulted, `default`s filled
//! in, then types, `enum` and `required` validated, with kube-apiserver's 422 messages. Formats,
//! bounds, patterns and CEL rules are not checked (documented in the crate README).
//!
//! The order is kube-apiserver's: its decoder prunes (and drops the non-nullable nulls that have
//! no default), its defaulter then fills in every `default` whose field is absent or a
//! non-nullable `null`, and validation sees the defaulted object, so a `required` field with a
//! default is never missing. A default lands only where its parent exists (a default object's
//! own nested defaults included), in every item of an array and in every value of a map. One
//! walk does all three here: each subtree is pruned, defaulted and validated before its parent's
//! `required` is checked, which is the same result.

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

/// The schema's `default`, if it has one (`default: null` is none, as in the Go structural schema).
fn default_of(schema: &Value) -> Option<&Value> {
    schema.get("default").filter(|d| !d.is_null())
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
/// object metadata of an embedded resource, or `keep`), non-nullable nulls replaced by their
/// default or dropped, absent properties with a default filled in, `required` checked.
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
            // A non-nullable null takes the default where there is one, else it goes.
            match default_of(child_schema) {
                Some(default) => *child = default.clone(),
                None => {
                    fields.remove(&field);
                    continue;
                }
            }
        }
        value(child_schema, child, &join(path, &field), errors);
    }
    // Defaults of absent properties, each then defaulted and validated inside.
    for (field, child_schema) in properties.into_iter().flatten() {
        if fields.contains_key(field) || keep(field) {
            continue;
        }
        if let Some(default) = default_of(child_schema) {
            let child = fields.entry(field.clone()).or_insert(default.clone());
            value(child_schema, child, &join(path, field), errors);
        }
    }
    let required = schema.get("required").and_then(Value::as_array);
    for field in required.into_iter().flatten().filter_map(Value::as_str) {
        if !fields.contains_key(field) {
            errors.push(format!("{}: Required value", join(path, field)));
        }
    }
}

/// One value: its type, its `enum`, then its fields or items. A `null` reaches here only where
/// the schema is `nullable` or as an array item without a default, which must then be nullable.
fn value(schema: &Value, v: &mut Value, path: &str, errors: &mut Vec<String>) {
    if v.is_null() && (flag(schema, "nullable") || schema.get("type").is_none()) {
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
                    // A non-nullable null item takes the items' default; one without a
                    // default stays, as on kube-apiserver.
                    if item.is_null()
                        && !flag(item_schema, "nullable")
                        && let Some(default) = default_of(item_schema)
                    {
                        *item = default.clone();
                    }
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

    fn defaulted_schema() -> Value {
        json!({"type": "object", "properties": {
            "metadata": {"type": "object"},
            "spec": {"type": "object", "required": ["replicas"], "properties": {
                "replicas": {"type": "integer", "default": 1},
                "mode": {"type": "string", "enum": ["Fast", "Safe"], "default": "Safe"},
                "note": {"type": "string", "nullable": true, "default": "x"},
                "name": {"type": "string", "default": "filled"},
                "resources": {"type": "object", "properties": {
                    "cpu": {"type": "string", "default": "100m"}}},
                "limits": {"type": "object", "default": {}, "properties": {
                    "memory": {"type": "string", "default": "64Mi"}}},
                "ports": {"type": "array", "items": {"type": "object", "properties": {
                    "port": {"type": "integer"},
                    "protocol": {"type": "string", "default": "TCP"}}}},
                "weights": {"type": "object", "additionalProperties": {
                    "type": "object", "default": {"weight": 5},
                    "properties": {"weight": {"type": "integer", "default": 10}}}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
            }}
        }})
    }

    #[test]
    fn fills_defaults_where_their_parent_exists_after_pruning() {
        let mut obj = json!({
            "metadata": {"name": "d"},
            "spec": {"note": null, "name": null, "unknown": 1,
                     "ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}],
                     "weights": {"a": {}, "b": {"weight": 1}, "c": null},
                     "free": {"x": {}}}
        });
        apply(&info(), "d", &defaulted_schema(), &mut obj).expect("valid once defaulted");
        assert_eq!(
            obj,
            json!({
                "metadata": {"name": "d"},
                "spec": {"replicas": 1, "mode": "Safe", "note": null, "name": "filled",
                         "limits": {"memory": "64Mi"},
                         "ports": [{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}],
                         "weights": {"a": {"weight": 10}, "b": {"weight": 1}, "c": {"weight": 5}},
                         "free": {"x": {}}}
            })
        );
        // No parent, no nested default: `spec` itself has none, so nothing is filled in.
        let mut bare = json!({"metadata": {"name": "d"}});
        apply(&info(), "d", &defaulted_schema(), &mut bare).expect("valid");
        assert_eq!(bare, json!({"metadata": {"name": "d"}}));
    }

    #[test]
    fn a_null_array_item_takes_the_items_default_or_is_invalid() {
        let mut obj = json!({"spec": {"ports": [null]}});
        let err = apply(&info(), "d", &defaulted_schema(), &mut obj).expect_err("null item");
        assert!(
            err.message.contains(
                "spec.ports[0]: Invalid value: \"null\": spec.ports[0] in body must be of type object: \"null\""
            ),
            "{}",
            err.message
        );
        let mut schema = defaulted_schema();
        schema["properties"]["spec"]["properties"]["ports"]["items"]["default"] =
            json!({"port": 1});
        let mut obj = json!({"spec": {"ports": [null]}});
        apply(&info(), "d", &schema, &mut obj).expect("defaulted item");
        assert_eq!(
            obj["spec"]["ports"],
            json!([{"port": 1, "protocol": "TCP"}])
        );
    }
}
