//! A serde `Deserializer` over the protobuf bytes of one message, driven by the schema table.
//!
//! A message of [`Shape::Object`] is a map whose keys are its fields' JSON names (inline fields'
//! fields merged in), in wire order; every other shape is its JSON form (T2 in
//! `docs/behaviour.md`: the same value as from the object's JSON). Nothing is decoded that the
//! visitor does not ask for: a skipped value (`deserialize_ignored_any`) is passed over by its
//! wire length.

use base64::Engine as _;
use serde::Deserializer as _;
use serde::de::value::BorrowedStrDeserializer;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::forward_to_deserialize_any;

use crate::Error;
use crate::schema::{Field, Label, Message, Shape, Ty, message};
use crate::wire::{Reader, Value as Wire};

mod access;
use access::{Elements, Entries, Fields};

/// The deepest nesting accepted, counted as JSON nests: each message, and each repeated or map
/// field, is one level, as each object and array is one to serde_json, whose own limit this
/// is. So an object decodes from protobuf exactly when it decodes from its JSON: a
/// CustomResourceDefinition's schema may nest about 62 levels either way (`properties` is a map
/// of schemas: two levels each), and anything deeper is [`Error::TooDeep`] either way.
pub const MAX_DEPTH: usize = 126;

/// The newtype name through which a type asks for a value's encoded bytes before its decode,
/// so that it can skip the decode of bytes it has decoded before (structural sharing: equal
/// encodings are equal values).
///
/// A type that deserializes through `deserialize_newtype_struct(RAW_PART, visitor)` gets, from
/// a deserializer that knows the name, `visit_seq` with three elements: a `&str` naming the
/// encoding, the value's encoded bytes (`&[u8]`, borrowed from
/// the input), and the value itself, which the visitor asks for only when it needs the decode.
/// The encoding's name is the message's full name for protobuf (`api.core.v1.Container`), so
/// equal bytes of two messages never look alike.
/// Any other deserializer calls `visit_newtype_struct` with itself, and the visitor decodes as
/// usual. This crate's [`Deserializer`] knows the name for every message-valued field.
pub const RAW_PART: &str = "$informer-rs::raw-part";

/// Inline fields nested in inline fields (`RuleWithOperations` in `Rule`): at most this many.
const MAX_INLINE: usize = 4;

/// Deserializes a `T` from the protobuf bytes of `message` (the object's own message, without
/// the `k8s\0` envelope: see [`crate::frame::Envelope`]).
///
/// `apiVersion` and `kind` are not in a built-in object's message; use
/// [`Deserializer::with_type_meta`] for a type that requires them.
///
/// ```
/// use informer_proto::{for_kind, from_slice};
/// use std::collections::BTreeMap;
///
/// // A ConfigMap with data {color: blue}: field 2 is the map, each entry a key and a value.
/// let entry = [&[0x0a, 5][..], b"color", &[0x12, 4], b"blue"].concat();
/// let mut cm = vec![0x12, entry.len() as u8];
/// cm.extend(entry);
///
/// #[derive(serde::Deserialize)]
/// struct Data { data: BTreeMap<String, String> }
/// let d: Data = from_slice(for_kind("v1", "ConfigMap").expect("built in"), &cm)?;
/// assert_eq!(d.data["color"], "blue");
/// # Ok::<(), informer_proto::Error>(())
/// ```
pub fn from_slice<'de, T: de::Deserialize<'de>>(
    message: &'static Message,
    bytes: &'de [u8],
) -> Result<T, Error> {
    T::deserialize(Deserializer::new(message, bytes))
}

/// A serde `Deserializer` over the bytes of one protobuf message.
#[derive(Debug, Clone, Copy)]
pub struct Deserializer<'de> {
    msg: &'static Message,
    bytes: &'de [u8],
    depth: usize,
    type_meta: Option<(&'de str, &'de str)>,
}

impl<'de> Deserializer<'de> {
    /// A deserializer of `bytes` as `message`.
    pub fn new(message: &'static Message, bytes: &'de [u8]) -> Self {
        Deserializer {
            msg: message,
            bytes,
            depth: 0,
            type_meta: None,
        }
    }

    /// Presents `apiVersion` and `kind` as the first two keys of the object, as its JSON has
    /// them (kube-apiserver sends them in the envelope, or once for a whole list).
    pub fn with_type_meta(mut self, api_version: &'de str, kind: &'de str) -> Self {
        self.type_meta = Some((api_version, kind));
        self
    }

