//! Chunked decoding of a whole LIST body (R3, decision record 03): an unpaged relist at a
//! concrete resourceVersion can hold 50 000 Pods in one response, and decoding it in one call would
//! hold a tokio worker for seconds. [`ChunkedList`] walks the body's top level by hand and hands
//! out the raw bytes of `items` elements a bounded number at a time, so the caller decodes one
//! chunk (about a page's worth), yields, and goes on. Each element is decoded by `serde_json`
//! itself (through the same exact-capacity path as a page), so the scanner only has to find where
//! elements start and end; it never interprets their content.

use std::borrow::Cow;

use crate::shard::Shard;

use serde::de::Error as _;

/// A string field read out of a body: its UTF-8 bytes, borrowed unless the JSON escaped them.
pub(crate) type Field<'a> = Cow<'a, [u8]>;

/// A `serde_json` error naming the byte offset, so malformed bodies read like decode errors.
pub(crate) fn malformed(pos: usize, what: &str) -> serde_json::Error {
    serde_json::Error::custom(format!("malformed list body at byte {pos}: {what}"))
}

/// Where the walk is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the opening `{`.
    Start,
    /// Between top-level members; `first` until one was read.
    Members { first: bool },
    /// Inside the `items` array; `first` until one element was read.
    Items { first: bool },
    /// After the closing `}`.
    Done,
}

/// A lazy walk over a list body's top level and its `items` elements.
pub(crate) struct ChunkedList<'a> {
    body: &'a [u8],
    pos: usize,
    state: State,
    /// The top-level `kind`, once read.
    pub(crate) kind: Option<String>,
    /// Whether the body had an `items` member (an array or `null`).
    pub(crate) has_items: bool,
}

impl<'a> ChunkedList<'a> {
    /// A walk over `body` from its start.
    pub(crate) fn new(body: &'a [u8]) -> Self {
        ChunkedList {
            body,
            pos: 0,
            state: State::Start,
            kind: None,
            has_items: false,
        }
    }

    /// Hands the raw bytes of up to `max` further `items` elements to `each`; true once the
    /// whole body has been read. An error of `each` ends the walk with that error.
    #[cfg(test)]
    pub(crate) fn step(
        &mut self,
        max: usize,
        mut each: impl FnMut(&'a [u8]) -> serde_json::Result<()>,
    ) -> serde_json::Result<bool> {
        self.step_probed(max, None, |raw, _| each(raw))
    }

    /// Hands out elements as `step` does, and also reads each element's `metadata.<probe>` on the way
    /// ([`probe_metadata_field`]) in the same pass that finds the element's end, and hands it
    /// out beside the element (`None` when not asked for or not readable).
    pub(crate) fn step_probed(
        &mut self,
        max: usize,
        probe: Option<&str>,
        mut each: impl FnMut(&'a [u8], Option<Field<'a>>) -> serde_json::Result<()>,
    ) -> serde_json::Result<bool> {
        let mut handed = 0;
        loop {
            match self.state {
                State::Done => return Ok(true),
                State::Start => {
                    self.ws();
                    self.expect(b'{')?;
                    self.state = State::Members { first: true };
                }
                State::Members { first } => {
                    self.ws();
                    if self.peek() == Some(b'}') {
                        self.pos += 1;
                        self.ws();
                        if self.pos != self.body.len() {
                            return Err(malformed(self.pos, "trailing characters"));
                        }
                        self.state = State::Done;
                        continue;
                    }
                    if !first {
                        self.expect(b',')?;
                        self.ws();
                    }
                    let key = self.string()?;
                    self.ws();
                    self.expect(b':')?;
                    self.ws();
                    self.state = State::Members { first: false };
                    match key_is(key) {
                        Some(Key::Items) => {
                            self.has_items = true;
                            match self.peek() {
                                Some(b'[') => {
                                    self.pos += 1;
                                    self.state = State::Items { first: true };
                                }
                                Some(b'n') => {
                                    let v = self.value()?;
                                    serde_json::from_slice::<()>(v)?;
                                }
                                _ => return Err(malformed(self.pos, "`items` is not an array")),
                            }
                        }
                        Some(Key::Kind) => {
                            let v = self.value()?;
                            self.kind = serde_json::from_slice::<Option<String>>(v)?;
                        }
                        None => {
                            self.value()?;
                        }
                    }
                }
                State::Items { first } => {
                    if handed >= max {
                        return Ok(false);
                    }
                    if !self.enter_element(first)? {
                        continue;
                    }
                    let (element, probed) = match probe {
                        Some(field) if self.peek() == Some(b'{') => self.probed_object(field)?,
                        _ => (self.value()?, None),
                    };
                    self.state = State::Items { first: false };
                    handed += 1;
                    each(element, probed)?;
                }
            }
        }
    }

    /// Moves to the start of the next `items` element, reading the top-level members around
    /// `items` on the way, and returns its offset; `None` once the whole body has been read.
    /// The caller decodes the element from there and reports its end with
    /// [`element_ends_at`](Self::element_ends_at), so the element is scanned once, by its decode.
    pub(crate) fn next_element_start(&mut self) -> serde_json::Result<Option<usize>> {
        loop {
            if self.step_probed(0, None, |_, _| Ok(()))? {
                return Ok(None);
            }
            let State::Items { first } = self.state else {
                return Err(malformed(self.pos, "expected an `items` element"));
            };
            if self.enter_element(first)? {
                self.state = State::Items { first: false };
                return Ok(Some(self.pos));
            }
        }
    }

    /// Inside `items`: moves past the separator to the next element (true), or past the
    /// closing `]` back to the top-level members (false).
    fn enter_element(&mut self, first: bool) -> serde_json::Result<bool> {
        self.ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            self.state = State::Members { first: false };
            return Ok(false);
        }
        if !first {
            self.expect(b',')?;
            self.ws();
        }
        Ok(true)
    }

