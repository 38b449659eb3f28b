//! Integration tests through `kube::Client` and informer-testserver for rules that had only unit
//! tests: R1, R22, R23, H8, H13, F2. R19's and R7's live in
//! `reflector_watch_list.rs` and `reflector_paused.rs`.
//!
//! Run with `cargo test -p informer-runtime --test rules_integration`.

mod informer_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use informer_runtime::SharedInformerFactory;
use informer_runtime::indexer::NAMESPACE_INDEX;
use informer_runtime::informer::{ResourceEventHandler, handler_fn};
use informer_runtime::reflector::BackoffConfig;
use informer_support::*;
use informer_testserver::{GroupResource, TestServer};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};

fn secret(ns: &str, name: &str) -> Secret {
    Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            namespace: Some(ns.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// R23: `last_sync_resource_version` is the list's RV after the list, then follows watch events
/// and bookmarks (a bookmark carries the server's RV although no ConfigMap changed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r23_last_sync_resource_version_follows_list_events_and_bookmarks() {
    init_tracing();
    let server = TestServer::builder()
        .bookmark_interval(Duration::from_millis(200))
        .start()
        .await
        .unwrap();
    let w = Writer::new(server.client(), "default");
    seed(&w, 3).await;
    // A write to another kind: the ConfigMap list's RV is still the collection's current RV.
    let listed_rv = server.current_resource_version().to_string();
    let inf = informer(server.client(), |_| {});
    let rec = Recorder::new();
    let reg = inf.add_event_handler(rec.clone()).unwrap();
    assert_eq!(
        inf.last_sync_resource_version(),
        None,
        "R23: none before the list"
    );
    let (cancel, task) = start(&inf);
    assert_synced(reg.wait_for_sync()).await;
    assert_eq!(
        inf.last_sync_resource_version().as_deref(),
        Some(&*listed_rv)
    );

    let updated = w.set("cm-0001", "1").await;
    let event_rv = updated.metadata.resource_version.clone().unwrap();
    rec.wait_for("the update", |evs| {
        evs.iter()
            .any(|e| matches!(e, Ev::Update { new_rv, .. } if *new_rv == event_rv))
    })
    .await;
    wait_until("the event's RV", || {
        inf.last_sync_resource_version().as_deref() == Some(&*event_rv)
    })
    .await;

    server.create(&secret("default", "s")).unwrap();
    let bookmark_rv = server.current_resource_version().to_string();
    wait_until("a bookmark's RV", || {
        inf.last_sync_resource_version().as_deref() == Some(&*bookmark_rv)
    })
    .await;
    assert!(
        !rec.events().iter().any(|e| e.key().contains("default/s")),
        "R5: bookmarks never reach handlers"
    );
    stop(cancel, task).await;
}

/// H8: every handler gets one notification at a time, in distribution order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h8_each_handler_gets_one_call_at_a_time_in_order() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let w = Writer::new(server.client(), "default");
    w.create("x", "0").await;
    let inf = informer(server.client(), |_| {});
    struct Ordered {
        in_flight: AtomicUsize,
        max_in_flight: AtomicUsize,
        values: parking_lot::Mutex<Vec<u32>>,
    }
    impl Ordered {
        fn call(&self, obj: &ConfigMap) {
            let now = self.in_flight.fetch_add(1, Ordering::AcqRel) + 1;
            self.max_in_flight.fetch_max(now, Ordering::AcqRel);
            // Stay in the call a little, so overlapping calls would be seen.
            for _ in 0..200 {
                std::thread::yield_now();
            }
            let v = obj
                .data
                .as_ref()
                .and_then(|d| d["v"].parse().ok())
                .unwrap_or(u32::MAX);
            self.values.lock().push(v);
            self.in_flight.fetch_sub(1, Ordering::AcqRel);
        }
    }
    impl ResourceEventHandler<ConfigMap> for Ordered {
        fn on_add(&self, obj: &Arc<ConfigMap>, _: bool) {
            self.call(obj);
        }
        fn on_update(&self, _: &Arc<ConfigMap>, new: &Arc<ConfigMap>) {
            self.call(new);
        }
    }
    let handlers: Vec<Arc<Ordered>> = (0..2)
        .map(|_| {
            Arc::new(Ordered {
                in_flight: AtomicUsize::new(0),
                max_in_flight: AtomicUsize::new(0),
                values: parking_lot::Mutex::new(Vec::new()),
            })
        })
        .collect();
    for h in &handlers {
        inf.add_event_handler(h.clone()).unwrap();
    }
    let (cancel, task) = start(&inf);
    // The list must show x at 0, so every later value comes as an update.
    assert_synced(inf.wait_for_sync()).await;
    const N: u32 = 40;
    for v in 1..=N {
        w.set("x", &v.to_string()).await;
    }
    for h in &handlers {
        wait_until("the last update", || h.values.lock().last() == Some(&N)).await;
        let values = h.values.lock().clone();
        assert!(
            values.windows(2).all(|p| p[0] < p[1]),
            "H8: out of order: {values:?}"
        );
        assert_eq!(values.first(), Some(&0));
        assert_eq!(
            h.max_in_flight.load(Ordering::Acquire),
            1,
            "H8: one call at a time"
        );
    }
    stop(cancel, task).await;
}

