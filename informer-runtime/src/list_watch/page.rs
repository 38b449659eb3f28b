//! LIST pages: decoded (`ListPage`) and held whole (`RawListPage`, a body read but not decoded
//! yet, whose items decode through the one LIST driver, `streamed.rs`).

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::body::BodyReader;
use super::format::{Format, WireFormat as _};
use super::{Result, StreamedList};
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
#[derive(Clone)]
pub struct RawListPage<K> {
    pub(super) body: Bytes,
    /// The format the body came in.
    pub(super) format: Format,
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

impl<K> std::fmt::Debug for RawListPage<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawListPage")
            .field("bytes", &self.body.len())
            .field("resource_version", &self.resource_version)
            .field("continue_token", &self.continue_token)
            .field("shard_info", &self.shard_info)
            .finish_non_exhaustive()
    }
}

impl<K> RawListPage<K> {
    /// The page `body` in `format` holds, its head read (M14: a `Status` or a list of another
    /// kind is the error it stands for).
    pub(super) fn read(body: Bytes, format: Format, list_kinds: Arc<[String]>) -> Result<Self> {
        let head = match &format {
            Format::Json(f) => f.list_head(&body, &list_kinds),
            Format::Protobuf(f) => f.list_head(&body, &list_kinds),
        }?;
        Ok(RawListPage {
            body,
            format,
            list_kinds,
            resource_version: head.resource_version,
            continue_token: head.continue_token,
            shard_info: head.shard_info,
            client_shard: None,
            _k: PhantomData,
        })
    }

    /// Filters the items on the client (KEP-5866 on a server without the feature): the decode
    /// reads each item's UID or namespace first and skips an item outside `shard` without
    /// decoding the rest of it.
    pub fn client_shard(mut self, shard: Option<Shard>) -> Self {
        self.client_shard = shard;
        self
    }
}

impl<K> RawListPage<K> {
    /// The held body as a list to decode ([`StreamedList::decode_on`]): its items decode in
    /// the runs the reflector's LIST decodes in, on any pool, filtered by the page's client
    /// shard ([`client_shard`](Self::client_shard)). A benchmark times this decode on pools of
    /// different sizes.
    pub fn stream(self) -> StreamedList<K> {
        let shard = self.client_shard;
        let list = StreamedList {
            reader: BodyReader::whole(self.body),
            format: self.format,
            list_kinds: self.list_kinds,
            // The body is all here: nothing to wait for, bound or cap.
            idle: Duration::from_secs(3600),
            max: usize::MAX,
            max_item: usize::MAX,
            shard_by: None,
            _k: PhantomData,
        };
        match shard {
            Some(shard) => list.shard_by(move |_| Some(shard)),
            None => list,
        }
    }
}
