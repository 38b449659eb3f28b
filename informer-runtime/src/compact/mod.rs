//! Building blocks of the compact full-fidelity types that informer-gen generates (P1-P3, P7).
//!
//! A compact type has the same fields, JSON names and serde shape as its k8s-openapi type, and
//! costs a fraction of its memory in a cache:
//!
//! | k8s-openapi                     | compact                          | why                                   |
//! |---------------------------------|----------------------------------|---------------------------------------|
//! | `String`, `Quantity`            | [`IStr`]                         | 8 B, equal strings share one copy     |
//! | `Vec<T>`                        | `Box<[T]>`                       | 16 B, exactly sized                   |
//! | `BTreeMap<String, String>`      | [`StrMap`]                       | one sorted slice, no tree nodes       |
//! | `BTreeMap<String, T>`           | [`CMap<T>`]                      | one sorted slice, no tree nodes       |
//! | `Option<LargeStruct>`           | `Option<Box<LargeStruct>>`       | 8 B while absent (most are)           |
//! | `FieldsV1`, `RawExtension`, `serde_json::Value` | [`RawJson`]      | a tree of shared objects              |
//! | `apiVersion`, `kind`            | [`ApiVersionTag`], [`KindTag`]   | zero bytes; checked on decode (R16)   |
//! | a container, volume, toleration… | [`Shared<T>`]                   | 8 B, equal parts of all objects share one copy |
//!
//! Generated code converts both ways with `From` impls (P2), field by field through one generic
//! impl per field shape ([`FromFull`], [`ToFull`]), with no serde round trip:
//! `compact::api::core::v1::Pod::from(&pod)` and `k8s_openapi::api::core::v1::Pod::from(&compact)`.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, Serializer};

use crate::projection::ProjectFrom;
pub use crate::projection::{IStr, StrMap};

mod convert;
/// The decoder of generated structs; named by generated code through `__private` only.
#[doc(hidden)]
pub mod decode;
mod quantity;
mod raw;
mod recent;
mod shared;
pub use convert::{FromFull, ToFull};
pub use quantity::{Lenient, quantity, quantity_nullable, quantity_or_default};
pub use raw::RawJson;
pub use shared::{Pool, PoolStats, Share, ShareHash, Shared};

// A projection of a generated type keeps its compact fields as they are (P4), like `IStr` and
// `StrMap` in `projection`.
impl ProjectFrom<RawJson> for RawJson {}
impl ProjectFrom<JsonNumber> for JsonNumber {}

/// A map with string keys and values of any type, held as one exactly sized, key-sorted slice
/// (the compact form of `BTreeMap<String, T>`; [`StrMap`] for string values).
///
/// Decodes from a JSON object (a later duplicate key wins, as in a `BTreeMap`) and serializes in
/// key order, as the `BTreeMap` does.
///
/// ```
/// use informer_runtime::compact::CMap;
/// let m: CMap<i32> = serde_json::from_str(r#"{"b": 2, "a": 1}"#).unwrap();
/// assert_eq!(m.get("a"), Some(&1));
/// assert_eq!(serde_json::to_string(&m).unwrap(), r#"{"a":1,"b":2}"#);
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct CMap<V>(Box<[(IStr, V)]>);

impl<V> Default for CMap<V> {
    fn default() -> Self {
        CMap(Box::new([]))
    }
}

impl<V> CMap<V> {
    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&V> {
        self.0
            .binary_search_by(|(k, _)| k.as_str().cmp(key))
            .ok()
            .map(|i| &self.0[i].1)
    }

    /// The entries in key order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &V)> + '_ {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn from_unsorted(pairs: Vec<(IStr, V)>) -> Self {
        CMap(crate::projection::map::sorted_last_wins(pairs))
    }
}

impl<K: AsRef<str>, V> FromIterator<(K, V)> for CMap<V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        CMap::from_unsorted(
            iter.into_iter()
                .map(|(k, v)| (IStr::new(k.as_ref()), v))
                .collect(),
        )
    }
}

impl<V: fmt::Debug> fmt::Debug for CMap<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<V: Serialize> Serialize for CMap<V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.iter() {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for CMap<V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Vis<V>(PhantomData<fn() -> V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for Vis<V> {
            type Value = CMap<V>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<CMap<V>, A::Error> {
                // The size hint only sizes the buffer; cap it so a hostile hint cannot allocate.
                let mut pairs = Vec::with_capacity(map.size_hint().unwrap_or(0).min(256));
                while let Some(pair) = map.next_entry::<IStr, V>()? {
                    pairs.push(pair);
                }
                Ok(CMap::from_unsorted(pairs))
            }
        }
        deserializer.deserialize_map(Vis(PhantomData))
    }
}

/// The `apiVersion` of a compact top-level kind: zero bytes, serialized from `K`'s constant, and
/// checked on decode (an object of another group/version is an error, R16). Absent is accepted:
/// list items carry no `apiVersion`.
pub struct ApiVersionTag<K>(PhantomData<fn() -> K>);

