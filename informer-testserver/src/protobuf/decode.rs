//! Protobuf bytes of a schema message -> the JSON Kubernetes serves for it.

use base64::Engine as _;
use serde_json::{Map, Value};

use super::Error;
use super::schema::{Field, Label, Message, Shape, Ty, message};
use super::wire::{Reader, Value as Wire};

use informer_proto::MAX_DEPTH;

/// Decodes `bytes` as `msg`.
pub(crate) fn decode(msg: &'static Message, bytes: &[u8]) -> Result<Value, Error> {
    decode_at(msg, bytes, 0)
}

fn decode_at(msg: &'static Message, bytes: &[u8], depth: usize) -> Result<Value, Error> {
    if depth > MAX_DEPTH {
        return Err(informer_proto::Error::TooDeep.into());
    }
    match msg.shape {
        Shape::Object => object(msg, bytes, depth),
        shape => special(msg, shape, bytes, depth),
    }
}

fn object(msg: &'static Message, bytes: &[u8], depth: usize) -> Result<Value, Error> {
    let mut out = Map::new();
    let mut r = Reader::new(bytes);
    while let Some((tag, w)) = r.next_field()? {
        let f = msg.by_tag(tag).ok_or(informer_proto::Error::UnknownField {
            message: msg.name,
            tag,
        })?;
        match f.label {
            Label::Single => {
                let v = value(msg, f, w, depth)?;
                // A zero of a non-pointer `omitempty`/`omitzero` Go field is what Go's JSON leaves
                // out; a zero time is Go's `null`, which means the same.
                let zero = match &v {
                    Value::String(s) => s.is_empty(),
                    Value::Number(n) => n.as_f64() == Some(0.0),
                    Value::Bool(b) => !b,
                    Value::Object(m) => m.is_empty(),
                    _ => false,
                };
                if v.is_null() || (zero && f.omit_zero) {
                    out.remove(f.json);
                } else {
                    out.insert(f.json.to_owned(), v);
                }
            }
            Label::Repeated => {
                let slot = out
                    .entry(f.json)
                    .or_insert_with(|| Value::Array(Vec::new()));
                let Value::Array(list) = slot else {
                    continue;
                };
                match (f.ty, w) {
                    // A packed list of numbers (proto3 style; Kubernetes' proto2 sends them unpacked).
                    (Ty::Int32 | Ty::Int64 | Ty::Bool, Wire::Len(packed)) => {
                        let mut pr = Reader::new(packed);
                        while !pr.is_empty() {
                            list.push(scalar(msg, f, Wire::Varint(pr.varint()?))?);
                        }
                    }
                    _ => list.push(value(msg, f, w, depth)?),
                }
            }
            Label::Inline => {
                if let Value::Object(fields) = value(msg, f, w, depth)? {
                    out.extend(fields);
                }
            }
            Label::Map => {
                let Wire::Len(entry) = w else {
                    return Err(wrong_wire(msg, f));
                };
                let (k, v) = map_entry(msg, f, entry, depth)?;
                let slot = out
                    .entry(f.json)
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(m) = slot {
                    m.insert(k, v);
                }
            }
        }
    }
    Ok(Value::Object(out))
}

fn map_entry(
    msg: &'static Message,
    f: &'static Field,
    entry: &[u8],
    depth: usize,
) -> Result<(String, Value), Error> {
    let mut key = String::new();
    let mut val = None;
    let mut r = Reader::new(entry);
    while let Some((tag, w)) = r.next_field()? {
        match (tag, w) {
            (1, Wire::Len(b)) => key = utf8(msg, f, b)?,
            (2, w) => val = Some(value(msg, f, w, depth)?),
            _ => return Err(wrong_wire(msg, f)),
        }
    }
    // An entry without a value is the value's zero.
    let val = match (val, f.ty) {
        (Some(v), _) => v,
        (None, Ty::String | Ty::Bytes) => Value::String(String::new()),
        (None, Ty::Message(idx)) => decode_at(message(idx), &[], depth + 1)?,
        (None, Ty::Bool) => Value::Bool(false),
        (None, _) => Value::from(0),
    };
    Ok((key, val))
}

fn value(
    msg: &'static Message,
    f: &'static Field,
    w: Wire<'_>,
    depth: usize,
) -> Result<Value, Error> {
    match (f.ty, w) {
        (Ty::Message(idx), Wire::Len(b)) => decode_at(message(idx), b, depth + 1),
        (Ty::Message(_), _) => Err(wrong_wire(msg, f)),
        _ => scalar(msg, f, w),
    }
}

