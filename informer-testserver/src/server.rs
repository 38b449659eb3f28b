//! The [`TestServer`] handle: start, stop, addresses, clients, kubeconfig, faults and the log.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::body::Body;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};
use tower::Service;

use crate::error::Error;
use crate::faults::Faults;
use crate::log::RequestRecord;
use crate::state::{Settings, Shared};

/// Client read timeout: longer than the longest watch the project asks for (10 min) plus slack.
const CLIENT_READ_TIMEOUT: Duration = Duration::from_secs(12 * 60);

/// Configures a [`TestServer`] before it starts.
#[derive(Debug, Clone)]
pub struct TestServerBuilder {
    token: Option<String>,
    history_size: usize,
    bookmark_interval: Duration,
    port: u16,
    bind: IpAddr,
    watch_buffer: usize,
    compress_objects: bool,
    eager_protobuf: bool,
    newer_schema: bool,
    watch_list_compression: bool,
    watch_cache: bool,
    garbage_collection: bool,
}

impl Default for TestServerBuilder {
    fn default() -> Self {
        TestServerBuilder {
            token: None,
            history_size: 100_000,
            bookmark_interval: Duration::from_secs(1),
            port: 0,
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            watch_buffer: 65_536,
            compress_objects: false,
            eager_protobuf: false,
            newer_schema: false,
            watch_list_compression: true,
            watch_cache: true,
            garbage_collection: false,
        }
    }
}

impl TestServerBuilder {
    /// Requires `Authorization: Bearer <token>` on every request except /version and health
    /// checks (401 Status otherwise). The handle's client and kubeconfig carry it.
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// How many events the history keeps for watch replay and consistent pages (default
    /// 100 000). Older resourceVersions answer 410.
    pub fn history_size(mut self, n: usize) -> Self {
        self.history_size = n;
        self
    }

    /// Interval of BOOKMARK events on watches with `allowWatchBookmarks=true` (default 1 s; kube-apiserver uses about 1 min). A watch whose client went away is
    /// noticed on the next write, so bookmarks also bound how long it stays counted in
    /// [`TestServer::active_watches`].
    pub fn bookmark_interval(mut self, d: Duration) -> Self {
        self.bookmark_interval = d;
        self
    }

    /// Port to bind (default 0: a free port).
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// Address to bind (default 127.0.0.1).
    pub fn bind_address(mut self, ip: IpAddr) -> Self {
        self.bind = ip;
        self
    }

    /// How many events a watcher may fall behind before it is closed (default 65 536).
    pub fn watch_buffer(mut self, n: usize) -> Self {
        self.watch_buffer = n;
        self
    }

    /// Keeps every stored object's JSON LZ4-compressed (default off). A realistic Pod then costs
    /// the server about 6 KiB instead of 20 KiB, so one machine can serve a million of them
    /// (the benchmark's scale scenario); every read decompresses.
    pub fn compress_objects(mut self, on: bool) -> Self {
        self.compress_objects = on;
        self
    }

    /// Encodes every written object of a built-in kind as protobuf at the write, as its JSON
    /// is (default off: encoded on the first protobuf read, then kept). The benchmark turns it
    /// on so that protobuf and JSON clients find the server's work done alike.
    ///
    /// ```
    /// let server = informer_testserver::TestServer::builder().eager_protobuf(true);
    /// # let _ = server;
    /// ```
    pub fn eager_protobuf(mut self, on: bool) -> Self {
        self.eager_protobuf = on;
        self
    }

    /// Plays a kube-apiserver of a newer Kubernetes version than this build's protobuf schema
    /// (default off; T8 in docs/behaviour.md): a field of a built-in object that the schema
    /// lacks (`spec.someNewField`, written through JSON) is sent in protobuf under a field number
    /// past the message's own, as the newer server sends it to an older client. Off, such an
    /// object has no protobuf form and goes out as JSON, as before.
    ///
    /// ```
    /// let server = informer_testserver::TestServer::builder().newer_schema(true);
    /// # let _ = server;
    /// ```
    pub fn newer_schema(mut self, on: bool) -> Self {
        self.newer_schema = on;
        self
    }

    /// kube-apiserver's `WatchListCompression` feature gate (beta, on by default in 1.37):
    /// a watch-list (`sendInitialEvents=true`) to a client that accepts gzip is sent as one
    /// gzip member per flush. LIST bodies over 128 KiB are gzipped either way, as they are by
    /// kube-apiserver.
    pub fn watch_list_compression(mut self, on: bool) -> Self {
        self.watch_list_compression = on;
        self
    }

