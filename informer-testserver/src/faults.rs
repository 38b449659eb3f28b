//! Fault switches, flipped at run time through [`TestServer::faults`](crate::TestServer::faults).
//!
//! Every switch is read by the request path; none needs a restart. `reset()` turns all of them off.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use http::StatusCode;
use tokio::sync::watch;

/// Which requests a fault applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultTarget {
    /// LIST requests (collection GET without `watch`).
    List,
    /// WATCH requests.
    Watch,
    /// GET of a single object.
    Get,
    /// Writes: create, update, patch, delete.
    Write,
    /// Every resource request (not discovery).
    Any,
}

impl FaultTarget {
    /// Whether a request of verb `verb` is covered.
    pub(crate) fn covers(self, verb: crate::Verb) -> bool {
        use crate::Verb;
        match self {
            FaultTarget::Any => !matches!(verb, Verb::Discovery | Verb::Other),
            FaultTarget::List => verb == Verb::List,
            FaultTarget::Watch => verb == Verb::Watch,
            FaultTarget::Get => verb == Verb::Get,
            FaultTarget::Write => matches!(
                verb,
                Verb::Create | Verb::Update | Verb::Patch | Verb::Delete | Verb::DeleteCollection
            ),
        }
    }
}

/// A resource named for [`Faults::forbid`]: group and plural (`""`, `"pods"`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupResource {
    /// API group (`""` for core).
    pub group: String,
    /// Plural resource name.
    pub resource: String,
}

impl GroupResource {
    /// A group/resource pair.
    pub fn new(group: &str, resource: &str) -> Self {
        GroupResource {
            group: group.to_owned(),
            resource: resource.to_owned(),
        }
    }
}

/// A response that is well-formed HTTP but breaks the API contract, armed with
/// [`Faults::hostile_next`]. Each one stands for something a broken proxy, an aggregated API
/// server or a faulty apiserver has been seen to send; the client must turn every one of them
/// into a clear error (docs/behaviour.md M14-M16), never into data.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HostileResponse {
    /// LIST: HTTP 200 whose body is a `Status` with this code and reason (M14), as a proxy that
    /// passes an error on as a success.
    ListStatusBody {
        /// The Status `code` (e.g. 410).
        code: u16,
        /// The Status `reason` (e.g. `"Expired"`).
        reason: String,
    },
    /// LIST: HTTP 200 with a list of the right kind and resourceVersion but no `items` (M14).
    ListWithoutItems,
    /// LIST: HTTP 200 with an empty list whose `kind` is this one (M14), e.g. `"PodList"`.
    ListOfKind(String),
    /// LIST: the real page, but its `continue` token never ends the list (M15): always the
    /// same token (`same_token`), or a fresh one on every page. A request that carries such a
    /// token is served from the start again.
    EndlessContinue {
        /// Repeat one token instead of issuing a new one per page.
        same_token: bool,
    },
    /// LIST: the real page with this raw JSON object put first in `items` (e.g. an item
    /// without `metadata.name`).
    ListExtraItem(String),
    /// LIST: HTTP 200 and the start of a list body (its `kind`, `metadata` and the opening of
    /// `items`), then silence with the connection left open: a half-open connection after the
    /// headers (T4).
    StalledListBody,
    /// WATCH: HTTP 200, then `len` bytes of one event line that never ends (no newline, M16),
    /// then silence with the connection left open.
    UnterminatedWatchLine {
        /// How many bytes of the line to send.
        len: usize,
    },
    /// WATCH: HTTP 200, then one `ERROR` event whose object is this raw JSON (not a `Status`),
    /// then the stream ends.
    WatchErrorObject(String),
    /// WATCH: HTTP 200, then these raw event `lines` (each one JSON object, a newline is added),
    /// then `cut` without a newline (a line cut off mid-way), then the body ends. For events the
    /// real server never sends on that watch: an object of another kind or a `Table` (R16),
    /// synthetic ADDED events of a watch-list stream that ends or breaks before its
    /// initial-events-end bookmark (R8, R20).
    WatchEvents {
        /// Complete event lines.
        lines: Vec<String>,
        /// A partial last line; empty for a body that ends cleanly after `lines`.
        cut: String,
    },
    /// Any request: this 3xx status with a `Location` header and a small HTML body.
    Redirect(u16),
    /// LIST or WATCH: HTTP 200 with `Content-Encoding: gzip`, one valid gzip member holding
    /// `body` (a list, or event lines each ending in a newline), then bytes that are not gzip
    /// (T3): a corrupt compressed stream.
    CorruptGzip {
        /// What the valid member holds.
        body: String,
    },
    /// LIST or WATCH: HTTP 200 with `Content-Encoding: gzip` and one gzip member of a few KiB
    /// that inflates to `inflated` bytes of JSON white space (a gzip bomb, T3).
    GzipBomb {
        /// The inflated size.
        inflated: usize,
    },
    /// LIST or WATCH: HTTP 200 with a Kubernetes protobuf body that breaks the framing or the
    /// limits of protobuf (T1); see [`HostileProtobuf`].
    Protobuf(HostileProtobuf),
    /// LIST or WATCH: HTTP 200 with this `Content-Type` and these bytes, e.g. a protobuf body
    /// the client's schema cannot read (T1).
    Body {
        /// The `Content-Type` header.
        content_type: String,
        /// The body.
        body: Vec<u8>,
    },
}

