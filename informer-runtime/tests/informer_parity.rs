//! client-go 1.35-1.37 parity of the informer (docs/behaviour.md §15): names in logs and metric labels,
//! queue depth, processing latency and store resource version metrics (V4); named, awaitable sync
//! checks and handler shutdown that frees the handler (V5). Through `kube::Client` and
//! informer-testserver.
//!
//! Run with `cargo test -p informer-runtime --test informer_parity`.

mod informer_support;

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use informer_runtime::factory::SharedInformerFactory;
use informer_runtime::informer::{HandlerOptions, OverflowPolicy, handler_fn, wait_for};
use informer_support::*;
use informer_testserver::{GroupResource, TestServer};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// Every event logged in this test binary, with the fields of the spans around it.
#[derive(Default)]
struct Captured {
    /// (message, fields of every enclosing span as `name.field=value`).
    events: Mutex<Vec<(String, Vec<String>)>>,
}

struct SpanFields(Vec<String>);

struct FieldText<'a> {
    prefix: &'a str,
    out: &'a mut Vec<String>,
}

impl Visit for FieldText<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.out
            .push(format!("{}{}={:?}", self.prefix, field.name(), value));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.out
            .push(format!("{}{}={}", self.prefix, field.name(), value));
    }
}

struct CaptureLayer(Arc<Captured>);

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> tracing_subscriber::Layer<S>
    for CaptureLayer
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = Vec::new();
        let prefix = format!("{}.", attrs.metadata().name());
        attrs.record(&mut FieldText {
            prefix: &prefix,
            out: &mut fields,
        });
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(SpanFields(fields));
        }
    }

    fn on_event(&self, event: &tracing::Event<'_>, ctx: Context<'_, S>) {
        let mut message = Vec::new();
        event.record(&mut FieldText {
            prefix: "",
            out: &mut message,
        });
        let mut scope_fields = Vec::new();
        if let Some(scope) = ctx.event_scope(event) {
            for span in scope {
                if let Some(fields) = span.extensions().get::<SpanFields>() {
                    scope_fields.extend(fields.0.iter().cloned());
                }
            }
        }
        self.0.events.lock().push((message.join(" "), scope_fields));
    }
}

/// Installs the capturing subscriber for the whole binary (handler threads are not tokio
/// tasks, so a thread-local default would miss them).
fn captured() -> &'static Arc<Captured> {
    static CAPTURED: OnceLock<Arc<Captured>> = OnceLock::new();
    CAPTURED.get_or_init(|| {
        let captured = Arc::new(Captured::default());
        let subscriber = tracing_subscriber::registry()
            .with(tracing_subscriber::filter::LevelFilter::DEBUG)
            .with(CaptureLayer(Arc::clone(&captured)));
        tracing::subscriber::set_global_default(subscriber).expect("one global subscriber");
        captured
    })
}

/// The value of a metric series (`name{labels}`) in the text exposition.
fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

