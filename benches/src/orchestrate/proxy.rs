//! The hooks of informer-testserver, for kube-apiserver: a plain-HTTP proxy on loopback that
//! forwards every request to kube-apiserver with the orchestrator's own client (TLS verified,
//! bearer token) and can hold back watch deliveries (scenario 2), end the open watches and
//! answer the next one with `410 Gone` (scenario 4), count open watches (scenario 3) and log the
//! LISTs and WATCHes with their wire format.
//!
//! Children of those scenarios connect to it as they connect to informer-testserver
//! (`--url http://127.0.0.1:PORT`, no credentials); the sync scenarios connect to kube-apiserver
//! directly. A held watch is forwarded at once, so kube-apiserver registers it at the list's
//! resourceVersion and streams its events; the proxy buffers them and starts delivering when
//! the hold ends, all at once, at the child's own pace. So the run does not depend on how much
//! history kube-apiserver's watch cache keeps.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

use anyhow::Context;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode, header};
use http_body_util::BodyExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The largest request body the proxy forwards (children send no bodies; the orchestrator's own
/// writes go to kube-apiserver directly).
const MAX_REQUEST_BODY: usize = 1 << 20;

/// What the proxy saw of one request.
#[derive(Debug, Clone)]
pub(crate) struct ProxyRecord {
    /// A LIST (a GET of a collection without `watch`).
    pub(crate) list: bool,
    /// A WATCH.
    pub(crate) watch: bool,
    /// Whether the response was Kubernetes protobuf.
    pub(crate) protobuf: bool,
    /// When the request arrived.
    pub(crate) time: SystemTime,
}

#[derive(Default)]
struct Hooks {
    /// Deliveries of watches opened from now on start this long after their request, or when
    /// `release` is cancelled, whichever comes first.
    hold: Option<Duration>,
    /// Cancelled to release the held watches before their time.
    release: CancellationToken,
    /// Answer the next WATCH with 410 Gone.
    expire_next_watch: bool,
    /// Cancelled to end every open watch.
    end_watches: CancellationToken,
}

struct Shared {
    client: kube::Client,
    hooks: Mutex<Hooks>,
    log: Mutex<Vec<ProxyRecord>>,
    open_watches: AtomicUsize,
    /// When the newest watch was opened.
    newest_watch: Mutex<Option<tokio::time::Instant>>,
}

/// A watch that ends within a second without an event is "very short" to client-go and to
/// informer-rs (R10), which then start a new list by themselves; a watch is ended only once it
/// is older than this, so that the relist measured is the 410's.
const SHORT_WATCH: Duration = Duration::from_millis(1500);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The running proxy; it stops when dropped.
pub(crate) struct Proxy {
    url: String,
    shared: Arc<Shared>,
    _stop: tokio_util::sync::DropGuard,
}

impl Proxy {
    /// Starts the proxy on a free loopback port, forwarding with `client`.
    pub(crate) async fn start(client: kube::Client) -> anyhow::Result<Self> {
        let shared = Arc::new(Shared {
            client,
            hooks: Mutex::new(Hooks::default()),
            log: Mutex::new(Vec::new()),
            open_watches: AtomicUsize::new(0),
            newest_watch: Mutex::new(None),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .context("binding the kube-apiserver proxy")?;
        let url = format!("http://{}", listener.local_addr()?);
        let app = axum::Router::new()
            .fallback(forward)
            .with_state(shared.clone());
        let stop = CancellationToken::new();
        let stopped = stop.clone();
        tokio::spawn(async move {
            let serve = axum::serve(listener, app)
                .with_graceful_shutdown(async move { stopped.cancelled().await });
            if let Err(e) = serve.await {
                tracing::warn!("the kube-apiserver proxy stopped: {e}");
            }
        });
        Ok(Proxy {
            url,
            shared,
            _stop: stop.drop_guard(),
        })
    }

    /// The URL children connect to.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// Holds the deliveries of watches opened from now on for `hold` (`None`: no hold).
    pub(crate) fn hold_watches(&self, hold: Option<Duration>) {
        let mut hooks = lock(&self.shared.hooks);
        hooks.hold = hold.filter(|d| !d.is_zero());
        hooks.release = CancellationToken::new();
    }

    /// Delivers the held watches' events now (the writes they were held for have all gone in).
    pub(crate) fn release_watches(&self) {
        lock(&self.shared.hooks).release.cancel();
    }

    /// Ends every open watch (once the newest is older than [`SHORT_WATCH`]) and answers the
    /// next WATCH with the 410 Expired kube-apiserver sends when a watch asks for a
    /// resourceVersion it no longer has: the client relists.
    pub(crate) async fn expire_open_watches(&self) {
        let newest = *lock(&self.shared.newest_watch);
        if let Some(opened) = newest {
            tokio::time::sleep_until(opened + SHORT_WATCH).await;
        }
        let mut hooks = lock(&self.shared.hooks);
        hooks.expire_next_watch = true;
        std::mem::take(&mut hooks.end_watches).cancel();
    }

    /// Watches open now.
    pub(crate) fn active_watches(&self) -> usize {
        self.shared.open_watches.load(Ordering::SeqCst)
    }

    /// Every request since the last [`clear`](Self::clear).
    pub(crate) fn requests(&self) -> Vec<ProxyRecord> {
        lock(&self.shared.log).clone()
    }

    /// Forgets the request log.
    pub(crate) fn clear(&self) {
        lock(&self.shared.log).clear();
    }
}

/// Whether `path` names a collection (`/api/v1/pods`, `/api/v1/namespaces/a/pods`,
/// `/apis/g/v/…`) rather than one object: after the group version, a collection has an odd
/// number of segments (`pods`, `namespaces/a/pods`), an object an even one.
fn is_collection(path: &str) -> bool {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let rest = match segments.first() {
        Some(&"api") => segments.get(2..),
        Some(&"apis") => segments.get(3..),
        _ => None,
    };
    rest.is_some_and(|r| r.len() % 2 == 1)
}

fn is_watch(query: Option<&str>) -> bool {
    query.is_some_and(|q| q.split('&').any(|kv| kv == "watch=true" || kv == "watch=1"))
}

/// The 410 Expired Status kube-apiserver sends when a watch asks for a resourceVersion it no
/// longer has.
fn expired_status() -> serde_json::Value {
    serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "too old resource version (expired by the benchmark's proxy)",
        "reason": "Expired",
        "code": 410,
    })
}

/// Whether the client lists protobuf first in `accept` (kube-apiserver then answers protobuf).
fn prefers_protobuf(accept: Option<&header::HeaderValue>) -> bool {
    accept
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(',').next())
        .is_some_and(|first| first.trim().starts_with(PROTOBUF))
}

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// What kube-apiserver answers a watch from a resourceVersion it no longer has: 200, one ERROR
/// event carrying the 410 Expired Status, the end of the stream; in protobuf for a client that
/// lists protobuf first, else in JSON, as kube-apiserver negotiates.
fn expired_watch(protobuf: bool) -> Response {
    let status = expired_status();
    let (body, content_type) = if protobuf {
        match informer_testserver::encode_protobuf(&status) {
            Ok(enveloped) => (
                watch_frame("ERROR", &enveloped),
                "application/vnd.kubernetes.protobuf;stream=watch",
            ),
            Err(e) => return bad_gateway(format!("encoding the 410 Status: {e}")),
        }
    } else {
        let event = serde_json::json!({"type": "ERROR", "object": status});
        (format!("{event}\n").into_bytes(), "application/json")
    };
    let mut res = Response::new(Body::from(body));
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(content_type),
    );
    res
}

