//! LIST and WATCH requests over a `kube::Client`: the only module in the runtime that talks to the API server.
//!
//! **Architecture invariant:** nothing else in informer-runtime calls `kube::Client` or `kube::Api`.
//!
//! Both requests are built here rather than through kube's `ListParams`/`WatchParams`, because:
//! - kube's `ListParams` drops `resourceVersion` when it is `"0"` and a `limit` is set, but the first
//!   paged LIST must send `resourceVersion=0&limit=500` (R2, R3);
//! - the watch request carries what `WatchParams` has no field for: the shard selector (S4) and the
//!   client-side limits (a line cap, M16); and each watch asks for 300–600 s (R6), which kube's
//!   own client read timeout (295 s) would cut, hence the client requirement below.
//!
//! # Client requirement
//!
//! The `kube::Client` must not time out a response body before the watch does: its
//! `Config::read_timeout` must be `None` (kube's default) or longer than the longest watch timeout
//! the reflector may ask for (twice `ReflectorConfig::min_watch_timeout`, 10 min by default, plus 5 s).
//! The reflector detects dead connections itself (R7). [`read_timeout_fits`] checks a `kube::Config`.
//! kube's default client retries 429/503/504 internally (`Config::default_retry`: up to 15
//! times, honouring `Retry-After`); the reflector's own handling (R11, R13) then only sees
//! what is left after those retries, and the response-head bound ([`BodyLimits::head`], T4)
//! spans all of them. The reflector needs no retry layer of its own: a client built with
//! `default_retry = false` hands it every answer at once.

mod body;
pub(crate) mod chunked;
mod error;
mod format;
mod framing;
#[cfg(test)]
mod fuzz;
mod limits;
mod page;
mod pool;
mod request;
pub(crate) mod sized;
mod streamed;

use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use kube::api::{Api, DynamicObject, PartialObjectMeta};
use kube::core::WatchEvent;
use kube::{Client, Resource};
use serde::de::DeserializeOwned;

use self::body::BodyReader;
use self::error::api_error;
pub use self::error::{Error, ErrorClass, Result, status_retry_after};
use self::format::{EventCtx, Format, Json, Protobuf};
use self::framing::events;
use self::limits::read_body;
pub use self::limits::{
    BodyLimits, DEFAULT_BODY_IDLE_TIMEOUT, DEFAULT_MAX_ERROR_BODY_BYTES,
    DEFAULT_MAX_LIST_BODY_BYTES, DEFAULT_MAX_LIST_ITEM_BYTES, DEFAULT_RESPONSE_HEAD_TIMEOUT,
};
pub use self::page::{ListPage, RawListPage};
pub use self::pool::DecodePool;
pub use self::request::{DEFAULT_MAX_WATCH_LINE_BYTES, ListRequest, WatchRequest};
use self::request::{push_opt, push_pair};
pub use self::streamed::StreamedList;

/// A stream of decoded watch events; errors do not end it (the consumer decides), the end of the
/// HTTP body does.
pub type WatchStream<K> = BoxStream<'static, Result<WatchEvent<K>>>;

/// One item of a watch whose events are probed against a client shard.
pub(crate) enum Probed<K> {
    /// An event to apply.
    Event(WatchEvent<K>),
    /// An event of an object outside the client shard, dropped before its decode. It is still
    /// traffic on the connection: it proves the watch alive (R7) and counts as an event when
    /// judging a very short watch (R10).
    Foreign,
}

/// A watch stream that also reports the events its client shard dropped ([`Probed`]).
pub(crate) type ProbedStream<K> = BoxStream<'static, Result<Probed<K>>>;

/// Checks a decoded object before it is handed on (R16); returns the unexpected kind.
type ObjectCheck<K> = Arc<dyn Fn(&K) -> Option<String> + Send + Sync>;

/// Which representation the server is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Full,
    Metadata,
}

