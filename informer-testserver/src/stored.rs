//! One stored object version and its encodings: JSON kept at the write, protobuf encoded once
//! on first demand (or at the write), each with or without managedFields (T7), and the fields
//! selectors read, extracted once.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use bytes::Bytes;
use serde_json::{Map, Value};

use crate::protobuf::Schema;
use crate::status::ApiError;

/// The key of an object inside its collection: (namespace or `""`, name).
pub(crate) type ObjKey = (String, String);

/// One stored object version: its JSON bytes plus what selectors need, extracted once.
#[derive(Debug)]
pub(crate) struct Stored {
    /// resourceVersion of this version.
    pub(crate) rv: u64,
    /// The serialized object (with `metadata.resourceVersion` set), plain or compressed.
    body: Body,
    /// `apiVersion` the object was written with.
    pub(crate) api_version: String,
    /// Namespace (`""` for cluster-scoped objects).
    pub(crate) namespace: String,
    /// Name.
    pub(crate) name: String,
    /// Labels.
    pub(crate) labels: BTreeMap<String, String>,
    /// FNV-1a hash of `metadata.uid` (KEP-5866 sharding; the UID never changes).
    pub(crate) uid_hash: u64,
    /// Values of the field-selector paths the resource supports.
    pub(crate) fields: BTreeMap<&'static str, String>,
    /// PartialObjectMetadata JSON, computed on first use.
    meta_json: OnceLock<Bytes>,
    /// The object's protobuf message (no envelope), encoded on first use; `None` when protobuf
    /// cannot carry it (a custom resource, a field the schema lacks).
    proto: OnceLock<Option<Bytes>>,
    /// The three forms above without `metadata.managedFields` (KEP-5958), each made on first
    /// use, as kube-apiserver's watch cache keeps one serialization per encoder.
    dropped: Box<Dropped>,
}

/// A stored object's forms without `metadata.managedFields`.
#[derive(Debug, Default)]
struct Dropped {
    json: OnceLock<Bytes>,
    meta_json: OnceLock<Bytes>,
    proto: OnceLock<Option<Bytes>>,
}

/// How a stored object's JSON is kept.
#[derive(Debug)]
enum Body {
    /// As served: every list page and watcher shares these bytes.
    Plain(Bytes),
    /// LZ4-compressed (`TestServerBuilder::compress_objects`), for servers that must hold
    /// millions of objects: a realistic Pod's 15 KiB of JSON take about a fifth of that, and
    /// decompressing a 500-Pod page costs a few milliseconds.
    Lz4(Box<[u8]>),
}

