//! The counting pass of [`super`]: the element count of every array in a JSON text, in one pass
//! over its bytes (strings skipped with `memchr`), without decoding it.

/// The element count of every array in `json`, in the order of their opening brackets.
///
/// Tolerant by design: on malformed input the counts may be wrong (the decoder reports the
/// error), never out of bounds.
pub(crate) fn array_lengths(json: &[u8]) -> Vec<u32> {
    scan_arrays(json, false).0
}

/// [`array_lengths`] of the JSON value that starts `json` (an object or array), and where that
/// value ends: one pass finds both, so a list item needs no separate scan for its end. `None`
/// when the value does not close within `json`.
pub(crate) fn value_array_lengths(json: &[u8]) -> Option<(Vec<u32>, usize)> {
    match scan_arrays(json, true) {
        (lens, Some(end)) => Some((lens, end)),
        (_, None) => None,
    }
}

/// The counting pass; with `one_value`, it stops where the first container closes and returns
/// the offset after it.
fn scan_arrays(json: &[u8], one_value: bool) -> (Vec<u32>, Option<usize>) {
    let mut lens: Vec<u32> = Vec::new();
    // Open containers: for arrays the index into `lens`, for objects `u32::MAX`.
    let mut open: Vec<u32> = Vec::with_capacity(16);
    let mut i = 0;
    while i < json.len() {
        match json[i] {
            b'"' => match string_end(json, i) {
                Some(end) => i = end,
                None => return (lens, None),
            },
            b'[' => {
                let idx = lens.len() as u32;
                // Empty unless the next non-blank byte closes it.
                let mut j = i + 1;
                while j < json.len() && json[j].is_ascii_whitespace() {
                    j += 1;
                }
                if json.get(j) == Some(&b']') {
                    lens.push(0);
                    i = j;
                    if one_value && open.is_empty() {
                        return (lens, Some(i + 1));
                    }
                } else {
                    lens.push(1);
                    open.push(idx);
                }
            }
            b'{' => open.push(u32::MAX),
            b']' | b'}' => {
                open.pop();
                if one_value && open.is_empty() {
                    return (lens, Some(i + 1));
                }
            }
            b',' => {
                if let Some(&top) = open.last()
                    && top != u32::MAX
                    && let Some(n) = lens.get_mut(top as usize)
                {
                    *n = n.saturating_add(1);
                }
            }
            _ => {}
        }
        i += 1;
    }
    (lens, None)
}

/// How many arrays `json` opens, outside strings: the counting pass's entries for that span.
pub(super) fn count_arrays(json: &[u8]) -> usize {
    let mut count = 0;
    let mut i = 0;
    while let Some(&b) = json.get(i) {
        match b {
            b'"' => match string_end(json, i) {
                Some(end) => i = end,
                None => return count,
            },
            b'[' => count += 1,
            _ => {}
        }
        i += 1;
    }
    count
}

/// Where the string whose opening quote is at `open` ends: the offset of its closing quote,
/// stepping over escapes (`memchr` to the next quote or backslash). `None` when it does not
/// close within `json`.
fn string_end(json: &[u8], open: usize) -> Option<usize> {
    let mut i = open + 1;
    loop {
        let off = memchr::memchr2(b'"', b'\\', json.get(i..)?)?;
        if json.get(i + off) == Some(&b'\\') {
            i += off + 2;
        } else {
            return Some(i + off);
        }
    }
}
