//! serde's access traits over a message: the fields of a message (`Fields`, inline fields
//! merged in), the elements of a repeated field (`Elements`) and the entries of a map field
//! (`Entries`).

use super::*;

/// The elements of a repeated field.
pub(super) struct Elements<'de> {
    pub(super) msg: &'static Message,
    pub(super) field: &'static Field,
    pub(super) reader: Reader<'de>,
    /// The rest of a packed run of numbers (proto3 style; Kubernetes sends them unpacked).
    pub(super) packed: Option<Reader<'de>>,
    /// How many elements are left, where known (messages, strings and bytes: one per field).
    pub(super) left: Option<usize>,
    pub(super) depth: usize,
}

impl<'de> Elements<'de> {
    fn next_wire(&mut self) -> Result<Option<Wire<'de>>, Error> {
        loop {
            if let Some(p) = &mut self.packed {
                if !p.is_empty() {
                    return Ok(Some(match self.field.ty {
                        Ty::Double => {
                            let b = p.rest().get(..8).ok_or(Error::Truncated)?;
                            let mut bits = [0u8; 8];
                            bits.copy_from_slice(b);
                            *p = Reader::new(&p.rest()[8..]);
                            Wire::Fixed64(u64::from_le_bytes(bits))
                        }
                        _ => Wire::Varint(p.varint()?),
                    }));
                }
                self.packed = None;
            }
            let Some((_, w)) = self.reader.next_field()? else {
                return Ok(None);
            };
            match (self.field.ty, w) {
                (Ty::Int32 | Ty::Int64 | Ty::Bool | Ty::Double, Wire::Len(b)) => {
                    self.packed = Some(Reader::new(b));
                }
                _ => return Ok(Some(w)),
            }
        }
    }
}

impl<'de> SeqAccess<'de> for Elements<'de> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        match self.next_wire()? {
            Some(w) => {
                self.left = self.left.map(|n| n.saturating_sub(1));
                seed.deserialize(Value::of(self.msg, self.field, w, self.depth)?)
                    .map(Some)
            }
            None => Ok(None),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        self.left
    }
}

/// The entries of a `map<string, V>` field.
pub(super) struct Entries<'de> {
    pub(super) msg: &'static Message,
    pub(super) field: &'static Field,
    pub(super) reader: Reader<'de>,
    pub(super) value: Option<Value<'de>>,
    pub(super) depth: usize,
}

impl<'de> MapAccess<'de> for Entries<'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let (msg, f) = (self.msg, self.field);
        let Some((_, w)) = self.reader.next_field()? else {
            return Ok(None);
        };
        let Wire::Len(entry) = w else {
            return Err(wrong_wire(msg, f));
        };
        let (mut key, mut value) = ("", None);
        let mut r = Reader::new(entry);
        while let Some((tag, w)) = r.next_field()? {
            match (tag, w) {
                (1, Wire::Len(b)) => key = utf8(msg, f, b)?,
                (2, w) => value = Some(Value::of(msg, f, w, self.depth)?),
                _ => return Err(wrong_wire(msg, f)),
            }
        }
        // An entry without a value holds the value's zero.
        self.value = Some(match (value, f.ty) {
            (Some(v), _) => v,
            (None, Ty::Message(idx)) => {
                Value::Message(Deserializer::nested(message(idx), &[], self.depth + 1))
            }
            (None, Ty::String | Ty::Bytes) => Value::of(msg, f, Wire::Len(&[]), self.depth)?,
            (None, Ty::Double) => Value::of(msg, f, Wire::Fixed64(0), self.depth)?,
            (None, _) => Value::of(msg, f, Wire::Varint(0), self.depth)?,
        });
        seed.deserialize(BorrowedStrDeserializer::new(key))
            .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        next_value(&mut self.value, seed)
    }
}

/// The value whose key was just presented.
pub(super) fn next_value<'de, V: DeserializeSeed<'de>>(
    slot: &mut Option<Value<'de>>,
    seed: V,
) -> Result<V::Value, Error> {
    let v = slot
        .take()
        .ok_or_else(|| Error::Custom("a map value was asked for before its key".into()))?;
    seed.deserialize(v)
}

/// One message being read: the message, where in its bytes, which fields were seen.
#[derive(Clone, Copy)]
pub(super) struct Frame<'de> {
    pub(super) msg: &'static Message,
    pub(super) reader: Reader<'de>,
    /// Bit `i` set: `msg.fields[i]` was read (a field met again apart is an error).
    pub(super) seen: [u64; 4],
}

impl<'de> Frame<'de> {
    fn new(msg: &'static Message, bytes: &'de [u8]) -> Self {
        Frame {
            msg,
            reader: Reader::new(bytes),
            seen: [0; 4],
        }
    }
}

