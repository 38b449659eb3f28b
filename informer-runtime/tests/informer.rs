//! Shared informer behaviour against a real informer-testserver over HTTP (H1-H15, Y1-Y5, X7, M7, M10).
//!
//! Run with `cargo test -p informer-runtime --test informer`; `RUST_LOG=informer_runtime=debug` shows the informer's logs.

mod informer_support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use informer_runtime::informer::{
    DeletedObject, HandlerOptions, InformerEvent, SharedIndexInformer, handler_fn,
    strip_managed_fields,
};
use informer_runtime::list_watch::ListWatch;
use informer_support::*;
use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::core::PartialObjectMeta;
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn h2_h3_x7_initial_sync_with_paging_and_lister_get_inside_on_add() {
    let Synced {
        server,
        inf,
        rec,
        cancel,
        task,
        ..
    } = seeded_and_synced(250, 100).await;
    assert!(inf.has_synced());
    let events = rec.events();
    assert_eq!(events.len(), 250);
    for ev in &events {
        match ev {
            Ev::Add {
                initial,
                in_store,
                same_arc,
                ..
            } => {
                assert!(initial, "H3: {ev:?}");
                assert!(
                    in_store,
                    "H2: the store shows the object inside on_add: {ev:?}"
                );
                assert!(same_arc, "X7: handler and indexer share the Arc: {ev:?}");
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    // R3: the first list at RV "0" asked for pages of 100; the server answered it from its
    // watch cache in one response, as kube-apiserver does, decoded as it arrived.
    let lists: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.is_list())
        .collect();
    assert_eq!(lists.len(), 1, "{lists:?}");
    assert_eq!(lists[0].query.limit, Some(100));
    assert_eq!(inf.indexer().len(), 250);
    assert!(inf.last_sync_resource_version().is_some());
    stop(cancel, task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn h2_h12_live_add_update_delete() {
    init_tracing();
    let server = TestServer::start().await.expect("testserver");
    let w = Writer::new(server.client(), "default");
    let inf = informer(server.client(), |_| {});
    let rec = Recorder::with_indexer(inf.indexer());
    inf.add_event_handler(rec.clone()).unwrap();
    let (cancel, task) = start(&inf);
    assert!(
        tokio::time::timeout(WAIT, inf.wait_for_sync())
            .await
            .unwrap()
    );

    // One step at a time, so the store still holds the added object when on_add runs.
    let created = w.create("a", "1").await;
    rec.wait_for("add", |e| !e.is_empty()).await;
    let updated = w.set("a", "2").await;
    rec.wait_for("update", |e| e.len() >= 2).await;
    w.delete("a").await;
    let events = rec.wait_for("delete", |e| e.len() >= 3).await;
    let rv = |o: &ConfigMap| o.metadata.resource_version.clone().unwrap();
    assert_eq!(
        events[0],
        Ev::Add {
            key: "default/a".into(),
            rv: rv(&created),
            initial: false,
            in_store: true,
            same_arc: true
        }
    );
    assert_eq!(
        events[1],
        Ev::Update {
            key: "default/a".into(),
            old_rv: rv(&created),
            new_rv: rv(&updated),
            ptr_eq: false
        }
    );
    assert!(matches!(&events[2], Ev::Delete { key, tombstone: false, .. } if key == "default/a"));
    assert!(inf.indexer().is_empty());
    stop(cancel, task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn h5_late_handler_gets_synthetic_adds_then_live_events_without_duplicates() {
    init_tracing();
    let server = TestServer::start().await.expect("testserver");
    let w = Arc::new(Writer::new(server.client(), "default"));
    seed(&w, 50).await;
    let inf = informer(server.client(), |_| {});
    let (cancel, task) = start(&inf);
    assert!(
        tokio::time::timeout(WAIT, inf.wait_for_sync())
            .await
            .unwrap()
    );

    // A writer keeps creating and updating while the late handler registers.
    let writer = tokio::spawn({
        let w = w.clone();
        async move {
            for i in 0..60 {
                w.create(&format!("live-{i:03}"), "0").await;
                w.set(&format!("cm-{:04}", i % 50), &format!("{i}")).await;
            }
        }
    });
    let late = Recorder::new();
    let reg = inf.add_event_handler(late.clone()).unwrap();
    assert!(
        tokio::time::timeout(WAIT, reg.wait_for_sync())
            .await
            .unwrap(),
        "synced before the informer stopped"
    );
    writer.await.unwrap();
    let sentinel = w.create("zz-sentinel", "0").await;
    let events = late
        .wait_for("the sentinel", |e| {
            e.iter().any(|e| e.key() == "default/zz-sentinel")
        })
        .await;

    // Every key's first event is an add, and a key is never added twice (no duplicates).
    let mut seen = BTreeSet::new();
    let mut synthetic = 0;
    for ev in &events {
        match ev {
            Ev::Add { key, initial, .. } => {
                assert!(seen.insert(key.clone()), "H5: duplicate add for {key}");
                synthetic += usize::from(*initial);
            }
            other => assert!(
                seen.contains(other.key()),
                "H5: event before add: {other:?}"
            ),
        }
    }
    assert!(
        synthetic >= 50,
        "H3/H5: the snapshot arrives as initial adds"
    );
    // No event lost: the late handler's last view equals the cache.
    let view: BTreeMap<_, _> = late
        .last_view()
        .into_iter()
        .map(|(k, v)| (k, v.unwrap()))
        .collect();
    assert_eq!(view, cache_state(&inf.indexer()));
    assert_eq!(
        view.get("default/zz-sentinel"),
        sentinel.metadata.resource_version.as_ref()
    );
    assert_eq!(view.len(), 111);
    stop(cancel, task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn y1_y3_y4_resync_every_period_and_resync_zero_handler_gets_nothing() {
    init_tracing();
    let server = TestServer::start().await.expect("testserver");
    let w = Writer::new(server.client(), "default");
    seed(&w, 3).await;
    let inf = informer(server.client(), |c| c.resync = Duration::from_secs(1));
    let (every, never) = (Recorder::new(), Recorder::new());
    let reg = inf.add_event_handler(every.clone()).unwrap();
    let reg0 = inf
        .add_event_handler_with(never.clone(), HandlerOptions::new().resync(Duration::ZERO))
        .unwrap();
    assert_eq!(reg.resync_period(), Duration::from_secs(1));
    assert_eq!(reg0.resync_period(), Duration::ZERO);
    let (cancel, task) = start(&inf);
    assert!(
        tokio::time::timeout(WAIT, reg.wait_for_sync())
            .await
            .unwrap(),
        "synced before the informer stopped"
    );
    let synced_at = Instant::now();

    let resyncs =
        |e: &[Ev], key: &str| e.iter().filter(|e| e.is_resync() && e.key() == key).count();
    let events = every
        .wait_for("two resyncs of every object", |e| {
            (0..3).all(|i| resyncs(e, &format!("default/cm-{i:04}")) >= 2)
        })
        .await;
    let elapsed = synced_at.elapsed().as_secs_f64();
    for i in 0..3 {
        let n = resyncs(&events, &format!("default/cm-{i:04}"));
        assert!(
            n as f64 <= elapsed + 1.0,
            "Y4: at most one resync per period: {n} in {elapsed:.1}s"
        );
    }
    assert!(
        events
            .iter()
            .all(|e| !matches!(e, Ev::Update { .. }) || e.is_resync())
    );
    // Y1: a resync replays the cached object itself.
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Ev::Update { ptr_eq: true, .. }))
    );
    assert_eq!(never.len(), 3, "resync-0 handler: only the initial adds");
    assert_eq!(
        server.requests().iter().filter(|r| r.is_list()).count(),
        1,
        "Y1: a resync never calls the API"
    );
    stop(cancel, task).await;
}

/// A handler that blocks every call until released.
struct Gate {
    open: parking_lot::Mutex<bool>,
    cv: parking_lot::Condvar,
    calls: AtomicUsize,
    rec: Arc<Recorder>,
}

impl Gate {
    fn new() -> Arc<Self> {
        Arc::new(Gate {
            open: parking_lot::Mutex::new(false),
            cv: parking_lot::Condvar::new(),
            calls: AtomicUsize::new(0),
            rec: Recorder::new(),
        })
    }
    fn open(&self) {
        *self.open.lock() = true;
        self.cv.notify_all();
    }
    fn block(&self) {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let mut open = self.open.lock();
        while !*open {
            self.cv.wait(&mut open);
        }
    }
}

/// Opens the gate when dropped, so a failing test unblocks the handler's worker thread and the
/// runtime can shut down instead of hanging.
struct OpenOnDrop(Arc<Gate>);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.0.open();
    }
}

impl informer_runtime::informer::ResourceEventHandler<ConfigMap> for Gate {
    fn on_add(&self, obj: &Arc<ConfigMap>, initial: bool) {
        self.block();
        self.rec.on_add(obj, initial);
    }
    fn on_update(&self, old: &Arc<ConfigMap>, new: &Arc<ConfigMap>) {
        self.block();
        self.rec.on_update(old, new);
    }
    fn on_delete(&self, obj: &DeletedObject<ConfigMap>) {
        self.block();
        self.rec.on_delete(obj);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn h9_h10_m1_m2_sleeping_handler_does_not_delay_fast_one_and_its_backlog_is_capped() {
    init_tracing();
    let server = TestServer::start().await.expect("testserver");
    let w = Writer::new(server.client(), "default");
    seed(&w, 5).await;
    let inf = informer(server.client(), |c| c.handler_backlog_max = 8);
    let slow = Gate::new();
    let _guard = OpenOnDrop(slow.clone());
    let slow_reg = inf
        .add_event_handler_with(slow.clone(), HandlerOptions::new().name("slow"))
        .unwrap();
    let fast = Recorder::new();
    // The fast handler gets room for every notification of the test (5 adds, 100 updates, one
    // delete), so that a scheduling hiccup on a loaded machine cannot make it coalesce: the
    // test is about the slow one's cap not delaying it.
    let fast_reg = inf
        .add_event_handler_with(
            fast.clone(),
            HandlerOptions::new().name("fast").backlog_max(256),
        )
        .unwrap();
    let (cancel, task) = start(&inf);
    assert!(
        tokio::time::timeout(WAIT, fast_reg.wait_for_sync())
            .await
            .unwrap(),
        "synced before the informer stopped"
    );
    assert!(
        !slow_reg.has_synced(),
        "M10: the slow handler is still in its first add"
    );

    let mut max_pending = 0;
    for round in 1..=20 {
        for i in 0..5 {
            w.set(&format!("cm-{i:04}"), &round.to_string()).await;
        }
        max_pending = max_pending.max(slow_reg.pending());
    }
    w.delete("cm-0002").await;
    // H9: the fast handler got every update and the delete while the slow one is stuck.
    fast.wait_for("all updates and the delete", |e| e.len() == 5 + 100 + 1)
        .await;
    assert_eq!(slow.calls.load(Ordering::SeqCst), 1);
    // H10: the gauge rose to the maximum and stayed there; coalescing kept the delete.
    max_pending = max_pending.max(slow_reg.pending());
    assert_eq!(max_pending, 8, "H10: capped at the configured maximum");
    assert!(slow_reg.pending() <= 8);
    assert!(slow_reg.coalesced() > 0);
    slow.open();
    assert!(
        tokio::time::timeout(WAIT, slow_reg.wait_for_sync())
            .await
            .unwrap(),
        "synced before the informer stopped"
    );
    let events = slow
        .rec
        .wait_for("the delete", |e| {
            e.iter().any(|e| matches!(e, Ev::Delete { .. }))
        })
        .await;
    assert_eq!(
        slow.rec.last_view().get("default/cm-0002"),
        Some(&None),
        "coalescing never drops deletes: {events:?}"
    );
    // Other keys' coalesced updates may still arrive after the delete: wait for the newest state.
    let cache: BTreeMap<_, _> = cache_state(&inf.indexer())
        .into_iter()
        .map(|(k, v)| (k, Some(v)))
        .collect();
    wait_until("the slow handler to converge on the newest state", || {
        let live: BTreeMap<_, _> = slow
            .rec
            .last_view()
            .into_iter()
            .filter(|(_, v)| v.is_some())
            .collect();
        live == cache
    })
    .await;
    stop(cancel, task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn h11_panicking_handler_does_not_stop_the_others() {
    init_tracing();
    let server = TestServer::start().await.expect("testserver");
    let w = Writer::new(server.client(), "default");
    seed(&w, 3).await;
    let inf = informer(server.client(), |_| {});
    let panicky = inf
        .add_event_handler_with(
            handler_fn::<ConfigMap>().on_add(|_, _| panic!("bug in handler")),
            HandlerOptions::new().name("panicky"),
        )
        .unwrap();
    let rec = Recorder::new();
    inf.add_event_handler(rec.clone()).unwrap();
    let (cancel, task) = start(&inf);
    // H11 + H6: panicking initial adds still count as delivered.
    assert!(
        tokio::time::timeout(WAIT, panicky.wait_for_sync())
            .await
            .unwrap(),
        "synced before the informer stopped"
    );
    assert_eq!(panicky.panics(), 3);
    w.create("after", "0").await;
    rec.wait_for("live add", |e| e.len() == 4).await;
    wait_until("the fourth panic", || panicky.panics() == 4).await;
    stop(cancel, task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn h7_removed_handler_receives_nothing_more() {
    init_tracing();
    let server = TestServer::start().await.expect("testserver");
    let w = Writer::new(server.client(), "default");
    let inf = informer(server.client(), |_| {});
    let (removed, kept) = (Recorder::new(), Recorder::new());
    let reg = inf.add_event_handler(removed.clone()).unwrap();
    inf.add_event_handler(kept.clone()).unwrap();
    let (cancel, task) = start(&inf);
    w.create("a", "0").await;
    removed.wait_for("first add", |e| e.len() == 1).await;
    inf.remove_event_handler_and_wait(&reg).await.unwrap();
    assert!(reg.is_removed());
    w.create("b", "0").await;
    w.delete("a").await;
    kept.wait_for("all events", |e| e.len() == 3).await;
    assert_eq!(removed.len(), 1, "H7: nothing after removal");
    stop(cancel, task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn h6_m10_per_handler_has_synced_waits_for_that_handlers_initial_adds() {
    init_tracing();
    let server = TestServer::start().await.expect("testserver");
    let w = Writer::new(server.client(), "default");
    seed(&w, 4).await;
    let inf = informer(server.client(), |_| {});
    let slow = Gate::new();
    let _guard = OpenOnDrop(slow.clone());
    let slow_reg = inf.add_event_handler(slow.clone()).unwrap();
    let (cancel, task) = start(&inf);
    assert!(
        tokio::time::timeout(WAIT, inf.wait_for_sync())
            .await
            .unwrap()
    );
    assert!(inf.has_synced(), "D7: the store synced");
    assert!(
        !slow_reg.has_synced(),
        "H6: this handler has not returned from its initial adds"
    );
    let waiter = tokio::spawn({
        let reg = slow_reg.clone();
        async move { reg.wait_for_sync().await }
    });
    slow.open();
    tokio::time::timeout(WAIT, waiter).await.unwrap().unwrap();
    assert!(slow_reg.has_synced());
    assert_eq!(slow.rec.len(), 4);
    stop(cancel, task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn k1_m8_metadata_only_informer() {
    init_tracing();
    let server = TestServer::start().await.expect("testserver");
    let w = Writer::new(server.client(), "default");
    seed(&w, 3).await;
    let lw = ListWatch::metadata(Api::<ConfigMap>::all(server.client()));
    let inf =
        SharedIndexInformer::<PartialObjectMeta<ConfigMap>>::new(lw, Default::default()).unwrap();
    let names = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let n = names.clone();
    let reg = inf
        .add_event_handler(
            handler_fn().on_add(move |o: &Arc<PartialObjectMeta<ConfigMap>>, _| {
                n.lock().push(o.metadata.name.clone().unwrap_or_default())
            }),
        )
        .unwrap();
    let cancel = CancellationToken::new();
    let task = inf.start(cancel.clone());
    assert!(
        tokio::time::timeout(WAIT, reg.wait_for_sync())
            .await
            .unwrap(),
        "synced before the informer stopped"
    );
    let mut got = names.lock().clone();
    got.sort();
    assert_eq!(got, ["cm-0000", "cm-0001", "cm-0002"]);
    assert_eq!(inf.indexer().len(), 3);
    stop(cancel, task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn h1_h14_run_once_errors_after_start_and_stop_and_no_task_left_behind() {
    init_tracing();
    let server = TestServer::start().await.expect("testserver");
    let w = Writer::new(server.client(), "default");
    seed(&w, 2).await;
    let inf = informer(server.client(), |_| {});
    inf.set_transform(strip_managed_fields).unwrap();
    let rec = Recorder::new();
    let reg = inf.add_event_handler(rec.clone()).unwrap();
    let (cancel, task) = start(&inf);
    assert!(
        tokio::time::timeout(WAIT, reg.wait_for_sync())
            .await
            .unwrap(),
        "synced before the informer stopped"
    );
    // H1: a second run returns at once and lists nothing.
    tokio::time::timeout(WAIT, inf.run(CancellationToken::new()))
        .await
        .expect("H1: second run is a no-op");
    assert_eq!(server.requests().iter().filter(|r| r.is_list()).count(), 1);
    // H14: no transform or watch error handler after start.
    assert!(inf.set_transform(strip_managed_fields).is_err());
    assert!(inf.set_watch_error_handler(|_| {}).is_err());
    assert!(
        inf.indexer()
            .list()
            .iter()
            .all(|o| o.metadata.managed_fields.is_none())
    );

    stop(cancel, task).await;
    assert!(inf.is_stopped());
    tokio::time::timeout(WAIT, inf.wait_stopped())
        .await
        .unwrap();
    assert!(reg.is_removed(), "handler tasks ended with the informer");
    assert!(matches!(
        inf.add_event_handler(Recorder::new()),
        Err(informer_runtime::informer::Error::Stopped)
    ));
    assert!(
        inf.add_indexers(Default::default()).is_err(),
        "X6: add_indexers after stop"
    );
    // Nothing is left behind: the server sees the watch closed and no new one.
    wait_until("the server to see the watch closed", || {
        server.active_watches() == 0
    })
    .await;
    // The server may log a watch request only once it ends, so count after the close.
    let watches_after_stop = server.requests().iter().filter(|r| r.is_watch()).count();
    w.create("after-stop", "0").await;
    assert_eq!(
        server.requests().iter().filter(|r| r.is_watch()).count(),
        watches_after_stop,
        "no watch after stop"
    );
    assert_eq!(server.active_watches(), 0);
    assert_eq!(rec.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn event_stream_yields_initial_adds_then_live_events() {
    init_tracing();
    let server = TestServer::start().await.expect("testserver");
    let w = Writer::new(server.client(), "default");
    seed(&w, 2).await;
    let inf = informer(server.client(), |_| {});
    let (cancel, task) = start(&inf);
    assert!(
        tokio::time::timeout(WAIT, inf.wait_for_sync())
            .await
            .unwrap()
    );
    let mut stream = inf.event_stream().unwrap();
    let mut next = async || {
        tokio::time::timeout(WAIT, stream.next())
            .await
            .unwrap()
            .unwrap()
    };
    for _ in 0..2 {
        assert!(matches!(
            next().await,
            InformerEvent::Added {
                is_in_initial_list: true,
                ..
            }
        ));
    }
    w.set("cm-0000", "1").await;
    w.delete("cm-0001").await;
    assert!(matches!(next().await, InformerEvent::Updated { .. }));
    assert!(matches!(
        next().await,
        InformerEvent::Deleted(DeletedObject::Known(_))
    ));
    drop(stream);
    stop(cancel, task).await;
}
