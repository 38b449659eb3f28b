//! The informer's lifetime and its user code (H17, H18, X2): every task and handler
//! thread is tied to the run future; failing or panicking index functions never freeze the cache;
//! handlers need no tokio blocking-pool thread; the processing loop yields while the FIFO is full.
//!
//! Run with `cargo test -p informer-runtime --test informer_lifecycle`.

mod informer_support;

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use informer_runtime::indexer::Indexers;
use informer_runtime::informer::{HandlerOptions, SharedIndexInformer, handler_fn};
use informer_support::*;
use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::ConfigMap;
use tokio_util::sync::CancellationToken;

/// A handler that holds `alive` for as long as its thread may call it, and records into `rec`.
fn sentinel_handler(
    rec: Arc<Recorder>,
    alive: Arc<()>,
) -> informer_runtime::informer::HandlerFn<ConfigMap> {
    handler_fn().on_add(move |obj, initial| {
        let _held = &alive;
        informer_runtime::informer::ResourceEventHandler::on_add(&rec, obj, initial);
    })
}

/// Waits (without a runtime) until `weak` has no strong reference left.
fn wait_dropped(what: &str, weak: &Weak<()>) {
    let deadline = Instant::now() + WAIT;
    while weak.strong_count() > 0 {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A started informer over 3 ConfigMaps with a sentinel handler that has synced and a watch open.
async fn running(server: &TestServer) -> (SharedIndexInformer<ConfigMap>, Weak<()>) {
    for i in 0..3 {
        server
            .create(&cm("default", &format!("cm-{i}"), "0"))
            .expect("create");
    }
    let inf = informer(server.client(), |_| {});
    let alive = Arc::new(());
    let weak = Arc::downgrade(&alive);
    let rec = Recorder::new();
    inf.add_event_handler(sentinel_handler(rec, alive))
        .expect("handler");
    (inf, weak)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h17_aborting_the_run_task_stops_the_watch_and_every_handler_thread() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let (inf, alive) = running(&server).await;
    let task = inf.start(CancellationToken::new());
    assert!(
        tokio::time::timeout(WAIT, inf.wait_for_sync())
            .await
            .unwrap()
    );
    assert!(server.wait_for_active_watches(1, WAIT).await);
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    // The reflector's watch closes and the handler thread ends (it dropped the handler).
    wait_until("the watch to close", || server.active_watches() == 0).await;
    tokio::task::spawn_blocking(move || wait_dropped("the handler thread", &alive))
        .await
        .unwrap();
    assert!(inf.is_stopped());
    tokio::time::timeout(WAIT, inf.wait_stopped())
        .await
        .unwrap();
    assert!(
        inf.add_event_handler(handler_fn()).is_err(),
        "H14 after stop"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h17_dropping_the_run_future_stops_the_watch_and_every_handler_thread() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let (inf, alive) = running(&server).await;
    let running = async {
        assert!(inf.wait_for_sync().await);
        assert!(server.wait_for_active_watches(1, WAIT).await);
    };
    // `run` is dropped when the other branch completes.
    tokio::select! {
        () = inf.run(CancellationToken::new()) => panic!("run ended on its own"),
        () = running => {}
    }
    wait_until("the watch to close", || server.active_watches() == 0).await;
    tokio::task::spawn_blocking(move || wait_dropped("the handler thread", &alive))
        .await
        .unwrap();
    tokio::time::timeout(WAIT, inf.wait_stopped())
        .await
        .unwrap();
}

/// Objects whose `data.v` is "panic" make the index function panic; "fail" makes the fallible
/// one return an error.
fn touchy_indexers() -> Indexers<ConfigMap> {
    fn v(cm: &ConfigMap) -> String {
        cm.data
            .as_ref()
            .and_then(|d| d.get("v").cloned())
            .unwrap_or_default()
    }
    Indexers::new()
        .with("by_v", |cm: &ConfigMap| {
            let v = v(cm);
            assert_ne!(v, "panic", "index function panics on purpose");
            vec![v]
        })
        .with_fallible("strict_v", |cm: &ConfigMap| {
            let v = v(cm);
            if v == "fail" {
                Err("`fail` is not indexable".into())
            } else {
                Ok(vec![v])
            }
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h17_x2_failing_or_panicking_index_functions_never_freeze_the_cache() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let w = Writer::new(server.client(), "default");
    w.create("good", "a").await;
    w.create("bad", "panic").await;
    let inf = informer(server.client(), |c| c.indexers = touchy_indexers());
    let rec = Recorder::with_indexer(inf.indexer());
    let reg = inf.add_event_handler(rec.clone()).unwrap();
    let (cancel, task) = start(&inf);
    assert!(
        tokio::time::timeout(WAIT, reg.wait_for_sync())
            .await
            .unwrap()
    );
    let idx = inf.indexer();
    // The panicking object is stored and handed to the handler, just not indexed by `by_v`.
    assert!(idx.get_by_key("default/bad").is_some());
    assert!(rec.events().iter().any(|e| e.key() == "default/bad"));
    assert_eq!(idx.by_index("by_v", "a").unwrap().len(), 1);
    assert!(
        idx.list_index_values("by_v")
            .unwrap()
            .iter()
            .all(|v| &**v == "a")
    );
    assert_eq!(idx.by_index("strict_v", "panic").unwrap().len(), 1);
    assert_eq!(inf.index_errors(), 1);

    // The loop goes on: live events after the panic are processed.
    w.set("good", "fail").await;
    w.set("bad", "b").await;
    w.create("later", "c").await;
    rec.wait_for("the events after the failures", |evs| {
        evs.iter().any(|e| e.key() == "default/later")
    })
    .await;
    // X2: the failing update is stored, handlers were told, and the old index entries left.
    let good = idx.get_by_key("default/good").unwrap();
    assert_eq!(good.data.as_ref().unwrap()["v"], "fail");
    assert!(
        rec.events()
            .iter()
            .any(|e| matches!(e, Ev::Update { key, .. } if key == "default/good"))
    );
    assert!(
        idx.by_index("strict_v", "a").unwrap().is_empty(),
        "no stale entry"
    );
    assert!(idx.by_index("strict_v", "fail").unwrap().is_empty());
    assert_eq!(idx.by_index("by_v", "fail").unwrap().len(), 1);
    // The object that panicked before is indexed again once its function succeeds.
    assert_eq!(idx.by_index("by_v", "b").unwrap().len(), 1);
    assert_eq!(inf.index_errors(), 2);
    assert_eq!(inf.process_panics(), 0);
    assert!(inf.has_synced() && !inf.is_stopped());
    stop(cancel, task).await;
}

/// H9, H17: a handler never takes a tokio blocking-pool thread, so a runtime whose pool has one
/// thread still runs four handlers (and keeps its pool for `spawn_blocking` users).
#[test]
fn h17_handlers_need_no_blocking_pool_thread() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(1)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        init_tracing();
        let server = TestServer::start().await.unwrap();
        server.create(&cm("default", "a", "0")).unwrap();
        let inf = informer(server.client(), |_| {});
        let recs: Vec<_> = (0..4).map(|_| Recorder::new()).collect();
        for (i, rec) in recs.iter().enumerate() {
            inf.add_event_handler_with(rec.clone(), HandlerOptions::new().name(format!("h{i}")))
                .unwrap();
        }
        let (cancel, task) = start(&inf);
        for rec in &recs {
            rec.wait_for("the add", |evs| evs.len() == 1).await;
        }
        // The one blocking-pool thread is still free for others.
        let free = tokio::time::timeout(WAIT, tokio::task::spawn_blocking(|| 7)).await;
        assert_eq!(free.unwrap().unwrap(), 7);
        stop(cancel, task).await;
    });
}

/// H17: a handler closure that holds its own informer (an `Arc` cycle through the handler)
/// does not keep the runtime from shutting down, and the handler thread ends with it.
#[test]
fn h17_a_handler_holding_its_informer_does_not_block_runtime_shutdown() {
    let server_rt = tokio::runtime::Runtime::new().unwrap();
    let server = server_rt.block_on(TestServer::start()).unwrap();
    server.create(&cm("default", "a", "0")).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let alive = Arc::new(());
    let weak = Arc::downgrade(&alive);
    rt.block_on(async {
        init_tracing();
        let inf = informer(server.client(), |_| {});
        let cycle = inf.clone();
        let reg = inf
            .add_event_handler(handler_fn().on_add(move |_, _| {
                let _held = (&cycle, &alive);
            }))
            .unwrap();
        // Started and never stopped: only the runtime's shutdown ends it.
        drop(inf.start(CancellationToken::new()));
        assert!(
            tokio::time::timeout(WAIT, reg.wait_for_sync())
                .await
                .unwrap()
        );
    });
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        drop(rt);
        let _ = tx.send(());
    });
    rx.recv_timeout(WAIT)
        .expect("the runtime did not shut down: a handler thread kept it alive");
    wait_dropped("the handler thread", &weak);
    drop(server_rt);
}