/// LIST and WATCH for one resource (optionally one namespace) through a `kube::Client`.
///
/// Build it from a `kube::Api`: [`ListWatch::new`] for typed resources, [`ListWatch::dynamic`]
/// for `DynamicObject`, [`ListWatch::metadata`] for metadata-only (`PartialObjectMeta<K>`) informers.
/// See the module docs for the client's read-timeout requirement.
pub struct ListWatch<K> {
    client: Client,
    url_path: String,
    mode: Mode,
    expected_kind: String,
    /// The `kind`s a LIST answer may have (M14); the first is the one named in errors.
    list_kinds: Arc<[String]>,
    check: Option<ObjectCheck<K>>,
    /// Decode with exactly sized `Vec`s (M8); off for projections (see `of_source`).
    exact_capacity: bool,
    /// How long a LIST or error body may make no progress, and how large it may grow (T4).
    limits: BodyLimits,
    /// Whether requests offer gzip (`Accept-Encoding: gzip`, T3).
    accept_gzip: bool,
    /// Set, for good, by a gzip body that inflated past its bound (T3).
    gzip_refused: body::GzipRefused,
    /// Body bytes received as they came on the wire (compressed, if gzip), shared by clones.
    received: Arc<AtomicU64>,
    /// The protobuf message of the served kind, when it is a built-in one (T1).
    kind_message: Option<&'static informer_proto::Message>,
    /// Whether protobuf is asked for where the kind has a message.
    protobuf: bool,
    /// Turned on, for good, by the first protobuf answer that could not be decoded.
    fallback: format::Fallback,
    /// The protobuf fields of a newer schema passed over (T8).
    newer: format::Newer,
    /// Whether requests ask the server to leave managedFields out (KEP-5958, T7).
    drop_managed_fields: bool,
    /// Where pages and large watch events are decoded (T6).
    pool: DecodePool,
}

impl<K> Clone for ListWatch<K> {
    fn clone(&self) -> Self {
        ListWatch {
            client: self.client.clone(),
            url_path: self.url_path.clone(),
            mode: self.mode,
            expected_kind: self.expected_kind.clone(),
            list_kinds: Arc::clone(&self.list_kinds),
            check: self.check.clone(),
            exact_capacity: self.exact_capacity,
            limits: self.limits,
            accept_gzip: self.accept_gzip,
            gzip_refused: self.gzip_refused.clone(),
            received: Arc::clone(&self.received),
            kind_message: self.kind_message,
            protobuf: self.protobuf,
            fallback: self.fallback.clone(),
            newer: self.newer.clone(),
            pool: self.pool.clone(),
            drop_managed_fields: self.drop_managed_fields,
        }
    }
}

impl<K> std::fmt::Debug for ListWatch<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListWatch")
            .field("url_path", &self.url_path)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl<K> ListWatch<K>
where
    K: Resource + DeserializeOwned + Send + 'static,
    K::DynamicType: Default,
{
    /// A list-watcher for a typed resource; the namespace (or all namespaces) comes from the `Api`.
    /// The typed decoder itself rejects objects of another kind (R16).
    pub fn new(api: Api<K>) -> Self {
        let dt = K::DynamicType::default();
        let kind = K::kind(&dt).into_owned();
        let message = informer_proto::for_kind(&K::api_version(&dt), &kind);
        Self::from_parts(
            api.resource_url().to_string(),
            api.into_client(),
            Mode::Full,
            kind,
        )
        .with_protobuf(message)
    }
}

impl<K> ListWatch<K>
where
    K: DeserializeOwned + Send + 'static,
{
    /// A list-watcher that reads `S`'s endpoint (from the `Api`) into `K`: `S` itself for typed
    /// resources ([`ListWatch::new`]), or a projection of `S` (P4), whose decoder skips every field
    /// it does not declare and rejects objects of another kind (R16).
    pub fn of_source<S>(api: Api<S>) -> Self
    where
        S: Resource<DynamicType = ()> + 'static,
    {
        let kind = S::kind(&()).into_owned();
        let message = informer_proto::for_kind(&S::api_version(&()), &kind);
        let projection = std::any::TypeId::of::<K>() != std::any::TypeId::of::<S>();
        Self::from_parts(
            api.resource_url().to_string(),
            api.into_client(),
            Mode::Full,
            kind,
        )
        .exact_capacity(!projection)
        .with_protobuf(message)
    }
}