    /// kube-apiserver's watch cache (`--watch-cache`, on by default): a LIST at
    /// resourceVersion "0" (with no `resourceVersionMatch` or `NotOlderThan`) is served from it
    /// in one response whatever its `limit`, as kube-apiserver 1.37 does (KEP-4988 pages only
    /// the lists it would otherwise send to etcd). Off, that list is paged like every other, as
    /// by a kube-apiserver without the cache.
    ///
    /// ```
    /// let server = informer_testserver::TestServer::builder().watch_cache(false);
    /// # let _ = server;
    /// ```
    pub fn watch_cache(mut self, on: bool) -> Self {
        self.watch_cache = on;
        self
    }

    /// Garbage collection by owner references, as kube-controller-manager's garbage collector
    /// does it (off by default, as in an envtest without kube-controller-manager): deleting an
    /// owner deletes its dependents in the background (the default for most kinds), in the
    /// foreground (`propagationPolicy: Foreground`: the owner keeps a `foregroundDeletion`
    /// finalizer until every dependent with `blockOwnerDeletion` is gone) or orphans them
    /// (`Orphan`: the dependents lose their reference to it); a dependent with another owner
    /// left only loses the reference. The work is done before the delete answers. Off, a
    /// delete's propagation is ignored and no `orphan` or `foregroundDeletion` finalizer is
    /// set, so no delete waits on a collector that does not run (decision record 28).
    ///
    /// ```
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::api::{Api, DeleteParams, PostParams};
    ///
    /// let server = informer_testserver::TestServer::builder()
    ///     .garbage_collection(true)
    ///     .start()
    ///     .await?;
    /// let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    /// let owner = api.create(&PostParams::default(), &serde_json::from_value(serde_json::json!({
    ///     "metadata": {"name": "owner"}}))?).await?;
    /// let uid = owner.metadata.uid.clone().unwrap_or_default();
    /// api.create(&PostParams::default(), &serde_json::from_value(serde_json::json!({
    ///     "metadata": {"name": "dependent", "ownerReferences": [
    ///         {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid}]}}))?).await?;
    /// api.delete("owner", &DeleteParams::background()).await?;
    /// assert!(api.get_opt("dependent").await?.is_none());
    /// # Ok(())
    /// # }
    /// ```
    pub fn garbage_collection(mut self, on: bool) -> Self {
        self.garbage_collection = on;
        self
    }

    /// Binds and starts serving on the current tokio runtime.
    pub async fn start(self) -> Result<TestServer, Error> {
        let settings = Settings {
            bookmark_interval: self.bookmark_interval,
            compress_objects: self.compress_objects,
            eager_protobuf: self.eager_protobuf,
            protobuf_schema: if self.newer_schema {
                crate::protobuf::Schema::Newer
            } else {
                crate::protobuf::Schema::Built
            },
            watch_list_compression: self.watch_list_compression,
            watch_cache: self.watch_cache,
            garbage_collection: self.garbage_collection,
        };
        let sh = Shared::new(
            settings,
            self.token.clone(),
            self.history_size,
            self.watch_buffer,
        );
        for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            let info = sh.resolve_kind("v1", "Namespace")?;
            let obj = serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
            crate::ops::create(&sh, &info, None, obj, false)?;
        }
        let listener = TcpListener::bind((self.bind, self.port))
            .await
            .map_err(Error::Bind)?;
        let addr = listener.local_addr().map_err(Error::Bind)?;
        let client = kube::Client::try_from(config_for(addr, self.token.as_deref()))
            .map_err(Error::Client)?;
        let task = tokio::spawn(accept_loop(listener, sh.clone()));
        tracing::debug!(%addr, "informer-testserver listening");
        Ok(TestServer {
            sh,
            addr,
            client,
            task: Some(task),
        })
    }
}

/// The client configuration for a server at `addr`.
fn config_for(addr: SocketAddr, token: Option<&str>) -> kube::Config {
    let url = format!("http://{addr}")
        .parse::<http::Uri>()
        .unwrap_or_else(|_| http::Uri::from_static("http://127.0.0.1"));
    let mut config = kube::Config::new(url);
    config.read_timeout = Some(CLIENT_READ_TIMEOUT);
    config.default_namespace = "default".to_owned();
    // kube retries 429/503/504 up to 15 times by default; injected faults must reach the caller.
    config.default_retry = false;
    if let Some(token) = token {
        // AuthInfo keeps the token in a secrecy type; deserializing avoids depending on it.
        if let Ok(auth) = serde_json::from_value(serde_json::json!({"token": token})) {
            config.auth_info = auth;
        }
    }
    config
}

