//! [`RawJson`]: free-form JSON as a hash-consed tree (P1, P3, P8).

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::LazyLock;

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, Serializer};

use super::{IStr, Pool, Share, ShareHash, Shared};

mod read;

/// Free-form JSON (`fieldsV1`, `RawExtension`, preserve-unknown-fields): a tree whose objects
/// are shared, like [`Shared`] parts, across every cached object.
///
/// Each JSON object is one pooled node: its members in wire order, each a key ([`IStr`]) and a
/// shared node. Equal objects anywhere (two Pods' identical `f:spec` field sets, or the
/// `{".":{},"f:ip":{}}` under two different IPs) are one allocation, so a document that differs
/// from another in one key (a Pod's IP in its kubelet's `fieldsV1`) costs only the nodes on the
/// path to that key. Scalars and arrays are leaves held as their compact JSON text, interned.
///
/// Decoding builds the tree straight from the deserializer's events, never a
/// `serde_json::Value`. Where the deserializer hands out the document's encoded bytes and they
/// were decoded recently (the same `fieldsV1` in the next update of a Pod), the tree is taken
/// without a decode (P8). Serializing goes through `serde_json::Value`, so the output is byte
/// for byte what k8s-openapi writes for the same document (object keys sorted), P1.
///
/// It reads like a `serde_json::Value`: [`get`](Self::get), [`pointer`](Self::pointer),
/// [`as_str`](Self::as_str), [`as_bool`](Self::as_bool), [`as_i64`](Self::as_i64), `is_*`,
/// [`keys`](Self::keys), `==` with a `Value`, and `From` both ways; [`to_value`](Self::to_value)
/// builds the whole `Value`.
///
/// ```
/// use informer_runtime::compact::RawJson;
/// let raw: RawJson = serde_json::from_str(r#"{ "f:b": {}, "f:a": {".": {}} }"#).unwrap();
/// assert_eq!(raw.to_json_string(), r#"{"f:b":{},"f:a":{".":{}}}"#);
/// assert_eq!(serde_json::to_string(&raw).unwrap(), r#"{"f:a":{".":{}},"f:b":{}}"#);
/// ```
#[derive(Clone, PartialEq)]
pub struct RawJson(Shared<JsonNode>);

/// One node of a [`RawJson`] document.
#[derive(PartialEq)]
pub(crate) enum JsonNode {
    /// A scalar or an array: its compact JSON text.
    Text(IStr),
    /// An object: its members in wire order (a repeated key stays, and the last one wins when
    /// read as a `Value`, as serde_json does).
    Object(Box<[(IStr, Shared<JsonNode>)]>),
}

impl RawJson {
    /// The compact JSON text, members in wire order.
    pub fn to_json_string(&self) -> String {
        let mut out = String::new();
        self.0.write_text(&mut out);
        out
    }

    /// The document as a `serde_json::Value`.
    pub fn to_value(&self) -> serde_json::Value {
        self.0.to_value()
    }

    /// The document `value`, its objects shared.
    pub fn from_value(value: &serde_json::Value) -> Self {
        RawJson(JsonNode::from_value(value))
    }
}

impl JsonNode {
    fn write_text(&self, out: &mut String) {
        match self {
            JsonNode::Text(t) => out.push_str(t.as_str()),
            JsonNode::Object(members) => {
                out.push('{');
                for (i, (k, v)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    // Writing a `str` as JSON cannot fail.
                    out.push_str(&serde_json::to_string(k.as_str()).unwrap_or_default());
                    out.push(':');
                    v.write_text(out);
                }
                out.push('}');
            }
        }
    }

    fn to_value(&self) -> serde_json::Value {
        match self {
            // The text was written by `Transcode` or `serde_json` itself, so it always parses;
            // `Null` is only reachable through a bug, never through input.
            JsonNode::Text(t) => {
                serde_json::from_str(t.as_str()).unwrap_or(serde_json::Value::Null)
            }
            JsonNode::Object(members) => serde_json::Value::Object(
                members
                    .iter()
                    .map(|(k, v)| (k.as_str().to_owned(), v.to_value()))
                    .collect(),
            ),
        }
    }

    fn from_value(value: &serde_json::Value) -> Shared<JsonNode> {
        match value {
            serde_json::Value::Object(map) => JsonNode::object(
                map.iter()
                    .map(|(k, v)| (IStr::new(k), JsonNode::from_value(v)))
                    .collect(),
            ),
            other => Shared::new(JsonNode::Text(IStr::new(&other.to_string()))),
        }
    }

