//! The wire formats of LIST and WATCH answers (T1), each one private implementation of
//! [`WireFormat`]: JSON (`json.rs`) and Kubernetes protobuf (`protobuf.rs`). What reads a body
//! (the item pipeline of `page.rs`, the event stream of `framing.rs`) is written once, over the
//! trait; [`Format`] picks the implementation for one answer by its `Content-Type`. A third
//! format (CBOR: `application/cbor`, `application/cbor-seq`) is one more implementation here.

pub(super) mod json;
pub(super) mod protobuf;

use std::ops::Range;

use bytes::Bytes;
use serde::de::DeserializeOwned;

use super::{Error, ObjectCheck, Probed, Result};
use crate::shard::Shard;

pub(super) use self::json::Json;
pub(super) use self::protobuf::{Fallback, Newer, Protobuf};

/// What a LIST body holds besides its items.
#[derive(Debug, Default)]
pub(super) struct ListHead {
    /// `metadata.resourceVersion`.
    pub(super) resource_version: String,
    /// `metadata.continue`, if more pages follow.
    pub(super) continue_token: Option<String>,
    /// `metadata.shardInfo.selector` (KEP-5866): the selector the server applied.
    pub(super) shard_info: Option<String>,
}

/// Where the next watch event is in a buffer of received bytes ([`WireFormat::split_event`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Split {
    /// An event at `event`; drop `consumed` bytes before the next call.
    Event {
        event: Range<usize>,
        consumed: usize,
    },
    /// `consumed` bytes hold no event (blank lines); drop them.
    Skip { consumed: usize },
    /// No whole event yet; `scanned` bytes need not be looked at again.
    Incomplete { scanned: usize },
    /// The event in progress is longer than the limit (M16).
    TooLong,
}

/// What every watch event of one stream is decoded against.
pub(super) struct EventCtx<K> {
    /// The kind this list-watcher serves (R16).
    pub(super) expected_kind: String,
    /// A check of a decoded object (dynamic and metadata-only list-watchers).
    pub(super) check: Option<ObjectCheck<K>>,
    /// Events of objects outside this shard are dropped before their decode (KEP-5866, S4).
    pub(super) shard: Option<Shard>,
}

/// One wire format's reading of LIST and WATCH answers. Every method is pure: nothing here
/// waits, so the item decodes may run on any thread, in any number.
pub(super) trait WireFormat: Clone + Send + Sync + 'static {
    /// What the walk hands each item's decode besides its bytes (JSON: the counts of its
    /// arrays, for exact capacities).
    type Hint: Send + 'static;
    /// A walk over the items of one LIST body.
    type Walk<'a>: ItemWalk<Hint = Self::Hint>;
    /// The items of one LIST body read as they arrive.
    type Stream: ItemStream<Hint = Self::Hint>;

    /// Reads a LIST body's head. A `Status`, or a list of another kind, is the error it stands
    /// for, never an empty list (M14).
    fn list_head(&self, body: &Bytes, list_kinds: &[String]) -> Result<ListHead>;

    /// A walk over the items of `body`, whose head [`list_head`](Self::list_head) read.
    fn walk<'a>(&self, body: &'a [u8]) -> Self::Walk<'a>;

    /// Whether `shard` admits the object `item`, by its probed metadata field: the rest of the
    /// item is not read (KEP-5866).
    fn admits(&self, shard: &Shard, item: &[u8]) -> Result<bool>;

    /// Decodes one item of a LIST body.
    fn decode<K: DeserializeOwned>(&self, item: &[u8], hint: Self::Hint) -> Result<K>;

    /// Finds the first watch event in `buf`, whose first `scanned` bytes were looked at by an
    /// earlier call and hold no event boundary; `max` caps an event's length (M16).
    fn split_event(&self, buf: &[u8], scanned: usize, max: usize) -> Split;

    /// How much of what was left when a watch body ended is a cut event; zero if nothing.
    fn cut_at_end(&self, rest: &[u8]) -> usize;

    /// Decodes one watch event; an event of an object outside `ctx.shard` is
    /// [`Probed::Foreign`], read up to its metadata only.
    fn event<K: DeserializeOwned>(&self, event: Bytes, ctx: &EventCtx<K>) -> Result<Probed<K>>;

    /// Where the items of a LIST body begin, looking at its first bytes only, so they can be
    /// decoded as the rest arrives (`streamed.rs`, R3). Only the usual shape streams: the
    /// list's kind and metadata before its items, the kind one of `list_kinds`. Any other body
    /// is [`Start::Whole`] and read as before, so streaming changes when items decode, never
    /// what a body decodes to.
    fn stream_start(&self, prefix: &[u8], list_kinds: &[String]) -> Start<Self::Stream>;
}