fn scrape(registry: &prometheus_client::registry::Registry) -> String {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry).expect("encode");
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v4_log_lines_of_the_reflector_and_of_handlers_carry_the_informer_name() {
    let captured = captured();
    let server = TestServer::start().await.unwrap();
    server.create(&cm("default", "one", "1")).unwrap();
    let inf = informer(server.client(), |c| c.name = "v4-logs".into());
    inf.add_event_handler_with(
        handler_fn().on_add(|cm: &Arc<ConfigMap>, _| {
            tracing::info!(name = ?cm.metadata.name, "v4 handler saw an object");
        }),
        HandlerOptions::new().name("logger"),
    )
    .unwrap();
    let cancel = CancellationToken::new();
    let task = inf.start(cancel.clone());
    assert_synced(inf.wait_for_sync()).await;
    wait_until("the handler's log line", || {
        captured
            .events
            .lock()
            .iter()
            .any(|(m, _)| m.contains("v4 handler saw an object"))
    })
    .await;
    let events = captured.events.lock().clone();
    let handler_line = events
        .iter()
        .find(|(m, _)| m.contains("v4 handler saw an object"))
        .expect("seen above");
    assert!(
        handler_line
            .1
            .contains(&"informer_handler.informer=v4-logs".to_string())
            && handler_line
                .1
                .contains(&"informer_handler.handler=logger".to_string()),
        "handler line without the informer and handler names: {handler_line:?}"
    );
    // The reflector's own lines (its task is spawned) are inside the informer's span too.
    let reflector_lines: Vec<_> = events
        .iter()
        .filter(|(_, scope)| scope.contains(&"informer.name=v4-logs".to_string()))
        .collect();
    assert!(
        reflector_lines
            .iter()
            .any(|(m, _)| !m.contains("v4 handler")),
        "no informer line besides the handler's carries the informer span: {events:?}"
    );
    cancel.cancel();
    task.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v4_factory_metrics_carry_the_informer_name_queue_depth_latency_and_store_rv() {
    let server = TestServer::start().await.unwrap();
    for i in 0..20 {
        server
            .create(&cm("default", &format!("cm-{i}"), "0"))
            .unwrap();
    }
    let mut registry = prometheus_client::registry::Registry::default();
    let factory = SharedInformerFactory::builder(server.client())
        .informer_name("ctl")
        .metrics(&mut registry)
        .build();
    let cms = factory.informer_for::<ConfigMap>();
    assert_eq!(cms.name(), "ctl/v1/configmaps");
    // A handler that blocks until released keeps the processing loop from draining the FIFO
    // (OverflowPolicy::Block with a backlog of 1), so the queue depth is observable.
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let release_rx = Mutex::new(release_rx);
    cms.add_event_handler_with(
        handler_fn().on_add(move |_: &Arc<ConfigMap>, _| {
            let _ = release_rx.lock().recv_timeout(WAIT);
        }),
        HandlerOptions::new()
            .name("gate")
            .backlog_max(1)
            .overflow(OverflowPolicy::Block),
    )
    .unwrap();
    factory.start();
    let label = "{informer=\"ctl/v1/configmaps\"}";
    // client-go 1.37's families carry client-go's labels (V4).
    let go = "{name=\"ctl/v1/configmaps\",group=\"\",version=\"v1\",resource=\"configmaps\"}";
    wait_until("a queue behind the blocked handler", || {
        metric(&scrape(&registry), &format!("informer_queued_items{go}")).is_some_and(|q| q > 0.0)
    })
    .await;
    assert!(cms.queued() > 0);
    for _ in 0..20 {
        release_tx.send(()).unwrap();
    }
    assert_synced(cms.wait_for_sync()).await;
    wait_until("the FIFO to drain", || cms.queued() == 0).await;
    let list_rv: u64 = cms
        .last_sync_resource_version()
        .expect("synced")
        .parse()
        .unwrap();
    // Once drained, the store reflects the list's RV (V4).
    wait_until("the store RV to reach the list RV", || {
        cms.last_store_resource_version().as_deref() == Some(list_rv.to_string().as_str())
    })
    .await;
    // A live event moves the store RV to that object's RV.
    let live = server.create(&cm("default", "live", "1")).unwrap();
    let live_rv = live["metadata"]["resourceVersion"]
        .as_str()
        .expect("created objects have an RV")
        .to_owned();
    release_tx.send(()).unwrap();
    wait_until("the live object's RV in the store", || {
        cms.last_store_resource_version().as_deref() == Some(live_rv.as_str())
    })
    .await;

    let text = scrape(&registry);
    assert_eq!(
        metric(&text, &format!("informer_queued_items{go}")),
        Some(0.0),
        "{text}"
    );
    assert_eq!(
        metric(&text, &format!("informer_store_resource_version{go}")),
        Some(live_rv.parse::<f64>().unwrap()),
        "{text}"
    );
    let processed = metric(
        &text,
        &format!("informer_processing_latency_seconds_count{go}"),
    )
    .unwrap_or_default();
    // client-go's buckets, 1 ms to 10 s.
    let bounds: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("informer_processing_latency_seconds_bucket{"))
        .filter_map(|l| l.split("le=\"").nth(1)?.split('"').next())
        .collect();
    assert_eq!(
        bounds,
        [
            "0.001", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1.0", "2.5", "5.0",
            "10.0", "+Inf"
        ],
        "{text}"
    );
    for family in [
        "# TYPE informer_queued_items gauge",
        "# TYPE informer_processing_latency_seconds histogram",
        "# TYPE informer_store_resource_version gauge",
    ] {
        assert!(text.contains(family), "{family} in\n{text}");
    }
    assert!(!text.contains("informer_fifo_queued_items"), "{text}");
    assert!(
        processed >= 21.0,
        "21 keys processed, histogram says {processed}:\n{text}"
    );
    assert!(
        text.contains("informer_handler_pending{informer=\"ctl/v1/configmaps\",handler=\"gate\"}"),
        "handler series named after the informer:\n{text}"
    );
    assert!(
        text.contains(&format!("informer_watch_requests_total{label} 1")),
        "reflector counters carry the informer's name, prefix included:\n{text}"
    );
    drop(release_tx);
    factory.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v4_a_hand_built_informer_reports_through_its_own_collector() {
    let server = TestServer::start().await.unwrap();
    server.create(&cm("default", "one", "1")).unwrap();
    let inf = informer(server.client(), |c| c.name = "solo".into());
    let mut registry = prometheus_client::registry::Registry::default();
    registry.register_collector(Box::new(inf.collector()));
    let before = scrape(&registry);
    assert_eq!(
        metric(&before, "informer_synced{informer=\"solo\"}"),
        Some(0.0)
    );
    // client-go v0.38's store resource version has no series before the first sync (V4).
    let store_rv = "informer_store_resource_version{name=\"solo\",group=\"\",version=\"v1\",resource=\"configmaps\"}";
    assert_eq!(metric(&before, store_rv), None, "{before}");
    assert!(before.contains("# TYPE informer_store_resource_version gauge"));
    let cancel = CancellationToken::new();
    let task = inf.start(cancel.clone());
    assert_synced(inf.wait_for_sync()).await;
    let after = scrape(&registry);
    assert_eq!(
        metric(&after, "informer_synced{informer=\"solo\"}"),
        Some(1.0)
    );
    assert_eq!(
        metric(&after, "informer_cached_objects{informer=\"solo\"}"),
        Some(1.0)
    );
    let synced_rv = inf.last_store_resource_version().expect("synced");
    assert_eq!(
        metric(&after, store_rv),
        Some(synced_rv.parse::<f64>().expect("numeric")),
        "{after}"
    );
    cancel.cancel();
    task.await.unwrap();
    drop(inf);
    assert!(
        !scrape(&registry).contains("\"solo\""),
        "a dropped informer reports nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v5_wait_for_names_what_has_not_synced_and_returns_when_it_stops() {
    let server = TestServer::start().await.unwrap();
    server.create(&cm("default", "one", "1")).unwrap();
    server.faults().forbid(GroupResource::new("", "secrets"));
    let factory = SharedInformerFactory::new(server.client());
    let cms = factory.informer_for::<ConfigMap>();
    let secrets = factory.informer_for::<Secret>();
    let handler = cms
        .add_event_handler_with(handler_fn(), HandlerOptions::new().name("h"))
        .unwrap();
    factory.start();

    // The ConfigMap informer and its handler sync; the forbidden Secret informer never does.
    let mut checkers = factory.synced_checkers();
    checkers.push(handler.synced_checker());
    let names: BTreeMap<String, ()> = checkers.iter().map(|c| (c.name().to_owned(), ())).collect();
    assert!(names.contains_key("v1/configmaps/h"), "{names:?}");
    let err = wait_for(
        "test caches",
        checkers.clone(),
        tokio::time::sleep(Duration::from_secs(2)),
    )
    .await
    .expect_err("secrets are forbidden");
    assert_eq!(err.pending, vec![secrets.name().to_owned()], "{err}");
    assert!(err.stopped.is_empty(), "{err}");
    assert!(
        err.to_string().contains("not synced yet: v1/secrets"),
        "{err}"
    );
    assert!(handler.synced_checker().is_synced());

    // Once the Secret informer stops, a waiter learns it at once instead of at its deadline.
    let waiter = tokio::spawn(wait_for(
        "test caches",
        checkers,
        tokio::time::sleep(Duration::from_secs(3600)),
    ));
    secrets.stop();
    let err = tokio::time::timeout(WAIT, waiter)
        .await
        .expect("wait_for returns when a checker can never sync")
        .unwrap()
        .expect_err("still not synced");
    assert_eq!(err.stopped, vec![secrets.name().to_owned()], "{err}");
    assert!(err.pending.is_empty(), "{err}");

    // Everything synced: Ok at once.
    wait_for(
        "configmaps",
        [cms.synced_checker(), handler.synced_checker()],
        std::future::pending(),
    )
    .await
    .expect("synced");
    factory.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v5_removing_a_handler_frees_its_thread_backlog_and_series() {
    let server = TestServer::start().await.unwrap();
    for i in 0..50 {
        server
            .create(&cm("default", &format!("cm-{i}"), "0"))
            .unwrap();
    }
    let mut registry = prometheus_client::registry::Registry::default();
    let factory = SharedInformerFactory::builder(server.client())
        .metrics(&mut registry)
        .build();
    let cms = factory.informer_for::<ConfigMap>();
    // A handler stuck in its first call: the other 49 initial adds wait in its backlog.
    let (entered_tx, entered_rx) = tokio::sync::oneshot::channel::<()>();
    let entered_tx = Mutex::new(Some(entered_tx));
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let release_rx = Mutex::new(release_rx);
    let stuck = cms
        .add_event_handler_with(
            handler_fn().on_add(move |_: &Arc<ConfigMap>, _| {
                if let Some(tx) = entered_tx.lock().take() {
                    let _ = tx.send(());
                }
                let _ = release_rx.lock().recv_timeout(WAIT);
            }),
            HandlerOptions::new().name("stuck"),
        )
        .unwrap();
    factory.start();
    assert_synced(cms.wait_for_sync()).await;
    tokio::time::timeout(WAIT, entered_rx)
        .await
        .unwrap()
        .unwrap();
    wait_until("the backlog behind the stuck call", || {
        stuck.pending() == 49
    })
    .await;
    // The backlog holds the cached objects: more references than the store's own.
    let any = cms.indexer().list().pop().expect("cached");
    let held_with_backlog = Arc::strong_count(&any);

    cms.remove_event_handler(&stuck);
    assert_eq!(stuck.pending(), 0, "the backlog is dropped at removal");
    assert!(
        !scrape(&registry).contains("handler=\"stuck\""),
        "the handler's series are removed"
    );
    assert!(!stuck.is_finished(), "its call in flight is still running");
    release_tx.send(()).unwrap();
    tokio::time::timeout(WAIT, cms.remove_event_handler_and_wait(&stuck))
        .await
        .unwrap()
        .unwrap();
    assert!(
        stuck.is_finished(),
        "the thread ended after its call in flight"
    );
    let store_only = Arc::strong_count(&any);
    assert!(
        store_only < held_with_backlog,
        "removal freed the backlog's reference: {held_with_backlog} before, {store_only} after"
    );
    factory.shutdown().await;
}

/// Seeds `n` ConfigMaps and runs an informer (atomic relist as given) with a recording handler
/// registered with `options`.
async fn relist_fixture(
    n: usize,
    atomic_relist: bool,
    options: HandlerOptions,
) -> (
    TestServer,
    Writer,
    informer_runtime::informer::SharedIndexInformer<ConfigMap>,
    Arc<Recorder>,
    Arc<tokio::sync::Notify>,
    CancellationToken,
    tokio::task::JoinHandle<()>,
) {
    let server = TestServer::start().await.expect("testserver");
    let w = Writer::new(server.client(), "default");
    seed(&w, n).await;
    let inf = informer(server.client(), |c| {
        c.atomic_relist = atomic_relist;
        c.batch_size = 16;
    });
    let watch_failed = Arc::new(tokio::sync::Notify::new());
    let wf = watch_failed.clone();
    inf.set_watch_error_handler(move |_| wf.notify_one())
        .expect("not started");
    let rec = Recorder::with_indexer(inf.indexer());
    let reg = inf
        .add_event_handler_with(rec.clone(), options)
        .expect("handler");
    let (cancel, task) = start(&inf);
    assert_synced(reg.wait_for_sync()).await;
    (server, w, inf, rec, watch_failed, cancel, task)
}

/// (objects, objects with `data.v == "1"`) in the cache.
fn census(inf: &informer_runtime::informer::SharedIndexInformer<ConfigMap>) -> (usize, usize) {
    let all = inf.indexer().list();
    let new = all
        .iter()
        .filter(|cm| {
            cm.data
                .as_ref()
                .and_then(|d| d.get("v"))
                .map(String::as_str)
                == Some("1")
        })
        .count();
    (all.len(), new)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v2_a_relist_reaches_the_store_as_one_swap_and_handlers_still_get_each_change() {
    relist_is_one_swap(HandlerOptions::new()).await;
}

/// Decision record 14: a `Block` handler (here with a backlog of 8, far below the relist) no longer
/// turns the atomic relist off; its share of the relist waits in the fan-out instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v2_h10_a_block_handler_keeps_the_relist_one_swap() {
    let block = HandlerOptions::new()
        .overflow(OverflowPolicy::Block)
        .backlog_max(8);
    relist_is_one_swap(block).await;
}

/// A relist while readers sample the cache: they see it before or after, never half of it
/// (V2), and the handler registered with `options` still gets each change.
async fn relist_is_one_swap(options: HandlerOptions) {
    const N: usize = 300;
    const GONE: usize = 60;
    let (server, w, inf, rec, watch_failed, cancel, task) = relist_fixture(N, true, options).await;
    assert_eq!(census(&inf), (N, 0));

    // A reader samples the cache as fast as it can while the relist lands (a lister would).
    let stop_reader = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (inf, stop) = (inf.clone(), stop_reader.clone());
        std::thread::spawn(move || {
            let mut seen = std::collections::BTreeSet::new();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                seen.insert(census(&inf));
            }
            seen
        })
    };

    // Disconnected (the watch expires, R12; the relist is held), the server changes: GONE
    // objects are deleted, every other one is updated. Only the relist can bring this news.
    wait_until("the watch", || server.active_watches() == 1).await;
    server.faults().stall_list(true);
    server.faults().expire_open_watches();
    tokio::time::timeout(WAIT, watch_failed.notified())
        .await
        .expect("the watch fails");
    for i in 0..N {
        let name = format!("cm-{i:04}");
        if i < GONE {
            w.delete(&name).await;
        } else {
            w.set(&name, "1").await;
        }
    }
    server.faults().stall_list(false);
    wait_until("the relist in the cache", || {
        census(&inf) == (N - GONE, N - GONE)
    })
    .await;
    stop_reader.store(true, std::sync::atomic::Ordering::Relaxed);
    let seen = reader.join().expect("the reader thread");
    assert_eq!(
        seen.iter()
            .copied()
            .filter(|s| *s != (N, 0) && *s != (N - GONE, N - GONE))
            .collect::<Vec<_>>(),
        Vec::<(usize, usize)>::new(),
        "V2: a reader saw half a relist (objects, updated): all states seen {seen:?}"
    );
    // Handlers still get one notification per object: a tombstone per deleted object with its
    // last state (D5, H12), an update per changed one.
    let events = rec
        .wait_for("every relist notification", |e| {
            e.iter().filter(|e| matches!(e, Ev::Delete { .. })).count() == GONE
                && e.iter().filter(|e| matches!(e, Ev::Update { .. })).count() == N - GONE
        })
        .await;
    for e in &events {
        if let Ev::Delete { tombstone, rv, .. } = e {
            assert!(*tombstone && rv.is_some(), "D5: {e:?}");
        }
    }
    assert_eq!(view_of(&events), rec.last_view());
    stop(cancel, task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v3_batched_processing_keeps_every_notification_and_the_per_key_order() {
    const N: usize = 200;
    // Batches of 16 keys, no atomic relist: live updates and deletes arrive in bursts.
    let (server, w, inf, rec, _watch_failed, cancel, task) =
        relist_fixture(N, false, HandlerOptions::new()).await;
    for round in 1..=3 {
        for i in 0..N {
            w.set(&format!("cm-{i:04}"), &round.to_string()).await;
        }
    }
    for i in 0..N / 2 {
        w.delete(&format!("cm-{i:04}")).await;
    }
    let expected = server_state(server.client()).await;
    let events = rec
        .wait_for("the server state", |e| {
            view_of(e)
                .into_iter()
                .filter_map(|(k, v)| Some((k, v?)))
                .collect::<BTreeMap<_, _>>()
                == expected
        })
        .await;
    // Per key: versions only go forward and the handler's store-first view holds (H2, H8).
    let mut last: BTreeMap<String, u64> = BTreeMap::new();
    for e in &events {
        if let Ev::Update {
            key,
            new_rv,
            ptr_eq,
            ..
        } = e
        {
            assert!(!*ptr_eq, "an update carries a new object");
            let rv: u64 = new_rv.parse().unwrap();
            let prev = last.insert(key.clone(), rv).unwrap_or(0);
            assert!(rv > prev, "H8: {key} went from {prev} to {rv}");
        }
        if let Ev::Add {
            in_store, same_arc, ..
        } = e
        {
            assert!(*in_store && *same_arc, "H2/X7: {e:?}");
        }
    }
    assert_eq!(cache_state(&inf.indexer()), expected);
    stop(cancel, task).await;
}

/// An informer with `InformerConfig::default()` over every ConfigMap, started and synced.
async fn default_informer_synced(
    server: &TestServer,
) -> (
    informer_runtime::informer::SharedIndexInformer<ConfigMap>,
    CancellationToken,
    tokio::task::JoinHandle<()>,
) {
    let inf = informer_runtime::informer::SharedIndexInformer::new(
        informer_runtime::list_watch::ListWatch::new(kube::Api::<ConfigMap>::all(server.client())),
        informer_runtime::informer::InformerConfig::default(),
    )
    .expect("informer");
    let (cancel, task) = start(&inf);
    assert_synced(inf.wait_for_sync()).await;
    (inf, cancel, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v1_informers_start_from_a_streaming_list_and_fall_back_to_paged_list() {
    // The default InformerConfig (and so every factory informer): one watch-list stream with
    // sendInitialEvents (R17), kept open as the watch; no LIST.
    let server = TestServer::start().await.unwrap();
    for i in 0..5 {
        server
            .create(&cm("default", &format!("cm-{i}"), "0"))
            .unwrap();
    }
    let (inf, cancel, task) = default_informer_synced(&server).await;
    assert_eq!(inf.indexer().len(), 5);
    let log = server.requests();
    assert_eq!(log.iter().filter(|r| r.is_list()).count(), 0, "V1: no LIST");
    let watches: Vec<_> = log.iter().filter(|r| r.is_watch()).collect();
    assert_eq!(watches.len(), 1, "the stream stays open as the watch (R17)");
    assert_eq!(watches[0].query.send_initial_events, Some(true));
    // Live events flow on that same connection.
    server.create(&cm("default", "live", "1")).unwrap();
    wait_until("the live object", || inf.indexer().len() == 6).await;
    assert_eq!(server.requests().iter().filter(|r| r.is_watch()).count(), 1);
    stop(cancel, task).await;

    // A server that refuses the stream (here a 403 on the watch-list request): the informer
    // falls back to a paged LIST in the same cycle (R19) and syncs.
    let server = TestServer::start().await.unwrap();
    server.create(&cm("default", "one", "0")).unwrap();
    server.faults().fail_next(
        informer_testserver::FaultTarget::Watch,
        http::StatusCode::FORBIDDEN,
        None,
        1,
    );
    let (inf, cancel, task) = default_informer_synced(&server).await;
    assert_eq!(inf.indexer().len(), 1);
    let lists = server.requests().iter().filter(|r| r.is_list()).count();
    assert_eq!(lists, 1, "R19: one paged LIST after the refused stream");
    assert_eq!(
        inf.reflector_handle()
            .unwrap()
            .counters()
            .watch_list_fallbacks,
        1
    );
    stop(cancel, task).await;
}