    /// The shared object of `members`.
    fn object(members: Vec<(IStr, Shared<JsonNode>)>) -> Shared<JsonNode> {
        JsonNode::Object(members.into_boxed_slice()).share()
    }

    /// The shared copy of this node (the empty object without a pool lookup).
    fn share(self) -> Shared<JsonNode> {
        match self {
            JsonNode::Object(members) if members.is_empty() => EMPTY.clone(),
            node => Shared::new(node),
        }
    }
}

/// `{}`, the leaf of every field set: held here, so it is never swept.
static EMPTY: LazyLock<Shared<JsonNode>> =
    LazyLock::new(|| Shared::new(JsonNode::Object(Box::new([]))));

impl ShareHash for JsonNode {
    fn share_hash<H: Hasher>(&self, state: &mut H) {
        // Keys, leaves and children are interned: their addresses stand for their content.
        match self {
            JsonNode::Text(t) => {
                state.write_u8(0);
                t.as_str().as_ptr().hash(state);
            }
            JsonNode::Object(members) => {
                state.write_u8(1);
                state.write_usize(members.len());
                for (k, v) in members.iter() {
                    k.as_str().as_ptr().hash(state);
                    std::ptr::from_ref(v.get()).hash(state);
                }
            }
        }
    }
}

impl Share for JsonNode {
    fn pool() -> &'static Pool<Self> {
        static POOL: LazyLock<Pool<JsonNode>> = LazyLock::new(Pool::new);
        &POOL
    }

    /// 768 KiB once used. A kubelet's `fieldsV1` is distinct per Pod (it names the Pod's IPs) and
    /// comes back unchanged in most of the Pod's updates: a table that holds the documents of
    /// tens of thousands of objects lets those updates skip it (P8).
    const RECENT_SLOTS: usize = 1 << 15;
}

impl ShareHash for RawJson {
    fn share_hash<H: Hasher>(&self, state: &mut H) {
        std::ptr::from_ref(self.0.get()).hash(state);
    }
}

impl Eq for RawJson {}

impl Hash for RawJson {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // By content, so that it agrees with `==` whatever the pools hold.
        self.to_json_string().hash(state);
    }
}

impl Default for RawJson {
    /// JSON `null`.
    fn default() -> Self {
        RawJson(Shared::new(JsonNode::Text(IStr::new("null"))))
    }
}

impl fmt::Debug for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_json_string())
    }
}

impl fmt::Debug for JsonNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        self.write_text(&mut out);
        f.write_str(&out)
    }
}

impl Serialize for RawJson {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for RawJson {
    /// Through [`Shared`]: a document whose encoded bytes were decoded recently is not decoded
    /// again (P8).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Shared::<JsonNode>::deserialize(deserializer).map(RawJson)
    }
}

#[cfg(test)]
thread_local! {
    /// Documents this thread decoded (not taken from P8's table), for tests: per thread, so
    /// tests running beside each other do not count each other's decodes.
    static DECODES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

impl<'de> Deserialize<'de> for JsonNode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[cfg(test)]
        DECODES.with(|n| n.set(n.get() + 1));
        deserializer.deserialize_any(NodeVisitor { depth: 0 })
    }
}

/// Nesting deeper than this is refused (serde_json's own recursion limit is 128).
const MAX_DEPTH: usize = 128;