/// H18: after a list of many keys the processing loop must let other tasks run while the
/// FIFO still holds items (on a current-thread runtime it would otherwise hold the only thread
/// until the FIFO is empty).
#[tokio::test(flavor = "current_thread")]
async fn h18_processing_loop_yields_while_the_fifo_holds_items() {
    init_tracing();
    const N: usize = 3000;
    let server = TestServer::start().await.unwrap();
    for i in 0..N {
        server
            .create(&cm("default", &format!("cm-{i:05}"), "0"))
            .unwrap();
    }
    let inf = informer(server.client(), |_| {});
    let idx = inf.indexer();
    let (cancel, task) = start(&inf);
    let mut seen = std::collections::BTreeSet::new();
    let deadline = Instant::now() + WAIT;
    loop {
        let len = idx.len();
        seen.insert(len);
        if len == N {
            break;
        }
        assert!(Instant::now() < deadline, "timed out; cache holds {len}");
        tokio::task::yield_now().await;
    }
    assert!(
        seen.iter().any(|&n| n > 0 && n < N),
        "the cache went from empty to {N} objects with no other task running in between: {seen:?}"
    );
    stop(cancel, task).await;
}

/// A handler whose first call blocks until [`Gate::open`]; it records `(event, uid)` pairs.
#[derive(Default)]
struct Gate {
    open: parking_lot::Mutex<bool>,
    cv: parking_lot::Condvar,
    entered: std::sync::atomic::AtomicBool,
    seen: parking_lot::Mutex<Vec<(&'static str, String)>>,
}

impl Gate {
    fn wait(&self) {
        self.entered
            .store(true, std::sync::atomic::Ordering::Release);
        let mut open = self.open.lock();
        while !*open {
            self.cv.wait(&mut open);
        }
    }