/// What [`WireFormat::stream_start`] found in the first bytes of a LIST body.
pub(super) enum Start<S> {
    /// The items begin at byte `at`; `stream` reads them from there.
    Items { at: usize, stream: S },
    /// Not known from these bytes: read more.
    More,
    /// Not a list of the usual shape (a `Status`, another kind, metadata after the items):
    /// read it whole.
    Whole,
}

/// What an [`ItemStream`] found at the start of the bytes not yet consumed.
#[derive(Debug)]
pub(super) enum Next<H> {
    /// An item at `0`'s range; the bytes up to its end are consumed.
    Item(Range<usize>, H),
    /// `consumed` bytes hold no item (a field the list message has besides its items).
    Skip { consumed: usize },
    /// No whole item yet: read more.
    More,
    /// The items ended; the body's tail (its last members or fields) begins at `tail`.
    End { tail: usize },
    /// The body is malformed here; nothing after it is read.
    Err(Error),
}

/// The items of one LIST body read as they arrive: the streaming twin of [`ItemWalk`].
pub(super) trait ItemStream: Send + 'static {
    /// What each item's decode is handed.
    type Hint: Send + 'static;

    /// The next item in `buf`, the body's bytes after the last one consumed; `eof` when no
    /// more will come.
    fn next(&mut self, buf: &[u8], eof: bool) -> Next<Self::Hint>;

    /// After the items: the checks of the body as a whole (M14) on what it holds besides its
    /// items, of which `tail` is the part after them; returns the list's head.
    fn finish(&self, tail: &[u8], list_kinds: &[String]) -> Result<ListHead>;

    /// `metadata.shardInfo.selector` as the list's metadata before its items has it
    /// (KEP-5866, S4): `None` when the answer echoes none there.
    fn shard_info(&self) -> Option<&str>;
}

/// The walk over one LIST body's items.
pub(super) trait ItemWalk: Send {
    /// What each item's decode is handed.
    type Hint;

    /// The next item: its bytes' range in the body and its decode hint; `None` at the end. An
    /// error ends the walk.
    fn next_item(&mut self) -> Option<Result<(Range<usize>, Self::Hint)>>;

    /// After the last item: the checks of the body as a whole (M14), such as its `kind` and
    /// that it had `items`.
    fn finish(&self, list_kinds: &[String]) -> Result<()>;
}

/// The format of one answer, picked by its `Content-Type` from the formats the request
/// accepted.
#[derive(Clone)]
pub(super) enum Format {
    /// `application/json`.
    Json(Json),
    /// `application/vnd.kubernetes.protobuf`.
    Protobuf(Protobuf),
}

impl Format {
    /// The format of an answer with these headers: protobuf when the request offered it
    /// (`protobuf` is its reader) and the answer is protobuf, else JSON.
    pub(super) fn of_answer(
        headers: &http::HeaderMap,
        json: &Json,
        protobuf: Option<&Protobuf>,
    ) -> Format {
        match protobuf {
            Some(p) if protobuf::is_protobuf(headers) => Format::Protobuf(p.clone()),
            _ => Format::Json(*json),
        }
    }
}

/// The error of an item the walk could not hand out past the end of its list message.
pub(super) fn item_outside_list(list_kinds: &[String]) -> Error {
    Error::NotAList {
        what: "a list whose item runs past its end".to_string(),
        expected: list_kinds.first().cloned().unwrap_or_default(),
    }
}

/// What a scan of the first bytes of a body found.
pub(super) enum Scan<T> {
    Got(T),
    /// The bytes end inside what is scanned.
    More,
    /// Not the usual shape.
    Bad,
}

/// The range of an item [`ItemStream::next`] found, moved by `by` bytes.
pub(in crate::list_watch) fn shifted(range: Range<usize>, by: usize) -> Range<usize> {
    range.start + by..range.end + by
}