impl Stored {
    /// Serializes `value` (compressed when `compress`) and extracts the selector fields named
    /// in `field_paths`.
    pub(crate) fn from_value(
        value: &Value,
        rv: u64,
        field_paths: &[&'static str],
        compress: bool,
    ) -> Result<Self, ApiError> {
        let json = serde_json::to_vec(value).map_err(|e| ApiError::internal(e.to_string()))?;
        let body = if compress {
            Body::Lz4(lz4_flex::compress_prepend_size(&json).into_boxed_slice())
        } else {
            Body::Plain(Bytes::from(json))
        };
        let meta = value.get("metadata");
        let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_owned();
        let labels = meta
            .and_then(|m| m.get("labels"))
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                    .collect()
            })
            .unwrap_or_default();
        let fields = field_paths
            .iter()
            .map(|p| (*p, field_value(value, p)))
            .collect();
        Ok(Stored {
            rv,
            body,
            api_version: text(value.get("apiVersion")),
            namespace: text(meta.and_then(|m| m.get("namespace"))),
            name: text(meta.and_then(|m| m.get("name"))),
            uid_hash: crate::shard::fnv1a64(&text(meta.and_then(|m| m.get("uid")))),
            labels,
            fields,
            meta_json: OnceLock::new(),
            proto: OnceLock::new(),
            dropped: Box::default(),
        })
    }

    /// The object's JSON as served (decompressed if the store compresses).
    pub(crate) fn json(&self) -> Bytes {
        match &self.body {
            Body::Plain(b) => b.clone(),
            Body::Lz4(c) => match lz4_flex::decompress_size_prepended(c) {
                Ok(json) => Bytes::from(json),
                Err(e) => {
                    // Only this module writes the blocks; a failure is a bug, served as an
                    // empty object rather than a panic in a request handler.
                    tracing::error!(error = %e, "bug: a stored object does not decompress");
                    Bytes::from_static(b"{}")
                }
            },
        }
    }

    /// The length of [`json`](Self::json), without decompressing.
    pub(crate) fn json_len(&self) -> usize {
        match &self.body {
            Body::Plain(b) => b.len(),
            Body::Lz4(c) => c
                .get(..4)
                .and_then(|n| <[u8; 4]>::try_from(n).ok())
                .map_or(0, |n| u32::from_le_bytes(n) as usize),
        }
    }

    /// Parses the stored JSON back into a value (write paths only).
    pub(crate) fn value(&self) -> Result<Value, ApiError> {
        serde_json::from_slice(&self.json()).map_err(|e| ApiError::internal(e.to_string()))
    }

    /// The object as `meta.k8s.io/v1 PartialObjectMetadata`, serialized once.
    pub(crate) fn metadata_json(&self) -> Bytes {
        self.meta_json
            .get_or_init(|| {
                let meta = self
                    .value()
                    .ok()
                    .and_then(|mut v| v.get_mut("metadata").map(Value::take))
                    .unwrap_or_else(|| Value::Object(Map::new()));
                let out = serde_json::json!({
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": meta,
                });
                Bytes::from(serde_json::to_vec(&out).unwrap_or_default())
            })
            .clone()
    }

    /// The object without `metadata.managedFields` (write paths never see it).
    pub(crate) fn value_without_managed_fields(&self) -> Result<Value, ApiError> {
        let mut v = self.value()?;
        if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("managedFields");
        }
        Ok(v)
    }

    /// [`json`](Self::json), [`metadata_json`](Self::metadata_json), or
    /// [`protobuf`](Self::protobuf) without `metadata.managedFields` (KEP-5958), each made once.
    pub(crate) fn json_without_managed_fields(&self) -> Bytes {
        self.dropped
            .json
            .get_or_init(|| {
                let v = self.value_without_managed_fields().unwrap_or_default();
                Bytes::from(serde_json::to_vec(&v).unwrap_or_default())
            })
            .clone()
    }

    /// See [`json_without_managed_fields`](Self::json_without_managed_fields).
    pub(crate) fn metadata_json_without_managed_fields(&self) -> Bytes {
        self.dropped
            .meta_json
            .get_or_init(|| {
                let mut v: Value =
                    serde_json::from_slice(&self.metadata_json()).unwrap_or_default();
                if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
                    meta.remove("managedFields");
                }
                Bytes::from(serde_json::to_vec(&v).unwrap_or_default())
            })
            .clone()
    }

    /// See [`json_without_managed_fields`](Self::json_without_managed_fields).
    pub(crate) fn protobuf_without_managed_fields(
        &self,
        kind: &str,
        schema: Schema,
    ) -> Option<Bytes> {
        self.dropped
            .proto
            .get_or_init(|| match self.value_without_managed_fields() {
                Ok(v) => self.encode_protobuf(kind, &v, schema),
                Err(_) => None,
            })
            .clone()
    }

    /// The object as the protobuf message of `kind`, whole or without managedFields.
    pub(crate) fn protobuf_as(
        &self,
        kind: &str,
        drop_managed_fields: bool,
        schema: Schema,
    ) -> Option<Bytes> {
        if drop_managed_fields {
            self.protobuf_without_managed_fields(kind, schema)
        } else {
            self.protobuf(kind, schema)
        }
    }

    /// The object as the protobuf message of `kind` (no magic, no envelope), encoded once and
    /// shared by every LIST page and watcher after; `None` when protobuf cannot carry it.
    /// A server has one [`Schema`], so the first encoding is every later one's.
    pub(crate) fn protobuf(&self, kind: &str, schema: Schema) -> Option<Bytes> {
        self.proto
            .get_or_init(|| match self.value() {
                Ok(v) => self.encode_protobuf(kind, &v, schema),
                Err(e) => {
                    tracing::debug!(name = %self.name, error = %e.message, "no protobuf form");
                    None
                }
            })
            .clone()
    }

    /// Encodes [`protobuf`](Self::protobuf) now, from the value just written.
    pub(crate) fn fill_protobuf(&self, kind: &str, value: &Value, schema: Schema) {
        if crate::protobuf::for_kind(&self.api_version, kind).is_some() {
            self.proto
                .get_or_init(|| self.encode_protobuf(kind, value, schema));
        }
    }

    fn encode_protobuf(&self, kind: &str, value: &Value, schema: Schema) -> Option<Bytes> {
        match crate::protobuf::encode_message(&self.api_version, kind, value, schema) {
            Ok(b) => Some(Bytes::from(b)),
            Err(e) => {
                tracing::debug!(name = %self.name, error = %e, "no protobuf form");
                None
            }
        }
    }

    /// The value a field selector compares for `path`.
    pub(crate) fn field(&self, path: &str) -> Option<&str> {
        match path {
            "metadata.name" => Some(&self.name),
            "metadata.namespace" => Some(&self.namespace),
            _ => self.fields.get(path).map(String::as_str),
        }
    }
}

/// Reads a dotted path as the string a field selector compares (`""` when absent).
fn field_value(value: &Value, path: &str) -> String {
    let mut cur = value;
    for part in path.split('.') {
        match cur.get(part) {
            Some(v) => cur = v,
            None => return String::new(),
        }
    }
    match cur {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}
