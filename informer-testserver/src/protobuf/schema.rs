//! The shape of the generated schema (`generated/`) and lookups into it.

use std::sync::LazyLock;

use super::generated::{KINDS, PARTS};

/// Every message in one slice of references, in the generated order (`Ty::Message(n)` is an
/// index into it); the generated parts are consecutive runs of it.
static MESSAGES: LazyLock<Vec<&'static Message>> =
    LazyLock::new(|| PARTS.iter().flat_map(|part| part.iter()).collect());

/// Every message, in order.
#[cfg(test)]
pub(crate) fn messages() -> &'static [&'static Message] {
    &MESSAGES
}

/// A field's protobuf type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ty {
    /// `string` (UTF-8).
    String,
    /// `bytes`, base64 in JSON.
    Bytes,
    /// `int32` (varint).
    Int32,
    /// `int64` (varint).
    Int64,
    /// `bool` (varint).
    Bool,
    /// `double` (fixed64).
    Double,
    /// A nested message, by index into the message table.
    Message(u16),
}

/// A field's cardinality.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Label {
    /// One value (`optional`).
    Single,
    /// A list (`repeated`).
    Repeated,
    /// `map<string, ty>`: repeated entries with the key at tag 1 and the value at tag 2.
    Map,
    /// A Go struct embedded with `json:",inline"`: a nested message on the wire, its fields
    /// merged into the parent object in JSON.
    Inline,
}

/// How a message looks in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// An object of its fields (almost every message).
    Object,
    /// `resource.Quantity`: its `string` field as a JSON string.
    Quantity,
    /// `intstr.IntOrString`: a JSON number or string.
    IntOrString,
    /// `metav1.Time`: RFC 3339 with seconds; the zero time is `null`.
    Time,
    /// `metav1.MicroTime`: RFC 3339 with microseconds.
    MicroTime,
    /// `metav1.Duration`: a Go duration string (`1h0m0s`).
    Duration,
    /// `runtime.RawExtension`, `FieldsV1`, apiextensions `JSON`: the raw bytes are JSON.
    RawJson,
    /// A Go named `[]string` (`Verbs`, `ExtraValue`): its `items` as a JSON array.
    StringList,
    /// `JSONSchemaPropsOrArray`: one schema, or an array of schemas.
    SchemaOrArray,
    /// `JSONSchemaPropsOrBool`: a schema, or a bool.
    SchemaOrBool,
    /// `JSONSchemaPropsOrStringArray`: a schema, or an array of strings.
    SchemaOrStringArray,
}

/// One field of a message.
#[derive(Debug)]
pub(crate) struct Field {
    /// Protobuf field number.
    pub(crate) tag: u32,
    /// JSON name (`podIP`, `x-kubernetes-preserve-unknown-fields`).
    pub(crate) json: &'static str,
    /// Value type (of the map value for maps).
    pub(crate) ty: Ty,
    /// Cardinality.
    pub(crate) label: Label,
}

/// One message type.
#[derive(Debug)]
pub(crate) struct Message {
    /// Full name, k8s-pb's module path (`api.core.v1.Pod`).
    pub(crate) name: &'static str,
    /// JSON form.
    pub(crate) shape: Shape,
    /// Fields, sorted by tag.
    pub(crate) fields: &'static [Field],
}

/// A top-level kind.
#[derive(Debug)]
pub(crate) struct KindEntry {
    pub(crate) group: &'static str,
    pub(crate) version: &'static str,
    pub(crate) kind: &'static str,
    pub(crate) message: u16,
}

impl Message {
    /// The field with protobuf number `tag`.
    pub(crate) fn by_tag(&self, tag: u32) -> Option<&'static Field> {
        self.fields
            .binary_search_by_key(&tag, |f| f.tag)
            .ok()
            .map(|i| &self.fields[i])
    }

    /// The field with JSON name `json` (not looking into inline fields).
    pub(crate) fn by_json(&self, json: &str) -> Option<&'static Field> {
        self.fields
            .iter()
            .find(|f| f.json == json && f.label != Label::Inline)
    }

    /// Whether the JSON key `json` belongs to this message or one of its inline fields.
    pub(crate) fn knows(&self, json: &str) -> bool {
        self.by_json(json).is_some()
            || self.fields.iter().any(|f| match (f.label, f.ty) {
                (Label::Inline, Ty::Message(idx)) => message(idx).knows(json),
                _ => false,
            })
    }

    /// The short name (`Pod`).
    pub(crate) fn short_name(&self) -> &'static str {
        self.name.rsplit('.').next().unwrap_or(self.name)
    }
}

/// The message at `idx`.
pub(crate) fn message(idx: u16) -> &'static Message {
    MESSAGES[usize::from(idx)]
}

/// The message with full name `name`.
pub(crate) fn by_name(name: &str) -> Option<&'static Message> {
    MESSAGES
        .binary_search_by(|m| m.name.cmp(name))
        .ok()
        .map(|i| MESSAGES[i])
}

/// The message of a top-level object or list of `apiVersion`/`kind`.
///
/// Lists (`PodList`) and option types (`DeleteOptions`, `Status`) have no entry of their own: a
/// `…List` is found beside its item kind, anything else among the `meta.k8s.io/v1` messages, which
/// clients also send under their own group's version (`DeleteOptions` in `v1`).
pub(crate) fn for_kind(api_version: &str, kind: &str) -> Option<&'static Message> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let direct = |kind: &str| {
        KINDS
            .iter()
            .find(|k| k.group == group && k.version == version && k.kind == kind)
            .map(|k| message(k.message))
    };
    if let Some(m) = direct(kind) {
        return Some(m);
    }
    if let Some(item) = kind.strip_suffix("List")
        && let Some(m) = direct(item)
    {
        let module = m.name.rsplit_once('.').map_or("", |(module, _)| module);
        if let Some(list) = by_name(&format!("{module}.{kind}")) {
            return Some(list);
        }
    }
    by_name(&format!("apimachinery.pkg.apis.meta.v1.{kind}"))
        .filter(|_| version.starts_with('v'))
        .filter(|m| m.shape == Shape::Object)
}
