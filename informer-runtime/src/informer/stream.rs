//! An informer's notifications as a `futures::Stream` of [`InformerEvent`]s, for async consumers and kube-runtime style code.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;
use futures::stream::BoxStream;

use super::backlog::Notification;
use super::handler::DeletedObject;
use super::listener::{HandlerRegistration, Listener};
use super::processor::Processor;

/// One notification, as the stream adapter yields it. Mirrors the three handler calls.
pub enum InformerEvent<K> {
    /// `on_add(obj, is_in_initial_list)` (H3).
    Added {
        /// The added object (the same `Arc` the store holds, X7).
        obj: Arc<K>,
        /// True for the first list and for the synthetic adds of a late subscriber (H3, H5).
        is_in_initial_list: bool,
    },
    /// `on_update(old, new)`; a resync has equal resource versions (Y1, H4).
    Updated {
        /// The previous state.
        old: Arc<K>,
        /// The new state.
        new: Arc<K>,
    },
    /// `on_delete(obj)` (H12).
    Deleted(DeletedObject<K>),
}

impl<K> Clone for InformerEvent<K> {
    fn clone(&self) -> Self {
        match self {
            InformerEvent::Added {
                obj,
                is_in_initial_list,
            } => InformerEvent::Added {
                obj: Arc::clone(obj),
                is_in_initial_list: *is_in_initial_list,
            },
            InformerEvent::Updated { old, new } => InformerEvent::Updated {
                old: Arc::clone(old),
                new: Arc::clone(new),
            },
            InformerEvent::Deleted(d) => InformerEvent::Deleted(d.clone()),
        }
    }
}

impl<K: std::fmt::Debug> std::fmt::Debug for InformerEvent<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InformerEvent::Added {
                obj,
                is_in_initial_list,
            } => f
                .debug_struct("Added")
                .field("obj", obj)
                .field("is_in_initial_list", is_in_initial_list)
                .finish(),
            InformerEvent::Updated { old, new } => f
                .debug_struct("Updated")
                .field("old", old)
                .field("new", new)
                .finish(),
            InformerEvent::Deleted(d) => f.debug_tuple("Deleted").field(d).finish(),
        }
    }
}

impl<K> InformerEvent<K> {
    /// The newest object this event carries (for a tombstone, its last known state).
    pub fn object(&self) -> Option<&Arc<K>> {
        match self {
            InformerEvent::Added { obj, .. } => Some(obj),
            InformerEvent::Updated { new, .. } => Some(new),
            InformerEvent::Deleted(d) => d.last_known(),
        }
    }
}

impl<K> From<Notification<K>> for InformerEvent<K> {
    fn from(n: Notification<K>) -> Self {
        match n {
            Notification::Add { obj, initial } => InformerEvent::Added {
                obj,
                is_in_initial_list: initial,
            },
            Notification::Update { old, new } => InformerEvent::Updated { old, new },
            Notification::Delete(d) => InformerEvent::Deleted(d),
        }
    }
}

/// A registration consumed as a `Stream` instead of by a handler task.
///
/// It has the same per-subscriber backlog as a handler (H9, H10: coalescing by key at the
/// maximum, so a slow consumer cannot exhaust memory), and the same late-join behaviour (H5).
/// The stream ends when the informer stops. Dropping it removes the registration (H7).
pub struct EventStream<K> {
    inner: BoxStream<'static, InformerEvent<K>>,
    registration: HandlerRegistration<K>,
    processor: Arc<Processor<K>>,
}

impl<K: Send + Sync + 'static> EventStream<K> {
    pub(crate) fn new(registration: HandlerRegistration<K>, processor: Arc<Processor<K>>) -> Self {
        let listener: Arc<Listener<K>> = Arc::clone(&registration.listener);
        let inner = futures::stream::unfold(listener, |listener| async move {
            let entry = listener.next().await?;
            if entry.notification.is_initial() {
                // Yielding an initial add counts as delivering it (H6).
                listener.finish_initial(1);
            }
            Some((InformerEvent::from(entry.notification), listener))
        });
        EventStream {
            inner: Box::pin(inner),
            registration,
            processor,
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
        self.processor.remove(&self.registration);
    }
}

impl<K> std::fmt::Debug for EventStream<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventStream")
            .field("registration", &self.registration)
            .finish()
    }
}
