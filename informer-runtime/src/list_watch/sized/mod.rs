//! JSON decoding that gives every `Vec` its exact length as capacity (M8: memory per cached object).
//!
//! `serde_json` cannot know how long an array is before it has read it, so `Vec<T>` grows by
//! doubling while it decodes and keeps the spare capacity for the object's whole life in the
//! cache. For a realistic Pod (k8s-openapi's `Container` is 2.3 KiB inline, `Volume` 3.3 KiB) that
//! is about 14% of its heap. A deep `clone()` would compact it (kube-runtime's store clones every
//! object it receives, which is why its cache is smaller than a plain decode), but costs more than
//! the decode itself, and X7 forbids it.
//!
//! Instead, [`from_slice`] first counts the elements of every array in the input in one fast pass
//! over the bytes (strings are skipped with `memchr`), then decodes through a thin wrapper around
//! `serde_json`'s deserializer whose sequences report those counts as their `size_hint`; serde's
//! `Vec` impl uses the hint for `Vec::with_capacity`. Arrays are matched to counts by their order
//! in the document, which is the order `serde_json` visits them in: the wrapper routes every
//! value, including ignored ones, through its own visitors so no array is skipped unseen.
//!
//! The body's UTF-8 is validated once, up front, instead of string by string as `from_slice`
//! does (4% of a list's CPU).
//!
//! The counts only ever size allocations: a wrong count cannot change what is decoded. If an
//! array's real length ever differs from its count (a type that reads arrays behind the wrapper's
//! back), hints are switched off for the rest of the document. Errors are `serde_json`'s own,
//! with their line and column.

mod scan;

use std::cell::Cell;
use std::fmt;

use self::scan::count_arrays;
pub(crate) use self::scan::{array_lengths, value_array_lengths};
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};

/// Decodes `bytes` as `T` like `serde_json::from_slice`, with exactly sized `Vec`s.
pub(crate) fn from_slice<T: DeserializeOwned>(bytes: &[u8]) -> serde_json::Result<T> {
    from_slice_seed(bytes, std::marker::PhantomData::<T>)
}

/// [`from_slice`] through a seed.
fn from_slice_seed<'a, S: DeserializeSeed<'a>>(
    bytes: &'a [u8],
    seed: S,
) -> serde_json::Result<S::Value> {
    let hints = Hints {
        lens: array_lengths(bytes),
        next: Cell::new(0),
        on: Cell::new(true),
    };
    // Validating UTF-8 once for the whole body is cheaper than `from_slice`'s string-by-string
    // check; invalid input takes the slice path, whose error names the position.
    match std::str::from_utf8(bytes) {
        Ok(text) => decode(serde_json::Deserializer::from_str(text), &hints, seed),
        Err(_) => decode(serde_json::Deserializer::from_slice(bytes), &hints, seed),
    }
}

/// [`from_slice_seed`] without the counting pass: `Vec`s grow as `serde_json` grows them. For
/// types that hold few arrays of their own (projections, P4), counting every array of the page,
/// the skipped ones included, costs more than it saves.
pub(crate) fn from_slice_seed_unsized<'a, S: DeserializeSeed<'a>>(
    bytes: &'a [u8],
    seed: S,
) -> serde_json::Result<S::Value> {
    fn plain<'de, R: serde_json::de::Read<'de>, S: DeserializeSeed<'de>>(
        mut de: serde_json::Deserializer<R>,
        seed: S,
    ) -> serde_json::Result<S::Value> {
        let value = seed.deserialize(&mut de)?;
        de.end()?;
        Ok(value)
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => plain(serde_json::Deserializer::from_str(text), seed),
        Err(_) => plain(serde_json::Deserializer::from_slice(bytes), seed),
    }
}

fn decode<'de, R: serde_json::de::Read<'de>, S: DeserializeSeed<'de>>(
    mut de: serde_json::Deserializer<R>,
    hints: &Hints,
    seed: S,
) -> serde_json::Result<S::Value> {
    let value = seed.deserialize(Wrap { de: &mut de, hints })?;
    de.end()?;
    Ok(value)
}

