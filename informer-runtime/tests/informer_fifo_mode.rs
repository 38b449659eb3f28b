//! The delta FIFO mode chosen from `InformerConfig` and the factory (D10, D11):
//! with the ordered mode, deltas queued while processing waits reach handlers in global event
//! order; with the keyed default, one key's deltas are grouped.
//!
//! Run with `cargo test -p informer-runtime --test informer_fifo_mode`.

mod informer_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use informer_runtime::SharedInformerFactory;
use informer_runtime::delta_fifo::FifoMode;
use informer_runtime::informer::{
    DeletedObject, HandlerOptions, OverflowPolicy, ResourceEventHandler, SharedIndexInformer,
};
use informer_support::*;
use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::ConfigMap;
use parking_lot::{Condvar, Mutex};

/// Blocks in its first call until opened; records `"<event> <name>"`.
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    cv: Condvar,
    entered: AtomicBool,
    seen: Mutex<Vec<String>>,
}

impl Gate {
    fn record(&self, what: &str, obj: &ConfigMap) {
        self.entered.store(true, Ordering::Release);
        let mut open = self.open.lock();
        while !*open {
            self.cv.wait(&mut open);
        }
        let name = obj.metadata.name.clone().unwrap_or_default();
        self.seen.lock().push(format!("{what} {name}"));
    }

    fn open(&self) {
        *self.open.lock() = true;
        self.cv.notify_all();
    }
}

impl ResourceEventHandler<ConfigMap> for Gate {
    fn on_add(&self, obj: &Arc<ConfigMap>, _initial: bool) {
        self.record("add", obj);
    }

    fn on_update(&self, _old: &Arc<ConfigMap>, new: &Arc<ConfigMap>) {
        self.record("update", new);
    }

    fn on_delete(&self, obj: &DeletedObject<ConfigMap>) {
        if let Some(last) = obj.last_known() {
            self.record("delete", last);
        }
    }
}

