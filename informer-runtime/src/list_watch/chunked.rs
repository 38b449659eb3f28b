//! Chunked decoding of a whole LIST body (issue 14 item 2, R3): an unpaged relist at a concrete
//! resourceVersion can hold 50 000 Pods in one response, and decoding it in one call would hold a
//! tokio worker for seconds. [`ChunkedList`] walks the body's top level by hand and hands out the
//! raw bytes of `items` elements a bounded number at a time, so the caller decodes one chunk
//! (about a page's worth), yields, and goes on. Each element is decoded by `serde_json` itself
//! (through the same exact-capacity path as a page), so the scanner only has to find where
//! elements start and end; it never interprets their content.

use serde::de::Error as _;

/// A `serde_json` error naming the byte offset, so malformed bodies read like decode errors.
fn malformed(pos: usize, what: &str) -> serde_json::Error {
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
    pub(crate) fn step(
        &mut self,
        max: usize,
        mut each: impl FnMut(&'a [u8]) -> serde_json::Result<()>,
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
                    self.ws();
                    if self.peek() == Some(b']') {
                        self.pos += 1;
                        self.state = State::Members { first: false };
                        continue;
                    }
                    if !first {
                        self.expect(b',')?;
                        self.ws();
                    }
                    let element = self.value()?;
                    self.state = State::Items { first: false };
                    handed += 1;
                    each(element)?;
                }
            }
        }
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
            Some(b'{') => {
                // The common case (every list item): inside an object outside strings, braces
                // balance on their own, so only `"`, `{` and `}` need looking at (SIMD search).
                let mut depth = 0usize;
                loop {
                    let rest = self.body.get(self.pos..).unwrap_or_default();
                    let Some(off) = memchr::memchr3(b'"', b'{', b'}', rest) else {
                        return Err(malformed(start, "unterminated object"));
                    };
                    self.pos += off;
                    match self.body[self.pos] {
                        b'"' => {
                            self.pos = string_end(self.body, self.pos + 1)
                                .ok_or_else(|| malformed(self.pos, "unterminated string"))?;
                        }
                        b'{' => {
                            depth += 1;
                            self.pos += 1;
                        }
                        _ => {
                            depth -= 1;
                            self.pos += 1;
                            if depth == 0 {
                                return Ok(&self.body[start..self.pos]);
                            }
                        }
                    }
                }
            }
            Some(b'[') => {
                let mut depth = 0usize;
                while let Some(&b) = self.body.get(self.pos) {
                    match b {
                        b'"' => {
                            self.pos = string_end(self.body, self.pos + 1)
                                .ok_or_else(|| malformed(self.pos, "unterminated string"))?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.pos += 1;
                                return Ok(&self.body[start..self.pos]);
                            }
                        }
                        _ => {}
                    }
                    self.pos += 1;
                }
                Err(malformed(start, "unterminated object or array"))
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

/// The index just past the closing quote of a string whose content starts at `from`.
fn string_end(body: &[u8], mut from: usize) -> Option<usize> {
    loop {
        let i = from + memchr::memchr2(b'"', b'\\', body.get(from..)?)?;
        if body[i] == b'\\' {
            from = i + 2;
        } else {
            return Some(i + 1);
        }
    }
}

enum Key {
    Items,
    Kind,
}

/// Which member a raw key (with quotes) names; escaped keys are decoded first.
fn key_is(raw: &[u8]) -> Option<Key> {
    let decoded;
    let name: &str = if raw.contains(&b'\\') {
        decoded = serde_json::from_slice::<String>(raw).ok()?;
        &decoded
    } else {
        std::str::from_utf8(&raw[1..raw.len() - 1]).ok()?
    };
    match name {
        "items" => Some(Key::Items),
        "kind" => Some(Key::Kind),
        _ => None,
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
