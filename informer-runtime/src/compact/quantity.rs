//! Decoding of `resource.Quantity` fields in compact types (P1).
//!
//! A compact type keeps a quantity as an [`IStr`], whose own decode takes only strings (like
//! k8s-openapi's `String`). k8s-openapi's `Quantity` also takes a JSON number (`"memory": 0`) and
//! keeps its decimal text, which it then writes back as a string; a quantity field of a compact
//! type must read the same bytes to the same JSON, so generated code decodes every field that
//! holds quantities (alone, optional, in a list or as map values) through these functions.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, SeqAccess, Visitor};

use crate::projection::{IStr, StrMap};

/// A value of type `T` decoded with its quantities read as k8s-openapi's `Quantity` reads them.
#[doc(hidden)]
pub struct Lenient<T>(T);

impl<'de> Deserialize<'de> for Lenient<IStr> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = IStr;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a quantity (a string or a number)")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<IStr, E> {
                Ok(IStr::new(s))
            }
            // The number's text as Rust prints it, which is what k8s-openapi keeps.
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<IStr, E> {
                Ok(IStr::new(&v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<IStr, E> {
                Ok(IStr::new(&v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<IStr, E> {
                Ok(IStr::new(&v.to_string()))
            }
        }
        deserializer.deserialize_any(V).map(Lenient)
    }
}

impl From<Lenient<IStr>> for IStr {
    fn from(Lenient(s): Lenient<IStr>) -> IStr {
        s
    }
}

impl<'de> Deserialize<'de> for Lenient<StrMap> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        StrMap::deserialize_values::<D, Lenient<IStr>>(deserializer).map(Lenient)
    }
}

impl<'de> Deserialize<'de> for Lenient<Box<[IStr]>> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Box<[IStr]>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of quantities")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Box<[IStr]>, A::Error> {
                // The size hint only sizes the buffer; capped so a hostile hint cannot allocate.
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(256));
                while let Some(Lenient(v)) = seq.next_element::<Lenient<IStr>>()? {
                    out.push(v);
                }
                Ok(out.into_boxed_slice())
            }
        }
        deserializer.deserialize_seq(V).map(Lenient)
    }
}

// One impl per optional shape rather than a generic `Option<T>` one: with a generic impl, the
// trait solver recurses without end on the field type it has not inferred yet.
macro_rules! lenient_option {
    ($($t:ty),*) => {$(
        impl<'de> Deserialize<'de> for Lenient<Option<$t>> {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                Ok(Lenient(
                    Option::<Lenient<$t>>::deserialize(deserializer)?.map(|Lenient(v)| v),
                ))
            }
        }
    )*};
}
lenient_option!(IStr, StrMap, Box<[IStr]>);

/// Decodes a field holding quantities: `IStr`, `StrMap`, `Box<[IStr]>` or an `Option` of one.
#[doc(hidden)]
pub fn quantity<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    Lenient<T>: Deserialize<'de>,
{
    Ok(Lenient::<T>::deserialize(deserializer)?.0)
}

/// [`quantity`] for a required field, where `null` is the type's default (as `null_default`).
#[doc(hidden)]
pub fn quantity_or_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default,
    Lenient<T>: Deserialize<'de>,
{
    Ok(Option::<Lenient<T>>::deserialize(deserializer)?
        .map(|Lenient(v)| v)
        .unwrap_or_default())
}

/// [`quantity`] for an optional `nullable` field of a CRD type (as `nullable`).
#[doc(hidden)]
pub fn quantity_nullable<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    Lenient<T>: Deserialize<'de>,
{
    Ok(Some(
        Option::<Lenient<T>>::deserialize(deserializer)?.map(|Lenient(v)| v),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use proptest::prelude::*;
    use serde_json::Value;
    use std::collections::BTreeMap;

    #[derive(serde::Deserialize, serde::Serialize)]
    struct Fields {
        #[serde(default, deserialize_with = "quantity")]
        one: Option<IStr>,
        #[serde(default, deserialize_with = "quantity")]
        map: Option<StrMap>,
        #[serde(default, deserialize_with = "quantity")]
        list: Option<Box<[IStr]>>,
    }

    #[derive(serde::Deserialize, serde::Serialize)]
    struct Reference {
        #[serde(default)]
        one: Option<Quantity>,
        #[serde(default)]
        map: Option<BTreeMap<String, Quantity>>,
        #[serde(default)]
        list: Option<Vec<Quantity>>,
    }

    fn quantity_value() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            "[0-9a-zA-Z.]{0,6}".prop_map(Value::from),
            Just(serde_json::json!({})),
        ]
    }

    proptest! {
        /// Every field shape accepts and refuses what k8s-openapi's `Quantity` does, and writes
        /// back the same JSON.
        #[test]
        fn quantity_fields_read_what_k8s_openapi_reads(
            one in quantity_value(),
            map in prop::collection::btree_map("[a-c]", quantity_value(), 0..4),
            list in prop::collection::vec(quantity_value(), 0..4),
        ) {
            let doc = serde_json::json!({ "one": one, "map": map, "list": list });
            let ours = serde_json::from_value::<Fields>(doc.clone());
            let theirs = serde_json::from_value::<Reference>(doc);
            prop_assert_eq!(ours.is_ok(), theirs.is_ok(), "{:?}", ours.as_ref().err());
            if let (Ok(ours), Ok(theirs)) = (ours, theirs) {
                prop_assert_eq!(
                    serde_json::to_value(ours).unwrap(),
                    serde_json::to_value(theirs).unwrap()
                );
            }
        }
    }

    #[test]
    fn a_number_is_kept_as_its_text() {
        let f: Fields =
            serde_json::from_str(r#"{"one":0,"map":{"memory":0,"cpu":"1.5","x":2.5},"list":[1]}"#)
                .unwrap();
        assert_eq!(f.one.as_ref().map(IStr::as_str), Some("0"));
        let map = f.map.unwrap();
        assert_eq!(map.get("memory"), Some("0"));
        assert_eq!(map.get("cpu"), Some("1.5"));
        assert_eq!(map.get("x"), Some("2.5"));
        assert_eq!(f.list.unwrap()[0].as_str(), "1");
    }
}