    fn nested(msg: &'static Message, bytes: &'de [u8], depth: usize) -> Self {
        Deserializer {
            msg,
            bytes,
            depth,
            type_meta: None,
        }
    }

    /// For [`RAW_PART`]: this object's (or raw JSON's) encoding and bytes, then itself.
    fn raw_part(self, name: &'static str) -> Option<RawPart<'de>> {
        let shaped = matches!(self.msg.shape, Shape::Object | Shape::RawJson);
        (name == RAW_PART && shaped).then_some(RawPart {
            value: self,
            next: 0,
        })
    }

    /// Whether this message's JSON is `null` (a zero time, empty raw JSON, an empty union).
    fn is_null(&self) -> Result<bool, Error> {
        Ok(match self.msg.shape {
            // Go marshals the zero time as an empty message, and reads only that as zero.
            Shape::Time | Shape::MicroTime => self.bytes.is_empty(),
            Shape::RawJson => raw_of(self.msg, self.bytes)?.is_empty(),
            Shape::SchemaOrArray | Shape::SchemaOrStringArray => self.bytes.is_empty(),
            _ => false,
        })
    }
}

/// The methods the message and field-value deserializers share: `null` values are `None`,
/// newtypes are transparent, skipped values are passed over undecoded, the rest is
/// `deserialize_any`.
macro_rules! common_methods {
    () => {
        fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            if self.is_null()? {
                visitor.visit_none()
            } else {
                visitor.visit_some(self)
            }
        }

        fn deserialize_newtype_struct<V: Visitor<'de>>(
            self,
            name: &'static str,
            visitor: V,
        ) -> Result<V::Value, Error> {
            match self.raw_part(name) {
                Some(part) => visitor.visit_seq(part),
                None => visitor.visit_newtype_struct(self),
            }
        }

        fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            visitor.visit_unit()
        }

        forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
            bytes byte_buf unit unit_struct seq tuple tuple_struct map struct identifier
        }
    };
}

impl<'de> de::Deserializer<'de> for Deserializer<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        if self.depth > MAX_DEPTH {
            return Err(Error::TooDeep);
        }
        match self.msg.shape {
            Shape::Object => visitor.visit_map(Fields::new(self)),
            _ => special(self, visitor),
        }
    }

    common_methods!();

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        if self.msg.shape == Shape::RawJson {
            let raw = raw_text(raw_of(self.msg, self.bytes)?)?;
            let mut json = serde_json::Deserializer::from_str(raw);
            let v = de::Deserializer::deserialize_enum(&mut json, name, variants, visitor)
                .map_err(json_error)?;
            json.end().map_err(json_error)?;
            return Ok(v);
        }
        self.deserialize_any(visitor)
    }
}

/// Raw JSON as text, its UTF-8 checked once: serde_json then reads it as a `str`, without
/// checking each string again (managedFields documents are mostly short keys).
fn raw_text(raw: &[u8]) -> Result<&str, Error> {
    std::str::from_utf8(raw).map_err(|e| Error::not_utf8("raw JSON", e))
}

fn json_error(e: serde_json::Error) -> Error {
    Error::Custom(e.to_string())
}

/// The wire value of a field of a special-shaped message: the run of field `tag` (one value, or
/// a repeated field's elements), by field number 1 to 3.
#[derive(Default)]
struct Slots<'de> {
    runs: [Option<&'de [u8]>; 3],
}

impl<'de> Slots<'de> {
    fn read(msg: &'static Message, bytes: &'de [u8]) -> Result<Self, Error> {
        let mut slots = Slots::default();
        let mut r = Reader::new(bytes);
        loop {
            let before = r.rest();
            let Some((tag, _)) = r.next_field()? else {
                break;
            };
            // T8: a field of a newer schema; `next_field` already passed over its value.
            let Some(f) = msg.by_tag(tag) else {
                crate::skipped::pass_over(msg.name, tag);
                continue;
            };
            let slot = usize::try_from(tag)
                .ok()
                .and_then(|t| slots.runs.get_mut(t.wrapping_sub(1)))
                .ok_or(Error::UnknownField {
                    message: msg.name,
                    tag,
                })?;
            if slot.is_some() {
                return Err(again(msg, f));
            }
            run_end(&mut r, tag)?;
            *slot = Some(&before[..before.len() - r.rest().len()]);
        }
        Ok(slots)
    }

