//! LIST pages: decoded (`ListPage`) and raw (`RawListPage`, whose items are decoded while the
//! next page is fetched, R3), with the exact-capacity and chunked decoders behind them.

use std::marker::PhantomData;
use std::sync::Arc;

use bytes::Bytes;
use serde::de::DeserializeOwned;

use super::decode::{EachItem, check_list_kind};
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
/// be fetched while this one decodes (R3). Cloning it shares the body.
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
    pub(super) _k: PhantomData<fn() -> K>,
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
    /// (M14), never an empty list; `items: null` is an empty list.
    pub fn decode_each(self, mut each: impl FnMut(K)) -> Result<(String, Option<String>)> {
        if self.client_shard.is_some() {
            // Item by item over raw slices, so each can be probed before its decode.
            let mut walk = chunked::ChunkedList::new(&self.body);
            self.decode_items(&mut walk, usize::MAX, &mut each)?;
            let shape = (walk.kind.take(), walk.has_items);
            return self.finish_walk(shape);
        }
        // M8: exactly sized `Vec`s inside every object (see `sized`), unless turned off.
        let seed = EachItem {
            each: &mut each,
            _k: PhantomData,
        };
        let decoded = if self.exact_capacity {
            sized::from_slice_seed(&self.body, seed)
        } else {
            sized::from_slice_seed_unsized(&self.body, seed)
        };
        let shape = decoded.map_err(|source| Error::Decode {
            what: "list",
            source,
        })?;
        self.finish_walk((shape.kind, shape.has_items))
    }
}

impl<K: DeserializeOwned> RawListPage<K> {
    /// [`decode_each`](Self::decode_each) for a body that may be far larger than a page (an
    /// unpaged relist at a concrete RV, R3): the items are decoded `chunk` at a time with a
    /// yield to the runtime after each chunk, so no tokio worker is held longer than about one
    /// page's worth of decoding (issue 14 item 2). Each object is decoded exactly as in a page
    /// (exact capacity, M8); the body's `kind` and `items` are checked as in `decode_each` (M14).
    pub async fn decode_each_chunked(
        self,
        chunk: usize,
        mut each: impl FnMut(K),
    ) -> Result<(String, Option<String>)> {
        let chunk = chunk.max(1);
        let mut walk = chunked::ChunkedList::new(&self.body);
        while !self.decode_items(&mut walk, chunk, &mut each)? {
            tokio::task::yield_now().await;
        }
        let shape = (walk.kind.take(), walk.has_items);
        self.finish_walk(shape)
    }

    /// Decodes up to `max` further items of `walk` and hands each to `each`, exactly as a
    /// page is decoded (exact capacity, M8); an item outside the client shard is skipped by
    /// its probed field, undecoded (KEP-5866). True once the whole body has been read.
    fn decode_items<'a>(
        &self,
        walk: &mut chunked::ChunkedList<'a>,
        max: usize,
        each: &mut impl FnMut(K),
    ) -> Result<bool> {
        let exact = self.exact_capacity;
        let shard = self.client_shard.as_ref();
        let probe = shard.map(|s| s.field().metadata_key());
        walk.step_probed(max, probe, |raw, probed| {
            if let (Some(shard), Some(value)) = (shard, &probed)
                && !shard.admits_bytes(value)
            {
                return Ok(());
            }
            let obj = if exact {
                sized::from_slice::<K>(raw)?
            } else {
                sized::from_slice_seed_unsized(raw, PhantomData::<K>)?
            };
            each(obj);
            Ok(())
        })
        .map_err(|source| Error::Decode {
            what: "list",
            source,
        })
    }

    /// The checks after a walk (M14): the body's `kind` and its `items`.
    fn finish_walk(
        self,
        (kind, has_items): (Option<String>, bool),
    ) -> Result<(String, Option<String>)> {
        if let Some(err) = check_list_kind(&self.body, kind.as_deref(), &self.list_kinds) {
            return Err(err);
        }
        if !has_items {
            return Err(Error::NotAList {
                what: "a body without `items`".to_string(),
                expected: self.list_kinds.first().cloned().unwrap_or_default(),
            });
        }
        Ok((self.resource_version, self.continue_token))
    }
}