/// F2: an informer the factory creates gets the per-type custom resync (else the default), the
/// namespace index, the factory's namespace and the tweak function.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn f2_factory_informers_get_resync_namespace_index_namespace_and_tweak() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let mut web = cm("a", "web", "0");
    web.metadata.labels = Some([("app".to_string(), "web".to_string())].into());
    server.create(&web).unwrap();
    server.create(&cm("a", "other", "0")).unwrap();
    let mut elsewhere = cm("b", "web", "0");
    elsewhere.metadata.labels = web.metadata.labels.clone();
    server.create(&elsewhere).unwrap();
    let factory = SharedInformerFactory::builder(server.client())
        .namespace("a")
        .default_resync(Duration::from_secs(30))
        .resync_for::<ConfigMap>(Duration::from_secs(7))
        .tweak_list_options(|lp| lp.label_selector = Some("app=web".into()))
        .build();
    let cms = factory.informer_for::<ConfigMap>();
    let secrets = factory.informer_for::<Secret>();
    assert_eq!(cms.resync_check_period(), Duration::from_secs(7));
    assert_eq!(secrets.resync_check_period(), Duration::from_secs(30));
    assert!(cms.indexer().has_index(NAMESPACE_INDEX), "X3");
    factory.start();
    assert_synced(cms.wait_for_sync()).await;
    let keys: Vec<String> = cms
        .indexer()
        .list_keys()
        .iter()
        .map(|k| k.to_string())
        .collect();
    assert_eq!(keys, ["a/web"]);
    // V1: the initial list is a watch-list stream; every request carries namespace and tweak.
    let requests: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| (r.is_list() || r.is_watch()) && r.path.contains("configmaps"))
        .collect();
    assert!(!requests.is_empty());
    for req in requests {
        assert_eq!(req.path, "/api/v1/namespaces/a/configmaps");
        assert_eq!(req.query.label_selector.as_deref(), Some("app=web"));
    }
    factory.shutdown().await;
}

/// R22: the resync timer ticks alongside the watch: resyncs reach the handler as
/// `on_update(o, o)` while the one watch connection stays open, and no API call is made (Y1).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r22_resync_ticks_alongside_one_open_watch_without_api_calls() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let w = Writer::new(server.client(), "default");
    seed(&w, 2).await;
    let inf = informer(server.client(), |c| c.resync = Duration::from_secs(1));
    let rec = Recorder::new();
    inf.add_event_handler(rec.clone()).unwrap();
    let (cancel, task) = start(&inf);
    rec.wait_for("two resync rounds", |evs| {
        evs.iter().filter(|e| e.is_resync()).count() >= 4
    })
    .await;
    let counters = inf.reflector_handle().unwrap().counters();
    assert!(counters.resyncs >= 2, "{counters:?}");
    let requests = server.requests();
    assert_eq!(requests.iter().filter(|r| r.is_list()).count(), 1, "Y1");
    assert_eq!(
        requests.iter().filter(|r| r.is_watch()).count(),
        1,
        "R22: same watch"
    );
    assert_eq!(server.active_watches(), 1);
    stop(cancel, task).await;
}

