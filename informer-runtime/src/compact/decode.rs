//! One JSON decoder for every generated struct, driven by a small per-type table (decision
//! record 26, "What it costs").
//!
//! serde's derived `Deserialize` writes, for every struct, a field enum with three visitors, a
//! sequence visitor, a map visitor with one `Option` per field, and one wrapper type per
//! `deserialize_with` field, twice. informer-k8s generates 549 compact structs, and that code was
//! more than half of the crate and most of its build time. A generated struct instead implements
//! `Fields` (its name, its JSON keys, a `match` from key to index and one from index to field)
//! and its `Deserialize` calls `deserialize`, written once here: it starts from the type's
//! `Default` and sets each field it reads.
//!
//! What it decodes is what serde's derive decodes for the same attributes: unknown keys are
//! skipped, a repeated key is an error (`duplicate field`), an absent field without `default` is
//! `None` if it is an `Option` and an error (`missing field`) otherwise (`missing`), and each
//! field decodes as its `deserialize_with` says (the value functions below). Only a JSON object decodes; serde's derive also reads a struct from an
//! array, which no Kubernetes object is.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{
    self, Deserialize, DeserializeSeed, Deserializer, Error as _, IgnoredAny, MapAccess, Visitor,
};

use super::quantity::Lenient;

/// A generated struct that [`deserialize`] decodes: implemented by informer-gen's output only.
///
/// Field indexes are fixed per JSON key across Kubernetes versions (a field that one version
/// gives another shape keeps its index), so [`Fields::KEYS`] needs no `cfg`; fewer than 128.
pub trait Fields: Default {
    /// The struct's name, for errors (`expected struct Pod`).
    const NAME: &'static str;
    /// The JSON keys by index.
    const KEYS: &'static [&'static str];
    /// The index of a JSON key this version has, `None` for any other key.
    fn index(key: &str) -> Option<u8>;
    /// Decodes the value of field `index` from `map` into `self`.
    fn set<'de, A: MapAccess<'de>>(&mut self, index: u8, map: &mut A) -> Result<(), A::Error>;
    /// Called once the object is read, with the bits of the indexes `seen`: each field without
    /// `default` that is absent is decoded by [`missing`] (an `Option` is `None`, as serde's
    /// derive has it), or is a `missing field` error if it has a `deserialize_with`.
    fn finish<E: de::Error>(&mut self, seen: u128) -> Result<(), E> {
        let _ = seen;
        Ok(())
    }
}

/// `Deserialize::deserialize` of a generated struct.
pub fn deserialize<'de, T: Fields, D: Deserializer<'de>>(deserializer: D) -> Result<T, D::Error> {
    deserializer.deserialize_struct(T::NAME, T::KEYS, StructVisitor::<T>(PhantomData))
}

struct StructVisitor<T>(PhantomData<T>);

impl<'de, T: Fields> Visitor<'de> for StructVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "struct {}", T::NAME)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        let mut out = T::default();
        let mut seen = 0u128;
        while let Some(key) = map.next_key_seed(Key::<T>(PhantomData))? {
            let Some(index) = key else {
                map.next_value::<IgnoredAny>()?;
                continue;
            };
            let bit = 1u128 << (index & 127);
            if seen & bit != 0 {
                let name = T::KEYS.get(usize::from(index)).copied().unwrap_or("?");
                return Err(A::Error::duplicate_field(name));
            }
            seen |= bit;
            out.set(index, &mut map)?;
        }
        out.finish(seen)?;
        Ok(out)
    }
}

/// A map key, looked up in `T`'s table while the deserializer still holds it (no copy).
struct Key<T>(PhantomData<T>);

impl<'de, T: Fields> DeserializeSeed<'de> for Key<T> {
    type Value = Option<u8>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<u8>, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl<T: Fields> Visitor<'_> for Key<T> {
    type Value = Option<u8>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Option<u8>, E> {
        Ok(T::index(key))
    }

    fn visit_bytes<E: de::Error>(self, key: &[u8]) -> Result<Option<u8>, E> {
        Ok(std::str::from_utf8(key).ok().and_then(T::index))
    }
}

/// An absent field without `default` or `deserialize_with`, as serde's derive decodes it: from
/// a deserializer of nothing, which an `Option` reads as `None` and anything else refuses with
/// `missing field`.
pub fn missing<'de, T: Deserialize<'de>, E: de::Error>(name: &'static str) -> Result<T, E> {
    T::deserialize(Missing(name, PhantomData))
}