    /// The last value of field `tag` (a later value wins, as in protobuf).
    fn single(&self, tag: u32) -> Result<Option<Wire<'de>>, Error> {
        let Some(run) = self.run(tag) else {
            return Ok(None);
        };
        let mut r = Reader::new(run);
        let mut last = None;
        while let Some((_, w)) = r.next_field()? {
            last = Some(w);
        }
        Ok(last)
    }

    fn run(&self, tag: u32) -> Option<&'de [u8]> {
        usize::try_from(tag)
            .ok()
            .and_then(|t| self.runs.get(t.wrapping_sub(1)))
            .copied()
            .flatten()
    }
}

/// Advances `r` past the fields numbered `tag` that follow directly; how many.
fn run_end(r: &mut Reader<'_>, tag: u32) -> Result<usize, Error> {
    let mut n = 0;
    loop {
        let mut peek = *r;
        match peek.next_field()? {
            Some((t, _)) if t == tag => {
                *r = peek;
                n += 1;
            }
            _ => return Ok(n),
        }
    }
}

fn again(msg: &'static Message, f: &'static Field) -> Error {
    Error::FieldAgain {
        message: msg.name,
        field: f.json,
        tag: f.tag,
    }
}

fn wrong_wire(msg: &'static Message, f: &'static Field) -> Error {
    Error::WrongWireType {
        message: msg.name,
        field: f.json,
        tag: f.tag,
    }
}

fn varint_of(w: Option<Wire<'_>>) -> u64 {
    match w {
        Some(Wire::Varint(v)) => v,
        _ => 0,
    }
}

fn bytes_of<'de>(w: Option<Wire<'de>>) -> &'de [u8] {
    match w {
        Some(Wire::Len(b)) => b,
        _ => &[],
    }
}

/// The `raw` bytes (1) of a `RawExtension`, `FieldsV1` or apiextensions `JSON`.
fn raw_of<'de>(msg: &'static Message, bytes: &'de [u8]) -> Result<&'de [u8], Error> {
    Ok(bytes_of(Slots::read(msg, bytes)?.single(1)?))
}

fn utf8<'de>(msg: &'static Message, f: &'static Field, b: &'de [u8]) -> Result<&'de str, Error> {
    std::str::from_utf8(b).map_err(|e| Error::not_utf8(format_args!("{}.{}", msg.name, f.json), e))
}

/// An integer as serde_json visits it: non-negative as `u64`, negative as `i64`.
fn visit_int<'de, V: Visitor<'de>>(visitor: V, n: i64) -> Result<V::Value, Error> {
    match u64::try_from(n) {
        Ok(u) => visitor.visit_u64(u),
        Err(_) => visitor.visit_i64(n),
    }
}

/// A double as serde_json visits Go's JSON of it: Go prints integral values below 1e21 without
/// a fraction, which serde_json reads as an integer when it fits one.
fn visit_double<'de, V: Visitor<'de>>(visitor: V, d: f64) -> Result<V::Value, Error> {
    if !d.is_finite() {
        return Err(Error::Invalid(format!(
            "{d} has no JSON form (Go refuses it too)"
        )));
    }
    let integral = d.fract() == 0.0 && !(d == 0.0 && d.is_sign_negative());
    if integral && (0.0..18_446_744_073_709_551_616.0).contains(&d) {
        return visitor.visit_u64(d as u64);
    }
    if integral && (-9_223_372_036_854_775_808.0..0.0).contains(&d) {
        return visitor.visit_i64(d as i64);
    }
    visitor.visit_f64(d)
}

