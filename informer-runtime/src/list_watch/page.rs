//! LIST pages: decoded (`ListPage`) and raw (`RawListPage`, whose items are decoded while the
//! next page is fetched, [R3]), and the item pipeline between them (`PageItems`): walk, filter,
//! decode, one item at a time.
//!
//! [R3]: https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md#1-reflector-list-watch-relist

use std::marker::PhantomData;
use std::sync::Arc;

use bytes::Bytes;
use serde::de::DeserializeOwned;

use super::decode::check_list_kind;
use super::{Error, Result, chunked, sized};
use crate::shard::Shard;

/// One decoded LIST page.
#[derive(Debug, Clone)]
pub struct ListPage<K> {
    /// The page's objects.
    pub items: Vec<K>,
    /// `metadata.resourceVersion` of the list.
    pub resource_version: String,
    /// `metadata.continue`, if more pages follow.
    pub continue_token: Option<String>,
}

/// A LIST response whose body has arrived but whose items are not decoded yet, so the next page can
/// be fetched while this one decodes ([R3]). Cloning it shares the body.
///
/// [R3]: https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md#1-reflector-list-watch-relist
#[derive(Debug, Clone)]
pub struct RawListPage<K> {
    pub(super) body: Bytes,
    pub(super) exact_capacity: bool,
    /// The list kinds this page may have (M14).
    pub(super) list_kinds: Arc<[String]>,
    /// `metadata.resourceVersion` of the list.
    pub resource_version: String,
    /// `metadata.continue`, if more pages follow.
    pub continue_token: Option<String>,
    /// `metadata.shardInfo.selector`: the shard selector the server applied (KEP-5866); `None`
    /// when it sent everything.
    pub shard_info: Option<String>,
    /// Items outside this shard are skipped before their decode (see [`Self::client_shard`]).
    pub(super) client_shard: Option<Shard>,
    /// Set when the body is protobuf (T1): the items' message and where the list message is.
    pub(super) proto: Option<ProtoBody>,
    pub(super) _k: PhantomData<fn() -> K>,
}

/// A protobuf LIST body's item message and list bytes.
#[derive(Debug, Clone)]
pub(super) struct ProtoBody {
    pub(super) message: &'static informer_proto::Message,
    /// The list message within the body.
    pub(super) raw: std::ops::Range<usize>,
    pub(super) fallback: super::proto::Fallback,
}

impl<K> RawListPage<K> {
    /// Filters the items on the client (KEP-5866 on a server without the feature): the decode
    /// reads each item's UID or namespace first and skips an item outside `shard` without
    /// decoding the rest of it.
    pub fn client_shard(mut self, shard: Option<Shard>) -> Self {
        self.client_shard = shard;
        self
    }
}

impl<K: DeserializeOwned> RawListPage<K> {
    /// Decodes the items (the CPU-heavy half of a LIST).
    pub fn decode(self) -> Result<ListPage<K>> {
        let mut items = Vec::new();
        let (resource_version, continue_token) = self.decode_each(|obj| items.push(obj))?;
        Ok(ListPage {
            items,
            resource_version,
            continue_token,
        })
    }

    /// Decodes the items one at a time, handing each to `each` before the next is decoded, so
    /// the page never exists twice (decoded and converted); returns the resourceVersion and
    /// continue token. On a decode error the items already handed out stay with `each`.
    ///
    /// A body without `items`, or whose `kind` is not the expected list kind, is an error
    /// ([M14]), never an empty list; `items: null` is an empty list.
    ///
    /// [M14]: https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md#11-known-failure-modes-to-design-against
    pub fn decode_each(self, mut each: impl FnMut(K)) -> Result<(String, Option<String>)> {
        let mut items = self.items();
        for obj in &mut items {
            each(obj?);
        }
        items.finish()?;
        Ok((self.resource_version, self.continue_token))
    }

