//! kube-runtime interop: an informer's notifications as the stream kube-runtime's `watcher()`
//! yields, so kube-runtime's `reflector`, `WatchStreamExt` and `Controller` consume a shared
//! informer with no second watch (KR5).
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use futures::StreamExt;
//! # use informer_runtime::SharedInformerFactory;
//! # use k8s_openapi::api::core::v1::ConfigMap;
//! # use kube::runtime::{reflector, WatchStreamExt};
//! # fn demo(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
//! let factory = SharedInformerFactory::new(client);
//! let informer = factory.informer_for::<ConfigMap>();
//! let events = informer_controller::interop::watcher_events(&informer)?;
//! // Anything written for `watcher(api, config)` works on `events` instead:
//! let (reader, writer) = reflector::store::<ConfigMap>();
//! let applied = reflector(writer, events).applied_objects();
//! # let _ = (reader, applied);
//! factory.start();
//! # Ok(()) }
//! ```

use futures::{Stream, StreamExt};
use informer_runtime::Object;
use informer_runtime::informer::{
    EventStream, HandlerRegistration, InformerEvent, SharedIndexInformer,
};
use kube::runtime::watcher;

/// The informer's notifications as kube-runtime watcher events, a drop-in for the stream of
/// `kube::runtime::watcher(api, config)` (its item type is `watcher::Result<watcher::Event<K>>`,
/// never an `Err`: the informer's reflector handles errors and retries itself).
///
/// The stream starts with `Init`, then one `InitApply` per object of the first list (or, for a
/// late subscriber, of the cache, H5), then `InitDone` once this subscriber has seen them all
/// (H6); after that every add or update is an `Apply` and every delete a `Delete` with the
/// last known state. A relist does not restart the sequence: the informer turns it into
/// updates and deletes (tombstones, D5), which arrive as `Apply` and `Delete`. A tombstone
/// without a last known state (D5: the lookup failed) has no object to give and is skipped.
///
/// kube-runtime's events own their objects, so each event clones the cached object once
/// (`K: Clone`); the informer's cache itself is shared (X7). For kube-runtime's shared-stream
/// API, [`EventStream::objects`] yields the cached `Arc`s without a copy.
pub fn watcher_events<K>(
    informer: &SharedIndexInformer<K>,
) -> Result<
    impl Stream<Item = watcher::Result<watcher::Event<K>>> + Send + 'static,
    informer_runtime::informer::Error,
>
where
    K: Object,
{
    let events = informer.event_stream()?;
    Ok(to_watcher_events(events).map(Ok))
}

/// The phase of the translation: still in the initial list, or live.
enum Phase {
    Start,
    Initial,
    Live,
}

/// Translates one subscription (see [`watcher_events`]).
pub fn to_watcher_events<K>(
    events: EventStream<K>,
) -> impl Stream<Item = watcher::Event<K>> + Send + 'static
where
    K: Clone + Send + Sync + 'static,
{
    // The registration is held separately: waiting on it must not borrow the stream.
    let registration = events.registration().clone();
    futures::stream::unfold((events, Phase::Start), move |(mut events, phase)| {
        let registration = registration.clone();
        async move {
            match phase {
                Phase::Start => Some((vec![watcher::Event::Init], (events, Phase::Initial))),
                Phase::Initial => {
                    if registration.has_synced() {
                        return Some((vec![watcher::Event::InitDone], (events, Phase::Live)));
                    }
                    // Either the next initial add, or the end of the initial list: the
                    // registration syncs once its last initial add was yielded (H6).
                    let next = tokio::select! {
                        biased;
                        event = events.next() => Some(event?),
                        synced = wait_synced(&registration) => { if !synced { return None; } None }
                    };
                    match next {
                        None => Some((vec![watcher::Event::InitDone], (events, Phase::Live))),
                        Some(InformerEvent::Added {
                            obj,
                            is_in_initial_list: true,
                        }) => Some((
                            vec![watcher::Event::InitApply(K::clone(&obj))],
                            (events, Phase::Initial),
                        )),
                        // A live event before the initial list ended (the informer synced in
                        // between): close the initial list first.
                        Some(other) => {
                            let mut out = vec![watcher::Event::InitDone];
                            out.extend(live_event(other));
                            Some((out, (events, Phase::Live)))
                        }
                    }
                }
                Phase::Live => loop {
                    let event = events.next().await?;
                    if let Some(e) = live_event(event) {
                        break Some((vec![e], (events, Phase::Live)));
                    }
                },
            }
        }
    })
    .flat_map(futures::stream::iter)
}

async fn wait_synced<K>(registration: &HandlerRegistration<K>) -> bool {
    registration.wait_for_sync().await
}

fn live_event<K: Clone>(event: InformerEvent<K>) -> Option<watcher::Event<K>> {
    match event {
        InformerEvent::Added { obj, .. } => Some(watcher::Event::Apply(K::clone(&obj))),
        InformerEvent::Updated { new, .. } => Some(watcher::Event::Apply(K::clone(&new))),
        InformerEvent::Deleted(deleted) => match deleted.last_known() {
            Some(obj) => Some(watcher::Event::Delete(K::clone(obj))),
            None => {
                tracing::debug!("tombstone without a last known state: no watcher event");
                None
            }
        },
    }
}