/// Decodes `bytes` as `T` with the array counts `lens` of its arrays ([`value_array_lengths`]).
/// `text` is `bytes` when the caller already knows them to be UTF-8 (a list body validated
/// once), so they are not validated again.
pub(crate) fn from_slice_with_lengths<T: DeserializeOwned>(
    bytes: &[u8],
    text: Option<&str>,
    lens: Vec<u32>,
) -> serde_json::Result<T> {
    let hints = Hints {
        lens,
        next: Cell::new(0),
        on: Cell::new(true),
    };
    let seed = std::marker::PhantomData::<T>;
    match text.map_or_else(|| std::str::from_utf8(bytes).ok(), Some) {
        Some(text) => decode(serde_json::Deserializer::from_str(text), &hints, seed),
        None => decode(serde_json::Deserializer::from_slice(bytes), &hints, seed),
    }
}

/// The array counts of one document and the cursor into them.
struct Hints {
    lens: Vec<u32>,
    next: Cell<usize>,
    /// Cleared when a count turned out wrong: no more hints for this document.
    on: Cell<bool>,
}

impl Hints {
    /// Passes over the counts of the arrays in `raw`, a span of the document decoded
    /// elsewhere (or not at all), so the next array gets its own count again.
    fn skip_span(&self, raw: &[u8]) {
        self.next.set(self.next.get() + count_arrays(raw));
    }

    /// The count for the array that has just been opened.
    fn take(&self) -> Option<usize> {
        let i = self.next.get();
        self.next.set(i + 1);
        if !self.on.get() {
            return None;
        }
        self.lens.get(i).map(|&n| n as usize)
    }
}

/// Wraps a deserializer so that every visitor it drives is wrapped too.
struct Wrap<'h, D> {
    de: D,
    hints: &'h Hints,
}

/// Wraps a visitor so that every sequence, map, enum or nested deserializer it is given is wrapped.
struct WrapVisitor<'h, V> {
    visitor: V,
    hints: &'h Hints,
}

/// A sequence reporting its pre-counted length.
struct WrapSeq<'h, A> {
    seq: A,
    hints: &'h Hints,
    hint: Option<usize>,
    seen: usize,
}

struct WrapMap<'h, A> {
    map: A,
    hints: &'h Hints,
}

struct WrapEnum<'h, A> {
    data: A,
    hints: &'h Hints,
}

struct WrapSeed<'h, S> {
    seed: S,
    hints: &'h Hints,
}

impl<'h, S> WrapSeed<'h, S> {
    fn new(seed: S, hints: &'h Hints) -> Self {
        WrapSeed { seed, hints }
    }
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for WrapSeed<'_, S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<S::Value, D::Error> {
        self.seed.deserialize(Wrap {
            de,
            hints: self.hints,
        })
    }
}

/// Forwards `deserialize_*` methods that take only a visitor.
macro_rules! forward_plain {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
            self.de.$method(WrapVisitor { visitor, hints: self.hints })
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Wrap<'_, D> {
    type Error = D::Error;

    forward_plain! {
        deserialize_any deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32
        deserialize_i64 deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32
        deserialize_u64 deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char
        deserialize_str deserialize_string deserialize_bytes deserialize_byte_buf
        deserialize_option deserialize_unit deserialize_seq deserialize_map deserialize_identifier
    }

    /// `serde_json` would skip an ignored value without visiting its arrays, which would put the
    /// counts out of step; visit it instead.
    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.de.deserialize_any(WrapVisitor {
            visitor,
            hints: self.hints,
        })
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.de.deserialize_unit_struct(
            name,
            WrapVisitor {
                visitor,
                hints: self.hints,
            },
        )
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        if name == informer_proto::RAW_PART {
            // P8: the value's JSON, then (if the visitor needs it) the value decoded from it.
            let raw = <&'de serde_json::value::RawValue as de::Deserialize>::deserialize(self.de)?;
            let mut part = JsonPart {
                raw: raw.get(),
                hints: self.hints,
                next: 0,
                error: std::marker::PhantomData::<D::Error>,
            };
            let value = visitor.visit_seq(&mut part)?;
            if part.next < 3 {
                // The value was not decoded: its arrays' counts are passed over.
                self.hints.skip_span(part.raw.as_bytes());
            }
            return Ok(value);
        }
        self.de.deserialize_newtype_struct(
            name,
            WrapVisitor {
                visitor,
                hints: self.hints,
            },
        )
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.de.deserialize_tuple(
            len,
            WrapVisitor {
                visitor,
                hints: self.hints,
            },
        )
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.de.deserialize_tuple_struct(
            name,
            len,
            WrapVisitor {
                visitor,
                hints: self.hints,
            },
        )
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.de.deserialize_struct(
            name,
            fields,
            WrapVisitor {
                visitor,
                hints: self.hints,
            },
        )
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.de.deserialize_enum(
            name,
            variants,
            WrapVisitor {
                visitor,
                hints: self.hints,
            },
        )
    }

    fn is_human_readable(&self) -> bool {
        self.de.is_human_readable()
    }
}