/// The `kind` of a compact top-level kind: zero bytes, serialized from `K`'s constant, and checked
/// on decode (R16). Absent is accepted: list items carry no `kind`.
pub struct KindTag<K>(PhantomData<fn() -> K>);

macro_rules! tag {
    ($tag:ident, $konst:ident, $what:literal) => {
        impl<K> Default for $tag<K> {
            fn default() -> Self {
                $tag(PhantomData)
            }
        }
        impl<K> Clone for $tag<K> {
            fn clone(&self) -> Self {
                *self
            }
        }
        impl<K> Copy for $tag<K> {}
        impl<K> PartialEq for $tag<K> {
            fn eq(&self, _: &Self) -> bool {
                true
            }
        }
        impl<K> Eq for $tag<K> {}
        impl<K: k8s_openapi::Resource> fmt::Debug for $tag<K> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(K::$konst)
            }
        }
        impl<K: k8s_openapi::Resource> Serialize for $tag<K> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(K::$konst)
            }
        }
        impl<'de, K: k8s_openapi::Resource> Deserialize<'de> for $tag<K> {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct Vis<K>(PhantomData<fn() -> K>);
                impl<K: k8s_openapi::Resource> Visitor<'_> for Vis<K> {
                    type Value = $tag<K>;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        write!(f, concat!("the ", $what, " `{}`"), K::$konst)
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$tag<K>, E> {
                        if v == K::$konst {
                            Ok($tag(PhantomData))
                        } else {
                            Err(E::custom(format_args!(
                                concat!("expected ", $what, " `{}`, got `{}`"),
                                K::$konst,
                                v
                            )))
                        }
                    }
                }
                deserializer.deserialize_str(Vis(PhantomData))
            }
        }
    };
}

tag!(ApiVersionTag, API_VERSION, "apiVersion");
tag!(KindTag, KIND, "kind");

/// A JSON number kept exactly as written: `1` stays `1` and `1.0` stays `1.0` (a CRD's
/// `type: number`, where an `f64` would turn `1` into `1.0` on re-encode). 16 bytes.
///
/// ```
/// use informer_runtime::compact::JsonNumber;
/// let n: JsonNumber = serde_json::from_str("1").unwrap();
/// assert_eq!(serde_json::to_string(&n).unwrap(), "1");
/// assert_eq!(n.as_f64(), 1.0);
/// ```
#[derive(Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct JsonNumber(pub serde_json::Number);

impl JsonNumber {
    /// The value as an `f64` (lossy for integers above 2^53).
    pub fn as_f64(&self) -> f64 {
        self.0.as_f64().unwrap_or(f64::NAN)
    }

    /// The value as an `i64`, when it is an integer that fits.
    pub fn as_i64(&self) -> Option<i64> {
        self.0.as_i64()
    }
}

impl Default for JsonNumber {
    /// `0`.
    fn default() -> Self {
        JsonNumber(serde_json::Number::from(0))
    }
}

impl fmt::Debug for JsonNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl From<i64> for JsonNumber {
    fn from(v: i64) -> Self {
        JsonNumber(v.into())
    }
}

/// Decodes a required field the way k8s-openapi does: `null` is the type's default, like absent.
#[doc(hidden)]
pub fn null_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// Decodes an optional `nullable` field of a type generated from a CRD schema: a present value,
/// `null` included, is `Some` (`Some(None)` for `null`); absent stays `None` through `default`.
/// With `skip_serializing_if = "Option::is_none"` an explicit `null` is written back as it came.
#[doc(hidden)]
pub fn nullable<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Some(Option::<T>::deserialize(deserializer)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    proptest! {
        /// A CMap holds what a BTreeMap holds, in the same order.
        #[test]
        fn cmap_agrees_with_btree_map(m in prop::collection::btree_map(".{0,6}", any::<i32>(), 0..12)) {
            let text = serde_json::to_string(&m).unwrap();
            let c: CMap<i32> = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(serde_json::to_string(&c).unwrap(), text);
            for (k, v) in &m {
                prop_assert_eq!(c.get(k), Some(v));
            }
            prop_assert_eq!(c.len(), m.len());
        }
    }

    #[test]
    fn tags_check_the_kind_r16() {
        use k8s_openapi::api::core::v1::Pod;
        let ok: KindTag<Pod> = serde_json::from_str("\"Pod\"").unwrap();
        assert_eq!(serde_json::to_string(&ok).unwrap(), "\"Pod\"");
        let err = serde_json::from_str::<KindTag<Pod>>("\"Node\"").unwrap_err();
        assert!(
            err.to_string().contains("expected kind `Pod`, got `Node`"),
            "{err}"
        );
        let err = serde_json::from_str::<ApiVersionTag<Pod>>("\"v2\"").unwrap_err();
        assert!(
            err.to_string().contains("expected apiVersion `v1`"),
            "{err}"
        );
        assert_eq!(std::mem::size_of::<KindTag<Pod>>(), 0);
    }
}
