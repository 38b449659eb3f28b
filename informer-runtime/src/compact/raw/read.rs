//! Reading a [`RawJson`] as one reads a `serde_json::Value` (P1): the same method names for
//! the calls operators make on free-form fields, without building the whole `Value`.

use std::borrow::Cow;

use super::{JsonNode, RawJson};

impl RawJson {
    /// The member `key` of an object, shared with this document (no copy); `None` for a missing
    /// key or a document that is not an object. A key repeated on the wire reads as its last
    /// occurrence, as `serde_json::Value` reads it. As `Value::get` with a string key.
    ///
    /// ```
    /// use informer_runtime::compact::RawJson;
    /// let raw: RawJson = serde_json::from_str(r#"{"rules": {"audit": true}}"#).unwrap();
    /// assert_eq!(raw.get("rules").and_then(|r| r.get("audit")).and_then(|a| a.as_bool()), Some(true));
    /// assert!(raw.get("missing").is_none());
    /// ```
    pub fn get(&self, key: &str) -> Option<RawJson> {
        match &*self.0 {
            JsonNode::Object(members) => members
                .iter()
                .rev()
                .find(|(k, _)| k.as_str() == key)
                .map(|(_, v)| RawJson(v.clone())),
            JsonNode::Text(_) => None,
        }
    }

    /// The value a JSON Pointer (RFC 6901) names, as `Value::pointer`: `""` is the whole
    /// document, `/a/b/0` member `b` of member `a`, then element 0 of that array. Objects are
    /// walked without a copy; only the array or scalar the pointer ends in or passes through is
    /// read into a `Value`.
    ///
    /// ```
    /// use informer_runtime::compact::RawJson;
    /// let raw: RawJson = serde_json::from_str(r#"{"a": {"list": [{"x": 1}]}}"#).unwrap();
    /// assert_eq!(raw.pointer("/a/list/0/x"), Some(serde_json::json!(1)));
    /// assert_eq!(raw.pointer("/a/missing"), None);
    /// ```
    pub fn pointer(&self, pointer: &str) -> Option<serde_json::Value> {
        if pointer.is_empty() {
            return Some(self.to_value());
        }
        let rest = pointer.strip_prefix('/')?;
        let mut node = self.clone();
        let mut tokens = rest.split('/');
        while let Some(token) = tokens.next() {
            let key = token.replace("~1", "/").replace("~0", "~");
            if node.is_object() {
                node = node.get(&key)?;
                continue;
            }
            // An array or a scalar: the rest of the pointer reads its `Value`.
            let remaining: Vec<&str> = std::iter::once(token).chain(tokens).collect();
            let tail = format!("/{}", remaining.join("/"));
            return node.to_value().pointer(&tail).cloned();
        }
        Some(node.to_value())
    }

    /// Whether the document is a JSON object (`Value::is_object`).
    pub fn is_object(&self) -> bool {
        matches!(&*self.0, JsonNode::Object(_))
    }

    /// Whether the document is JSON `null` (`Value::is_null`).
    pub fn is_null(&self) -> bool {
        self.text() == Some("null")
    }

    /// Whether the document is a JSON array (`Value::is_array`).
    pub fn is_array(&self) -> bool {
        self.text().is_some_and(|t| t.starts_with('['))
    }

    /// The keys of an object in wire order (a repeated key once per occurrence); nothing for
    /// any other document.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        let members: &[_] = match &*self.0 {
            JsonNode::Object(members) => members,
            JsonNode::Text(_) => &[],
        };
        members.iter().map(|(k, _)| k.as_str())
    }

    /// A JSON string's contents (`Value::as_str`), borrowed when it needs no unescaping.
    ///
    /// ```
    /// use informer_runtime::compact::RawJson;
    /// let raw: RawJson = serde_json::from_str(r#"{"mode": "Audit", "quoted": "a\"b"}"#).unwrap();
    /// assert_eq!(raw.get("mode").unwrap().as_str().as_deref(), Some("Audit"));
    /// assert_eq!(raw.get("quoted").unwrap().as_str().as_deref(), Some("a\"b"));
    /// assert_eq!(raw.as_str(), None);
    /// ```
    pub fn as_str(&self) -> Option<Cow<'_, str>> {
        let text = self.text()?;
        let inner = text.strip_prefix('"')?.strip_suffix('"')?;
        if inner.contains('\\') {
            serde_json::from_str::<String>(text).ok().map(Cow::Owned)
        } else {
            Some(Cow::Borrowed(inner))
        }
    }

    /// A JSON boolean (`Value::as_bool`).
    pub fn as_bool(&self) -> Option<bool> {
        match self.text()? {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        }
    }

    /// A JSON number that fits an `i64` (`Value::as_i64`).
    pub fn as_i64(&self) -> Option<i64> {
        self.number()?.as_i64()
    }

    /// A JSON number that fits a `u64` (`Value::as_u64`).
    pub fn as_u64(&self) -> Option<u64> {
        self.number()?.as_u64()
    }

    /// A JSON number as an `f64` (`Value::as_f64`).
    pub fn as_f64(&self) -> Option<f64> {
        self.number()?.as_f64()
    }

    /// The JSON text of a scalar or an array; `None` for an object.
    fn text(&self) -> Option<&str> {
        match &*self.0 {
            JsonNode::Text(t) => Some(t.as_str()),
            JsonNode::Object(_) => None,
        }
    }

    fn number(&self) -> Option<serde_json::Number> {
        let text = self.text()?;
        text.starts_with(|c: char| c == '-' || c.is_ascii_digit())
            .then(|| serde_json::from_str(text).ok())
            .flatten()
    }
}