/// A protobuf answer that is well-formed HTTP but not a well-formed or reasonable protobuf
/// body ([`HostileResponse::Protobuf`]). The client must turn each one into a clear error
/// (and ask for JSON from then on, T1), never panic or allocate what a length claims.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HostileProtobuf {
    /// LIST: the `k8s\0` envelope names the list kind but holds no list message (`raw`).
    ListWithoutRaw,
    /// LIST: an empty list message in an envelope naming this kind (e.g. `"PodList"`).
    ListOfKind(String),
    /// LIST: a list message whose one item declares about 2^62 bytes and holds a few.
    HugeItemLength,
    /// WATCH: one frame whose 4-byte length prefix declares 4 GiB less 16 bytes, then a few
    /// bytes, then the end of the body.
    HugeFrameLength,
    /// WATCH: one `ADDED` frame whose object envelope declares about 2^62 bytes of `raw`.
    HugeObjectLength,
    /// LIST: one CustomResourceDefinition (whatever the resource asked for) whose
    /// `openAPIV3Schema` nests `levels` schemas, each the only property of the one above.
    DeepSchema {
        /// How many schemas deep.
        levels: usize,
    },
}

impl HostileProtobuf {
    /// Whether this answers a WATCH (else a LIST).
    pub(crate) fn is_watch(&self) -> bool {
        matches!(
            self,
            HostileProtobuf::HugeFrameLength | HostileProtobuf::HugeObjectLength
        )
    }
}

/// A pending hostile response.
#[derive(Debug, Clone)]
struct Hostile {
    target: FaultTarget,
    response: HostileResponse,
    remaining: usize,
}

/// A pending injected failure.
#[derive(Debug, Clone)]
struct FailNext {
    target: FaultTarget,
    code: StatusCode,
    retry_after: Option<u64>,
    remaining: usize,
}

/// How open watches are told to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Kick {
    /// Nothing yet.
    #[default]
    None,
    /// End normally (EOF).
    Close,
    /// Send an ERROR event with a 410 Status, then end.
    Gone,
    /// Send nothing more (no event, no bookmark) and never end: a half-open connection.
    Freeze,
}

#[derive(Debug, Default)]
struct State {
    fail: Vec<FailNext>,
    delays: Vec<(FaultTarget, Duration)>,
    close_watches_after: Option<usize>,
    too_large_next_list: usize,
    cut_next_watch_chunk: bool,
    malformed_next_watch_event: bool,
    gone_next_watch: usize,
    expire_next_continue: usize,
    forbidden: BTreeSet<GroupResource>,
    hostile: Vec<Hostile>,
    refused_user_agents: BTreeSet<String>,
    watch_cache_lags: bool,
    hung_user_agents: BTreeSet<String>,
}