impl ListWatch<DynamicObject> {
    /// A list-watcher for dynamic objects of the `ApiResource` the `Api` was built with.
    /// Events whose `kind` differs from `resource.kind` are dropped (R16).
    pub fn dynamic(api: Api<DynamicObject>, resource: &kube::discovery::ApiResource) -> Self {
        let mut lw = Self::from_parts(
            api.resource_url().to_string(),
            api.into_client(),
            Mode::Full,
            resource.kind.clone(),
        );
        let expected = resource.kind.clone();
        lw.check = Some(Arc::new(move |obj: &DynamicObject| match &obj.types {
            Some(t) if t.kind != expected => Some(t.kind.clone()),
            _ => None,
        }));
        lw
    }
}

impl<K> ListWatch<PartialObjectMeta<K>>
where
    K: Resource + Send + 'static,
    K::DynamicType: Default,
{
    /// A metadata-only list-watcher: the server sends `PartialObjectMetadata` (M8). Objects of
    /// `K`'s own kind are accepted too (a server that ignores the `as=` media type parameter).
    pub fn metadata(api: Api<K>) -> Self {
        let mut lw = Self::from_parts(
            api.resource_url().to_string(),
            api.into_client(),
            Mode::Metadata,
            "PartialObjectMetadata".to_string(),
        );
        let own_kind = K::kind(&K::DynamicType::default()).into_owned();
        // A server that ignores `as=` answers with the full list.
        lw.list_kinds = Arc::from([
            "PartialObjectMetadataList".to_string(),
            format!("{own_kind}List"),
        ]);
        lw.check = Some(Arc::new(move |obj: &PartialObjectMeta<K>| {
            match &obj.types {
                Some(t) if t.kind != "PartialObjectMetadata" && t.kind != own_kind => {
                    Some(t.kind.clone())
                }
                _ => None,
            }
        }));
        lw
    }
}

