//! The write gate of a leader election (E8, after KEP-6361): a tower layer for the clients a
//! term's work writes with. Safe methods (GET, HEAD, OPTIONS: reads, lists, watches) always pass;
//! every other request passes only while the elector leads and its last successful renewal
//! is within the renew deadline by the caller's own clock (E4, S11). A write in flight when
//! the gate closes is cancelled.

use std::fmt;
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use http::{Method, Request, Response};
use tokio::sync::watch;
use tokio::time::Instant;
use tower::{BoxError, Layer, Service};

/// Why the write gate refused or cancelled a request (E8). A gated client returns it as
/// `kube::Error::Service`; find it with [`WriteGateClosed::of`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WriteGateClosed {
    /// The elector does not lead (it never did, or its term ended).
    #[error("LeaderElectionWriteGate: not leading, writes are refused")]
    NotLeading,
    /// The elector's renewals failed past the renew deadline and it is recovering: writes are
    /// refused until a renewal succeeds.
    #[error("LeaderElectionWriteGate: leadership is recovering, writes are refused")]
    Recovering,
    /// The gate closed while the write was in flight; the request was cancelled (it may or may
    /// not have reached the server).
    #[error("LeaderElectionWriteGate: leadership lost while the write was in flight; cancelled")]
    Cancelled,
}

impl WriteGateClosed {
    /// The gate's refusal inside `err`, if that is what `err` is.
    pub fn of(err: &kube::Error) -> Option<&WriteGateClosed> {
        match err {
            kube::Error::Service(inner) => inner.downcast_ref::<WriteGateClosed>(),
            _ => None,
        }
    }
}

/// What the elector publishes to its gates.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct GateState {
    /// Writes pass until this instant (the start of the last successful renewal plus the renew
    /// deadline); `None` while closed.
    open_until: Option<Instant>,
    /// Whether the elector is recovering (for the refusal's reason).
    recovering: bool,
    /// Counts the closings, so a write in flight sees a close even if the gate reopened
    /// before it looked.
    closings: u64,
}

impl GateState {
    /// Whether writes pass at `now`.
    fn is_open(&self, now: Instant) -> bool {
        self.open_until.is_some_and(|until| now < until)
    }

    fn refusal(&self) -> WriteGateClosed {
        if self.recovering {
            WriteGateClosed::Recovering
        } else {
            WriteGateClosed::NotLeading
        }
    }
}

/// The elector's side of its gates.
#[derive(Debug, Default)]
pub(crate) struct GateControl {
    state: watch::Sender<GateState>,
}

impl GateControl {
    /// Opens the gate (or keeps it open) until `until` (E4: a renewal that started at `t`
    /// holds until `t` + the renew deadline).
    pub(crate) fn open_until(&self, until: Instant) {
        self.state.send_modify(|s| {
            s.open_until = Some(until);
            s.recovering = false;
        });
    }

    /// Closes the gate, cancelling the writes in flight; `recovering` says why.
    pub(crate) fn close(&self, recovering: bool) {
        self.state.send_modify(|s| {
            s.open_until = None;
            s.recovering = recovering;
            s.closings = s.closings.wrapping_add(1);
        });
    }

    /// Whether the elector's last close was for a recovery.
    pub(crate) fn is_recovering(&self) -> bool {
        self.state.borrow().recovering
    }

    pub(crate) fn gate(&self) -> WriteGate {
        WriteGate {
            state: self.state.subscribe(),
        }
    }
}

/// A handle on a [`LeaderElector`](super::LeaderElector)'s write gate (E8), from
/// [`LeaderElector::write_gate`](super::LeaderElector::write_gate). A [`tower::Layer`] for a
/// custom client stack, or [`WriteGate::client`] to gate an existing `kube::Client`.
///
/// GET, HEAD and OPTIONS requests always pass (an informer keeps its cache while not leading).
/// Any other method passes only while the elector leads, not recovering, and before the renew
/// deadline after the start of its last successful renewal, by the caller's clock; else it
/// fails at once with [`WriteGateClosed`]. A write in flight when the gate closes is
/// cancelled with [`WriteGateClosed::Cancelled`]. Like client-go's, the gate goes by method
/// only, so POST-based reads (`SelfSubjectAccessReview`) are gated too.
#[derive(Clone)]
pub struct WriteGate {
    state: watch::Receiver<GateState>,
}

impl fmt::Debug for WriteGate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriteGate")
            .field("open", &self.is_open())
            .finish()
    }
}

impl WriteGate {
    /// Whether writes pass now.
    pub fn is_open(&self) -> bool {
        self.state.borrow().is_open(Instant::now())
    }