    fn open(&self) {
        *self.open.lock() = true;
        self.cv.notify_all();
    }

    fn record(&self, what: &'static str, obj: &ConfigMap) {
        let uid = obj.metadata.uid.clone().unwrap_or_default();
        self.seen.lock().push((what, uid));
    }
}

impl informer_runtime::informer::ResourceEventHandler<ConfigMap> for Gate {
    fn on_add(&self, obj: &Arc<ConfigMap>, _initial: bool) {
        self.wait();
        self.record("add", obj);
    }

    fn on_update(&self, _old: &Arc<ConfigMap>, new: &Arc<ConfigMap>) {
        self.record("update", new);
    }

    fn on_delete(&self, obj: &informer_runtime::informer::DeletedObject<ConfigMap>) {
        if let Some(last) = obj.last_known() {
            self.record("delete", last);
        }
    }
}

/// H10: at its maximum, a slow handler's backlog stays bounded by the key count under a
/// delete/re-create storm of one key, and the handler never gets a delete for an object (a UID)
/// it never saw added.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h10_delete_recreate_storm_keeps_a_slow_backlog_bounded_and_deletes_seen_objects_only() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let w = Writer::new(server.client(), "default");
    w.create("first", "0").await;
    let inf = informer(server.client(), |_| {});
    let slow = Arc::new(Gate::default());
    let slow_reg = inf
        .add_event_handler_with(
            slow.clone(),
            HandlerOptions::new().name("slow").backlog_max(2),
        )
        .unwrap();
    let fast = Recorder::new();
    inf.add_event_handler(fast.clone()).unwrap();
    let (cancel, task) = start(&inf);
    wait_until("the slow handler to block", || {
        slow.entered.load(std::sync::atomic::Ordering::Acquire)
    })
    .await;
    const ROUNDS: usize = 30;
    let mut max_pending = 0;
    for _ in 0..ROUNDS {
        w.create("x", "0").await;
        w.delete("x").await;
        max_pending = max_pending.max(slow_reg.pending());
    }
    fast.wait_for("every delete of x", |evs| {
        evs.iter()
            .filter(|e| matches!(e, Ev::Delete { key, .. } if key == "default/x"))
            .count()
            == ROUNDS
    })
    .await;
    max_pending = max_pending.max(slow_reg.pending());
    assert!(
        max_pending <= 4,
        "H10: one key's storm grew the backlog to {max_pending}"
    );
    slow.open();
    wait_until("the slow backlog to drain", || slow_reg.pending() == 0).await;
    let seen = slow.seen.lock().clone();
    let added: std::collections::HashSet<&String> = seen
        .iter()
        .filter(|(w, _)| *w == "add")
        .map(|(_, u)| u)
        .collect();
    for (what, uid) in &seen {
        assert!(
            *what != "delete" || added.contains(uid),
            "delete of a UID the handler never saw: {seen:?}"
        );
    }
    stop(cancel, task).await;
}