/// The value of an absent field: only `deserialize_option` has an answer.
struct Missing<E>(&'static str, PhantomData<E>);

impl<'de, E: de::Error> Deserializer<'de> for Missing<E> {
    type Error = E;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, E> {
        Err(E::missing_field(self.0))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        visitor.visit_none()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier
        ignored_any
    }
}

/// A field without `deserialize_with`.
#[inline]
pub fn value<'de, A: MapAccess<'de>, T: Deserialize<'de>>(map: &mut A) -> Result<T, A::Error> {
    map.next_value()
}

/// A field with `deserialize_with = "null_default"`: `null` is the type's default.
#[inline]
pub fn null_default<'de, A, T>(map: &mut A) -> Result<T, A::Error>
where
    A: MapAccess<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(map.next_value::<Option<T>>()?.unwrap_or_default())
}

/// A field with `deserialize_with = "nullable"`: present, `null` included, is `Some`.
#[inline]
pub fn nullable<'de, A, T>(map: &mut A) -> Result<Option<Option<T>>, A::Error>
where
    A: MapAccess<'de>,
    T: Deserialize<'de>,
{
    Ok(Some(map.next_value::<Option<T>>()?))
}

/// A field with `deserialize_with = "quantity"`.
#[inline]
pub fn quantity<'de, A, T>(map: &mut A) -> Result<T, A::Error>
where
    A: MapAccess<'de>,
    Lenient<T>: Deserialize<'de>,
{
    map.next_value_seed(QuantitySeed(PhantomData))
}

/// A field with `deserialize_with = "quantity_or_default"`.
#[inline]
pub fn quantity_or_default<'de, A, T>(map: &mut A) -> Result<T, A::Error>
where
    A: MapAccess<'de>,
    T: Default,
    Lenient<T>: Deserialize<'de>,
{
    map.next_value_seed(QuantityOrDefaultSeed(PhantomData))
}

/// A field with `deserialize_with = "quantity_nullable"`.
#[inline]
pub fn quantity_nullable<'de, A, T>(map: &mut A) -> Result<Option<Option<T>>, A::Error>
where
    A: MapAccess<'de>,
    Lenient<T>: Deserialize<'de>,
{
    map.next_value_seed(QuantityNullableSeed(PhantomData))
}

// The quantity functions as seeds: a function generic over its deserializer cannot be a value
// before that type is known, so each gets a seed that calls it with the one it is given.
struct QuantitySeed<T>(PhantomData<T>);
struct QuantityOrDefaultSeed<T>(PhantomData<T>);
struct QuantityNullableSeed<T>(PhantomData<T>);

impl<'de, T> DeserializeSeed<'de> for QuantitySeed<T>
where
    Lenient<T>: Deserialize<'de>,
{
    type Value = T;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<T, D::Error> {
        super::quantity::quantity(deserializer)
    }
}

impl<'de, T: Default> DeserializeSeed<'de> for QuantityOrDefaultSeed<T>
where
    Lenient<T>: Deserialize<'de>,
{
    type Value = T;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<T, D::Error> {
        super::quantity::quantity_or_default(deserializer)
    }
}

