//! The schema table of the built-in kinds and lookups into it.
//!
//! Every protobuf message of every built-in API group (`k8s.io/api`, apimachinery's `meta/v1`,
//! `runtime` and `intstr`, apiextensions and kube-aggregator) is one [`Message`]: its full name
//! (k8s-pb's module path), its JSON [`Shape`] and its [`Field`]s with number, JSON name, type,
//! cardinality and whether a zero on the wire means "absent". The table is generated (see
//! `tests/schema.rs` in this crate and `schema-gen/`, the Go program that reads the Go struct
//! tags); [`for_kind`] finds the message of a top-level `apiVersion`/`kind`.

use std::sync::LazyLock;

use crate::generated::{KINDS, PARTS};

/// Every message in one slice of references, in the generated order (`Ty::Message(n)` is an
/// index into it); the generated parts are consecutive runs of it.
static MESSAGES: LazyLock<Vec<&'static Message>> =
    LazyLock::new(|| PARTS.iter().flat_map(|part| part.iter()).collect());

/// Every message, in table order (sorted by full name).
pub fn messages() -> &'static [&'static Message] {
    &MESSAGES
}

/// Every top-level kind, sorted by group, version and kind.
pub fn kinds() -> &'static [KindEntry] {
    KINDS
}

/// A field's protobuf type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
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
    /// A nested message, by index into the message table (see [`message`]).
    Message(u16),
}

/// A field's cardinality.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Label {
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
pub enum Shape {
    /// An object of its fields (almost every message).
    Object,
    /// `resource.Quantity`: its `string` field as a JSON string.
    Quantity,
    /// `intstr.IntOrString`: a JSON number or string.
    IntOrString,
    /// `metav1.Time`: RFC 3339 with seconds; the zero time is `null`.
    Time,
    /// `metav1.MicroTime`: RFC 3339 with microseconds; the zero time is `null`.
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
pub struct Field {
    /// Protobuf field number.
    pub tag: u32,
    /// JSON name (`podIP`, `x-kubernetes-preserve-unknown-fields`).
    pub json: &'static str,
    /// Value type (of the map value for maps).
    pub ty: Ty,
    /// Cardinality.
    pub label: Label,
    /// Whether a zero value on the wire (`0`, `false`, `""`, empty bytes) means the field is
    /// absent: the Go field is a non-pointer with `omitempty` or `omitzero`, which gogo-protobuf
    /// writes anyway and Go's JSON leaves out. `false` for pointers (a pointer set to zero, such as
    /// `replicas: 0`, is on the wire only when set) and for non-pointer fields without those
    /// options (Go's JSON prints their zero).
    pub omit_zero: bool,
}

/// One message type.
#[derive(Debug)]
pub struct Message {
    /// Full name, k8s-pb's module path (`api.core.v1.Pod`).
    pub name: &'static str,
    /// JSON form.
    pub shape: Shape,
    /// Fields, sorted by tag.
    pub fields: &'static [Field],
}

/// A top-level kind.
#[derive(Debug)]
pub struct KindEntry {
    /// API group (`""` for core).
    pub group: &'static str,
    /// Version (`v1`).
    pub version: &'static str,
    /// Kind (`Pod`).
    pub kind: &'static str,
    /// The kind's message, by index (see [`message`]).
    pub message: u16,
}

impl Message {
    /// The field with protobuf number `tag`.
    pub fn by_tag(&self, tag: u32) -> Option<&'static Field> {
        self.index_of(tag).map(|i| &self.fields[i])
    }

    /// The position in [`Message::fields`] of the field numbered `tag`.
    pub fn index_of(&self, tag: u32) -> Option<usize> {
        self.fields.binary_search_by_key(&tag, |f| f.tag).ok()
    }

    /// The field with JSON name `json` (not looking into inline fields).
    pub fn by_json(&self, json: &str) -> Option<&'static Field> {
        self.fields
            .iter()
            .find(|f| f.json == json && f.label != Label::Inline)
    }

    /// Whether the JSON key `json` belongs to this message or one of its inline fields.
    pub fn knows(&self, json: &str) -> bool {
        self.by_json(json).is_some()
            || self.fields.iter().any(|f| match (f.label, f.ty) {
                (Label::Inline, Ty::Message(idx)) => message(idx).knows(json),
                _ => false,
            })
    }

    /// The short name (`Pod`).
    pub fn short_name(&self) -> &'static str {
        self.name.rsplit('.').next().unwrap_or(self.name)
    }
}