fn special<'de, V: Visitor<'de>>(d: Deserializer<'de>, visitor: V) -> Result<V::Value, Error> {
    let msg = d.msg;
    let field = |tag: u32| {
        msg.by_tag(tag).ok_or(Error::UnknownField {
            message: msg.name,
            tag,
        })
    };
    let slots = Slots::read(msg, d.bytes)?;
    match msg.shape {
        Shape::Object => visitor.visit_map(Fields::new(d)),
        // Go prints the zero Quantity as "0"; an empty message is that zero.
        // Go parses the string; an empty one is an error there too.
        Shape::Quantity => match slots.single(1)? {
            None => visitor.visit_borrowed_str("0"),
            Some(Wire::Len(b"")) => Err(Error::Invalid("an empty Quantity string".into())),
            Some(w) => visitor.visit_borrowed_str(utf8(msg, field(1)?, bytes_of(Some(w)))?),
        },
        // type (1): 0 int, 1 string; intVal (2); strVal (3).
        // Go's JSON refuses any other type.
        Shape::IntOrString => match varint_of(slots.single(1)?) {
            0 => visit_int(visitor, i64::from(varint_of(slots.single(2)?) as i32)),
            1 => visitor.visit_borrowed_str(utf8(msg, field(3)?, bytes_of(slots.single(3)?))?),
            t => Err(Error::Invalid(format!("IntOrString of type {t}"))),
        },
        Shape::Time | Shape::MicroTime => {
            if d.bytes.is_empty() {
                return visitor.visit_unit();
            }
            let (secs, nanos) = (
                varint_of(slots.single(1)?) as i64,
                varint_of(slots.single(2)?) as i32,
            );
            let text = crate::time::format_time(secs, nanos, msg.shape == Shape::MicroTime)?;
            visitor.visit_str(text.as_str())
        }
        Shape::Duration => {
            visitor.visit_string(crate::time::go_duration(varint_of(slots.single(1)?) as i64))
        }
        Shape::RawJson => raw_json(bytes_of(slots.single(1)?), d.depth, visitor),
        Shape::StringList => Value::repeated(
            msg,
            field(1)?,
            slots.run(1).unwrap_or_default(),
            None,
            d.depth,
        )
        .deserialize_any(visitor),
        // schema (1), jSONSchemas (2); property (2) for the string-array union.
        Shape::SchemaOrArray | Shape::SchemaOrStringArray => match (slots.run(2), slots.single(1)?)
        {
            (Some(run), _) => {
                Value::repeated(msg, field(2)?, run, None, d.depth).deserialize_any(visitor)
            }
            (None, Some(w)) => Value::of(msg, field(1)?, w, d.depth)?.deserialize_any(visitor),
            (None, None) => visitor.visit_unit(),
        },
        // allows (1), schema (2).
        Shape::SchemaOrBool => match slots.single(2)? {
            Some(w) => Value::of(msg, field(2)?, w, d.depth)?.deserialize_any(visitor),
            None => visitor.visit_bool(varint_of(slots.single(1)?) != 0),
        },
    }
}

/// Raw JSON bytes through serde_json, or a nested `k8s\0` object through this deserializer.
fn raw_json<'de, V: Visitor<'de>>(
    raw: &'de [u8],
    depth: usize,
    visitor: V,
) -> Result<V::Value, Error> {
    if raw.is_empty() {
        return visitor.visit_unit();
    }
    if raw.starts_with(crate::MAGIC) {
        let env = crate::frame::Envelope::read(raw)?;
        let mut inner = Deserializer::nested(env.message()?, env.raw, depth + 1);
        inner.type_meta = Some((env.api_version, env.kind));
        return de::Deserializer::deserialize_any(inner, visitor);
    }
    let mut json = serde_json::Deserializer::from_str(raw_text(raw)?);
    let v = de::Deserializer::deserialize_any(&mut json, visitor).map_err(json_error)?;
    json.end().map_err(json_error)?;
    Ok(v)
}