    /// The page's objects, decoded one per `next` (the item pipeline): a walker finds each
    /// item's bytes without interpreting them, a client shard drops foreign items by a probed
    /// field before their decode (KEP-5866), and the decode builds `K` with exactly sized
    /// `Vec`s ([M8], unless turned off). Nothing is decoded ahead of the caller, so a consumer
    /// that yields every few hundred objects bounds both memory and the time it holds a
    /// worker, whatever the body's size ([R3], issue 14 item 2). After the last item,
    /// [`PageItems::finish`] checks the body was a list of the expected kind ([M14]).
    ///
    /// [M8]: https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md#11-known-failure-modes-to-design-against
    /// [R3]: https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md#1-reflector-list-watch-relist
    /// [M14]: https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md#11-known-failure-modes-to-design-against
    pub fn items(&self) -> PageItems<'_, K> {
        let walk = match &self.proto {
            Some(p) => Walk::Protobuf(
                informer_proto::frame::List::read(&self.body[p.raw.clone()])
                    .map(|list| list.items())
                    .map_err(Some),
                p,
            ),
            // The body's UTF-8 is validated once here, not string by string in each item.
            None => Walk::Json(
                chunked::ChunkedList::new(&self.body),
                std::str::from_utf8(&self.body).ok(),
            ),
        };
        PageItems {
            page: self,
            walk,
            probe: self.client_shard.as_ref().map(|s| s.field().metadata_key()),
            skipped: 0,
            done: false,
        }
    }
}

/// One raw-item walker per wire format.
enum Walk<'a> {
    /// JSON: the top level and `items` walked by hand (strings and bracket depth only), and
    /// the body as text when it is valid UTF-8.
    Json(chunked::ChunkedList<'a>, Option<&'a str>),
    /// Protobuf: the list message's `items` fields, by length prefix. `Err` holds the error
    /// of reading the list message, handed out once.
    Protobuf(
        Result<informer_proto::frame::Items<'a>, Option<informer_proto::Error>>,
        &'a ProtoBody,
    ),
}

/// The objects of a [`RawListPage`], decoded one at a time ([`RawListPage::items`]).
pub struct PageItems<'a, K> {
    page: &'a RawListPage<K>,
    walk: Walk<'a>,
    /// The `metadata` field a client shard reads before deciding on an item.
    probe: Option<&'static str>,
    skipped: usize,
    done: bool,
}

impl<K> std::fmt::Debug for PageItems<'_, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageItems")
            .field("skipped", &self.skipped)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl<K> PageItems<'_, K> {
    /// How many items a client shard dropped so far, undecoded.
    pub fn skipped(&self) -> usize {
        self.skipped
    }

    /// After the last item: the body's checks ([M14]), its `kind` and that it had `items`. An
    /// error if the walk stopped early (a decode error, or a caller that did not read on).
    ///
    /// [M14]: https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md#11-known-failure-modes-to-design-against
    pub fn finish(self) -> Result<()> {
        if !self.done {
            return Err(Error::NotAList {
                what: "a list whose items were not all read".to_string(),
                expected: self.page.list_kinds.first().cloned().unwrap_or_default(),
            });
        }
        // A protobuf list's kind was checked from its envelope before the walk, and a
        // protobuf list without items is an empty list.
        let Walk::Json(walk, _) = &self.walk else {
            return Ok(());
        };
        if let Some(err) =
            check_list_kind(&self.page.body, walk.kind.as_deref(), &self.page.list_kinds)
        {
            return Err(err);
        }
        if !walk.has_items {
            return Err(Error::NotAList {
                what: "a body without `items`".to_string(),
                expected: self.page.list_kinds.first().cloned().unwrap_or_default(),
            });
        }
        Ok(())
    }

    fn decode_error(&mut self, source: serde_json::Error) -> Error {
        // The walk cannot go on past a malformed item; `finish` then reports an incomplete list.
        self.done = true;
        Error::Decode {
            what: "list",
            source,
        }
    }
}

impl<K: DeserializeOwned> Iterator for PageItems<'_, K> {
    type Item = Result<K>;

    fn next(&mut self) -> Option<Result<K>> {
        loop {
            if self.done {
                return None;
            }
            let item = match &self.walk {
                Walk::Json(..) => self.json_item(),
                Walk::Protobuf(..) => self.proto_item(),
            };
            if let Some(item) = item {
                return Some(item);
            }
        }
    }
}