/// The message at index `idx` of the table (the `n` of [`Ty::Message`]).
///
/// # Panics
///
/// When `idx` is not an index of the table; the generated indexes all are.
pub fn message(idx: u16) -> &'static Message {
    MESSAGES[usize::from(idx)]
}

/// The message with full name `name` (`api.core.v1.Pod`).
pub fn by_name(name: &str) -> Option<&'static Message> {
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
///
/// ```
/// let pod = informer_proto::for_kind("v1", "Pod").expect("a built-in kind");
/// assert_eq!(pod.name, "api.core.v1.Pod");
/// assert_eq!(informer_proto::for_kind("apps/v1", "DeploymentList").map(|m| m.name),
///            Some("api.apps.v1.DeploymentList"));
/// assert!(informer_proto::for_kind("example.com/v1", "Widget").is_none());
/// ```
pub fn for_kind(api_version: &str, kind: &str) -> Option<&'static Message> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_kinds_resolve() {
        let all = messages();
        for (i, m) in all.iter().enumerate() {
            assert!(
                m.fields.windows(2).all(|w| w[0].tag < w[1].tag),
                "{} tags sorted",
                m.name
            );
            if i > 0 {
                assert!(all[i - 1].name < m.name, "messages sorted");
            }
            assert!(m.fields.len() <= 256, "{}", m.name);
        }
        assert_eq!(
            for_kind("v1", "PodList").map(|m| m.name),
            Some("api.core.v1.PodList")
        );
        assert_eq!(
            for_kind("apps/v1", "Deployment").map(|m| m.name),
            Some("api.apps.v1.Deployment")
        );
        assert_eq!(
            for_kind("v1", "Status").map(|m| m.name),
            Some("apimachinery.pkg.apis.meta.v1.Status")
        );
    }

    #[test]
    fn every_kind_has_object_meta_at_field_one() {
        // `frame::probe_meta` relies on it.
        let object_meta = by_name("apimachinery.pkg.apis.meta.v1.ObjectMeta").expect("ObjectMeta");
        for k in kinds() {
            let m = message(k.message);
            let Some(meta) = m.by_json("metadata") else {
                continue;
            };
            assert_eq!(meta.tag, 1, "{}", m.name);
            if let Ty::Message(idx) = meta.ty {
                assert!(
                    std::ptr::eq(message(idx), object_meta) || m.name.ends_with("List"),
                    "{} metadata is a {}",
                    m.name,
                    message(idx).name
                );
            }
        }
    }

    #[test]
    fn presence_follows_go() {
        let field = |msg: &str, json: &str| {
            by_name(msg)
                .and_then(|m| m.by_json(json))
                .unwrap_or_else(|| panic!("{msg}.{json}"))
        };
        // Non-pointer omitempty: a zero is absent.
        assert!(field("api.core.v1.PodSpec", "hostNetwork").omit_zero);
        assert!(field("api.core.v1.PodSpec", "restartPolicy").omit_zero);
        assert!(field("apimachinery.pkg.apis.meta.v1.ObjectMeta", "generation").omit_zero);
        // Pointers: a zero on the wire was set.
        assert!(!field("api.apps.v1.DeploymentSpec", "replicas").omit_zero);
        assert!(!field("api.core.v1.PersistentVolumeClaimSpec", "storageClassName").omit_zero);
        // Non-pointer without omitempty: Go prints the zero.
        assert!(!field("api.core.v1.ContainerPort", "containerPort").omit_zero);
        assert!(!field("api.apps.v1.ReplicaSetStatus", "replicas").omit_zero);
        assert!(!field("api.core.v1.Container", "name").omit_zero);
        // Lists and maps never: nothing is on the wire when empty.
        assert!(!field("api.core.v1.PodSpec", "containers").omit_zero);
        assert!(!field("apimachinery.pkg.apis.meta.v1.ObjectMeta", "labels").omit_zero);
        // A non-pointer struct with omitzero.
        assert!(
            field(
                "apimachinery.pkg.apis.meta.v1.ObjectMeta",
                "creationTimestamp"
            )
            .omit_zero
        );
    }
}