/// Decodes a member's value to its shared node.
struct NodeSeed {
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for NodeSeed {
    type Value = Shared<JsonNode>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Shared<JsonNode>, D::Error> {
        if self.depth > MAX_DEPTH {
            return Err(de::Error::custom("JSON nested too deeply"));
        }
        Ok(d.deserialize_any(NodeVisitor { depth: self.depth })?
            .share())
    }
}

/// Builds one node: objects member by member, anything else as its compact text.
struct NodeVisitor {
    depth: usize,
}

impl NodeVisitor {
    fn text<E>(self, write: impl FnOnce(Transcode<'_>) -> Result<(), E>) -> Result<JsonNode, E>
    where
        E: de::Error,
    {
        let mut buf = Vec::with_capacity(16);
        write(Transcode {
            out: &mut buf,
            depth: self.depth,
        })?;
        let text = String::from_utf8(buf).map_err(E::custom)?;
        Ok(JsonNode::Text(IStr::new(&text)))
    }
}

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = JsonNode;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<JsonNode, E> {
        self.text(|t| t.visit_bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<JsonNode, E> {
        self.text(|t| t.visit_i64(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<JsonNode, E> {
        self.text(|t| t.visit_u64(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<JsonNode, E> {
        self.text(|t| t.visit_f64(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<JsonNode, E> {
        self.text(|t| t.visit_str(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<JsonNode, E> {
        Ok(JsonNode::Text(IStr::new("null")))
    }
    fn visit_none<E: de::Error>(self) -> Result<JsonNode, E> {
        self.visit_unit()
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<JsonNode, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<JsonNode, A::Error> {
        self.text(|t| t.visit_seq(seq))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<JsonNode, A::Error> {
        // The size hint only sizes the buffer; capped so a hostile hint cannot allocate.
        let mut members = Vec::with_capacity(map.size_hint().unwrap_or(0).min(64));
        while let Some(key) = map.next_key::<IStr>()? {
            let value = map.next_value_seed(NodeSeed {
                depth: self.depth + 1,
            })?;
            members.push((key, value));
        }
        Ok(JsonNode::Object(members.into_boxed_slice()))
    }
}

/// Writes the JSON text of whatever the deserializer produces into `out`.
struct Transcode<'a> {
    out: &'a mut Vec<u8>,
    depth: usize,
}

impl Transcode<'_> {
    fn nested(&mut self) -> Transcode<'_> {
        Transcode {
            out: self.out,
            depth: self.depth + 1,
        }
    }

    fn scalar<T: Serialize + ?Sized, E: de::Error>(self, v: &T) -> Result<(), E> {
        serde_json::to_writer(&mut *self.out, v).map_err(E::custom)
    }

    /// Replaces a trailing `,` (after the last element) by `close`, or appends `close`.
    fn close(self, close: u8) {
        if self.out.last() == Some(&b',') {
            self.out.pop();
        }
        self.out.push(close);
    }
}

impl<'de> DeserializeSeed<'de> for Transcode<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        if self.depth > MAX_DEPTH {
            return Err(de::Error::custom("JSON nested too deeply"));
        }
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Transcode<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.scalar(&v)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.scalar(&v)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.scalar(&v)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        // Through `Value`, as k8s-openapi's `Value` would serialize it (non-finite is `null`).
        self.scalar(&serde_json::Value::from(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.scalar(v)
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.visit_unit()
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        self.out.push(b'[');
        while seq.next_element_seed(self.nested())?.is_some() {
            self.out.push(b',');
        }
        self.close(b']');
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        self.out.push(b'{');
        while map.next_key_seed(KeyText(self.out))?.is_some() {
            self.out.push(b':');
            map.next_value_seed(self.nested())?;
            self.out.push(b',');
        }
        self.close(b'}');
        Ok(())
    }
}

/// Writes an object key (always a JSON string).
struct KeyText<'a>(&'a mut Vec<u8>);

impl<'de> DeserializeSeed<'de> for KeyText<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for KeyText<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        serde_json::to_writer(&mut *self.0, v).map_err(E::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            (-1e12f64..1e12).prop_map(Value::from),
            ".{0,12}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 64, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(".{0,8}", inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// P1: the tree is the same JSON value, and re-serializes as `Value` does; built from
        /// the text or from the `Value`, it is the same shared tree.
        #[test]
        fn raw_json_is_lossless(v in arb_json()) {
            let text = serde_json::to_string(&v).unwrap();
            let raw: RawJson = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(raw.to_value(), v.clone());
            prop_assert_eq!(serde_json::to_string(&raw).unwrap(), text.clone());
            prop_assert_eq!(raw.to_json_string(), text);
            let built = RawJson::from_value(&v);
            prop_assert!(Shared::ptr_eq(&built.0, &raw.0));
        }
    }

    #[test]
    fn raw_json_refuses_absurd_nesting() {
        let deep = "[".repeat(200) + &"]".repeat(200);
        // serde_json stops at its own limit first; either way it is an error, not a stack overflow.
        assert!(serde_json::from_str::<RawJson>(&deep).is_err());
        let deep = r#"{"a":"#.repeat(200) + "{}" + &"}".repeat(200);
        assert!(serde_json::from_str::<RawJson>(&deep).is_err());
    }

    #[test]
    fn raw_json_keeps_escapes_numbers_and_repeated_keys() {
        let v = json!({"a\"b": "line\nbreak \u{1F600}", "n": [1, -2, 3.5, 1e300, u64::MAX]});
        let raw: RawJson = serde_json::from_str(&v.to_string()).unwrap();
        assert_eq!(raw.to_value(), v);
        let raw: RawJson = serde_json::from_str(r#"{"k":1,"k":2}"#).unwrap();
        assert_eq!(raw.to_json_string(), r#"{"k":1,"k":2}"#);
        assert_eq!(raw.to_value(), json!({"k": 2}));
    }

    /// P8 on protobuf: a `fieldsV1` whose bytes were decoded before is the same tree, taken
    /// without a decode; other bytes are decoded.
    #[test]
    fn protobuf_field_sets_decoded_before_are_not_decoded_again() {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Entry {
            fields_v1: RawJson,
        }
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Meta {
            managed_fields: Vec<Entry>,
        }
        #[derive(serde::Deserialize)]
        struct PodView {
            metadata: Meta,
        }
        let pod = |ip: &str| {
            let v = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p",
                "managedFields": [{"manager": "kubelet", "operation": "Update",
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:podIPs": {
                        format!("k:{{\"ip\":\"{ip}\"}}"): {".": {}, "f:ip": {}}}}}}]}});
            let body = informer_testserver::encode_protobuf(&v).expect("encode");
            let env = informer_proto::frame::Envelope::read(&body).expect("envelope");
            env.raw.to_vec()
        };
        let message = informer_proto::for_kind("v1", "Pod").expect("built in");
        let (a, b) = (pod("10.9.8.7"), pod("10.9.8.6"));
        let first: PodView = informer_proto::from_slice(message, &a).expect("a");
        let decoded = DECODES.with(|n| n.get());
        let again: PodView = informer_proto::from_slice(message, &a).expect("a again");
        assert_eq!(DECODES.with(|n| n.get()), decoded, "decoded again");
        let other: PodView = informer_proto::from_slice(message, &b).expect("b");
        assert!(DECODES.with(|n| n.get()) > decoded, "b was not decoded");
        let set = |p: &PodView| p.metadata.managed_fields[0].fields_v1.clone();
        assert!(Shared::ptr_eq(&set(&first).0, &set(&again).0));
        assert_ne!(set(&first), set(&other));
        assert_eq!(
            set(&other).to_json_string(),
            r#"{"f:status":{"f:podIPs":{"k:{\"ip\":\"10.9.8.6\"}":{".":{},"f:ip":{}}}}}"#
        );
    }

    #[test]
    fn equal_documents_share_one_copy() {
        let a: RawJson = serde_json::from_str(r#"{"f:x": {}}"#).unwrap();
        let b: RawJson = serde_json::from_str(r#"{ "f:x" : { } }"#).unwrap();
        assert!(Shared::ptr_eq(&a.0, &b.0));
    }

    #[test]
    fn documents_that_differ_in_one_key_share_the_rest() {
        // A kubelet's field set: two Pods differ only in their IP.
        let set = |ip: &str| {
            format!(
                r#"{{"f:status":{{"f:conditions":{{"k:{{\"type\":\"Ready\"}}":{{".":{{}},"f:status":{{}}}}}},"f:podIPs":{{".":{{}},"k:{{\"ip\":\"{ip}\"}}":{{".":{{}},"f:ip":{{}}}}}}}}}}"#
            )
        };
        let a: RawJson = serde_json::from_str(&set("10.0.0.1")).unwrap();
        let b: RawJson = serde_json::from_str(&set("10.0.0.2")).unwrap();
        assert_ne!(a, b);
        let member = |raw: &RawJson, path: &[&str]| {
            let mut node = raw.0.clone();
            for key in path {
                let JsonNode::Object(members) = node.get() else {
                    panic!("{key}: not an object");
                };
                let next = members
                    .iter()
                    .find(|(k, _)| k.as_str().starts_with(key))
                    .map(|(_, v)| v.clone())
                    .unwrap_or_else(|| panic!("no {key}"));
                node = next;
            }
            node
        };
        let conditions = ["f:status", "f:conditions"];
        assert!(Shared::ptr_eq(
            &member(&a, &conditions),
            &member(&b, &conditions)
        ));
        let ip = ["f:status", "f:podIPs", "k:"];
        assert!(Shared::ptr_eq(&member(&a, &ip), &member(&b, &ip)));
        let ips = ["f:status", "f:podIPs"];
        assert!(!Shared::ptr_eq(&member(&a, &ips), &member(&b, &ips)));
    }
}