/// The fields of an object message as a map, inline fields' fields merged in.
pub(super) struct Fields<'de> {
    /// The message, then the inline fields being read inside it.
    pub(super) frames: [Option<Frame<'de>>; MAX_INLINE],
    pub(super) top: usize,
    pub(super) type_meta: Option<(&'de str, &'de str)>,
    /// How many of `apiVersion`, `kind` were presented.
    pub(super) type_meta_done: u8,
    pub(super) value: Option<Value<'de>>,
    pub(super) depth: usize,
}

impl<'de> Fields<'de> {
    pub(super) fn new(d: Deserializer<'de>) -> Self {
        Fields {
            frames: [Some(Frame::new(d.msg, d.bytes)), None, None, None],
            top: 0,
            type_meta: d.type_meta,
            type_meta_done: 0,
            value: None,
            depth: d.depth,
        }
    }

    /// The next present field: its JSON name and value.
    fn next_field(&mut self) -> Result<Option<(&'static str, Value<'de>)>, Error> {
        loop {
            let Some(frame) = self.frames.get_mut(self.top).and_then(Option::as_mut) else {
                return Ok(None);
            };
            let msg = frame.msg;
            let start = frame.reader.rest();
            let Some((tag, w)) = frame.reader.next_field()? else {
                if self.top == 0 {
                    return Ok(None);
                }
                self.frames[self.top] = None;
                self.top -= 1;
                continue;
            };
            // T8: a field of a newer schema; `next_field` already passed over its value.
            let Some(idx) = msg.index_of(tag) else {
                crate::skipped::pass_over(msg.name, tag);
                continue;
            };
            let f = &msg.fields[idx];
            let (word, bit) = (idx / 64, 1u64 << (idx % 64));
            let seen = frame.seen.get_mut(word).ok_or(Error::UnknownField {
                message: msg.name,
                tag,
            })?;
            if *seen & bit != 0 {
                return Err(again(msg, f));
            }
            *seen |= bit;
            match (f.label, f.ty, w) {
                (Label::Inline, Ty::Message(sub), Wire::Len(b)) => {
                    self.top += 1;
                    let slot = self.frames.get_mut(self.top).ok_or(Error::TooDeep)?;
                    *slot = Some(Frame::new(message(sub), b));
                }
                (Label::Inline, _, _) => return Err(wrong_wire(msg, f)),
                (Label::Repeated | Label::Map, _, _) => {
                    // The run of this field: its first element (just read) and the ones after it.
                    let more = run_end(&mut frame.reader, tag)?;
                    let run = &start[..start.len() - frame.reader.rest().len()];
                    // The list or map is a level of its own, as its JSON array or object is.
                    let depth = self.depth + 1;
                    let v = if f.label == Label::Map {
                        Value::Map {
                            msg,
                            field: f,
                            run,
                            depth,
                        }
                    } else {
                        Value::repeated(msg, f, run, Some(more + 1), depth)
                    };
                    return Ok(Some((f.json, v)));
                }
                (Label::Single, _, w) => {
                    let v = Value::of(msg, f, w, self.depth)?;
                    if absent(f, w, &v)? {
                        continue;
                    }
                    return Ok(Some((f.json, v)));
                }
            }
        }
    }
}

/// Whether a single field's value stands for "absent" in Go's JSON: a zero of a non-pointer
/// `omitempty`/`omitzero` field, or a zero time (which Go prints as `null`).
pub(super) fn absent(f: &'static Field, w: Wire<'_>, v: &Value<'_>) -> Result<bool, Error> {
    if let Value::Message(d) = v {
        return Ok(
            matches!(d.msg.shape, Shape::Time | Shape::MicroTime) && d.is_null()?
                || f.omit_zero && d.bytes.is_empty(),
        );
    }
    Ok(f.omit_zero
        && match w {
            Wire::Varint(n) => n == 0,
            Wire::Fixed64(bits) => f64::from_bits(bits) == 0.0,
            Wire::Len(b) => b.is_empty(),
            Wire::Fixed32 => false,
        })
}

impl<'de> MapAccess<'de> for Fields<'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        if let Some((api_version, kind)) = self.type_meta {
            let (key, value) = match self.type_meta_done {
                0 => ("apiVersion", api_version),
                1 => ("kind", kind),
                _ => ("", ""),
            };
            if !key.is_empty() {
                self.type_meta_done += 1;
                self.value = Some(Value::Str(value));
                return seed.deserialize(Key(key)).map(Some);
            }
        }
        match self.next_field()? {
            Some((json, v)) => {
                self.value = Some(v);
                seed.deserialize(Key(json)).map(Some)
            }
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        next_value(&mut self.value, seed)
    }
}