/// One protobuf watch frame: a 4-byte big-endian length, then `metav1.WatchEvent` {type (1),
/// object (2): `runtime.RawExtension` {raw (1): `enveloped`}}.
fn watch_frame(event_type: &str, enveloped: &[u8]) -> Vec<u8> {
    fn varint(out: &mut Vec<u8>, mut v: usize) {
        while v >= 0x80 {
            out.push((v as u8 & 0x7f) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }
    /// Field `field`, wire type 2 (length-delimited), holding `bytes`.
    fn delimited(out: &mut Vec<u8>, field: u8, bytes: &[u8]) {
        out.push(field << 3 | 2);
        varint(out, bytes.len());
        out.extend_from_slice(bytes);
    }
    let mut raw_extension = Vec::new();
    delimited(&mut raw_extension, 1, enveloped);
    let mut event = Vec::new();
    delimited(&mut event, 1, event_type.as_bytes());
    delimited(&mut event, 2, &raw_extension);
    let mut frame = u32::try_from(event.len())
        .unwrap_or(u32::MAX)
        .to_be_bytes()
        .to_vec();
    frame.extend_from_slice(&event);
    frame
}

fn bad_gateway(e: impl std::fmt::Display) -> Response {
    let mut res = Response::new(Body::from(format!("the benchmark's proxy: {e}")));
    *res.status_mut() = StatusCode::BAD_GATEWAY;
    res
}

/// Headers a proxy must not pass on, and the ones the forwarding client sets itself.
fn forwardable(headers: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::new();
    for (name, value) in headers {
        let skip = [
            header::HOST,
            header::CONNECTION,
            header::CONTENT_LENGTH,
            header::TRANSFER_ENCODING,
            header::AUTHORIZATION,
            header::UPGRADE,
        ]
        .contains(name);
        if !skip {
            out.append(name, value.clone());
        }
    }
    out
}

async fn forward(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    let time = SystemTime::now();
    let (parts, body) = req.into_parts();
    let watch = parts.method == Method::GET && is_watch(parts.uri.query());
    let list = parts.method == Method::GET && !watch && is_collection(parts.uri.path());
    let (hold, expire, end_watches, release) = {
        let mut hooks = lock(&shared.hooks);
        let expire = watch && std::mem::take(&mut hooks.expire_next_watch);
        (
            hooks.hold,
            expire,
            hooks.end_watches.clone(),
            hooks.release.clone(),
        )
    };
    let record = |protobuf: bool| {
        if list || watch {
            lock(&shared.log).push(ProxyRecord {
                list,
                watch,
                protobuf,
                time,
            });
        }
    };
    if expire {
        let protobuf = prefers_protobuf(parts.headers.get(header::ACCEPT));
        record(protobuf);
        return expired_watch(protobuf);
    }
    let body = match axum::body::to_bytes(body, MAX_REQUEST_BODY).await {
        Ok(b) => b,
        Err(e) => return bad_gateway(e),
    };
    let path = parts
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
    let mut upstream = http::Request::new(kube::client::Body::from(body.to_vec()));
    *upstream.method_mut() = parts.method.clone();
    *upstream.headers_mut() = forwardable(&parts.headers);
    match path.parse() {
        Ok(uri) => *upstream.uri_mut() = uri,
        Err(e) => return bad_gateway(e),
    }
    let res = match shared.client.send(upstream).await {
        Ok(res) => res,
        Err(e) => return bad_gateway(e),
    };
    let protobuf = res.headers().get(header::CONTENT_TYPE).is_some_and(|v| {
        v.as_bytes()
            .starts_with(b"application/vnd.kubernetes.protobuf")
    });
    record(protobuf);
    let (mut head, upstream_body) = res.into_parts();
    head.headers.remove(header::CONTENT_LENGTH);
    head.headers.remove(header::TRANSFER_ENCODING);
    head.headers.remove(header::CONNECTION);
    let body = if watch && head.status.is_success() {
        watch_body(&shared, upstream_body, hold, release, end_watches)
    } else {
        Body::new(upstream_body)
    };
    Response::from_parts(head, body)
}

/// Counts an open watch for as long as its response body lives.
struct OpenWatch(Arc<Shared>);

impl Drop for OpenWatch {
    fn drop(&mut self) {
        self.0.open_watches.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A watch response body: kube-apiserver's events, read at once into a buffer and delivered
/// after `hold` (or once `release` is cancelled), until the watch ends upstream or `end` is
/// cancelled.
fn watch_body(
    shared: &Arc<Shared>,
    mut upstream: kube::client::Body,
    hold: Option<Duration>,
    release: CancellationToken,
    end: CancellationToken,
) -> Body {
    shared.open_watches.fetch_add(1, Ordering::SeqCst);
    *lock(&shared.newest_watch) = Some(tokio::time::Instant::now());
    let open = OpenWatch(shared.clone());
    let (tx, rx) = mpsc::unbounded_channel::<Result<Bytes, kube::Error>>();
    let reader_end = end.clone();
    tokio::spawn(async move {
        loop {
            let frame = tokio::select! {
                () = reader_end.cancelled() => return,
                frame = upstream.frame() => frame,
            };
            let sent = match frame {
                None => return,
                Some(Err(e)) => {
                    let _ = tx.send(Err(e));
                    return;
                }
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => tx.send(Ok(data)),
                    Err(_trailers) => continue,
                },
            };
            if sent.is_err() {
                return;
            }
        }
    });
    let held_until = hold.map(|d| tokio::time::Instant::now() + d);
    let stream = futures::stream::unfold(
        (rx, held_until, end, open),
        move |(mut rx, held_until, end, open)| {
            let release = release.clone();
            async move {
                if let Some(at) = held_until {
                    tokio::select! {
                        () = tokio::time::sleep_until(at) => {}
                        () = release.cancelled() => {}
                        () = end.cancelled() => return None,
                    }
                }
                let item = tokio::select! {
                    item = rx.recv() => item?,
                    () = end.cancelled() => return None,
                };
                Some((item, (rx, None, end, open)))
            }
        },
    );
    Body::from_stream(stream)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collections_lists_and_watches_are_told_apart() {
        assert!(is_collection("/api/v1/pods"));
        assert!(is_collection("/api/v1/namespaces/a/pods"));
        assert!(is_collection("/apis/apps/v1/namespaces/a/deployments"));
        assert!(!is_collection("/api/v1/namespaces/a/pods/p"));
        assert!(!is_collection("/api/v1/namespaces/a"));
        assert!(!is_collection("/version"));
        assert!(is_watch(Some("watch=true&resourceVersion=7")));
        assert!(is_watch(Some("limit=5&watch=1")));
        assert!(!is_watch(Some("watch=false")));
        assert!(!is_watch(Some("allowWatchBookmarks=true")));
        assert!(!is_watch(None));
    }

    #[test]
    fn the_expired_watch_is_negotiated_and_readable_in_both_formats() {
        use header::HeaderValue;
        let client_go =
            HeaderValue::from_static("application/vnd.kubernetes.protobuf,application/json");
        assert!(prefers_protobuf(Some(&client_go)));
        assert!(!prefers_protobuf(Some(&HeaderValue::from_static(
            "application/json"
        ))));
        assert!(!prefers_protobuf(None));
        // The protobuf frame, read as informer-rs reads watch streams.
        let enveloped =
            informer_testserver::encode_protobuf(&expired_status()).expect("a Status encodes");
        let frame = watch_frame("ERROR", &enveloped);
        let informer_proto::frame::WatchFrame::Frame { event, consumed } =
            informer_proto::frame::read_watch_frame(&frame, 1 << 20).expect("a frame")
        else {
            panic!("an incomplete frame");
        };
        assert_eq!(consumed, frame.len());
        let event = informer_proto::frame::WatchEvent::read(event).expect("a watch event");
        assert_eq!(event.event_type, "ERROR");
        let status = informer_proto::frame::read_status(event.object).expect("a Status");
        assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
    }

    /// Scenario 2 on kube-apiserver: a held watch delivers nothing until released, and its
    /// events as soon as it is, long before the hold would end. informer-testserver stands in
    /// for kube-apiserver behind the proxy.
    #[tokio::test]
    async fn a_held_watch_delivers_once_released() {
        use futures::{StreamExt, TryStreamExt};
        use k8s_openapi::api::core::v1::ConfigMap;
        use kube::api::{Api, PostParams, WatchEvent, WatchParams};

        let server = informer_testserver::TestServer::start()
            .await
            .expect("the test server starts");
        let proxy = Proxy::start(server.client())
            .await
            .expect("the proxy starts");
        proxy.hold_watches(Some(Duration::from_secs(600)));
        let url = proxy.url().parse().expect("the proxy's URL");
        let client = kube::Client::try_from(kube::Config::new(url)).expect("a client");
        let through: Api<ConfigMap> = Api::namespaced(client, "default");
        let mut events = through
            .watch(&WatchParams::default(), "0")
            .await
            .expect("the watch opens")
            .boxed();
        let cm: ConfigMap =
            serde_json::from_value(serde_json::json!({"metadata": {"name": "held"}}))
                .expect("a ConfigMap");
        Api::<ConfigMap>::namespaced(server.client(), "default")
            .create(&PostParams::default(), &cm)
            .await
            .expect("created");
        // Held: nothing can arrive, however long this waits.
        let early = tokio::time::timeout(Duration::from_millis(300), events.try_next()).await;
        assert!(early.is_err(), "delivered while held: {early:?}");
        proxy.release_watches();
        let event = tokio::time::timeout(Duration::from_secs(30), events.try_next())
            .await
            .expect("delivered within 30 s of the release, not at the hold's 600 s")
            .expect("a watch event")
            .expect("the watch is open");
        match event {
            WatchEvent::Added(cm) => assert_eq!(cm.metadata.name.as_deref(), Some("held")),
            other => panic!("expected ADDED, got {other:?}"),
        }
    }
}