/// One request sleeping in a delay, counted in `Faults::delayed` while it lives (a request
/// whose client went away is dropped mid-sleep, so the count is kept by `Drop`).
struct Delayed<'a>(&'a watch::Sender<usize>);

impl<'a> Delayed<'a> {
    fn enter(count: &'a watch::Sender<usize>) -> Self {
        count.send_modify(|n| *n += 1);
        Delayed(count)
    }
}

impl Drop for Delayed<'_> {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// Runtime fault switches. Obtain with [`TestServer::faults`](crate::TestServer::faults).
#[derive(Debug)]
pub struct Faults {
    state: Mutex<State>,
    chunk_armed: AtomicBool,
    suppress_end: AtomicBool,
    stall: watch::Sender<bool>,
    kick: watch::Sender<(u64, Kick)>,
    /// Numbers the tokens of [`HostileResponse::EndlessContinue`].
    hostile_tokens: AtomicU64,
    /// Bumped by `admit_user_agent`, waking requests held by `hang_user_agent`.
    admitted: watch::Sender<u64>,
    /// Bumped by `release_delays`, ending the delays requests are sleeping in.
    released: watch::Sender<u64>,
    /// How many requests are sleeping in a delay now.
    delayed: watch::Sender<usize>,
}

impl Default for Faults {
    fn default() -> Self {
        Faults {
            state: Mutex::default(),
            chunk_armed: AtomicBool::new(false),
            suppress_end: AtomicBool::new(false),
            stall: watch::Sender::new(false),
            kick: watch::Sender::new((0, Kick::None)),
            hostile_tokens: AtomicU64::new(0),
            admitted: watch::Sender::new(0),
            released: watch::Sender::new(0),
            delayed: watch::Sender::new(0),
        }
    }
}