/// Holds processing (a `Block` handler at its maximum of 1) while `a`, `b`, then `a` again
/// change on the server, then releases it; returns what the handler saw of `a` and `b`.
async fn order_after_held_processing(
    server: &TestServer,
    inf: &SharedIndexInformer<ConfigMap>,
    start_informer: impl FnOnce(),
) -> Vec<String> {
    let w = Writer::new(server.client(), "default");
    w.create("first", "0").await;
    let gate = Arc::new(Gate::default());
    let reg = inf
        .add_event_handler_with(
            gate.clone(),
            HandlerOptions::new()
                .backlog_max(1)
                .overflow(OverflowPolicy::Block),
        )
        .expect("handler");
    start_informer();
    wait_until("the handler to block", || {
        gate.entered.load(Ordering::Acquire)
    })
    .await;
    w.create("filler", "0").await;
    wait_until("the backlog to fill", || reg.pending() == 1).await;
    w.create("a", "1").await;
    w.create("b", "1").await;
    let last = w.set("a", "2").await;
    let rv = last.metadata.resource_version.clone();
    wait_until("the FIFO to hold every change", || {
        inf.last_sync_resource_version() == rv
    })
    .await;
    gate.open();
    wait_until("every notification", || gate.seen.lock().len() == 5).await;
    let seen = gate.seen.lock().clone();
    seen.into_iter()
        .filter(|s| s.ends_with(" a") || s.ends_with(" b"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d2_keyed_default_groups_one_keys_deltas() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let inf = informer(server.client(), |_| {});
    let cancel = tokio_util::sync::CancellationToken::new();
    let seen = order_after_held_processing(&server, &inf, || drop(inf.start(cancel.clone()))).await;
    assert_eq!(seen, ["add a", "update a", "add b"]);
    cancel.cancel();
    inf.wait_stopped().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d10_ordered_mode_from_informer_config_keeps_global_order() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let inf = informer(server.client(), |c| c.fifo_mode = FifoMode::Ordered);
    let cancel = tokio_util::sync::CancellationToken::new();
    let seen = order_after_held_processing(&server, &inf, || drop(inf.start(cancel.clone()))).await;
    assert_eq!(seen, ["add a", "add b", "update a"]);
    cancel.cancel();
    inf.wait_stopped().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d10_ordered_mode_from_the_factory_keeps_global_order() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let factory = SharedInformerFactory::builder(server.client())
        .fifo_mode(FifoMode::Ordered)
        .build();
    let inf = factory.informer_for::<ConfigMap>();
    let seen = order_after_held_processing(&server, &inf, || factory.start()).await;
    assert_eq!(seen, ["add a", "add b", "update a"]);
    factory.shutdown().await;
}

/// Registers a `Gate` as a `Block` handler with a backlog of 1 on `inf`, starts `inf` and waits
/// until the gate holds its first notification, so processing is held from then on; returns the
/// gate and the token that stops the informer.
async fn start_held(
    inf: &SharedIndexInformer<ConfigMap>,
) -> (Arc<Gate>, tokio_util::sync::CancellationToken) {
    let gate = Arc::new(Gate::default());
    inf.add_event_handler_with(
        gate.clone(),
        HandlerOptions::new()
            .backlog_max(1)
            .overflow(OverflowPolicy::Block),
    )
    .expect("handler");
    let cancel = tokio_util::sync::CancellationToken::new();
    drop(inf.start(cancel.clone()));
    wait_until("the handler to block", || {
        gate.entered.load(Ordering::Acquire)
    })
    .await;
    (gate, cancel)
}

/// Decision record 08 (the FIFO mode): what a burst costs while the consumer is held. 10 objects
/// get 30 updates each while processing waits on a blocked handler; the keyed FIFO holds one
/// entry per key, the ordered log one per event. Returns the FIFO's length once every change
/// has reached it, then lets the handler finish.
async fn queued_after_a_held_burst(mode: FifoMode) -> usize {
    let server = TestServer::start().await.expect("testserver");
    let w = Writer::new(server.client(), "default");
    w.create("first", "0").await;
    for i in 0..10 {
        w.create(&format!("k{i}"), "0").await;
    }
    let inf = informer(server.client(), |c| c.fifo_mode = mode);
    let (gate, cancel) = start_held(&inf).await;
    let mut last = None;
    for round in 1..=30 {
        for i in 0..10 {
            last = Some(w.set(&format!("k{i}"), &round.to_string()).await);
        }
    }
    let rv = last.and_then(|cm| cm.metadata.resource_version);
    wait_until("the FIFO to hold every change", || {
        inf.last_sync_resource_version() == rv
    })
    .await;
    let queued = inf.queued();
    gate.open();
    cancel.cancel();
    inf.wait_stopped().await;
    queued
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifo_default_decision_a_held_burst_costs_keys_coalescing_and_events_ordered() {
    init_tracing();
    let keyed = queued_after_a_held_burst(FifoMode::Coalescing).await;
    let ordered = queued_after_a_held_burst(FifoMode::Ordered).await;
    eprintln!("held burst: coalescing {keyed} entries, ordered {ordered} entries");
    // Coalescing: at most one entry per key (10 updated keys, plus at most the initial ones
    // still queued behind the blocked handler).
    assert!(
        keyed <= 11,
        "coalescing FIFO held {keyed} entries for 11 keys"
    );
    // Ordered: every one of the 300 updates is its own entry.
    assert!(
        ordered >= 300,
        "ordered FIFO held {ordered} entries for 300 events"
    );
}

/// D12: processing is held (a `Block` handler) while 10 objects are created and then updated 4
/// times each. The watch stops reading once the FIFO holds its bound of 8 deltas, so the newest
/// writes stay on the connection; once processing resumes, every change arrives, with no relist
/// and no rewatch.
async fn a_held_consumer_pauses_the_watch_at_the_bound(mode: FifoMode) {
    const BOUND: usize = 8;
    let server = TestServer::start().await.expect("testserver");
    let w = Writer::new(server.client(), "default");
    w.create("first", "0").await;
    let inf = informer(server.client(), |c| {
        c.fifo_mode = mode;
        c.max_queued_deltas = BOUND;
    });
    let (gate, cancel) = start_held(&inf).await;
    for i in 0..10 {
        w.create(&format!("k{i}"), "0").await;
    }
    let mut last = None;
    for round in 1..=4 {
        for i in 0..10 {
            last = Some(w.set(&format!("k{i}"), &round.to_string()).await);
        }
    }
    let rv = last.and_then(|cm| cm.metadata.resource_version);
    wait_until("the watch to pause", || {
        inf.reflector_handle()
            .is_some_and(|h| h.counters().watch_pauses >= 1)
    })
    .await;
    let queued = inf.queued_deltas();
    assert!(
        queued <= BOUND,
        "{mode:?}: {queued} deltas queued, bound {BOUND}"
    );
    assert_ne!(
        inf.last_sync_resource_version(),
        rv,
        "{mode:?}: the watch read past its bound"
    );
    gate.open();
    // "first", 10 adds, 40 updates: one notification each, in either mode.
    wait_until("every notification", || gate.seen.lock().len() == 51).await;
    wait_until("the cache to match the server", || {
        inf.last_sync_resource_version() == rv
    })
    .await;
    let counters = inf.reflector_handle().expect("running").counters();
    assert_eq!(
        (counters.relists, counters.rewatches),
        (0, 0),
        "{mode:?}: a pause is neither a relist nor a rewatch"
    );
    let seen = gate.seen.lock().clone();
    for i in 0..10 {
        let name = format!("k{i}");
        let of_key: Vec<&str> = seen
            .iter()
            .filter_map(|s| s.strip_suffix(&format!(" {name}")))
            .collect();
        assert_eq!(
            of_key,
            ["add", "update", "update", "update", "update"],
            "{mode:?}: {name}"
        );
    }
    cancel.cancel();
    inf.wait_stopped().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d12_a_held_consumer_pauses_the_watch_at_the_bound_keyed() {
    init_tracing();
    a_held_consumer_pauses_the_watch_at_the_bound(FifoMode::Coalescing).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d12_a_held_consumer_pauses_the_watch_at_the_bound_ordered() {
    init_tracing();
    a_held_consumer_pauses_the_watch_at_the_bound(FifoMode::Ordered).await;
}
