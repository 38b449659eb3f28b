//! Kubernetes' protobuf encoding of built-in kinds, transcoded to and from the JSON the store
//! holds.
//!
//! kubectl (client-go's typed clients) sends built-in objects as
//! `application/vnd.kubernetes.protobuf`: the 4-byte magic `k8s\0`, then a `runtime.Unknown`
//! message whose `typeMeta` names the apiVersion and kind and whose `raw` bytes are the object's
//! own message (`k8s.io.api.core.v1.Namespace`, ...). The server decodes that into the JSON a
//! JSON client would have sent, and answers protobuf only to clients that accept nothing else.
//!
//! The transcoder is driven by a schema table (`generated/`, one file per API group and version): field number, JSON name, type and
//! cardinality of every message of every built-in group, generated from `k8s-pb`'s prost types
//! (numbers and types) and `k8s-openapi`'s serde names (exact JSON names). Go types with their
//! own JSON form (`Quantity`, `IntOrString`, `Time`, `MicroTime`, `Duration`, `RawExtension`,
//! `FieldsV1`, `JSON`, the `JSONSchemaPropsOr…` unions, named string lists) have a [`Shape`] each.
//!
//! What the wire cannot say: gogo-protobuf writes every non-pointer field, zero or not, and
//! nothing marks which fields were pointers. Empty strings are dropped (nearly all are
//! non-pointer `omitempty` fields, which Go's JSON omits), and so are the zero numbers and bools
//! of a list of known non-pointer `omitempty` fields of the common kinds (`decode::OMIT_ZERO`);
//! every other zero stays, because it may be a pointer set to zero (`replicas: 0`). Leftover
//! zero values mean the same to every Go or Rust client. A field number the schema does not know
//! is an error, never silently dropped.
//!
//! [`Shape`]: schema::Shape

mod decode;
mod encode;
#[rustfmt::skip]
#[allow(clippy::all)]
mod generated;
mod schema;
mod time;
mod wire;

use serde_json::{Map, Value};

pub(crate) use schema::for_kind;

/// The media type of Kubernetes protobuf.
pub(crate) const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The prefix of every protobuf-encoded object.
pub(crate) const MAGIC: &[u8] = b"k8s\0";

/// Why a protobuf body could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Error {
    /// The body does not start with `k8s\0`.
    #[error("the body does not start with the Kubernetes protobuf prefix k8s\\0")]
    NoMagic,
    /// A length or varint runs past the end.
    #[error("truncated protobuf message")]
    Truncated,
    /// A varint longer than 10 bytes.
    #[error("malformed varint")]
    BadVarint,
    /// Field number 0 or above 2^32.
    #[error("invalid protobuf field number")]
    BadTag,
    /// Groups (wire types 3 and 4) or garbage.
    #[error("unsupported protobuf wire type {0}")]
    WireType(u8),
    /// A field number the schema does not have.
    #[error(
        "field number {tag} of {message} is not known to this server (a newer Kubernetes version?); send the object as JSON"
    )]
    UnknownField {
        /// The message's full name.
        message: &'static str,
        /// The field number.
        tag: u32,
    },
    /// No message for the envelope's apiVersion and kind.
    #[error("no protobuf message is known for apiVersion {api_version:?} kind {kind:?}")]
    UnknownKind {
        /// `typeMeta.apiVersion`.
        api_version: String,
        /// `typeMeta.kind`.
        kind: String,
    },
    /// A value that breaks its type (bad UTF-8, non-JSON raw bytes, bad time).
    #[error("{0}")]
    Invalid(String),
    /// Messages nested deeper than the limit.
    #[error("protobuf message nested too deeply")]
    TooDeep,
    /// A JSON value with no protobuf form.
    #[error("cannot encode {path} as protobuf: {why}")]
    Encode {
        /// Where in the object.
        path: String,
        /// Why.
        why: String,
    },
}

/// Decodes a `k8s\0` + `runtime.Unknown` body into the object's JSON, `apiVersion` and `kind`
/// included.
pub(crate) fn decode_object(body: &[u8]) -> Result<Value, Error> {
    let rest = body.strip_prefix(MAGIC).ok_or(Error::NoMagic)?;
    let env = Envelope::read(rest)?;
    if !env.content_encoding.is_empty() {
        return Err(Error::Invalid(format!(
            "contentEncoding {:?} is not supported",
            env.content_encoding
        )));
    }
    let msg = for_kind(&env.api_version, &env.kind).ok_or_else(|| Error::UnknownKind {
        api_version: env.api_version.clone(),
        kind: env.kind.clone(),
    })?;
    let obj = decode::decode(msg, env.raw)?;
    let mut out = Map::new();
    out.insert("apiVersion".into(), Value::String(env.api_version));
    out.insert("kind".into(), Value::String(env.kind));
    if let Value::Object(fields) = obj {
        out.extend(fields);
    }
    Ok(Value::Object(out))
}

/// Encodes an object's JSON (with `apiVersion` and `kind`) as `k8s\0` + `runtime.Unknown`.
pub(crate) fn encode_object(v: &Value) -> Result<Vec<u8>, Error> {
    let text = |k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    let msg = for_kind(&api_version, &kind).ok_or_else(|| Error::UnknownKind {
        api_version: api_version.clone(),
        kind: kind.clone(),
    })?;
    let raw = encode::encode(msg, v, "")?;
    let mut type_meta = Vec::new();
    wire::put_len(&mut type_meta, 1, api_version.as_bytes());
    wire::put_len(&mut type_meta, 2, kind.as_bytes());
    let mut out = MAGIC.to_vec();
    wire::put_len(&mut out, 1, &type_meta);
    wire::put_len(&mut out, 2, &raw);
    // contentEncoding (3) and contentType (4) stay empty, as kube-apiserver sends them.
    Ok(out)
}

/// The fields of a `runtime.Unknown`.
struct Envelope<'a> {
    api_version: String,
    kind: String,
    raw: &'a [u8],
    content_encoding: String,
}

impl<'a> Envelope<'a> {
    fn read(bytes: &'a [u8]) -> Result<Self, Error> {
        let text = |b: &[u8]| {
            String::from_utf8(b.to_vec())
                .map_err(|_| Error::Invalid("the envelope holds invalid UTF-8".into()))
        };
        let mut env = Envelope {
            api_version: String::new(),
            kind: String::new(),
            raw: &[],
            content_encoding: String::new(),
        };
        let mut r = wire::Reader::new(bytes);
        while let Some((tag, w)) = r.next_field()? {
            let wire::Value::Len(b) = w else { continue };
            match tag {
                1 => {
                    let mut tm = wire::Reader::new(b);
                    while let Some((t, w)) = tm.next_field()? {
                        match (t, w) {
                            (1, wire::Value::Len(s)) => env.api_version = text(s)?,
                            (2, wire::Value::Len(s)) => env.kind = text(s)?,
                            _ => {}
                        }
                    }
                }
                2 => env.raw = b,
                3 => env.content_encoding = text(b)?,
                _ => {}
            }
        }
        if env.kind.is_empty() {
            return Err(Error::Invalid(
                "the protobuf envelope names no kind (typeMeta.kind)".into(),
            ));
        }
        Ok(env)
    }
}

#[cfg(test)]
mod tests;
