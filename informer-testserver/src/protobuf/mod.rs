//! Kubernetes' protobuf encoding of built-in kinds, transcoded to and from the JSON the store
//! holds.
//!
//! kubectl (client-go's typed clients) sends built-in objects as
//! `application/vnd.kubernetes.protobuf`: the 4-byte magic `k8s\0`, then a `runtime.Unknown`
//! message whose `typeMeta` names the apiVersion and kind and whose `raw` bytes are the object's
//! own message (`k8s.io.api.core.v1.Namespace`, ...). The server decodes that into the JSON a
//! JSON client would have sent, and answers protobuf only to clients that accept nothing else.
//!
//! The transcoder is driven by informer-proto's schema table ([`informer_proto::schema`]): field
//! number, JSON name, type, cardinality and presence of every message of every built-in group.
//! Go types with their own JSON form (`Quantity`, `IntOrString`, `Time`, `MicroTime`,
//! `Duration`, `RawExtension`, `FieldsV1`, `JSON`, the `JSONSchemaPropsOr…` unions, named string
//! lists) have a [`Shape`] each.
//!
//! What the wire cannot say by itself: gogo-protobuf writes every non-pointer field, zero or not.
//! The table's `omit_zero` flag, read from the Go struct tags, says which zeros Go's JSON leaves
//! out (non-pointer `omitempty`/`omitzero` fields); every other zero stays (`replicas: 0` of a
//! pointer, `containerPort: 0` of a field without `omitempty`). A field number the schema does
//! not know is an error, never silently dropped.
//!
//! This decoder is not informer-proto's `de` twice: the server turns a body of any kind into the
//! JSON value its store holds (JSON-ward, no Rust type, `omit_zero` deciding which zeros stay),
//! while `de` drives serde into a Rust type with no intermediate value (serde-ward); both read the
//! same schema table and `wire` primitives.
//!
//! [`Shape`]: informer_proto::schema::Shape

mod decode;
mod encode;
mod serve;

use informer_proto::frame::Envelope;
use informer_proto::{schema, wire};
use serde_json::{Map, Value};

pub(crate) use informer_proto::{MAGIC, MEDIA_TYPE, for_kind};
pub(crate) use serve::{ListHead, envelope, list, watch_frame};

/// Why a protobuf body could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Error {
    /// Reading the wire, the envelope or the schema failed.
    #[error(transparent)]
    Proto(#[from] informer_proto::Error),
    /// A value that breaks its type (bad UTF-8, non-JSON raw bytes, bad time).
    #[error("{0}")]
    Invalid(String),
    /// A JSON value with no protobuf form.
    #[error("cannot encode {path} as protobuf: {why}")]
    Encode {
        /// Where in the object.
        path: String,
        /// Why.
        why: String,
    },
}

/// Which fields a server's protobuf carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Schema {
    /// The built schema's: an object with a field it lacks has no protobuf form.
    #[default]
    Built,
    /// A newer Kubernetes version's (`TestServerBuilder::newer_schema`, T8): a field of a
    /// built-in object that the built schema lacks is sent under a number past the message's
    /// own, as a newer kube-apiserver sends it to an older client.
    Newer,
}

/// Decodes a `k8s\0` + `runtime.Unknown` body into the object's JSON, `apiVersion` and `kind`
/// included.
pub(crate) fn decode_object(body: &[u8]) -> Result<Value, Error> {
    let env = Envelope::read(body)?;
    let msg = env.message()?;
    let obj = decode::decode(msg, env.raw)?;
    let mut out = Map::new();
    out.insert("apiVersion".into(), Value::from(env.api_version));
    out.insert("kind".into(), Value::from(env.kind));
    if let Value::Object(fields) = obj {
        out.extend(fields);
    }
    Ok(Value::Object(out))
}

/// Encodes an object's JSON (with `apiVersion` and `kind`) as `k8s\0` + `runtime.Unknown`.
pub(crate) fn encode_object(v: &Value, schema: Schema) -> Result<Vec<u8>, Error> {
    let text = |k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    let raw = encode_message(&api_version, &kind, v, schema)?;
    // contentEncoding (3) and contentType (4) stay empty, as kube-apiserver sends them.
    Ok(envelope(&api_version, &kind, &raw))
}

/// Encodes an object's JSON as the message of `kind` alone: no magic, no envelope (a list item,
/// or what [`envelope`] wraps).
pub(crate) fn encode_message(
    api_version: &str,
    kind: &str,
    v: &Value,
    schema: Schema,
) -> Result<Vec<u8>, Error> {
    // A `Status` (an error, or a watch ERROR event) is no resource kind, but has a message.
    let msg = for_kind(api_version, kind)
        .or_else(|| {
            (kind == "Status")
                .then(|| schema::by_name("apimachinery.pkg.apis.meta.v1.Status"))
                .flatten()
        })
        .ok_or_else(|| informer_proto::Error::UnknownKind {
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
        })?;
    encode::encode(msg, v, "", schema)
}

#[cfg(test)]
mod tests;