/// A value's [`informer_proto::RAW_PART`] elements from JSON: the encoding's name (`json`), the
/// value's JSON text, then the value decoded from that text (with the document's array counts).
struct JsonPart<'h, 'de, E> {
    raw: &'de str,
    hints: &'h Hints,
    next: u8,
    error: std::marker::PhantomData<E>,
}

impl<'de, E: de::Error> SeqAccess<'de> for JsonPart<'_, 'de, E> {
    type Error = E;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, E> {
        let element = self.next;
        self.next = self.next.saturating_add(1);
        match element {
            0 => seed
                .deserialize(de::value::BorrowedStrDeserializer::<E>::new("json"))
                .map(Some),
            1 => seed
                .deserialize(de::value::BorrowedBytesDeserializer::<E>::new(
                    self.raw.as_bytes(),
                ))
                .map(Some),
            2 => {
                let mut json = serde_json::Deserializer::from_str(self.raw);
                let value = seed
                    .deserialize(Wrap {
                        de: &mut json,
                        hints: self.hints,
                    })
                    .and_then(|v| json.end().map(|()| v))
                    .map_err(E::custom)?;
                Ok(Some(value))
            }
            _ => Ok(None),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(3usize.saturating_sub(usize::from(self.next)))
    }
}

/// Forwards `visit_*` methods that carry a plain value.
macro_rules! forward_visit {
    ($($method:ident($ty:ty))*) => {$(
        fn $method<E: de::Error>(self, v: $ty) -> Result<V::Value, E> {
            self.visitor.$method(v)
        }
    )*};
}

impl<'de, V: Visitor<'de>> Visitor<'de> for WrapVisitor<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.visitor.expecting(f)
    }

    forward_visit! {
        visit_bool(bool) visit_i8(i8) visit_i16(i16) visit_i32(i32) visit_i64(i64) visit_i128(i128)
        visit_u8(u8) visit_u16(u16) visit_u32(u32) visit_u64(u64) visit_u128(u128)
        visit_f32(f32) visit_f64(f64) visit_char(char)
        visit_str(&str) visit_borrowed_str(&'de str) visit_string(String)
        visit_bytes(&[u8]) visit_borrowed_bytes(&'de [u8]) visit_byte_buf(Vec<u8>)
    }

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.visitor.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.visitor.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, de: D) -> Result<V::Value, D::Error> {
        self.visitor.visit_some(Wrap {
            de,
            hints: self.hints,
        })
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, de: D) -> Result<V::Value, D::Error> {
        self.visitor.visit_newtype_struct(Wrap {
            de,
            hints: self.hints,
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        // Called right after `[` is read, so arrays are taken in document order.
        let hint = self.hints.take();
        self.visitor.visit_seq(WrapSeq {
            seq,
            hints: self.hints,
            hint,
            seen: 0,
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.visitor.visit_map(WrapMap {
            map,
            hints: self.hints,
        })
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.visitor.visit_enum(WrapEnum {
            data,
            hints: self.hints,
        })
    }
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for WrapSeq<'_, A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        let next = self
            .seq
            .next_element_seed(WrapSeed::new(seed, self.hints))?;
        match next {
            Some(_) => self.seen += 1,
            // The array ended: a count that disagrees means the counts are out of step.
            None if self.hint.is_some_and(|n| n != self.seen) => self.hints.on.set(false),
            None => {}
        }
        Ok(next)
    }

    fn size_hint(&self) -> Option<usize> {
        match self.hint {
            Some(n) if self.hints.on.get() => Some(n.saturating_sub(self.seen)),
            _ => self.seq.size_hint(),
        }
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for WrapMap<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        self.map.next_key_seed(WrapSeed::new(seed, self.hints))
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.map.next_value_seed(WrapSeed::new(seed, self.hints))
    }

    fn size_hint(&self) -> Option<usize> {
        self.map.size_hint()
    }
}

impl<'de, 'h, A: EnumAccess<'de>> EnumAccess<'de> for WrapEnum<'h, A> {
    type Error = A::Error;
    type Variant = WrapVariant<'h, A::Variant>;

    fn variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<(T::Value, Self::Variant), A::Error> {
        let (value, variant) = self.data.variant_seed(WrapSeed::new(seed, self.hints))?;
        Ok((
            value,
            WrapVariant {
                variant,
                hints: self.hints,
            },
        ))
    }
}

struct WrapVariant<'h, A> {
    variant: A,
    hints: &'h Hints,
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for WrapVariant<'_, A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.variant.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        self.variant
            .newtype_variant_seed(WrapSeed::new(seed, self.hints))
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.variant.tuple_variant(
            len,
            WrapVisitor {
                visitor,
                hints: self.hints,
            },
        )
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        self.variant.struct_variant(
            fields,
            WrapVisitor {
                visitor,
                hints: self.hints,
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
    use serde_json::json;

    #[test]
    fn counts_arrays_in_document_order() {
        let doc = br#"{"a":[1,[2,3],[],"x,]["],"b":{"c":[{"d":[4]} , 5 ]},"e":[ ]}"#;
        assert_eq!(array_lengths(doc), vec![4, 2, 0, 2, 1, 0]);
    }

    #[test]
    fn escaped_quotes_do_not_end_strings() {
        let doc = br#"["a\"],[", "\\", [1,2]]"#;
        assert_eq!(array_lengths(doc), vec![3, 2]);
    }

    #[test]
    fn malformed_input_stays_in_bounds() {
        for doc in [&b"[[[,,"[..], b"]]]", b"[\"abc", b"[\"\\", b"[ ", b""] {
            let _ = array_lengths(doc);
        }
    }

    fn pod_json() -> serde_json::Value {
        let containers: Vec<_> = (0..3)
            .map(|i| {
                json!({"name": format!("c{i}"), "image": "img", "args": ["a", "b", "c"],
                    "env": (0..5).map(|j| json!({"name": format!("E{j}"), "value": "v"})).collect::<Vec<_>>()})
            })
            .collect();
        json!({
            "apiVersion": "v1", "kind": "Pod", "unknownTopLevel": [[1, 2], {"x": [3]}],
            "metadata": {"name": "p", "namespace": "ns", "finalizers": ["f1", "f2"],
                "managedFields": [{"manager": "m", "operation": "Update",
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:list": [1, 2, 3]}}}]},
            "spec": {"containers": containers, "tolerations": [], "nodeSelector": {"a": "b"}},
        })
    }

    /// M8: the same value as `serde_json`, and every `Vec` exactly as long as its capacity.
    #[test]
    fn decodes_like_serde_json_with_exact_capacity() {
        let bytes = serde_json::to_vec(&pod_json()).unwrap();
        let plain: Pod = serde_json::from_slice(&bytes).unwrap();
        let sized: Pod = from_slice(&bytes).unwrap();
        assert_eq!(plain, sized);

        let spec: &PodSpec = sized.spec.as_ref().unwrap();
        let containers: &Vec<Container> = &spec.containers;
        assert_eq!(containers.capacity(), 3);
        for c in containers {
            assert_eq!(c.env.as_ref().unwrap().capacity(), 5);
            assert_eq!(c.args.as_ref().unwrap().capacity(), 3);
        }
        let finalizers = sized.metadata.finalizers.as_ref().unwrap();
        assert_eq!(finalizers.capacity(), 2);
        // Without the hints serde grows these by doubling (a control for this test).
        let plain_env = plain.spec.as_ref().unwrap().containers[0]
            .env
            .as_ref()
            .unwrap();
        assert!(plain_env.capacity() > 5, "{}", plain_env.capacity());
    }

    /// The adjacently tagged watch event and an enum stay in step too (the object's arrays follow
    /// the buffered `object`-first layout).
    #[test]
    fn watch_event_with_object_first_is_sized() {
        let line = serde_json::to_vec(&json!({"object": pod_json(), "type": "ADDED"})).unwrap();
        let ev: kube::core::WatchEvent<Pod> = from_slice(&line).unwrap();
        let kube::core::WatchEvent::Added(pod) = ev else {
            panic!("not ADDED")
        };
        let env = pod.spec.unwrap().containers.swap_remove(1).env.unwrap();
        assert_eq!((env.len(), env.capacity()), (5, 5));
    }

    /// Types that buffer through serde's flatten (`DynamicObject`) or skip fields
    /// (`PartialObjectMeta`) decode exactly as with `serde_json`.
    #[test]
    fn flattened_and_partial_types_decode_unchanged() {
        let bytes = serde_json::to_vec(&pod_json()).unwrap();
        let plain: kube::core::DynamicObject = serde_json::from_slice(&bytes).unwrap();
        let sized: kube::core::DynamicObject = from_slice(&bytes).unwrap();
        assert_eq!(plain, sized);
        let plain: kube::core::PartialObjectMeta<Pod> = serde_json::from_slice(&bytes).unwrap();
        let sized: kube::core::PartialObjectMeta<Pod> = from_slice(&bytes).unwrap();
        assert_eq!(
            (plain.types, plain.metadata.clone()),
            (sized.types, sized.metadata.clone())
        );
        assert_eq!(sized.metadata.finalizers.unwrap().capacity(), 2);
    }

    /// Array lengths of `v` in document order (a model for `array_lengths`).
    fn model_lengths(v: &serde_json::Value, out: &mut Vec<u32>) {
        match v {
            serde_json::Value::Array(items) => {
                out.push(items.len() as u32);
                items.iter().for_each(|i| model_lengths(i, out));
            }
            serde_json::Value::Object(map) => map.values().for_each(|i| model_lengths(i, out)),
            _ => {}
        }
    }

    fn arb_json() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            // Quotes, backslashes, brackets and commas inside strings must not count.
            "[a-c\\\\\\\"\\[\\],{}: \\n\u{e9}]{0,8}".prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(5, 64, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::from),
                proptest::collection::btree_map("[a-z\\\\\"]{0,4}", inner, 0..5)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        /// Any JSON: the counts match the arrays in document order (compact and pretty), and the
        /// decoded value is `serde_json`'s.
        #[test]
        fn counts_and_values_match_serde_json(v in arb_json(), pretty in proptest::bool::ANY) {
            let bytes = if pretty {
                serde_json::to_vec_pretty(&v).unwrap()
            } else {
                serde_json::to_vec(&v).unwrap()
            };
            let mut expected = Vec::new();
            model_lengths(&v, &mut expected);
            proptest::prop_assert_eq!(array_lengths(&bytes), expected);
            let decoded: serde_json::Value = from_slice(&bytes).unwrap();
            proptest::prop_assert_eq!(&decoded, &v);
            // The unsized path (projections) decodes the same value.
            let plain: serde_json::Value =
                from_slice_seed_unsized(&bytes, std::marker::PhantomData).unwrap();
            proptest::prop_assert_eq!(plain, v);
        }

        /// Typed nested sequences get exactly their length as capacity.
        #[test]
        fn nested_vecs_are_exact(v in proptest::collection::vec(
            proptest::collection::vec("[a-z\\\\\"]{0,3}", 0..20), 0..20)) {
            let bytes = serde_json::to_vec(&v).unwrap();
            let decoded: Vec<Vec<String>> = from_slice(&bytes).unwrap();
            proptest::prop_assert_eq!(&decoded, &v);
            proptest::prop_assert_eq!(decoded.capacity(), v.len());
            for inner in &decoded {
                proptest::prop_assert_eq!(inner.capacity(), inner.len());
            }
        }
    }

    #[test]
    fn invalid_utf8_is_an_error_with_position() {
        let err = from_slice::<Pod>(b"{\"metadata\": {\"name\": \"a\xff\"}}").unwrap_err();
        assert!(err.to_string().contains("column"), "{err}");
    }

    #[test]
    fn errors_are_serde_json_errors_with_position() {
        let err = from_slice::<Pod>(br#"{"metadata": {"name": 5}}"#).unwrap_err();
        assert!(err.to_string().contains("column"), "{err}");
        let err = from_slice::<Pod>(br#"{"metadata": {}} trailing"#).unwrap_err();
        assert!(err.to_string().contains("trailing"), "{err}");
    }
}