    /// The element that [`next_element_start`](Self::next_element_start) found ends at `end`.
    pub(crate) fn element_ends_at(&mut self, end: usize) {
        self.pos = end.min(self.body.len());
    }

    fn peek(&self) -> Option<u8> {
        self.body.get(self.pos).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\n' | b'\r' | b'\t')) {
            self.pos += 1;
        }
    }

    fn expect(&mut self, byte: u8) -> serde_json::Result<()> {
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(malformed(self.pos, &format!("expected `{}`", byte as char)))
        }
    }

    /// The raw bytes of the string at `pos` (with its quotes); moves past it.
    fn string(&mut self) -> serde_json::Result<&'a [u8]> {
        let start = self.pos;
        if self.peek() != Some(b'"') {
            return Err(malformed(start, "expected a string"));
        }
        self.pos = string_end(self.body, start + 1)
            .ok_or_else(|| malformed(start, "unterminated string"))?;
        Ok(&self.body[start..self.pos])
    }

    /// The raw bytes of the value at `pos`; moves past it. Objects and arrays are delimited by
    /// bracket depth outside strings; their content is left for `serde_json` to check.
    fn value(&mut self) -> serde_json::Result<&'a [u8]> {
        let start = self.pos;
        match self.peek() {
            None => Err(malformed(start, "expected a value")),
            Some(b'"') => self.string(),
            Some(b'{' | b'[') => {
                // Every list item: brackets balance outside strings, so only strings need
                // following; they are crossed 8 bytes at a time (the bulk of a Pod's bytes).
                self.pos = container_end(self.body, start)
                    .ok_or_else(|| malformed(start, "unterminated object or array"))?;
                Ok(&self.body[start..self.pos])
            }
            Some(_) => {
                while let Some(b) = self.peek() {
                    if matches!(b, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t') {
                        break;
                    }
                    self.pos += 1;
                }
                if self.pos == start {
                    return Err(malformed(start, "expected a value"));
                }
                let v = &self.body[start..self.pos];
                serde_json::from_slice::<serde::de::IgnoredAny>(v)?;
                Ok(v)
            }
        }
    }
}

impl<'a> ChunkedList<'a> {
    /// At an object: its raw bytes and its `metadata.<field>`, in one pass: the scan for the
    /// object's end goes on from where the field was read.
    fn probed_object(&mut self, field: &str) -> serde_json::Result<(&'a [u8], Option<Field<'a>>)> {
        let start = self.pos;
        let mut probe = ChunkedList::new(self.body);
        probe.pos = start;
        let (value, end) = match probe.metadata_field(field) {
            // No metadata: the probe read the whole object.
            Some((value, 0)) => (value, Some(probe.pos)),
            Some((value, open)) => (value, container_end_from(self.body, probe.pos, open)),
            // Unreadable: find the end from the start, as `value` does.
            None => (None, container_end(self.body, start)),
        };
        self.pos = end.ok_or_else(|| malformed(start, "unterminated object or array"))?;
        Ok((&self.body[start..self.pos], value))
    }

