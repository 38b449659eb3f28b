//! An informer's notifications as a `futures::Stream` of [`InformerEvent`]s, for async consumers and kube-runtime style code.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;
use futures::stream::BoxStream;

use super::event::InformerEvent;
use super::fan_out::FanOut;
use super::listener::{HandlerRegistration, Listener};

/// A registration consumed as a `Stream` instead of by a handler task.
///
/// It has the same per-subscriber backlog as a handler (H9, H10: coalescing by key at the
/// maximum, so a slow consumer cannot exhaust memory), and the same late-join behaviour (H5).
/// The stream ends when the informer stops. Dropping it removes the registration (H7).
pub struct EventStream<K> {
    inner: BoxStream<'static, InformerEvent<K>>,
    registration: HandlerRegistration<K>,
    fan_out: Arc<FanOut<K>>,
}

impl<K: Send + Sync + 'static> EventStream<K> {
    pub(crate) fn new(registration: HandlerRegistration<K>, fan_out: Arc<FanOut<K>>) -> Self {
        let listener: Arc<Listener<K>> = Arc::clone(&registration.listener);
        let inner = futures::stream::unfold(listener, |listener| async move {
            let (_key, event) = listener.next().await?;
            if event.is_initial() {
                // Yielding an initial add counts as delivering it (H6).
                listener.finish_initial(1);
            }
            Some((event, listener))
        });
        EventStream {
            inner: Box::pin(inner),
            registration,
            fan_out,
        }
    }
}

impl<K> EventStream<K> {
    /// The underlying registration: per-subscriber sync (H6) and backlog gauge (H10).
    pub fn registration(&self) -> &HandlerRegistration<K> {
        &self.registration
    }
}

impl<K: Send + Sync + 'static> EventStream<K> {
    /// The objects each event touched (the new state, or a deleted object's last known state),
    /// as shared `Arc`s: the shape kube-runtime's shared-stream triggers (for example
    /// `Controller::for_shared_stream`) consume. A tombstone without a last state is skipped.
    pub fn objects(self) -> impl Stream<Item = Arc<K>> + Send + 'static {
        futures::StreamExt::filter_map(self, |event| {
            futures::future::ready(event.object().map(Arc::clone))
        })
    }
}

impl<K> Stream for EventStream<K> {
    type Item = InformerEvent<K>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}

impl<K> Drop for EventStream<K> {
    fn drop(&mut self) {
        self.fan_out.remove(&self.registration);
    }
}

impl<K> std::fmt::Debug for EventStream<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventStream")
            .field("registration", &self.registration)
            .finish()
    }
}