    /// `client` with its writes gated: requests go through `client` itself (its middleware,
    /// its default namespace and valid-until are kept). Must be called within a Tokio runtime
    /// (a `kube::Client` spawns its request buffer).
    pub fn client(&self, client: kube::Client) -> kube::Client {
        let namespace = client.default_namespace().to_owned();
        let valid_until = *client.valid_until();
        kube::Client::new(self.layer(ClientService(client)), namespace)
            .with_valid_until(valid_until)
    }

    /// `Ok` with the closings seen so far if a request of `method` may start now.
    fn admit(&self, method: &Method) -> Result<Option<u64>, WriteGateClosed> {
        if is_safe(method) {
            return Ok(None);
        }
        let state = *self.state.borrow();
        if state.is_open(Instant::now()) {
            Ok(Some(state.closings))
        } else {
            Err(state.refusal())
        }
    }
}

/// Resolves when the gate closes after `closings` closings: closed by the elector, or its
/// open-until instant passed unrenewed.
async fn closed(mut rx: watch::Receiver<GateState>, closings: u64) {
    loop {
        let state = *rx.borrow_and_update();
        let Some(until) = state.open_until else {
            return;
        };
        if state.closings != closings || Instant::now() >= until {
            return;
        }
        tokio::select! {
            biased;
            changed = rx.changed() => if changed.is_err() { return },
            () = tokio::time::sleep_until(until) => {}
        }
    }
}

/// GET, HEAD and OPTIONS change nothing and always pass.
fn is_safe(method: &Method) -> bool {
    matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

impl<S> Layer<S> for WriteGate {
    type Service = WriteGated<S>;

    fn layer(&self, inner: S) -> WriteGated<S> {
        WriteGated {
            gate: self.clone(),
            inner,
        }
    }
}

/// A service whose writes pass only while its [`WriteGate`] is open.
#[derive(Clone, Debug)]
pub struct WriteGated<S> {
    gate: WriteGate,
    inner: S,
}

impl<S, B> Service<Request<B>> for WriteGated<S>
where
    S: Service<Request<B>>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<S::Response, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let closings = match self.gate.admit(req.method()) {
            Ok(closings) => closings,
            Err(refused) => return Box::pin(std::future::ready(Err(refused.into()))),
        };
        let fut = self.inner.call(req);
        let Some(closings) = closings else {
            return Box::pin(async move { fut.await.map_err(Into::into) });
        };
        let rx = self.gate.state.clone();
        Box::pin(async move {
            tokio::select! {
                biased;
                () = closed(rx, closings) => Err(WriteGateClosed::Cancelled.into()),
                res = fut => res.map_err(Into::into),
            }
        })
    }
}

/// An existing `kube::Client` as the innermost service of a gated one.
#[derive(Clone)]
struct ClientService(kube::Client);

impl Service<Request<kube::client::Body>> for ClientService {
    type Response = Response<kube::client::Body>;
    type Error = kube::Error;
    type Future = BoxFuture<'static, Result<Self::Response, kube::Error>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), kube::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<kube::client::Body>) -> Self::Future {
        let client = self.0.clone();
        Box::pin(async move { client.send(req).await })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn e8_writes_pass_only_while_open_and_reads_always() {
        let control = GateControl::default();
        let gate = control.gate();
        assert_eq!(gate.admit(&Method::GET), Ok(None));
        assert_eq!(gate.admit(&Method::POST), Err(WriteGateClosed::NotLeading));
        control.open_until(Instant::now() + Duration::from_secs(1));
        assert_eq!(gate.admit(&Method::DELETE), Ok(Some(0)));
        // By the caller's clock: unrenewed, the gate closes at its instant.
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(!gate.is_open());
        control.close(true);
        assert_eq!(gate.admit(&Method::PATCH), Err(WriteGateClosed::Recovering));
        assert_eq!(gate.admit(&Method::HEAD), Ok(None));
    }

    #[tokio::test(start_paused = true)]
    async fn e8_a_close_is_seen_in_flight_even_if_the_gate_reopened() {
        let control = GateControl::default();
        let gate = control.gate();
        let far = Instant::now() + Duration::from_secs(60);
        control.open_until(far);
        let waiting = tokio::spawn(closed(gate.state.clone(), 0));
        control.close(true);
        control.open_until(far);
        tokio::time::timeout(Duration::from_secs(1), waiting)
            .await
            .unwrap_or_else(|_| panic!("the close was missed"))
            .unwrap_or_else(|e| panic!("{e}"));
    }
}
