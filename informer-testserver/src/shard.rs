//! Server-side sharded LIST and WATCH (KEP-5866, Kubernetes 1.36 alpha, feature gate
//! `ShardedListAndWatch`): the `shardSelector` parameter and the `shardInfo` echo.
//!
//! What this follows (the Kubernetes API concepts page for 1.37 and `k8s.io/apimachinery/pkg/sharding`):
//! - The selector is one or more `shardRange(<field>, '<start>', '<end>')` terms joined by `||`,
//!   all over the same field. Supported fields: `object.metadata.uid` and
//!   `object.metadata.namespace`.
//! - `start` is inclusive, `end` exclusive; both are `0x`-prefixed lowercase hex with 16 digits,
//!   except that `end` may be `0x10000000000000000` (2^64) to include the top of the space.
//! - An object matches when the 64-bit FNV-1a hash of the field's value falls in any range.
//! - LIST responses carry `metadata.shardInfo.selector`, the applied selector, so a client can
//!   tell that the server honoured it; a server without the gate ignores the parameter and sends
//!   no `shardInfo`. A malformed selector is a 400.

use crate::status::ApiError;

/// The field a shard selector hashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShardField {
    /// `object.metadata.uid`.
    Uid,
    /// `object.metadata.namespace`.
    Namespace,
}

/// A parsed `shardSelector`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ShardSelector {
    field: ShardField,
    /// `[start, end)` pairs; `end` may be 2^64.
    ranges: Vec<(u64, u128)>,
    /// The selector as the client sent it, echoed in `shardInfo`.
    text: String,
}

/// The 64-bit FNV-1a hash the API server shards by (`k8s.io/apimachinery/pkg/sharding.HashField`),
/// over the field value's UTF-8 bytes.
pub fn fnv1a64(value: &str) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    value
        .bytes()
        .fold(OFFSET, |h, b| (h ^ u64::from(b)).wrapping_mul(PRIME))
}

impl ShardSelector {
    /// Parses a `shardSelector` value; a 400 naming what is wrong.
    pub(crate) fn parse(text: &str) -> Result<Self, ApiError> {
        // 400 BadRequest, as for a label selector that does not parse.
        let bad = |why: String| {
            ApiError::bad_request(format!("unable to parse shardSelector {text:?}: {why}"))
        };
        let mut field = None;
        let mut ranges = Vec::new();
        for term in text.split("||") {
            let term = term.trim();
            let args = term
                .strip_prefix("shardRange(")
                .and_then(|rest| rest.strip_suffix(')'))
                .ok_or_else(|| {
                    bad(format!(
                        "expected shardRange(<field>, '<start>', '<end>'), got {term:?}"
                    ))
                })?;
            let parts: Vec<&str> = args.split(',').map(str::trim).collect();
            let [path, start, end] = parts[..] else {
                return Err(bad(format!(
                    "shardRange takes 3 arguments, got {}",
                    parts.len()
                )));
            };
            let this = match path {
                "object.metadata.uid" => ShardField::Uid,
                "object.metadata.namespace" => ShardField::Namespace,
                other => {
                    return Err(bad(format!(
                        "unsupported field {other:?} (supported: object.metadata.uid, object.metadata.namespace)"
                    )));
                }
            };
            if field.is_some_and(|f| f != this) {
                return Err(bad("all shardRange terms must use the same field".into()));
            }
            field = Some(this);
            let start = hex_bound(start, false)
                .and_then(|v| u64::try_from(v).map_err(|e| e.to_string()))
                .map_err(|w| bad(format!("start: {w}")))?;
            let end = hex_bound(end, true).map_err(|w| bad(format!("end: {w}")))?;
            if u128::from(start) >= end {
                return Err(bad("start must be below end".into()));
            }
            ranges.push((start, end));
        }
        let field = field.ok_or_else(|| bad("empty selector".into()))?;
        Ok(ShardSelector {
            field,
            ranges,
            text: text.to_owned(),
        })
    }

    /// The selector as sent, for `shardInfo`.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// Whether an object with this UID hash (its [`fnv1a64`]) and namespace falls in the shard.
    pub(crate) fn matches(&self, uid_hash: u64, namespace: &str) -> bool {
        let hash = match self.field {
            ShardField::Uid => uid_hash,
            ShardField::Namespace => fnv1a64(namespace),
        };
        self.ranges
            .iter()
            .any(|(start, end)| hash >= *start && u128::from(hash) < *end)
    }
}

/// A quoted `'0x…'` bound: 16 lowercase hex digits, or 2^64 for an `end`.
fn hex_bound(quoted: &str, is_end: bool) -> Result<u128, String> {
    let inner = quoted
        .strip_prefix('\'')
        .and_then(|s| s.strip_suffix('\''))
        .ok_or_else(|| format!("{quoted} is not a quoted hex string"))?;
    if is_end && inner == "0x10000000000000000" {
        return Ok(1u128 << 64);
    }
    let digits = inner
        .strip_prefix("0x")
        .ok_or_else(|| format!("{inner} has no 0x prefix"))?;
    if digits.len() != 16
        || !digits
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return Err(format!("{inner} is not 16 lowercase hex digits"));
    }
    u64::from_str_radix(digits, 16)
        .map(u128::from)
        .map_err(|e| format!("{inner}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a64_matches_the_reference_vectors() {
        assert_eq!(fnv1a64(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64("foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn selectors_round_trip_their_text_and_reject_what_the_grammar_does_not_allow() {
        let one = "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')";
        assert_eq!(ShardSelector::parse(one).expect("valid").text(), one);
        for bad in [
            "",
            "shardRange(object.metadata.uid, '0x0000000000000000')",
            "shardRange(object.metadata.uid, '0x00000000000000000', '0x8000000000000000')",
            "shardRange(object.metadata.uid, '0x000000000000000G', '0x8000000000000000')",
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') ||",
        ] {
            assert_eq!(ShardSelector::parse(bad).expect_err(bad).code, 400, "{bad}");
        }
    }
}