    /// At an object: calls `on(self, key)` for each member, with the cursor at the member's
    /// value; `on` either consumes the value and answers `Some(false)` to go on, or answers
    /// `Some(true)` to stop there. `Some(true)` if `on` stopped, `Some(false)` once past the
    /// object's end, `None` on malformed input.
    fn members(&mut self, mut on: impl FnMut(&mut Self, &'a [u8]) -> Option<bool>) -> Option<bool> {
        self.ws();
        self.expect(b'{').ok()?;
        let mut first = true;
        loop {
            self.ws();
            if self.peek() == Some(b'}') {
                self.pos += 1;
                return Some(false);
            }
            if !first {
                self.expect(b',').ok()?;
                self.ws();
            }
            first = false;
            let key = self.string().ok()?;
            self.ws();
            self.expect(b':').ok()?;
            self.ws();
            if on(self, key)? {
                return Some(true);
            }
        }
    }

    /// At an object: moves to the value of its member `name` (true), or past the object when
    /// it has none (false). Members before it are skipped by bracket depth, never parsed.
    fn find_member(&mut self, name: &str) -> Option<bool> {
        self.members(|c, key| {
            if key_named(key, name) {
                Some(true)
            } else {
                c.value().ok().map(|_| false)
            }
        })
    }

    /// At an object: its `metadata.<field>` (empty when the metadata lacks it or it is
    /// `null`; `None` when there is no metadata), and how many objects the cursor is still
    /// inside: 2 after the field, 1 after a metadata without it, 0 after an object without
    /// metadata. Nothing after the field is read. `None` on malformed input.
    fn metadata_field(&mut self, field: &str) -> Option<(Option<Cow<'a, [u8]>>, usize)> {
        if !self.find_member("metadata")? {
            return Some((None, 0));
        }
        if !self.find_member(field)? {
            return Some((Some(Cow::Borrowed(&[])), 1));
        }
        let value = string_value(self.value().ok()?)?;
        Some((Some(value), 2))
    }
}

/// KEP-5866's client-side probe: the string at `metadata.<field>` of the JSON object `raw`
/// (its UTF-8 bytes, borrowed unless escaped), found by skipping everything before it by
/// bracket depth and reading nothing after it, so an object outside the shard costs a scan of
/// its first bytes, not a decode. Empty when the metadata lacks the field; `None` without
/// metadata or on malformed input.
pub(crate) fn probe_metadata_field<'a>(raw: &'a [u8], field: &str) -> Option<Cow<'a, [u8]>> {
    ChunkedList::new(raw).metadata_field(field)?.0
}

/// Whether the watch event in `line` may be decoded for a reflector that caches `shard` (S4):
/// events of objects outside the shard are not; bookmarks, errors and anything unreadable are
/// (the decode handles them).
pub(crate) fn shard_admits_event(shard: &Shard, line: &[u8]) -> bool {
    match probe_event(line, shard.field().metadata_key()) {
        Some(EventProbe::Object(Some(value))) => shard.admits_bytes(&value),
        _ => true,
    }
}

/// What [`probe_event`] found in a watch event line.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum EventProbe<'a> {
    /// A `BOOKMARK` or `ERROR` event.
    Passthrough,
    /// An object event; the object's `metadata.<field>` if it could be read.
    Object(Option<Cow<'a, [u8]>>),
}

/// [`probe_metadata_field`] for a watch event line: its `type` and its object's field. The API
/// server writes `type` first, so the scan stops at the field; with `object` first, the object
/// is skipped whole and probed on its own. `None` on malformed input.
pub(crate) fn probe_event<'a>(line: &'a [u8], field: &str) -> Option<EventProbe<'a>> {
    let mut passthrough = false;
    let mut typed = false;
    // Some once the object was seen: its field, if it could be read.
    let mut object: Option<Option<Cow<'a, [u8]>>> = None;
    ChunkedList::new(line).members(|c, key| {
        if key_named(key, "type") {
            let t = string_value(c.value().ok()?)?;
            passthrough = *t == *b"BOOKMARK" || *t == *b"ERROR";
            typed = true;
            Some(passthrough || object.is_some())
        } else if key_named(key, "object") {
            if typed {
                object = Some(c.metadata_field(field).and_then(|(v, _)| v));
                return Some(true);
            }
            object = Some(probe_metadata_field(c.value().ok()?, field));
            Some(false)
        } else {
            c.value().ok().map(|_| false)
        }
    })?;
    Some(if passthrough {
        EventProbe::Passthrough
    } else {
        EventProbe::Object(object.flatten())
    })
}

/// The UTF-8 bytes of the JSON string `raw` (with its quotes), borrowed unless it has escapes;
/// empty for `null`; `None` for anything else.
fn string_value(raw: &[u8]) -> Option<Cow<'_, [u8]>> {
    match raw {
        b"null" => Some(Cow::Borrowed(&[])),
        [b'"', inner @ .., b'"'] if !inner.contains(&b'\\') => Some(Cow::Borrowed(inner)),
        _ => serde_json::from_slice::<String>(raw)
            .ok()
            .map(|s| Cow::Owned(s.into_bytes())),
    }
}

