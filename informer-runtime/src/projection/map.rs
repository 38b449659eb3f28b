//! [`StrMap`]: a compact, sorted string map for labels and annotations.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, Serializer};

use super::IStr;

/// A string-to-string map held as one exactly sized, key-sorted slice of interned pairs: 16 bytes
/// inline, 16 bytes per entry, no tree nodes (a `BTreeMap<String, String>` of nine labels takes a
/// 544-byte node plus 18 string allocations). Lookups are binary searches.
///
/// Decodes from a JSON object (a later duplicate key wins, as in a `BTreeMap`); `null` or an
/// absent field decodes as the empty map.
///
/// ```
/// use informer_runtime::projection::StrMap;
/// let labels: StrMap = serde_json::from_str(r#"{"b": "2", "a": "1"}"#).unwrap();
/// assert_eq!(labels.get("a"), Some("1"));
/// assert_eq!(labels.iter().map(|(k, _)| k).collect::<Vec<_>>(), ["a", "b"]);
/// ```
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct StrMap(Box<[(IStr, IStr)]>);

impl StrMap {
    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .binary_search_by(|(k, _)| k.as_str().cmp(key))
            .ok()
            .map(|i| self.0[i].1.as_str())
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The entries in key order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &str)> + '_ {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// A copy as a `BTreeMap`, the shape of `ObjectMeta::labels`.
    pub fn to_btree_map(&self) -> BTreeMap<String, String> {
        self.iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }

    fn from_unsorted(pairs: Vec<(IStr, IStr)>) -> Self {
        StrMap(sorted_last_wins(pairs))
    }
}

/// Sorts pairs by key and keeps the last of equal keys (a later duplicate wins, as in a
/// `BTreeMap` built by inserting in order): the layout of [`StrMap`] and `compact::CMap`.
pub(crate) fn sorted_last_wins<V>(mut pairs: Vec<(IStr, V)>) -> Box<[(IStr, V)]> {
    // A stable sort keeps equal keys in input order, so the last of each run is the latest.
    pairs.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out: Vec<(IStr, V)> = Vec::with_capacity(pairs.len());
    for pair in pairs {
        match out.last_mut() {
            Some(last) if last.0 == pair.0 => *last = pair,
            _ => out.push(pair),
        }
    }
    out.into_boxed_slice()
}

impl<K: AsRef<str>, V: AsRef<str>> FromIterator<(K, V)> for StrMap {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        StrMap::from_unsorted(
            iter.into_iter()
                .map(|(k, v)| (IStr::new(k.as_ref()), IStr::new(v.as_ref())))
                .collect(),
        )
    }
}

impl From<&BTreeMap<String, String>> for StrMap {
    fn from(map: &BTreeMap<String, String>) -> Self {
        map.iter().collect()
    }
}

/// Equal when both hold the same pairs: a cached `data` or `labels` compared with the map a
/// reconcile wants, with no copy (`cm.data.as_ref().is_some_and(|d| *d == wanted)`). Both are
/// sorted by key in byte order, so this is one pass.
impl PartialEq<BTreeMap<String, String>> for StrMap {
    fn eq(&self, other: &BTreeMap<String, String>) -> bool {
        self.len() == other.len()
            && self
                .iter()
                .zip(other)
                .all(|((k, v), (ok, ov))| k == ok && v == ov)
    }
}

impl fmt::Debug for StrMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl Serialize for StrMap {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.iter() {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for StrMap {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        StrMap::deserialize_values::<D, IStr>(deserializer)
    }
}

impl StrMap {
    /// Decodes a map (`null` is the empty map) whose values decode as `V`, then become strings:
    /// `IStr` itself, or a quantity that also reads JSON numbers (`compact::quantity`).
    pub(crate) fn deserialize_values<'de, D, V>(deserializer: D) -> Result<Self, D::Error>
    where
        D: Deserializer<'de>,
        V: Deserialize<'de> + Into<IStr>,
    {
        struct Vis<V>(std::marker::PhantomData<fn() -> V>);
        impl<'de, V: Deserialize<'de> + Into<IStr>> Visitor<'de> for Vis<V> {
            type Value = StrMap;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of strings")
            }
            fn visit_unit<E>(self) -> Result<StrMap, E> {
                Ok(StrMap::default())
            }
            fn visit_none<E>(self) -> Result<StrMap, E> {
                Ok(StrMap::default())
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<StrMap, D::Error> {
                d.deserialize_map(self)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StrMap, A::Error> {
                // The size hint only sizes the buffer; cap it so a hostile hint cannot allocate.
                let mut pairs = Vec::with_capacity(map.size_hint().unwrap_or(0).min(256));
                while let Some((k, v)) = map.next_entry::<IStr, V>()? {
                    pairs.push((k, v.into()));
                }
                Ok(StrMap::from_unsorted(pairs))
            }
        }
        deserializer.deserialize_option(Vis::<V>(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// StrMap agrees with BTreeMap on decode (including duplicates: the last wins) and lookups.
        #[test]
        fn strmap_decodes_like_a_btree_map(
            pairs in prop::collection::vec(("[a-d]{1,2}", "[x-z]{0,2}"), 0..12),
            probe in "[a-d]{1,2}",
        ) {
            let json = format!(
                "{{{}}}",
                pairs.iter().map(|(k, v)| format!("\"{k}\":\"{v}\"")).collect::<Vec<_>>().join(",")
            );
            let map: StrMap = serde_json::from_str(&json).unwrap();
            let reference: BTreeMap<String, String> = serde_json::from_str(&json).unwrap();
            prop_assert_eq!(map.to_btree_map(), reference.clone());
            prop_assert!(map == reference);
            let mut other = reference.clone();
            other.insert(probe.clone(), "changed".into());
            prop_assert!(map != other, "a changed or added pair is unequal");
            prop_assert_eq!(map.get(&probe), reference.get(&probe).map(String::as_str));
            prop_assert_eq!(serde_json::to_value(&map).unwrap(), serde_json::to_value(&reference).unwrap());
        }
    }

    #[test]
    fn null_is_the_empty_map() {
        let map: StrMap = serde_json::from_str("null").unwrap();
        assert!(map.is_empty());
    }
}