impl<K> ListWatch<K>
where
    K: DeserializeOwned + Send + 'static,
{
    fn from_parts(url_path: String, client: Client, mode: Mode, expected_kind: String) -> Self {
        ListWatch {
            client,
            url_path,
            mode,
            list_kinds: Arc::from([format!("{expected_kind}List")]),
            expected_kind,
            check: None,
            exact_capacity: true,
            limits: BodyLimits::default(),
            accept_gzip: true,
            gzip_refused: body::GzipRefused::default(),
            received: Arc::new(AtomicU64::new(0)),
            kind_message: None,
            protobuf: true,
            fallback: format::Fallback::default(),
            newer: format::Newer::default(),
            pool: DecodePool::shared(),
            drop_managed_fields: false,
        }
    }

    /// Asks for Kubernetes protobuf (`application/vnd.kubernetes.protobuf`, with JSON as the
    /// fallback) when `message` is `Some`: the built-in kind's message, which every decoded
    /// object is read through.
    fn with_protobuf(mut self, message: Option<&'static informer_proto::Message>) -> Self {
        self.kind_message = message;
        self
    }

    /// Whether LIST and WATCH ask for Kubernetes protobuf (T1). On by default for built-in
    /// kinds ([`new`](Self::new), [`of_source`](Self::of_source)), as client-go's typed clients
    /// and controller-runtime read them: several times faster to decode than JSON. Custom
    /// resources, [`dynamic`](Self::dynamic) and [`metadata`](Self::metadata) list-watchers are
    /// JSON only (kube-apiserver serves no protobuf for custom resources), and so is any
    /// list-watcher once a protobuf answer could not be decoded (a malformed one: a field of a
    /// newer Kubernetes version than this schema is passed over, T8): it asks for JSON from
    /// then on.
    pub fn prefer_protobuf(mut self, on: bool) -> Self {
        self.protobuf = on;
        self
    }

    /// Whether the next request asks for protobuf (T1).
    pub fn asks_for_protobuf(&self) -> bool {
        self.protobuf().is_some()
    }

    /// The protobuf reader of the next request, when it asks for protobuf: the built-in
    /// kind's message, which every decoded object is read through.
    fn protobuf(&self) -> Option<Protobuf> {
        self.kind_message
            .filter(|_| self.protobuf && self.mode == Mode::Full && !self.fallback.to_json())
            .map(|message| Protobuf {
                message,
                fallback: self.fallback.clone(),
                newer: self.newer.clone(),
            })
    }

    /// The JSON reader.
    fn json(&self) -> Json {
        Json {
            exact_capacity: self.exact_capacity,
        }
    }

    /// The `Accept` of a LIST (`list`) or WATCH: protobuf then JSON where protobuf is asked
    /// for (T1), the metadata-only form where that is what is cached, else JSON.
    fn accept(&self, protobuf: bool, list: bool) -> http::HeaderValue {
        let ranges: &[&str] = match (self.mode, protobuf, list) {
            (Mode::Full, true, _) => &["application/vnd.kubernetes.protobuf", "application/json"],
            (Mode::Full, false, _) => &["application/json"],
            (Mode::Metadata, _, true) => {
                &["application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"]
            }
            (Mode::Metadata, _, false) => {
                &["application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"]
            }
        };
        // T7: every range asks the server to leave managedFields out, where nothing cached
        // keeps them.
        let drop = if self.drop_managed_fields {
            ";drop=metadata.managedFields"
        } else {
            ""
        };
        let text = ranges
            .iter()
            .map(|r| format!("{r}{drop}"))
            .collect::<Vec<_>>()
            .join(", ");
        http::HeaderValue::from_str(&text)
            .unwrap_or_else(|_| http::HeaderValue::from_static("application/json"))
    }

    /// Whether every request asks the server to leave `metadata.managedFields` out of the
    /// objects it sends (`drop=metadata.managedFields` on each `Accept` media type, KEP-5958,
    /// T7). Off by default; turn it on only where the cached form keeps no managedFields (a
    /// projection whose metadata is [`SlimMeta`](crate::projection::SlimMeta), an informer that
    /// strips them): a server with `ManagedFieldsOptOut` (alpha in 1.38) then sends 36-50%
    /// fewer bytes and the client decodes less; any other server ignores the parameter and
    /// sends everything, which the cached form drops as before.
    pub fn drop_managed_fields(mut self, on: bool) -> Self {
        self.drop_managed_fields = on;
        self
    }

    /// Where LIST pages and runs of watch events that take long enough to decode are decoded
    /// (T6: 200 µs or more, by the watch's own measured decode time per byte): by default
    /// [`DecodePool::shared`], one thread per core; [`DecodePool::inline`] decodes on the task
    /// that reads the answer. Objects are handed on in wire order either way.
    pub fn decode_pool(mut self, pool: DecodePool) -> Self {
        self.pool = pool;
        self
    }

    /// The pool this list-watcher decodes on ([`decode_pool`](Self::decode_pool)).
    pub fn pool(&self) -> &DecodePool {
        &self.pool
    }

    /// Whether LIST and WATCH requests offer gzip (default on, T3). kube-apiserver then gzips
    /// LIST bodies over 128 KiB and watch-list streams: 5-10x fewer bytes on the wire for some
    /// CPU on both ends. Turn it off where the network is free and the CPU is not (a server on
    /// the same machine), as client-go's `rest.Config.DisableCompression` does.
    pub fn accept_gzip(mut self, on: bool) -> Self {
        self.accept_gzip = on;
        self
    }

    /// The response body bytes this list-watcher and its clones have received so far, as they
    /// came on the wire (compressed where the server gzipped them), for every LIST, WATCH and
    /// error body. A `kube::Client` built with kube's own `gzip` feature decompresses before
    /// the bytes get here; then they are counted decompressed.
    pub fn bytes_received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }

    /// Protobuf fields of a newer Kubernetes version passed over so far, by this list-watcher
    /// and its clones (T8): a server newer than this build's schema. Each element of a
    /// repeated field counts.
    pub fn protobuf_fields_passed_over(&self) -> u64 {
        self.newer.counter().load(Ordering::Relaxed)
    }

    /// The count behind [`protobuf_fields_passed_over`](Self::protobuf_fields_passed_over),
    /// for the reflector's counters.
    pub(crate) fn newer_fields_counter(&self) -> Arc<AtomicU64> {
        self.newer.counter()
    }

    /// How long a LIST or error body may make no progress and how large it may grow (T4).
    pub fn body_limits(mut self, limits: BodyLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Whether pages and events are decoded with exactly sized `Vec`s (default on, M8). The
    /// counting pass walks every array of a page; [`of_source`](Self::of_source) turns it off
    /// for projections, whose few small arrays do not repay a walk over the fields they skip.
    pub fn exact_capacity(mut self, on: bool) -> Self {
        self.exact_capacity = on;
        self
    }

    /// The collection path this list-watcher serves, e.g. `/api/v1/namespaces/ns/configmaps`.
    pub fn url_path(&self) -> &str {
        &self.url_path
    }

    /// Sends one LIST and waits for its whole body, without decoding the items yet.
    pub async fn list_raw(&self, req: &ListRequest) -> Result<RawListPage<K>> {
        let (reader, format) = self.list_response(req).await?;
        let body = read_body(reader, self.limits.idle, self.limits.max_list_bytes, "LIST").await?;
        RawListPage::read(body, format, Arc::clone(&self.list_kinds))
    }

    /// Sends one LIST and returns once its headers have arrived; its items are decoded as the
    /// body arrives ([`StreamedList::decode_on`]), so the body is never held whole.
    pub async fn list_streamed(&self, req: &ListRequest) -> Result<StreamedList<K>> {
        let (reader, format) = self.list_response(req).await?;
        Ok(StreamedList {
            reader,
            format,
            list_kinds: Arc::clone(&self.list_kinds),
            idle: self.limits.idle,
            max: self.limits.max_list_bytes,
            max_item: self.limits.max_list_item_bytes,
            shard_by: None,
            _k: PhantomData,
        })
    }

    /// Sends one LIST; returns its body, not read yet, and the format it came in.
    async fn list_response(&self, req: &ListRequest) -> Result<(BodyReader, Format)> {
        let mut query = String::new();
        push_opt(&mut query, "labelSelector", req.label_selector.as_deref());
        push_opt(&mut query, "fieldSelector", req.field_selector.as_deref());
        push_opt(&mut query, "shardSelector", req.shard_selector.as_deref());
        if let Some(limit) = req.limit {
            push_pair(&mut query, "limit", &limit.to_string());
        }
        if let Some(token) = &req.continue_token {
            // The server rejects resourceVersion together with continue.
            push_pair(&mut query, "continue", token);
        } else if let Some(rv) = &req.resource_version {
            push_pair(&mut query, "resourceVersion", rv);
            push_opt(
                &mut query,
                "resourceVersionMatch",
                req.resource_version_match.as_deref(),
            );
        }
        let protobuf = self.protobuf();
        let res = self
            .send(&query, self.accept(protobuf.is_some(), true))
            .await?;
        let format = Format::of_answer(res.headers(), &self.json(), protobuf.as_ref());
        Ok((self.body(res)?, format))
    }

    /// Sends one LIST and decodes it as it arrives, on this list-watcher's decode pool, as the
    /// reflector does ([`StreamedList::decode_on`]).
    pub async fn list(&self, req: &ListRequest) -> Result<ListPage<K>> {
        let list = self.list_streamed(req).await?;
        list.decode_on(&self.pool, Some, |_, _| ()).await
    }

    /// Starts one WATCH. Returns once the response headers have arrived; an HTTP error (410, 429,
    /// 500, …) is returned here, errors inside the stream arrive as stream items.
    pub async fn watch(&self, req: &WatchRequest) -> Result<WatchStream<K>> {
        Ok(self
            .watch_probed(req)
            .await?
            .filter_map(|item| {
                std::future::ready(match item {
                    Ok(Probed::Event(ev)) => Some(Ok(ev)),
                    Ok(Probed::Foreign) => None,
                    Err(e) => Some(Err(e)),
                })
            })
            .boxed())
    }

    /// [`watch`](Self::watch), reporting the events dropped by `req.client_shard` as
    /// [`Probed::Foreign`] instead of swallowing them.
    pub(crate) async fn watch_probed(&self, req: &WatchRequest) -> Result<ProbedStream<K>> {
        let mut query = String::new();
        push_pair(&mut query, "watch", "true");
        push_pair(&mut query, "resourceVersion", &req.resource_version);
        push_pair(&mut query, "allowWatchBookmarks", "true");
        push_pair(
            &mut query,
            "timeoutSeconds",
            &req.timeout.as_secs().max(1).to_string(),
        );
        push_opt(&mut query, "labelSelector", req.label_selector.as_deref());
        push_opt(&mut query, "fieldSelector", req.field_selector.as_deref());
        push_opt(&mut query, "shardSelector", req.shard_selector.as_deref());
        if req.send_initial_events {
            push_pair(&mut query, "sendInitialEvents", "true");
            push_pair(&mut query, "resourceVersionMatch", "NotOlderThan");
        }
        let protobuf = self.protobuf();
        let res = self
            .send(&query, self.accept(protobuf.is_some(), false))
            .await?;
        let format = Format::of_answer(res.headers(), &self.json(), protobuf.as_ref());
        let body = self.body(res)?;
        let max = req.max_line_bytes.unwrap_or(DEFAULT_MAX_WATCH_LINE_BYTES);
        let ctx = Arc::new(EventCtx {
            expected_kind: self.expected_kind.clone(),
            check: self.check.clone(),
            shard: req.client_shard.clone(),
        });
        let pool = self.pool.clone();
        Ok(match format {
            Format::Json(f) => events(f, body, max, ctx, pool),
            Format::Protobuf(f) => events(f, body, max, ctx, pool),
        })
    }

    /// A response's body, decoded and counted in [`bytes_received`](Self::bytes_received).
    fn body(&self, res: http::Response<kube::client::Body>) -> Result<BodyReader> {
        BodyReader::new(res, Arc::clone(&self.received), self.gzip_refused.clone())
    }

    async fn send(
        &self,
        query: &str,
        accept: http::HeaderValue,
    ) -> Result<http::Response<kube::client::Body>> {
        let uri = format!("{}?{}", self.url_path, query);
        let req = http::Request::get(uri)
            .header(http::header::ACCEPT, accept)
            // T3: kube-apiserver gzips LIST bodies over 128 KiB and watch-list streams;
            // `BodyReader` decodes either incrementally.
            .header(
                http::header::ACCEPT_ENCODING,
                if self.accept_gzip && !self.gzip_refused.is_set() {
                    "gzip"
                } else {
                    "identity"
                },
            )
            .body(kube::client::Body::empty())
            .map_err(Error::BuildRequest)?;
        // T4: a request written into a half-open pooled connection gets no answer and no
        // error; dropping it closes that connection.
        let res = tokio::time::timeout(self.limits.head, self.client.send(req))
            .await
            .map_err(|_| Error::NoResponse {
                waited: self.limits.head,
            })?
            .map_err(Error::Transport)?;
        let code = res.status();
        if code.is_success() {
            return Ok(res);
        }
        if !(code.is_client_error() || code.is_server_error()) {
            // A redirect's body is an HTML page, never an API object: say what the status was.
            let location = res
                .headers()
                .get(http::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .map(|l| l.split('?').next().unwrap_or_default().to_string());
            return Err(Error::UnexpectedStatus {
                code: code.as_u16(),
                location,
            });
        }
        let header_retry = res
            .headers()
            .get(http::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let protobuf = format::protobuf::is_protobuf(res.headers());
        let body = read_body(
            self.body(res)?,
            self.limits.idle,
            self.limits.max_error_bytes,
            "error",
        )
        .await?;
        Err(api_error(
            error::status_of_body(&body, protobuf, code.as_u16()),
            header_retry,
        ))
    }
}

/// Whether a client built from `config` can carry the reflector's watches: its read timeout must be
/// unset or longer than the longest watch (twice `min_watch_timeout`, raised to 5 min, R6) plus the
/// 5 s dead-connection grace (R7). Check user-supplied configurations with this before building
/// the `kube::Client` (a built `Client` no longer exposes its timeouts).
pub fn read_timeout_fits(config: &kube::Config, min_watch_timeout: Duration) -> bool {
    let longest = min_watch_timeout.max(Duration::from_secs(300)) * 2 + Duration::from_secs(5);
    config.read_timeout.is_none_or(|t| t > longest)
}

#[cfg(test)]
mod tests;