/// H13: a delete and re-create while the informer is disconnected arrives as one update whose
/// old and new objects have different UIDs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h13_delete_and_recreate_while_disconnected_is_one_update_with_a_new_uid() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let w = Writer::new(server.client(), "default");
    w.create("x", "0").await;
    let inf = informer(server.client(), |_| {});
    let uids = Arc::new(parking_lot::Mutex::new(
        Vec::<(String, String, String)>::new(),
    ));
    let (u1, u2) = (uids.clone(), uids.clone());
    let uid = |o: &ConfigMap| o.metadata.uid.clone().unwrap_or_default();
    let reg = inf
        .add_event_handler(
            handler_fn()
                .on_add(move |o: &Arc<ConfigMap>, _| {
                    u1.lock().push(("add".into(), uid(o), String::new()))
                })
                .on_update(move |old: &Arc<ConfigMap>, new: &Arc<ConfigMap>| {
                    u2.lock().push(("update".into(), uid(old), uid(new)))
                }),
        )
        .unwrap();
    let (cancel, task) = start(&inf);
    assert_synced(reg.wait_for_sync()).await;
    assert!(server.wait_for_active_watches(1, WAIT).await);
    // Disconnect: every request for ConfigMaps is refused, and the open watch is closed.
    let cms = GroupResource::new("", "configmaps");
    server.faults().forbid(cms.clone());
    server.faults().close_open_watches();
    wait_until("a refused request", || {
        server
            .requests()
            .iter()
            .any(|r| r.status == http::StatusCode::FORBIDDEN)
    })
    .await;
    let old_uid = uids.lock()[0].1.clone();
    server.delete::<ConfigMap>(Some("default"), "x").unwrap();
    server.create(&cm("default", "x", "1")).unwrap();
    server.faults().allow(&cms);
    wait_until("the relist's update", || uids.lock().len() == 2).await;
    let got = uids.lock().clone();
    assert_eq!(
        got[1].0, "update",
        "H13: one update, not delete + add: {got:?}"
    );
    assert_eq!(got[1].1, old_uid);
    assert_ne!(got[1].2, old_uid, "H13: the UID tells the re-create");
    stop(cancel, task).await;
}

/// R1: under persistent failure the delay doubles up to the cap; after a healthy period longer
/// than `reset_after` the first delay is back at the initial one. (Scaled down: 100 ms initial,
/// 800 ms cap, 2 s reset, no jitter, so the test takes seconds, not minutes.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r1_backoff_doubles_to_the_cap_and_resets_after_a_healthy_period() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    server.create(&cm("default", "x", "0")).unwrap();
    let cms = GroupResource::new("", "configmaps");
    server.faults().forbid(cms.clone());
    let inf = informer(server.client(), |c| {
        c.reflector.backoff = BackoffConfig {
            initial: Duration::from_millis(100),
            factor: 2.0,
            jitter: 0.0,
            cap: Duration::from_millis(800),
            // Longer than a capped wait plus its request, as client-go's 2 min are to 30 s.
            reset_after: Duration::from_millis(2000),
        };
    });
    let (cancel, task) = start(&inf);
    let lists = |s: &TestServer| -> Vec<SystemTime> {
        s.requests()
            .iter()
            .filter(|r| r.is_list())
            .map(|r| r.time)
            .collect()
    };
    wait_until("seven refused LISTs", || lists(&server).len() >= 7).await;
    let times = lists(&server);
    let gaps: Vec<Duration> = times
        .windows(2)
        .map(|p| p[1].duration_since(p[0]).unwrap_or_default())
        .collect();
    // 100, 200, 400, 800, 800, 800 ms (plus request time).
    assert!(gaps[0] >= Duration::from_millis(100), "{gaps:?}");
    assert!(gaps[1] >= Duration::from_millis(200), "doubling: {gaps:?}");
    assert!(gaps[5] >= Duration::from_millis(800), "capped: {gaps:?}");
    assert!(
        gaps[5] < Duration::from_millis(1600),
        "never above 2x the cap: {gaps:?}"
    );

    server.faults().allow(&cms);
    assert_synced(inf.wait_for_sync()).await;
    assert!(server.wait_for_active_watches(1, WAIT).await);
    let healthy_since = SystemTime::now();
    wait_until("a healthy period beyond reset_after", || {
        healthy_since.elapsed().unwrap_or_default() > Duration::from_millis(2500)
    })
    .await;
    // Break the watch; the re-watch is refused, and the next cycle waits one backoff delay.
    server.faults().forbid(cms.clone());
    server.clear_requests();
    server.faults().close_open_watches();
    wait_until("the first refused LIST after the refused watch", || {
        !lists(&server).is_empty()
    })
    .await;
    let requests = server.requests();
    let refused_watch = requests
        .iter()
        .find(|r| r.is_watch() && r.status == http::StatusCode::FORBIDDEN)
        .unwrap();
    let first_list = requests.iter().find(|r| r.is_list()).unwrap();
    let delay = first_list
        .time
        .duration_since(refused_watch.time)
        .unwrap_or_default();
    assert!(
        delay >= Duration::from_millis(100) && delay < Duration::from_millis(600),
        "R1: the first delay after a healthy period is the initial one again, not the cap: {delay:?}"
    );
    server.faults().allow(&cms);
    stop(cancel, task).await;
}
