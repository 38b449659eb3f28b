//! JSON of a schema message -> its protobuf bytes (for clients that accept only protobuf).

use base64::Engine as _;
use serde_json::Value;

use super::schema::{Field, Label, Message, Shape, Ty, message};
use super::wire::{FIXED64, VARINT, put_key, put_len, put_varint};
use super::{Error, Schema};

/// Encodes `v` as `msg`; `path` names the value in errors (`spec.containers[0]`).
pub(crate) fn encode(
    msg: &'static Message,
    v: &Value,
    path: &str,
    schema: Schema,
) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    match msg.shape {
        Shape::Object => object(msg, v, path, schema, &mut out)?,
        shape => special(msg, shape, v, path, &mut out)?,
    }
    Ok(out)
}

fn cannot(path: &str, why: impl Into<String>) -> Error {
    Error::Encode {
        path: if path.is_empty() {
            "the object".into()
        } else {
            path.to_owned()
        },
        why: why.into(),
    }
}

fn object(
    msg: &'static Message,
    v: &Value,
    path: &str,
    schema: Schema,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    let Value::Object(obj) = v else {
        return Err(cannot(
            path,
            format!("expected an object for {}", msg.short_name()),
        ));
    };
    // apiVersion/kind of nested objects (list items) travel in no message, as in Kubernetes.
    let mut newer = obj
        .iter()
        .filter(|(k, _)| !msg.knows(k) && *k != "apiVersion" && *k != "kind")
        .peekable();
    if let (Some((k, _)), Schema::Built) = (newer.peek(), schema) {
        return Err(cannot(
            &join(path, k),
            format!("{} has no such field", msg.short_name()),
        ));
    }
    // T8: a newer server's fields, numbered past the message's own (in key order).
    let mut newer: Vec<_> = newer.collect();
    newer.sort_unstable_by_key(|(k, _)| *k);
    let first = msg.fields.iter().map(|f| f.tag).max().unwrap_or(0) + 1;
    for ((_, val), tag) in newer.into_iter().zip(first..) {
        newer_field(tag, val, out);
    }
    for f in msg.fields {
        if let (Label::Inline, Ty::Message(idx)) = (f.label, f.ty) {
            let sub = message(idx);
            let part: serde_json::Map<String, Value> = obj
                .iter()
                .filter(|(k, _)| sub.knows(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            if !part.is_empty() {
                field(f, &Value::Object(part), path, schema, out)?;
            }
            continue;
        }
        let Some(val) = obj.get(f.json) else { continue };
        if val.is_null() {
            continue;
        }
        let p = join(path, f.json);
        match f.label {
            Label::Single | Label::Inline => field(f, val, &p, schema, out)?,
            Label::Repeated => {
                let Value::Array(list) = val else {
                    return Err(cannot(&p, "expected a list"));
                };
                for (i, item) in list.iter().enumerate() {
                    field(f, item, &format!("{p}[{i}]"), schema, out)?;
                }
            }
            Label::Map => {
                let Value::Object(map) = val else {
                    return Err(cannot(&p, "expected a map"));
                };
                for (k, item) in map {
                    let mut entry = Vec::new();
                    put_len(&mut entry, 1, k.as_bytes());
                    // A null value is an entry without one (`JSONSchemaPropsOrStringArray`).
                    if !item.is_null() {
                        field_as(f, 2, item, &format!("{p}[{k}]"), schema, &mut entry)?;
                    }
                    put_len(out, f.tag, &entry);
                }
            }
        }
    }
    Ok(())
}

fn join(path: &str, k: &str) -> String {
    if path.is_empty() {
        k.to_owned()
    } else {
        format!("{path}.{k}")
    }
}

/// Writes a field of a newer schema: a string, number or bool as its scalar, an object as a
/// message of its keys numbered 1, 2, ... in order, a list as a repeated field, null not at all.
fn newer_field(tag: u32, v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Null => {}
        Value::Bool(b) => {
            put_key(out, tag, VARINT);
            put_varint(out, u64::from(*b));
        }
        Value::Number(n) => match n.as_i64() {
            Some(i) => {
                put_key(out, tag, VARINT);
                put_varint(out, i as u64);
            }
            None => {
                put_key(out, tag, FIXED64);
                out.extend_from_slice(&n.as_f64().unwrap_or_default().to_bits().to_le_bytes());
            }
        },
        Value::String(s) => put_len(out, tag, s.as_bytes()),
        Value::Array(items) => items.iter().for_each(|item| newer_field(tag, item, out)),
        Value::Object(map) => {
            let mut keys: Vec<_> = map.iter().collect();
            keys.sort_unstable_by_key(|(k, _)| *k);
            let mut inner = Vec::new();
            for ((_, item), n) in keys.into_iter().zip(1..) {
                newer_field(n, item, &mut inner);
            }
            put_len(out, tag, &inner);
        }
    }
}

fn field(
    f: &'static Field,
    v: &Value,
    path: &str,
    schema: Schema,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    field_as(f, f.tag, v, path, schema, out)
}

/// Writes `v` with `f`'s type under number `tag`.
fn field_as(
    f: &'static Field,
    tag: u32,
    v: &Value,
    path: &str,
    schema: Schema,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    match f.ty {
        Ty::String => {
            let s = v
                .as_str()
                .ok_or_else(|| cannot(path, "expected a string"))?;
            put_len(out, tag, s.as_bytes());
        }
        Ty::Bytes => {
            let s = v
                .as_str()
                .ok_or_else(|| cannot(path, "expected base64 text"))?;
            let b = base64::engine::general_purpose::STANDARD
                .decode(s)
                .map_err(|e| cannot(path, format!("invalid base64: {e}")))?;
            put_len(out, tag, &b);
        }
        Ty::Int32 | Ty::Int64 => {
            let n = v
                .as_i64()
                .ok_or_else(|| cannot(path, "expected an integer"))?;
            put_key(out, tag, VARINT);
            put_varint(out, n as u64);
        }
        Ty::Bool => {
            let b = v.as_bool().ok_or_else(|| cannot(path, "expected a bool"))?;
            put_key(out, tag, VARINT);
            put_varint(out, u64::from(b));
        }
        Ty::Double => {
            let d = v
                .as_f64()
                .ok_or_else(|| cannot(path, "expected a number"))?;
            put_key(out, tag, FIXED64);
            out.extend_from_slice(&d.to_bits().to_le_bytes());
        }
        Ty::Message(idx) => {
            let bytes = encode(message(idx), v, path, schema)?;
            put_len(out, tag, &bytes);
        }
    }
    Ok(())
}

/// Writes `v` as the field numbered `tag` of `msg`.
fn put(
    msg: &'static Message,
    tag: u32,
    v: &Value,
    path: &str,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    let f = msg
        .by_tag(tag)
        .ok_or_else(|| cannot(path, format!("{} has no field {tag}", msg.name)))?;
    match (f.label, v) {
        (Label::Repeated, Value::Array(list)) => {
            for item in list {
                field(f, item, path, Schema::Built, out)?;
            }
            Ok(())
        }
        _ => field(f, v, path, Schema::Built, out),
    }
}

fn special(
    msg: &'static Message,
    shape: Shape,
    v: &Value,
    path: &str,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    match (shape, v) {
        (Shape::Quantity, Value::String(_)) => put(msg, 1, v, path, out),
        (Shape::Quantity, Value::Number(n)) => {
            put(msg, 1, &Value::String(n.to_string()), path, out)
        }
        (Shape::IntOrString, Value::Number(_)) => {
            put(msg, 1, &Value::from(0), path, out)?;
            put(msg, 2, v, path, out)
        }
        (Shape::IntOrString, Value::String(_)) => {
            put(msg, 1, &Value::from(1), path, out)?;
            put(msg, 3, v, path, out)
        }
        (Shape::Time | Shape::MicroTime, Value::String(s)) => {
            let (secs, nanos) = informer_proto::time::parse_time(s)?;
            put(msg, 1, &Value::from(secs), path, out)?;
            put(msg, 2, &Value::from(nanos), path, out)
        }
        (Shape::Duration, Value::String(s)) => put(
            msg,
            1,
            &Value::from(informer_proto::time::parse_go_duration(s)?),
            path,
            out,
        ),
        (Shape::RawJson, v) => {
            let raw = serde_json::to_vec(v).map_err(|e| cannot(path, e.to_string()))?;
            put_len(out, 1, &raw);
            Ok(())
        }
        (Shape::StringList, Value::Array(_)) => put(msg, 1, v, path, out),
        (Shape::SchemaOrArray, Value::Array(_)) => put(msg, 2, v, path, out),
        (Shape::SchemaOrArray, Value::Object(_)) => put(msg, 1, v, path, out),
        (Shape::SchemaOrBool, Value::Bool(_)) => put(msg, 1, v, path, out),
        (Shape::SchemaOrBool, Value::Object(_)) => {
            put(msg, 1, &Value::Bool(true), path, out)?;
            put(msg, 2, v, path, out)
        }
        (Shape::SchemaOrStringArray, Value::Array(_)) => put(msg, 2, v, path, out),
        (Shape::SchemaOrStringArray, Value::Object(_)) => put(msg, 1, v, path, out),
        (shape, _) => Err(cannot(path, format!("unexpected JSON for a {shape:?}"))),
    }
}
