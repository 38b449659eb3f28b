//! Fields of a newer schema, passed over (T8 in `docs/behaviour.md`).
//!
//! A server of a newer Kubernetes version sends fields this build's table does not have. The
//! reader passes over each by its wire type, as Go's generated unmarshallers and the JSON path
//! do with unknown fields, so a newer server never costs a decode (nor protobuf). The fields are
//! counted on the decoding thread, where [`Skipped::since`] reads them: every decode runs on one
//! thread from start to end, so the count between two reads is that decode's alone.
//!
//! ```
//! use informer_proto::{for_kind, from_slice, Skipped};
//! use informer_proto::wire::put_len;
//!
//! // A ConfigMap (metadata.name "cm") with a field number 4000 that the table does not know.
//! let mut meta = Vec::new();
//! put_len(&mut meta, 1, b"cm");
//! let mut cm = Vec::new();
//! put_len(&mut cm, 1, &meta);
//! put_len(&mut cm, 4000, b"from a newer server");
//!
//! #[derive(serde::Deserialize)]
//! struct Meta { name: String }
//! #[derive(serde::Deserialize)]
//! struct Named { metadata: Meta }
//!
//! let start = Skipped::start();
//! let named: Named = from_slice(for_kind("v1", "ConfigMap").expect("built in"), &cm)?;
//! assert_eq!(named.metadata.name, "cm");
//! let skipped = start.since();
//! assert_eq!(skipped.count, 1);
//! assert_eq!(skipped.example, Some(("api.core.v1.ConfigMap", 4000)));
//! # Ok::<(), informer_proto::Error>(())
//! ```

use std::cell::Cell;

thread_local! {
    /// Fields passed over on this thread, ever.
    static COUNT: Cell<u64> = const { Cell::new(0) };
    /// The last one passed over: its message's full name and its field number.
    static LAST: Cell<Option<(&'static str, u32)>> = const { Cell::new(None) };
}

/// Counts field `tag` of `message` as passed over.
pub(crate) fn pass_over(message: &'static str, tag: u32) {
    COUNT.with(|c| c.set(c.get().wrapping_add(1)));
    LAST.with(|l| l.set(Some((message, tag))));
}

/// A point on this thread's count of passed-over fields, to count from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "read what was passed over with `since`"]
pub struct Skipped {
    at: u64,
}

/// What was passed over on this thread since a [`Skipped::start`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SkippedFields {
    /// How many fields (each element of a repeated field counts).
    pub count: u64,
    /// The last of them, when any: its message's full name and its field number, for a log
    /// line.
    pub example: Option<(&'static str, u32)>,
}

impl Skipped {
    /// The count so far on this thread.
    pub fn start() -> Self {
        Skipped {
            at: COUNT.with(Cell::get),
        }
    }

    /// The fields passed over on this thread since `self` was taken.
    pub fn since(self) -> SkippedFields {
        let count = COUNT.with(Cell::get).wrapping_sub(self.at);
        SkippedFields {
            count,
            example: if count == 0 {
                None
            } else {
                LAST.with(Cell::get)
            },
        }
    }
}