impl Faults {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Every watch (open or future) ends normally after sending `n` events (bookmarks not
    /// counted); `None` turns it off.
    pub fn close_watches_after(&self, n: Option<usize>) {
        self.lock().close_watches_after = n;
    }

    /// The next `count` requests matching `target` fail with `code` (410, 429, 500, 503, 504...)
    /// and a Status body; `retry_after` adds a `Retry-After` header and `details.retryAfterSeconds`.
    /// A 410 on a watch is answered as HTTP 410; see [`Faults::expire_next_watch`] for the
    /// in-stream ERROR event the real server sends.
    pub fn fail_next(
        &self,
        target: FaultTarget,
        code: StatusCode,
        retry_after: Option<u64>,
        count: usize,
    ) {
        self.lock().fail.push(FailNext {
            target,
            code,
            retry_after,
            remaining: count,
        });
    }

    /// The next `count` requests matching `target` get `response` instead of a proper answer
    /// (see [`HostileResponse`]; `usize::MAX` for "until [`Faults::reset`]"). A response that
    /// only makes sense for LIST or WATCH is given only to that verb; other requests are served
    /// normally and do not use up the count.
    pub fn hostile_next(&self, target: FaultTarget, response: HostileResponse, count: usize) {
        self.lock().hostile.push(Hostile {
            target,
            response,
            remaining: count,
        });
    }

    /// The next LIST answers 504 Timeout "Too large resource version" (cause
    /// `ResourceVersionTooLarge`), as kube-apiserver's watch cache does.
    pub fn too_large_resource_version_next_list(&self) {
        self.lock().too_large_next_list += 1;
    }

    /// While `on`, the watch cache lags behind storage, so a consistent LIST (no
    /// `resourceVersion`, no `continue`) cannot be served from it within kube-apiserver's wait:
    /// the server reads storage instead (the same answer), or, with
    /// `ConsistentListFromCacheSkipTimeoutFallback` on
    /// ([`TestServer::set_consistent_list_from_cache_skip_timeout_fallback`](crate::TestServer::set_consistent_list_from_cache_skip_timeout_fallback)),
    /// answers 429 TooManyRequests with `Retry-After: 1`.
    pub fn lag_watch_cache(&self, on: bool) {
        self.lock().watch_cache_lags = on;
    }

    /// Whether the watch cache lags ([`Faults::lag_watch_cache`]).
    pub(crate) fn watch_cache_lags(&self) -> bool {
        self.lock().watch_cache_lags
    }

    /// Delays every request matching `target` by `delay` before it is answered
    /// (`Duration::ZERO` removes the delay for that target). Requests already sleeping in a
    /// delay keep theirs; [`Faults::release_delays`] ends them.
    pub fn delay(&self, target: FaultTarget, delay: Duration) {
        let mut st = self.lock();
        st.delays.retain(|(t, _)| *t != target);
        if !delay.is_zero() {
            st.delays.push((target, delay));
        }
    }

    /// Ends the delays ([`Faults::delay`]) of every request sleeping in one now: each goes on
    /// and is answered at once. For a delay that is a bound rather than a duration: a caller
    /// holds a WATCH back with a long delay while it writes, and releases it when the writes
    /// are done, however long they took (the benchmark's scenario 2 turns the writes into a
    /// backlog this way). Requests that arrive later still get the configured delay; remove it
    /// first with `delay(target, Duration::ZERO)` for them to be answered at once too.
    pub fn release_delays(&self) {
        self.released.send_modify(|n| *n += 1);
    }

    /// How many requests are sleeping in a delay ([`Faults::delay`]) now.
    pub fn delayed_requests(&self) -> usize {
        *self.delayed.borrow()
    }

    /// Waits until at least `n` requests are sleeping in a delay ([`Faults::delay`]) or
    /// `timeout` passes; returns whether they were. A test waits with this for its request to
    /// be held before it calls [`Faults::release_delays`].
    pub async fn wait_for_delayed_requests(&self, n: usize, timeout: Duration) -> bool {
        let mut rx = self.delayed.subscribe();
        matches!(
            tokio::time::timeout(timeout, rx.wait_for(|held| *held >= n)).await,
            Ok(Ok(_))
        )
    }

    /// The next watch event sent by any watch is cut in the middle of its JSON and the
    /// connection is dropped.
    pub fn cut_next_watch_chunk(&self) {
        self.lock().cut_next_watch_chunk = true;
        self.chunk_armed.store(true, Ordering::SeqCst);
    }

    /// The next watch event line sent by any watch is malformed JSON (the stream continues).
    pub fn malformed_next_watch_event(&self) {
        self.lock().malformed_next_watch_event = true;
        self.chunk_armed.store(true, Ordering::SeqCst);
    }

    /// The next WATCH request gets HTTP 200 then an ERROR event with a 410 Expired Status, as
    /// kube-apiserver answers a too old resourceVersion.
    pub fn expire_next_watch(&self) {
        self.lock().gone_next_watch += 1;
    }

    /// The next LIST that carries a `continue` token answers 410 Expired, as when etcd compacted
    /// past the token. (To expire every token issued so far instead, see
    /// [`TestServer::expire_continue_tokens`](crate::TestServer::expire_continue_tokens).)
    pub fn expire_continue_tokens(&self) {
        self.lock().expire_next_continue += 1;
    }

    /// While on, `sendInitialEvents` watches never send the `k8s.io/initial-events-end` bookmark.
    pub fn suppress_initial_events_end(&self, on: bool) {
        self.suppress_end.store(on, Ordering::SeqCst);
    }

    /// While on, LIST requests never answer (they complete once it is switched off).
    pub fn stall_list(&self, on: bool) {
        self.stall.send_replace(on);
    }

    /// Every request on `resource` answers 403 Forbidden until [`Faults::allow`].
    pub fn forbid(&self, resource: GroupResource) {
        self.lock().forbidden.insert(resource);
    }

    /// Undoes [`Faults::forbid`].
    pub fn allow(&self, resource: &GroupResource) {
        self.lock().forbidden.remove(resource);
    }

    /// Cuts one client off: every request whose `User-Agent` header is exactly `user_agent`
    /// answers 503 ServiceUnavailable (discovery and health included) until
    /// [`Faults::admit_user_agent`]. Other clients are unaffected, so a test can partition one
    /// replica of several (leader election). Watches already open are not touched.
    pub fn refuse_user_agent(&self, user_agent: &str) {
        self.lock()
            .refused_user_agents
            .insert(user_agent.to_owned());
    }

    /// Undoes [`Faults::refuse_user_agent`].
    pub fn admit_user_agent(&self, user_agent: &str) {
        {
            let mut st = self.lock();
            st.refused_user_agents.remove(user_agent);
            st.hung_user_agents.remove(user_agent);
        }
        self.admitted.send_modify(|n| *n += 1);
    }

    /// Partitions one client: every request whose `User-Agent` is exactly `user_agent` gets no
    /// answer until [`Faults::admit_user_agent`] (then 503), as behind a network partition. The
    /// client's own timeouts are what end its requests.
    pub fn hang_user_agent(&self, user_agent: &str) {
        self.lock().hung_user_agents.insert(user_agent.to_owned());
    }

    /// Ends every open watch now, normally (EOF), as a server-side timeout would.
    pub fn close_open_watches(&self) {
        self.kick.send_modify(|(n, k)| {
            *n += 1;
            *k = Kick::Close;
        });
    }

    /// Sends an ERROR event with a 410 Expired Status to every open watch, then ends them.
    pub fn expire_open_watches(&self) {
        self.kick.send_modify(|(n, k)| {
            *n += 1;
            *k = Kick::Gone;
        });
    }

    /// Every open watch goes silent for good: no event, no bookmark, no end, with its
    /// connection left open, as a watch on a half-open connection looks to the client (a peer
    /// gone without a FIN). Watches started later are served normally.
    pub fn freeze_open_watches(&self) {
        self.kick.send_modify(|(n, k)| {
            *n += 1;
            *k = Kick::Freeze;
        });
    }

    /// Turns every switch off (open watches are not touched); requests held by a switch (a
    /// delay, a stall, a hung client) go on.
    pub fn reset(&self) {
        *self.lock() = State::default();
        self.chunk_armed.store(false, Ordering::SeqCst);
        self.suppress_end.store(false, Ordering::SeqCst);
        self.stall.send_replace(false);
        self.admitted.send_modify(|n| *n += 1);
        self.release_delays();
    }

    // ---- read side, used by the request path ----

    /// Takes an injected failure for `verb`, if one is pending.
    pub(crate) fn take_failure(&self, verb: crate::Verb) -> Option<(StatusCode, Option<u64>)> {
        let mut st = self.lock();
        let idx = st
            .fail
            .iter()
            .position(|f| f.target.covers(verb) && f.remaining > 0)?;
        let f = &mut st.fail[idx];
        f.remaining -= 1;
        let out = (f.code, f.retry_after);
        if f.remaining == 0 {
            st.fail.remove(idx);
        }
        Some(out)
    }

    /// Takes a hostile response for `verb`, if one is pending and applies to that verb.
    pub(crate) fn take_hostile(&self, verb: crate::Verb) -> Option<HostileResponse> {
        use crate::Verb;
        let mut st = self.lock();
        let idx = st.hostile.iter().position(|h| {
            let fits = match &h.response {
                HostileResponse::Redirect(_) => true,
                HostileResponse::CorruptGzip { .. }
                | HostileResponse::GzipBomb { .. }
                | HostileResponse::Body { .. } => {
                    matches!(verb, Verb::List | Verb::Watch)
                }
                HostileResponse::Protobuf(p) => {
                    verb == if p.is_watch() {
                        Verb::Watch
                    } else {
                        Verb::List
                    }
                }
                HostileResponse::UnterminatedWatchLine { .. }
                | HostileResponse::WatchErrorObject(_)
                | HostileResponse::WatchEvents { .. } => verb == Verb::Watch,
                _ => verb == Verb::List,
            };
            fits && h.target.covers(verb) && h.remaining > 0
        })?;
        let h = &mut st.hostile[idx];
        h.remaining -= 1;
        let out = h.response.clone();
        if h.remaining == 0 {
            st.hostile.remove(idx);
        }
        Some(out)
    }

    /// A fresh token for [`HostileResponse::EndlessContinue`].
    pub(crate) fn next_hostile_token(&self) -> u64 {
        self.hostile_tokens.fetch_add(1, Ordering::Relaxed)
    }

    /// The delay to apply to `verb`.
    fn delay_for(&self, verb: crate::Verb) -> Option<Duration> {
        self.lock()
            .delays
            .iter()
            .filter(|(t, _)| t.covers(verb))
            .map(|(_, d)| *d)
            .max()
    }

    /// Sleeps for the delay of `verb` ([`Faults::delay`]), if it has one, or until
    /// [`Faults::release_delays`], whichever comes first.
    pub(crate) async fn sleep_delay(&self, verb: crate::Verb) {
        // Subscribed before the delay is read, so a release from here on ends this one.
        let mut released = self.released.subscribe();
        let Some(delay) = self.delay_for(verb) else {
            return;
        };
        let _held = Delayed::enter(&self.delayed);
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            // An error (the sender gone) cannot happen while `self` is borrowed; it ends the
            // delay too.
            _ = released.changed() => {}
        }
    }