/// Accepts connections until shutdown; dropping the task drops every connection.
async fn accept_loop(listener: TcpListener, sh: Arc<Shared>) {
    let router = crate::http::router(sh.clone());
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            () = sh.shutdown.cancelled() => break,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let _ = stream.set_nodelay(true);
                let router = router.clone();
                let svc = hyper::service::service_fn(move |req: http::Request<Incoming>| {
                    let mut router = router.clone();
                    async move { router.call(req.map(Body::new)).await }
                });
                conns.spawn(async move {
                    let conn = hyper::server::conn::http1::Builder::new()
                        .keep_alive(true)
                        .serve_connection(TokioIo::new(stream), svc);
                    if let Err(e) = conn.await {
                        tracing::trace!(error = %e, "connection ended with an error");
                    }
                });
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    conns.abort_all();
}

/// An in-memory Kubernetes API server on a local port. Dropping it (or
/// [`shutdown`](TestServer::shutdown)) stops it and closes every connection.
pub struct TestServer {
    pub(crate) sh: Arc<Shared>,
    addr: SocketAddr,
    client: kube::Client,
    task: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for TestServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl TestServer {
    /// Starts a server with default settings on 127.0.0.1 and a free port.
    pub async fn start() -> Result<TestServer, Error> {
        Self::builder().start().await
    }

    /// A builder for non-default settings.
    pub fn builder() -> TestServerBuilder {
        TestServerBuilder::default()
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A ready client: plain HTTP, read timeout 12 min, bearer token if configured, and kube's
    /// default retry layer (429/503/504 retried up to 15 times) **disabled**, so injected
    /// failures reach the caller. Set `default_retry = true` on [`kube_config`](Self::kube_config)
    /// to test with it.
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// The configuration behind [`client`](TestServer::client), for building custom clients.
    pub fn kube_config(&self) -> kube::Config {
        config_for(self.addr, self.sh.token().as_deref())
    }

    /// A kubeconfig for this server (usable with `kubectl --kubeconfig`, or as the content of a
    /// kubeconfig Secret), naming its bearer token if it has one.
    pub fn kubeconfig_yaml(&self) -> String {
        let user = match self.sh.token() {
            Some(t) => format!(
                "\n    token: \"{}\"",
                t.replace('\\', "\\\\").replace('"', "\\\"")
            ),
            None => " {}".to_owned(),
        };
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: informer-testserver\n  cluster:\n    server: {}\nusers:\n- name: informer-testserver\n  user:{user}\ncontexts:\n- name: informer-testserver\n  context:\n    cluster: informer-testserver\n    user: informer-testserver\n    namespace: default\ncurrent-context: informer-testserver\n",
            self.base_url()
        )
    }

    /// Writes [`kubeconfig_yaml`](Self::kubeconfig_yaml) to `path`.
    pub fn write_kubeconfig(&self, path: &Path) -> std::io::Result<()> {
        std::fs::write(path, self.kubeconfig_yaml())
    }

    /// The fault switches.
    pub fn faults(&self) -> &Faults {
        &self.sh.faults
    }

    /// Every request served so far, in arrival order of their answers.
    pub fn requests(&self) -> Vec<RequestRecord> {
        self.sh.log.snapshot()
    }

    /// Waits until `cond` holds for the request log (checked on every new request) or `timeout`
    /// passes. Returns the log either way: `Ok` when the condition held, `Err` on timeout.
    pub async fn wait_for_requests(
        &self,
        timeout: Duration,
        cond: impl Fn(&[RequestRecord]) -> bool,
    ) -> Result<Vec<RequestRecord>, Vec<RequestRecord>> {
        let mut rx = self.sh.changed.subscribe();
        let wait = async {
            loop {
                rx.borrow_and_update();
                let log = self.requests();
                if cond(&log) {
                    return log;
                }
                if rx.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        };
        tokio::time::timeout(timeout, wait)
            .await
            .map_err(|_| self.requests())
    }

    /// Waits until [`active_watches`](Self::active_watches) equals `n` or `timeout` passes;
    /// returns whether it did.
    pub async fn wait_for_active_watches(&self, n: usize, timeout: Duration) -> bool {
        let mut rx = self.sh.changed.subscribe();
        let wait = async {
            loop {
                rx.borrow_and_update();
                if self.active_watches() == n {
                    return;
                }
                if rx.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        };
        tokio::time::timeout(timeout, wait).await.is_ok()
    }

    /// Empties the request log.
    pub fn clear_requests(&self) {
        self.sh.log.clear();
        self.sh.notify();
    }

    /// Open watch connections.
    pub fn active_watches(&self) -> usize {
        self.sh.active_watches.load(Ordering::SeqCst)
    }

    /// Turns the `ShardedListAndWatch` feature gate (KEP-5866) on (the default) or off. Off, the
    /// server ignores `shardSelector` and sends no `shardInfo`, as an API server without the gate
    /// does, so clients must filter on their side.
    pub fn set_sharded_list_and_watch(&self, on: bool) {
        self.set_sharded_list(on);
        self.set_sharded_watch(on);
    }

    /// The `ShardedListAndWatch` gate for LISTs only (see
    /// [`set_sharded_list_and_watch`](Self::set_sharded_list_and_watch)): with
    /// [`set_sharded_watch`](Self::set_sharded_watch) a test plays API servers behind one load
    /// balancer of which only some have the gate.
    pub fn set_sharded_list(&self, on: bool) {
        self.sh
            .sharded_list
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// Turns the `ConsistentListFromCacheSkipTimeoutFallback` feature gate (alpha in 1.37) on or
    /// off (the default). It matters only while the watch cache lags
    /// ([`Faults::lag_watch_cache`](crate::Faults::lag_watch_cache)): a consistent LIST
    /// (no `resourceVersion`, no `continue`) then answers 429 TooManyRequests with `Retry-After:
    /// 1` instead of being served from storage.
    pub fn set_consistent_list_from_cache_skip_timeout_fallback(&self, on: bool) {
        self.sh
            .consistent_list_skip_fallback
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// Turns the `ManagedFieldsOptOut` feature gate (KEP-5958, alpha in 1.38) on or off (the
    /// default). On, a request whose `Accept` media type says `drop=metadata.managedFields` gets
    /// every object (GET, LIST, WATCH, writes) without `metadata.managedFields`, in JSON and
    /// protobuf alike, and a media type with any other `drop` value is not acceptable; off, the
    /// parameter is ignored, as by a server without the gate.
    pub fn set_managed_fields_opt_out(&self, on: bool) {
        self.sh
            .managed_fields_opt_out
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// The `ShardedListAndWatch` gate for WATCHes only (see
    /// [`set_sharded_list`](Self::set_sharded_list)).
    pub fn set_sharded_watch(&self, on: bool) {
        self.sh
            .sharded_watch
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// Changes the bearer token requests must carry (`None`: any request is served), as a
    /// rotated or revoked credential would: a client holding the old token gets 401 from the
    /// next request on, watches already open included once they reconnect. [`client`](Self::client)
    /// keeps the token it was built with; [`kube_config`](Self::kube_config) and
    /// [`kubeconfig_yaml`](Self::kubeconfig_yaml) name the new one.
    pub fn set_bearer_token(&self, token: Option<&str>) {
        *self
            .sh
            .token
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = token.map(Arc::from);
    }

    /// While `Some`, every sharded request (with the gate on) is filtered by `selector` instead
    /// of the `shardSelector` it sent, and LISTs echo `selector` in `shardInfo`, as a server or
    /// proxy that rewrote the parameter would; `None` restores normal service.
    pub fn set_shard_selector_override(&self, selector: Option<&str>) {
        *self
            .sh
            .shard_selector_override
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = selector.map(str::to_owned);
    }

    /// Turns garbage collection on or off while the server runs (see
    /// [`TestServerBuilder::garbage_collection`]); turned on, it collects at once what is already
    /// collectable.
    pub fn set_garbage_collection(&self, on: bool) {
        crate::ops::set_garbage_collection(&self.sh, on);
    }

    /// The current global resourceVersion.
    pub fn current_resource_version(&self) -> u64 {
        self.sh.store.current_rv()
    }

    /// The oldest resourceVersion still served for watches and exact lists.
    pub fn oldest_resource_version(&self) -> u64 {
        self.sh.store.floor()
    }

    /// Drops the event history up to and including `rv` (clamped to the current RV): watches
    /// and exact/continued lists from older RVs then get 410 Expired.
    pub fn compact(&self, rv: u64) {
        self.sh.store.compact(rv);
    }

    /// Compacts everything up to the current RV.
    pub fn compact_all(&self) {
        self.sh.store.compact(u64::MAX);
    }

    /// Makes every continue token issued so far answer 410 Expired.
    pub fn expire_continue_tokens(&self) {
        self.sh.store.expire_continue_tokens();
    }

    /// Stops the server and closes every connection.
    pub async fn shutdown(mut self) {
        self.sh.shutdown.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.sh.shutdown.cancel();
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}