fn scalar(msg: &'static Message, f: &'static Field, w: Wire<'_>) -> Result<Value, Error> {
    Ok(match (f.ty, w) {
        (Ty::String, Wire::Len(b)) => Value::String(utf8(msg, f, b)?),
        (Ty::Bytes, Wire::Len(b)) => {
            Value::String(base64::engine::general_purpose::STANDARD.encode(b))
        }
        // int32 is sign-extended to 64 bits on the wire; truncation is the protobuf rule.
        (Ty::Int32, Wire::Varint(v)) => Value::from(i64::from(v as i32)),
        (Ty::Int64, Wire::Varint(v)) => Value::from(v as i64),
        (Ty::Bool, Wire::Varint(v)) => Value::Bool(v != 0),
        (Ty::Double, Wire::Fixed64(v)) => serde_json::Number::from_f64(f64::from_bits(v))
            .map(Value::Number)
            .ok_or_else(|| {
                Error::Invalid(format!("{}.{} is not a finite number", msg.name, f.json))
            })?,
        _ => return Err(wrong_wire(msg, f)),
    })
}

fn utf8(msg: &'static Message, f: &'static Field, b: &[u8]) -> Result<String, Error> {
    String::from_utf8(b.to_vec())
        .map_err(|_| Error::Invalid(format!("{}.{} is not valid UTF-8", msg.name, f.json)))
}

fn wrong_wire(msg: &'static Message, f: &'static Field) -> Error {
    Error::Invalid(format!(
        "field {} ({}) of {} has the wrong wire type",
        f.tag, f.json, msg.name
    ))
}

/// The fields of a special-shaped message, by JSON name.
fn fields(msg: &'static Message, bytes: &[u8], depth: usize) -> Result<Map<String, Value>, Error> {
    match object(msg, bytes, depth)? {
        Value::Object(m) => Ok(m),
        _ => Ok(Map::new()),
    }
}

fn special(
    msg: &'static Message,
    shape: Shape,
    bytes: &[u8],
    depth: usize,
) -> Result<Value, Error> {
    let mut m = fields(msg, bytes, depth)?;
    // Special messages are read by field number: their Go types have no JSON field names.
    let mut take = |tag: u32| {
        msg.by_tag(tag)
            .and_then(|f| m.remove(f.json))
            .unwrap_or(Value::Null)
    };
    Ok(match shape {
        Shape::Object => Value::Null,
        Shape::Quantity => take(1),
        // type (1): 0 int, 1 string; intVal (2); strVal (3).
        Shape::IntOrString => match take(1).as_i64() {
            Some(1) => match take(3) {
                Value::Null => Value::String(String::new()),
                s => s,
            },
            _ => match take(2) {
                Value::Null => Value::from(0),
                n => n,
            },
        },
        // seconds (1), nanos (2).
        Shape::Time | Shape::MicroTime => {
            let secs = take(1).as_i64().unwrap_or(0);
            let nanos = take(2).as_i64().unwrap_or(0);
            // Go marshals the zero time as an empty message, and reads only that as zero.
            if bytes.is_empty() {
                Value::Null
            } else {
                Value::String(
                    informer_proto::time::format_time(
                        secs,
                        nanos as i32,
                        shape == Shape::MicroTime,
                    )?
                    .as_str()
                    .to_owned(),
                )
            }
        }
        Shape::Duration => Value::String(informer_proto::time::go_duration(
            take(1).as_i64().unwrap_or(0),
        )),
        Shape::RawJson => raw_json(msg, bytes)?,
        Shape::StringList => match take(1) {
            Value::Null => Value::Array(Vec::new()),
            list => list,
        },
        // schema (1), jSONSchemas (2).
        Shape::SchemaOrArray => match take(2) {
            Value::Array(list) if !list.is_empty() => Value::Array(list),
            _ => take(1),
        },
        // allows (1), schema (2).
        Shape::SchemaOrBool => match take(2) {
            Value::Null => Value::Bool(take(1).as_bool().unwrap_or(false)),
            schema => schema,
        },
        // schema (1), property (2).
        Shape::SchemaOrStringArray => match take(2) {
            Value::Array(list) if !list.is_empty() => Value::Array(list),
            _ => take(1),
        },
    })
}

/// The `raw` bytes (field 1) of a RawExtension-like message: JSON, or a nested protobuf object.
fn raw_json(msg: &'static Message, bytes: &[u8]) -> Result<Value, Error> {
    let mut r = Reader::new(bytes);
    let mut raw: &[u8] = &[];
    while let Some((tag, w)) = r.next_field()? {
        if let (1, Wire::Len(b)) = (tag, w) {
            raw = b;
        }
    }
    if raw.is_empty() {
        return Ok(Value::Null);
    }
    if raw.starts_with(super::MAGIC) {
        return super::decode_object(raw);
    }
    serde_json::from_slice(raw).map_err(|e| {
        Error::Invalid(format!(
            "the raw bytes of a {} are not JSON: {e}",
            msg.short_name()
        ))
    })
}