    pub(crate) fn take_too_large(&self) -> bool {
        let mut st = self.lock();
        if st.too_large_next_list > 0 {
            st.too_large_next_list -= 1;
            true
        } else {
            false
        }
    }

    pub(crate) fn take_expired_continue(&self) -> bool {
        let mut st = self.lock();
        if st.expire_next_continue > 0 {
            st.expire_next_continue -= 1;
            true
        } else {
            false
        }
    }

    pub(crate) fn take_gone_watch(&self) -> bool {
        let mut st = self.lock();
        if st.gone_next_watch > 0 {
            st.gone_next_watch -= 1;
            true
        } else {
            false
        }
    }

    pub(crate) fn close_after(&self) -> Option<usize> {
        self.lock().close_watches_after
    }

    /// Takes the armed watch-chunk fault: (cut, malformed).
    pub(crate) fn take_chunk_fault(&self) -> (bool, bool) {
        if !self.chunk_armed.load(Ordering::Relaxed) {
            return (false, false);
        }
        let mut st = self.lock();
        let out = (
            std::mem::take(&mut st.cut_next_watch_chunk),
            std::mem::take(&mut st.malformed_next_watch_event),
        );
        self.chunk_armed.store(false, Ordering::SeqCst);
        out
    }

    pub(crate) fn end_suppressed(&self) -> bool {
        self.suppress_end.load(Ordering::SeqCst)
    }