impl PartialEq<serde_json::Value> for RawJson {
    /// As `serde_json::Value`s compare: object members in any order.
    fn eq(&self, other: &serde_json::Value) -> bool {
        self.to_value() == *other
    }
}

impl PartialEq<RawJson> for serde_json::Value {
    fn eq(&self, other: &RawJson) -> bool {
        other == self
    }
}

impl From<serde_json::Value> for RawJson {
    fn from(value: serde_json::Value) -> Self {
        RawJson::from_value(&value)
    }
}

impl From<&RawJson> for serde_json::Value {
    fn from(raw: &RawJson) -> Self {
        raw.to_value()
    }
}

impl From<RawJson> for serde_json::Value {
    fn from(raw: RawJson) -> Self {
        raw.to_value()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::*;

    fn raw(v: &Value) -> RawJson {
        serde_json::from_value(v.clone()).expect("any Value decodes")
    }

    #[test]
    fn scalars_read_as_value_reads_them() {
        let doc = json!({"s": "x", "e": "a\\b\u{e9}", "t": true, "f": false, "n": null,
            "i": -3, "u": 18446744073709551615u64, "x": 1.5, "arr": [1, {"k": "v"}]});
        let r = raw(&doc);
        for key in ["s", "e", "t", "f", "n", "i", "u", "x", "arr"] {
            let (got, want) = (r.get(key).expect(key), &doc[key]);
            assert_eq!(got.as_str().as_deref(), want.as_str(), "{key}");
            assert_eq!(got.as_bool(), want.as_bool(), "{key}");
            assert_eq!(got.as_i64(), want.as_i64(), "{key}");
            assert_eq!(got.as_u64(), want.as_u64(), "{key}");
            assert_eq!(got.as_f64(), want.as_f64(), "{key}");
            assert_eq!(got.is_null(), want.is_null(), "{key}");
            assert_eq!(got.is_array(), want.is_array(), "{key}");
            assert_eq!(got.is_object(), want.is_object(), "{key}");
            assert_eq!(got, *want, "{key}");
        }
        assert!(r.is_object());
        assert_eq!(r.keys().count(), 9);
        assert_eq!(r.pointer("/arr/1/k"), Some(json!("v")));
        assert_eq!(r.pointer("/arr/2"), None);
        assert_eq!(r.pointer("no-slash"), None);
    }

    #[test]
    fn a_repeated_key_reads_as_its_last_occurrence() {
        let r: RawJson = serde_json::from_str(r#"{"a": 1, "a": 2}"#).expect("json");
        assert_eq!(r.get("a").and_then(|a| a.as_i64()), Some(2));
        assert_eq!(r.to_value()["a"], json!(2));
        assert_eq!(r.keys().collect::<Vec<_>>(), ["a", "a"]);
    }

    #[test]
    fn pointer_escapes_as_rfc_6901() {
        let r = raw(&json!({"a/b": {"m~n": 7}}));
        assert_eq!(r.pointer("/a~1b/m~0n"), Some(json!(7)));
        assert_eq!(r.pointer(""), Some(r.to_value()));
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|i| json!(i)),
            "[a-z\"\\\\é/~]{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-c/~]{1,3}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// Every path of `v`, as JSON Pointers.
    fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
        out.push(at.clone());
        match v {
            Value::Object(m) => {
                for (k, child) in m {
                    let k = k.replace('~', "~0").replace('/', "~1");
                    pointers(child, format!("{at}/{k}"), out);
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    pointers(child, format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
    }

    proptest! {
        /// The model: `serde_json::Value`'s own readers, at every path of any document.
        #[test]
        fn reads_agree_with_value_everywhere(doc in json_value()) {
            let r = raw(&doc);
            let mut paths = Vec::new();
            pointers(&doc, String::new(), &mut paths);
            for p in paths {
                let (got, want) = (r.pointer(&p), doc.pointer(&p));
                prop_assert_eq!(got.as_ref(), want, "{}", p);
            }
            if let Value::Object(m) = &doc {
                for (k, v) in m {
                    let got = r.get(k).expect("member");
                    let text = got.as_str();
                    prop_assert_eq!(text.as_deref(), v.as_str());
                    prop_assert_eq!(got.as_i64(), v.as_i64());
                    prop_assert!(got == *v);
                }
            }
            let built = RawJson::from(doc.clone());
            prop_assert_eq!(Value::from(&built), doc);
        }
    }
}