impl<'de, T> DeserializeSeed<'de> for QuantityNullableSeed<T>
where
    Lenient<T>: Deserialize<'de>,
{
    type Value = Option<Option<T>>;
    fn deserialize<D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Option<Option<T>>, D::Error> {
        super::quantity::quantity_nullable(deserializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::IStr;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    /// What informer-gen emits for a struct with one field of each decoding, written by hand.
    #[derive(Debug, Default, PartialEq)]
    struct Table {
        name: Option<IStr>,
        count: i64,
        size: Option<IStr>,
        nullable: Option<Option<i32>>,
        limit: IStr,
        must: bool,
        maybe: Option<i32>,
        size_needed: IStr,
    }

    impl<'de> Deserialize<'de> for Table {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            super::deserialize(deserializer)
        }
    }

    impl Fields for Table {
        const NAME: &'static str = "Table";
        const KEYS: &'static [&'static str] = &[
            "name",
            "count",
            "size",
            "nullable",
            "limit",
            "must",
            "maybe",
            "sizeNeeded",
        ];
        fn index(key: &str) -> Option<u8> {
            match key {
                "name" => Some(0),
                "count" => Some(1),
                "size" => Some(2),
                "nullable" => Some(3),
                "limit" => Some(4),
                "must" => Some(5),
                "maybe" => Some(6),
                "sizeNeeded" => Some(7),
                _ => None,
            }
        }
        fn set<'de, A: MapAccess<'de>>(&mut self, index: u8, map: &mut A) -> Result<(), A::Error> {
            match index {
                0 => self.name = value(map)?,
                1 => self.count = null_default(map)?,
                2 => self.size = quantity(map)?,
                3 => self.nullable = nullable(map)?,
                4 => self.limit = quantity_or_default(map)?,
                5 => self.must = value(map)?,
                6 => self.maybe = value(map)?,
                7 => self.size_needed = quantity(map)?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(())
        }
        fn finish<E: de::Error>(&mut self, seen: u128) -> Result<(), E> {
            if seen & (1 << 5) == 0 {
                self.must = missing("must")?;
            }
            if seen & (1 << 6) == 0 {
                self.maybe = missing("maybe")?;
            }
            if seen & (1 << 7) == 0 {
                return Err(E::missing_field("sizeNeeded"));
            }
            Ok(())
        }
    }

    /// The same struct with serde's derive and the attributes informer-gen writes for it.
    #[derive(Debug, PartialEq, serde::Deserialize)]
    struct Derived {
        #[serde(default)]
        name: Option<IStr>,
        #[serde(default, deserialize_with = "crate::compact::null_default")]
        count: i64,
        #[serde(default, deserialize_with = "crate::compact::quantity")]
        size: Option<IStr>,
        #[serde(default, deserialize_with = "crate::compact::nullable")]
        nullable: Option<Option<i32>>,
        #[serde(default, deserialize_with = "crate::compact::quantity_or_default")]
        limit: IStr,
        must: bool,
        maybe: Option<i32>,
        #[serde(rename = "sizeNeeded", deserialize_with = "crate::compact::quantity")]
        size_needed: IStr,
    }

    fn same(t: &Table, d: &Derived) -> bool {
        t.name == d.name
            && t.count == d.count
            && t.size == d.size
            && t.nullable == d.nullable
            && t.limit == d.limit
            && t.must == d.must
            && t.maybe == d.maybe
            && t.size_needed == d.size_needed
    }

    /// A value of any shape the fields might meet.
    fn any_value() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i32>().prop_map(Value::from),
            (0.0f64..1e6).prop_map(Value::from),
            "[a-z0-9]{0,4}".prop_map(Value::from),
            Just(json!([1, "x"])),
            Just(json!({"a": 1})),
        ]
    }

    proptest! {
        /// The table decoder and serde's derive agree on every object: the same value, or both
        /// an error with the same message (a repeated key, an absent required field, a value of
        /// the wrong type), unknown keys skipped by both.
        #[test]
        fn agrees_with_serde_derive(
            entries in prop::collection::vec(
                (prop::sample::select(vec![
                    "name", "count", "size", "nullable", "limit", "must", "maybe", "sizeNeeded",
                    "other",
                ]), any_value()),
                0..9,
            )
        ) {
            // Written by hand so that a key can repeat.
            let body: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{}:{v}", Value::from(*k)))
                .collect();
            let text = format!("{{{}}}", body.join(","));
            let table = serde_json::from_str::<Table>(&text);
            let derived = serde_json::from_str::<Derived>(&text);
            match (&table, &derived) {
                (Ok(t), Ok(d)) => prop_assert!(same(t, d), "{text}: {t:?} vs {d:?}"),
                (Err(t), Err(d)) => prop_assert_eq!(t.to_string(), d.to_string(), "{}", text),
                _ => prop_assert!(false, "{text}: {table:?} vs {derived:?}"),
            }
        }
    }

    #[test]
    fn errors_name_the_struct_and_field() {
        let e = serde_json::from_str::<Table>("[]").unwrap_err().to_string();
        assert!(e.contains("expected struct Table"), "{e}");
        let e = serde_json::from_str::<Table>(r#"{"name":"a"}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing field `must`"), "{e}");
        let e = serde_json::from_str::<Table>(r#"{"must":true,"must":false}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("duplicate field `must`"), "{e}");
    }

    #[test]
    fn reads_from_a_json_value_too() {
        let v = json!({"must": true, "size": 3, "count": null, "nullable": null, "sizeNeeded": 1});
        let t: Table = serde_json::from_value(v).unwrap();
        assert_eq!(t.size.as_deref(), Some("3"));
        assert_eq!(t.count, 0);
        assert_eq!(t.nullable, Some(None));
        assert!(t.must);
        assert_eq!(t.maybe, None, "an absent Option without default is None");
        assert_eq!(t.size_needed.as_str(), "1");
        let e = serde_json::from_str::<Table>(r#"{"must":true}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing field `sizeNeeded`"), "{e}");
    }
}
