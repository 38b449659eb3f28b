//! The protobuf wire format: varints, tags and length-delimited fields, read and written.
//!
//! Kubernetes' messages are proto2 as gogo-protobuf writes them: fields in number order, repeated
//! numbers unpacked and contiguous, no groups.

use crate::Error;

/// Wire type of varint fields (`int32`, `int64`, `bool`).
pub const VARINT: u8 = 0;
/// Wire type of `double`.
pub const FIXED64: u8 = 1;
/// Wire type of strings, bytes, messages and packed lists.
pub const LEN: u8 = 2;
/// Wire type of `float`/`fixed32`.
pub const FIXED32: u8 = 5;

/// One field as read from the wire.
#[derive(Debug, Clone, Copy)]
pub enum Value<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1, little-endian.
    Fixed64(u64),
    /// A 32-bit value: no schema field has this wire type, so its bits are never read.
    Fixed32,
    /// Wire type 2: the bytes.
    Len(&'a [u8]),
}

/// Reads fields off a message's bytes.
#[derive(Debug, Clone, Copy)]
pub struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    /// A reader at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf }
    }

    /// Whether every byte has been read.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The bytes not read yet.
    pub fn rest(&self) -> &'a [u8] {
        self.buf
    }

    /// Reads one varint.
    #[inline]
    pub fn varint(&mut self) -> Result<u64, Error> {
        // Tags, lengths of small fields and most counts fit one byte.
        if let Some((&b, rest)) = self.buf.split_first()
            && b < 0x80
        {
            self.buf = rest;
            return Ok(u64::from(b));
        }
        self.varint_slow()
    }

    fn varint_slow(&mut self) -> Result<u64, Error> {
        let mut out = 0u64;
        for i in 0..10 {
            let (&b, rest) = self.buf.split_first().ok_or(Error::Truncated)?;
            self.buf = rest;
            out |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                return Ok(out);
            }
        }
        Err(Error::BadVarint)
    }

    #[inline]
    fn take(&mut self, n: usize) -> Result<&'a [u8], Error> {
        if self.buf.len() < n {
            return Err(Error::Truncated);
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    /// The next field's number and value, or `None` at the end.
    #[inline]
    pub fn next_field(&mut self) -> Result<Option<(u32, Value<'a>)>, Error> {
        if self.buf.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let tag = u32::try_from(key >> 3).map_err(|_| Error::BadTag)?;
        if tag == 0 {
            return Err(Error::BadTag);
        }
        let value = match (key & 7) as u8 {
            VARINT => Value::Varint(self.varint()?),
            FIXED64 => {
                let b = self.take(8)?;
                Value::Fixed64(u64::from_le_bytes(
                    b.try_into().map_err(|_| Error::Truncated)?,
                ))
            }
            LEN => {
                let n = usize::try_from(self.varint()?).map_err(|_| Error::Truncated)?;
                Value::Len(self.take(n)?)
            }
            FIXED32 => {
                self.take(4)?;
                Value::Fixed32
            }
            other => return Err(Error::WireType(other)),
        };
        Ok(Some((tag, value)))
    }
}

/// Appends a varint.
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends a field key.
pub fn put_key(out: &mut Vec<u8>, tag: u32, wire: u8) {
    put_varint(out, (u64::from(tag) << 3) | u64::from(wire));
}

/// Appends a length-delimited field.
pub fn put_len(out: &mut Vec<u8>, tag: u32, bytes: &[u8]) {
    put_key(out, tag, LEN);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip() {
        for v in [
            0u64,
            1,
            127,
            128,
            300,
            u64::from(u32::MAX),
            u64::MAX,
            (-1i64) as u64,
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(Reader::new(&out).varint().expect("varint"), v);
        }
        assert!(matches!(
            Reader::new(&[0x80]).varint(),
            Err(Error::Truncated)
        ));
        assert!(matches!(Reader::new(&[]).varint(), Err(Error::Truncated)));
        // The one-byte case leaves the rest unread.
        let mut r = Reader::new(&[0x05, 0x96, 0x01]);
        assert_eq!((r.varint().ok(), r.varint().ok()), (Some(5), Some(150)));
        assert!(r.is_empty());
        assert!(matches!(
            Reader::new(&[0xff; 11]).varint(),
            Err(Error::BadVarint)
        ));
    }
}