    /// Holds a request of a hung client (`hang_user_agent`) until it is admitted or `shutdown`.
    pub(crate) async fn hold_hung_user_agent(
        &self,
        user_agent: Option<&str>,
        shutdown: &tokio_util::sync::CancellationToken,
    ) {
        let Some(ua) = user_agent else { return };
        let mut admitted = self.admitted.subscribe();
        while self.lock().hung_user_agents.contains(ua) {
            tokio::select! {
                changed = admitted.changed() => if changed.is_err() { return },
                () = shutdown.cancelled() => return,
            }
        }
    }

    pub(crate) fn is_hung_user_agent(&self, user_agent: Option<&str>) -> bool {
        let st = self.lock();
        !st.hung_user_agents.is_empty()
            && user_agent.is_some_and(|ua| st.hung_user_agents.contains(ua))
    }

    pub(crate) fn is_refused_user_agent(&self, user_agent: Option<&str>) -> bool {
        let st = self.lock();
        !st.refused_user_agents.is_empty()
            && user_agent.is_some_and(|ua| st.refused_user_agents.contains(ua))
    }

    pub(crate) fn is_forbidden(&self, group: &str, resource: &str) -> bool {
        self.lock()
            .forbidden
            .iter()
            .any(|g| g.group == group && g.resource == resource)
    }

    pub(crate) fn stall_rx(&self) -> watch::Receiver<bool> {
        self.stall.subscribe()
    }

    pub(crate) fn kick_rx(&self) -> watch::Receiver<(u64, Kick)> {
        self.kick.subscribe()
    }
}