impl<'a, K: DeserializeOwned> PageItems<'a, K> {
    /// The next JSON item: walked, filtered, decoded; `None` when this step found none.
    fn json_item(&mut self) -> Option<Result<K>> {
        if self.probe.is_none() {
            return self.json_item_in_one_pass();
        }
        let Walk::Json(walk, _) = &mut self.walk else {
            return None;
        };
        let mut found = None;
        match walk.step_probed(1, self.probe, |raw, probed| {
            found = Some((raw, probed));
            Ok(())
        }) {
            Ok(finished) => self.done = finished,
            Err(source) => return Some(Err(self.decode_error(source))),
        }
        let (raw, probed) = found?;
        // The filter stage: an item outside the client shard is never decoded.
        if let (Some(shard), Some(value)) = (&self.page.client_shard, &probed)
            && !shard.admits_bytes(value)
        {
            self.skipped += 1;
            return None;
        }
        // The decode stage.
        let decoded = if self.page.exact_capacity {
            sized::from_slice::<K>(raw)
        } else {
            sized::from_slice_seed_unsized(raw, PhantomData::<K>)
        };
        Some(decoded.map_err(|source| self.decode_error(source)))
    }

    /// The next JSON item when nothing is filtered: its end is found by the pass that decodes
    /// it (exact capacity: the counting pass; otherwise serde_json itself), so the item's
    /// bytes are not scanned once more just to find where it ends.
    fn json_item_in_one_pass(&mut self) -> Option<Result<K>> {
        let Walk::Json(walk, text) = &mut self.walk else {
            return None;
        };
        let start = match walk.next_element_start() {
            Ok(Some(start)) => start,
            Ok(None) => {
                self.done = true;
                return None;
            }
            Err(source) => return Some(Err(self.decode_error(source))),
        };
        let rest = &walk.body()[start..];
        // `start` is at a JSON token, so a char boundary of the text.
        let rest_text = text.and_then(|t| t.get(start..));
        let decoded = if self.page.exact_capacity {
            match sized::value_array_lengths(rest) {
                Some((lens, end)) => {
                    walk.element_ends_at(start + end);
                    let item_text = rest_text.and_then(|t| t.get(..end));
                    sized::from_slice_with_lengths::<K>(&rest[..end], item_text, lens)
                }
                // Not an object or array, or one that does not close: serde_json says why.
                None => serde_json::from_slice::<K>(rest),
            }
        } else {
            let prefix = match rest_text {
                Some(t) => sized::prefix_unsized::<_, K>(serde_json::Deserializer::from_str(t)),
                None => sized::prefix_unsized::<_, K>(serde_json::Deserializer::from_slice(rest)),
            };
            match prefix {
                Some(Ok((obj, end))) => {
                    walk.element_ends_at(start + end);
                    Ok(obj)
                }
                Some(Err(e)) => Err(e),
                None => serde_json::from_slice::<K>(rest),
            }
        };
        Some(decoded.map_err(|source| self.decode_error(source)))
    }

    /// The next protobuf item, through the same stages.
    fn proto_item(&mut self) -> Option<Result<K>> {
        let Walk::Protobuf(walk, body) = &mut self.walk else {
            return None;
        };
        let body: &'a ProtoBody = body;
        let next = match walk {
            Ok(items) => items.next(),
            Err(e) => e.take().map(Err),
        };
        let fail = |done: &mut bool, e| {
            *done = true;
            Some(Err(body.fallback.fail("list", e)))
        };
        let range = match next {
            None => {
                self.done = true;
                return None;
            }
            Some(Err(e)) => return fail(&mut self.done, e),
            Some(Ok(range)) => range,
        };
        let list = &self.page.body[body.raw.clone()];
        let Some(item) = list.get(range) else {
            self.done = true;
            return Some(Err(Error::NotAList {
                what: "a protobuf list whose item runs past its end".to_string(),
                expected: self.page.list_kinds.first().cloned().unwrap_or_default(),
            }));
        };
        if let Some(shard) = &self.page.client_shard {
            match super::proto::shard_admits(shard, item) {
                Ok(true) => {}
                Ok(false) => {
                    self.skipped += 1;
                    return None;
                }
                Err(e) => return fail(&mut self.done, e),
            }
        }
        match super::proto::decode_object(body.message, item) {
            Ok(obj) => Some(Ok(obj)),
            Err(e) => fail(&mut self.done, e),
        }
    }
}