/// Decision record 03: a relist at a concrete RV is unpaged (R3), so its body holds the whole
/// collection; it is decoded a run at a time with the runtime free in between. On a
/// current-thread runtime another task sees the relist's objects arrive run by run, not all at
/// once.
#[tokio::test(flavor = "current_thread")]
async fn r3_unpaged_relist_is_decoded_in_page_sized_chunks() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    init_tracing();
    const N: usize = 3000;
    let server = TestServer::start().await.unwrap();
    for i in 0..N {
        server
            .create(&cm("default", &format!("cm-{i:05}"), "0"))
            .unwrap();
    }
    let decoded = Arc::new(AtomicUsize::new(0));
    let count = decoded.clone();
    let inf = informer(server.client(), move |c| {
        c.reflector.page_size = 500;
        // A first list at "" is paged without marking the server as one that pages "0" lists
        // (paginated_result), so the relist at a concrete RV goes unpaged (R3).
        c.reflector.initial_list_rv = String::new();
        c.transform = Some(Arc::new(move |_: &mut ConfigMap| {
            count.fetch_add(1, Ordering::Relaxed);
        }));
    });
    let (cancel, task) = start(&inf);
    assert!(
        tokio::time::timeout(WAIT, inf.wait_for_sync())
            .await
            .unwrap()
    );
    assert!(server.wait_for_active_watches(1, WAIT).await);
    assert_eq!(decoded.load(Ordering::Relaxed), N);
    server.clear_requests();
    server.faults().expire_open_watches();
    let mut seen = std::collections::BTreeSet::new();
    let deadline = Instant::now() + WAIT;
    loop {
        let n = decoded.load(Ordering::Relaxed);
        seen.insert(n);
        if n >= 2 * N {
            break;
        }
        assert!(Instant::now() < deadline, "timed out; decoded {n}");
        tokio::task::yield_now().await;
    }
    let relist: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.is_list())
        .collect();
    assert_eq!(relist.len(), 1);
    assert_eq!(
        relist[0].query.limit, None,
        "R3: a relist at a concrete RV is unpaged"
    );
    assert!(
        seen.iter().any(|&n| n > N && n < 2 * N),
        "the unpaged relist was decoded in one go: {seen:?}"
    );
    stop(cancel, task).await;
}

/// X2: the factory's metrics report index function failures per informer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn x2_factory_metrics_count_index_function_failures() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    server.create(&cm("default", "ok", "a")).unwrap();
    server.create(&cm("default", "bad", "fail")).unwrap();
    let mut registry = prometheus_client::registry::Registry::default();
    let factory = informer_runtime::SharedInformerFactory::builder(server.client())
        .metrics(&mut registry)
        .build();
    let cms = factory.informer_for::<ConfigMap>();
    cms.add_indexers(touchy_indexers()).unwrap();
    factory.start();
    assert!(
        tokio::time::timeout(WAIT, cms.wait_for_sync())
            .await
            .unwrap()
    );
    assert_eq!(cms.indexer().len(), 2);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    for expected in [
        "informer_index_errors_total{informer=\"v1/configmaps\"} 1",
        "informer_process_panics_total{informer=\"v1/configmaps\"} 0",
    ] {
        assert!(text.contains(expected), "missing `{expected}` in:\n{text}");
    }
    factory.shutdown().await;
}