/// Whether a raw key (with its quotes) is `name`; an escaped key is decoded first.
pub(crate) fn key_named(raw: &[u8], name: &str) -> bool {
    string_value(raw).is_some_and(|key| *key == *name.as_bytes())
}

/// Where the object or array that starts `json` ends (just past its closing bracket); `None`
/// when it does not close.
pub(crate) fn value_end(json: &[u8]) -> Option<usize> {
    container_end(json, 0)
}

/// The index just past the object or array that starts at `start` (at its `{` or `[`), or
/// `None` if it does not end. Brackets are counted outside strings, and strings are crossed
/// by [`string_end`]: scanning past a Pod is what client-side shard filtering pays for each
/// object it skips (KEP-5866).
fn container_end(body: &[u8], start: usize) -> Option<usize> {
    container_end_from(body, start, 0)
}

/// [`container_end`] from inside `depth` open objects or arrays, at `from`.
fn container_end_from(body: &[u8], from: usize, depth: usize) -> Option<usize> {
    let mut depth = depth;
    let mut i = from;
    while let Some(&b) = body.get(i) {
        match b {
            b'"' => {
                i = string_end(body, i + 1)?;
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The index just past the closing quote of a string whose content starts at `from`. The
/// string is crossed 8 bytes at a time, testing each word for `"` or `\\` (SWAR): on
/// realistic Pods, whose strings are many and short, 3x faster than a memchr per string.
pub(crate) fn string_end(body: &[u8], mut from: usize) -> Option<usize> {
    /// The high bit of every byte of `x` that equals `b` (exact for the lowest such byte).
    fn bytes_equal(x: u64, b: u8) -> u64 {
        let y = x ^ (0x0101_0101_0101_0101u64 * u64::from(b));
        y.wrapping_sub(0x0101_0101_0101_0101) & !y & 0x8080_8080_8080_8080
    }
    loop {
        while let Some(word) = body.get(from..from + 8) {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(word);
            let x = u64::from_le_bytes(bytes);
            let hit = bytes_equal(x, b'"') | bytes_equal(x, b'\\');
            if hit != 0 {
                from += (hit.trailing_zeros() / 8) as usize;
                break;
            }
            from += 8;
        }
        match body.get(from)? {
            b'"' => return Some(from + 1),
            b'\\' => from += 2,
            _ => from += 1,
        }
    }
}

enum Key {
    Items,
    Kind,
}

/// Which member a raw key (with quotes) names.
fn key_is(raw: &[u8]) -> Option<Key> {
    if key_named(raw, "items") {
        Some(Key::Items)
    } else if key_named(raw, "kind") {
        Some(Key::Kind)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walk(
        body: &str,
        max: usize,
    ) -> serde_json::Result<(Vec<String>, Vec<usize>, ChunkedList<'_>)> {
        let mut list = ChunkedList::new(body.as_bytes());
        let mut out = Vec::new();
        let mut chunks = Vec::new();
        loop {
            let before = out.len();
            let done = list.step(max, |e| {
                out.push(String::from_utf8_lossy(e).into_owned());
                Ok(())
            })?;
            chunks.push(out.len() - before);
            if done {
                return Ok((out, chunks, list));
            }
        }
    }

    #[test]
    fn elements_come_out_in_bounded_chunks_with_kind_and_items_seen() {
        let body = r#" {"kind":"ConfigMapList","metadata":{"resourceVersion":"5","x":[1,{"]":"}"}]},
            "items":[ {"a":"b\"}"} , {"c":[1,2]},{"d":{}} ], "apiVersion":"v1"} "#;
        let (items, chunks, list) = walk(body, 2).unwrap();
        assert_eq!(items, [r#"{"a":"b\"}"}"#, r#"{"c":[1,2]}"#, r#"{"d":{}}"#]);
        assert_eq!(chunks, [2, 1]);
        assert_eq!(list.kind.as_deref(), Some("ConfigMapList"));
        assert!(list.has_items);
    }

    #[test]
    fn null_or_missing_items_and_malformed_bodies() {
        let (items, _, list) = walk(r#"{"items":null}"#, 10).unwrap();
        assert!(items.is_empty() && list.has_items);
        let (_, _, list) = walk(r#"{"kind":"Status"}"#, 10).unwrap();
        assert!(!list.has_items);
        for bad in [
            "",
            "[]",
            r#"{"items":[{"a":1}"#,
            r#"{"items":{}}"#,
            r#"{"items":[]} x"#,
            r#"{"a" 1}"#,
            r#"{"a":tru}"#,
            r#"{"a":"x}"#,
        ] {
            assert!(walk(bad, 10).is_err(), "{bad:?} must not pass");
        }
    }
}