/// One field's value, found but not decoded yet.
enum Value<'de> {
    /// One scalar of the field's type.
    Scalar {
        msg: &'static Message,
        field: &'static Field,
        wire: Wire<'de>,
    },
    /// A nested message.
    Message(Deserializer<'de>),
    /// A repeated field's run of elements.
    Repeated {
        msg: &'static Message,
        field: &'static Field,
        run: &'de [u8],
        /// How many fields the run holds, where known: the element count unless numbers are
        /// packed (serde sizes a `Vec` by it once, instead of growing it).
        fields: Option<usize>,
        depth: usize,
    },
    /// A map field's run of entries.
    Map {
        msg: &'static Message,
        field: &'static Field,
        run: &'de [u8],
        depth: usize,
    },
    /// `apiVersion` or `kind` from the envelope.
    Str(&'de str),
}

impl<'de> Value<'de> {
    /// One value of `field` (an element, for repeated fields).
    fn of(
        msg: &'static Message,
        field: &'static Field,
        wire: Wire<'de>,
        depth: usize,
    ) -> Result<Self, Error> {
        match (field.ty, wire) {
            (Ty::Message(idx), Wire::Len(b)) => Ok(Value::Message(Deserializer::nested(
                message(idx),
                b,
                depth + 1,
            ))),
            (Ty::String | Ty::Bytes, Wire::Len(_))
            | (Ty::Int32 | Ty::Int64 | Ty::Bool, Wire::Varint(_))
            | (Ty::Double, Wire::Fixed64(_)) => Ok(Value::Scalar { msg, field, wire }),
            _ => Err(wrong_wire(msg, field)),
        }
    }

    fn repeated(
        msg: &'static Message,
        field: &'static Field,
        run: &'de [u8],
        fields: Option<usize>,
        depth: usize,
    ) -> Self {
        Value::Repeated {
            msg,
            field,
            run,
            fields,
            depth,
        }
    }

    fn is_null(&self) -> Result<bool, Error> {
        match self {
            Value::Message(d) => d.is_null(),
            _ => Ok(false),
        }
    }

    /// For [`RAW_PART`]: a message value's encoding and bytes, then the value.
    fn raw_part(&self, name: &'static str) -> Option<RawPart<'de>> {
        match self {
            Value::Message(d) => d.raw_part(name),
            _ => None,
        }
    }
}

impl<'de> de::Deserializer<'de> for Value<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        if let Value::Repeated { depth, .. } | Value::Map { depth, .. } = self
            && depth > MAX_DEPTH
        {
            return Err(Error::TooDeep);
        }
        match self {
            Value::Scalar { msg, field, wire } => scalar(msg, field, wire, visitor),
            Value::Message(d) => d.deserialize_any(visitor),
            Value::Repeated {
                msg,
                field,
                run,
                fields,
                depth,
            } => visitor.visit_seq(Elements {
                msg,
                field,
                reader: Reader::new(run),
                packed: None,
                // Numbers may come packed, many to a field.
                left: fields
                    .filter(|_| matches!(field.ty, Ty::Message(_) | Ty::String | Ty::Bytes)),
                depth,
            }),
            Value::Map {
                msg,
                field,
                run,
                depth,
            } => visitor.visit_map(Entries {
                msg,
                field,
                reader: Reader::new(run),
                value: None,
                depth,
            }),
            Value::Str(s) => visitor.visit_borrowed_str(s),
        }
    }

    common_methods!();

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self {
            Value::Message(d) => d.deserialize_enum(name, variants, visitor),
            Value::Scalar {
                msg,
                field,
                wire: Wire::Len(b),
            } if field.ty == Ty::String => {
                visitor.visit_enum(BorrowedStrDeserializer::new(utf8(msg, field, b)?))
            }
            Value::Str(s) => visitor.visit_enum(BorrowedStrDeserializer::new(s)),
            other => other.deserialize_any(visitor),
        }
    }
}

fn scalar<'de, V: Visitor<'de>>(
    msg: &'static Message,
    field: &'static Field,
    wire: Wire<'de>,
    visitor: V,
) -> Result<V::Value, Error> {
    match (field.ty, wire) {
        (Ty::String, Wire::Len(b)) => visitor.visit_borrowed_str(utf8(msg, field, b)?),
        (Ty::Bytes, Wire::Len(b)) => {
            visitor.visit_string(base64::engine::general_purpose::STANDARD.encode(b))
        }
        // int32 is sign-extended to 64 bits on the wire; truncation is the protobuf rule.
        (Ty::Int32, Wire::Varint(v)) => visit_int(visitor, i64::from(v as i32)),
        (Ty::Int64, Wire::Varint(v)) => visit_int(visitor, v as i64),
        (Ty::Bool, Wire::Varint(v)) => visitor.visit_bool(v != 0),
        (Ty::Double, Wire::Fixed64(v)) => visit_double(visitor, f64::from_bits(v)),
        _ => Err(wrong_wire(msg, field)),
    }
}

/// A message's [`RAW_PART`] elements: its encoding (the message's full name), its bytes, then the
/// message itself.
struct RawPart<'de> {
    value: Deserializer<'de>,
    next: u8,
}

impl<'de> SeqAccess<'de> for RawPart<'de> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        let element = self.next;
        self.next = self.next.saturating_add(1);
        match element {
            0 => seed.deserialize(Key(self.value.msg.name)).map(Some),
            1 => seed
                .deserialize(serde::de::value::BorrowedBytesDeserializer::<Error>::new(
                    self.value.bytes,
                ))
                .map(Some),
            2 => seed.deserialize(self.value).map(Some),
            _ => Ok(None),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(3usize.saturating_sub(usize::from(self.next)))
    }
}

/// A map key: a field's JSON name.
struct Key(&'static str);

impl<'de> de::Deserializer<'de> for Key {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_borrowed_str(self.0)
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map struct
        enum identifier ignored_any
    }
}
