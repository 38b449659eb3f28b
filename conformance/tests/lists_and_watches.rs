//! Lists and watches, on informer-testserver and kube-apiserver alike: paged and streaming
//! initial lists, watch events after the sync, a watch resumed from a resourceVersion, the
//! bookmark that ends a streaming list, the bookmarks that carry progress a selector hides, a
//! relist after 410 Gone (etcd compaction), and label and field selectors.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use informer_conformance::*;
use informer_runtime::informer::{InformerConfig, SharedIndexInformer};
use informer_runtime::list_watch::{ListRequest, ListWatch, WatchRequest};
use informer_runtime::reflector::{BackoffConfig, InitialListStrategy};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::core::WatchEvent;
use kube::{Api, ResourceExt};
use tokio_util::sync::{CancellationToken, DropGuard};

/// An informer over the ConfigMaps of `ns`, with fast backoff.
fn informer(
    client: &kube::Client,
    ns: &str,
    configure: impl FnOnce(&mut InformerConfig<ConfigMap>),
) -> Arc<SharedIndexInformer<ConfigMap>> {
    let mut config = InformerConfig::<ConfigMap> {
        name: format!("configmaps-{ns}"),
        ..Default::default()
    };
    config.reflector.backoff = BackoffConfig {
        initial: Duration::from_millis(50),
        cap: Duration::from_millis(500),
        ..BackoffConfig::default()
    };
    configure(&mut config);
    Arc::new(
        SharedIndexInformer::new(ListWatch::new(Api::namespaced(client.clone(), ns)), config)
            .expect("informer"),
    )
}

async fn create(client: &kube::Client, ns: &str, name: &str, v: &str) -> ConfigMap {
    Api::<ConfigMap>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &config_map(ns, name, v, &[]))
        .await
        .expect("create")
}

/// Starts the informer and waits for its sync; it runs until the returned guard drops (at the
/// end of the scenario, or when an assertion fails).
async fn start_synced(informer: &SharedIndexInformer<ConfigMap>) -> DropGuard {
    let cancel = CancellationToken::new();
    informer.start(cancel.clone());
    tokio::time::timeout(WAIT, informer.wait_for_sync())
        .await
        .map(|ok| assert!(ok, "wait_for_sync reported false"))
        .expect("the informer syncs");
    cancel.drop_guard()
}

conformance!(paged_initial_list);
/// 25 objects listed in pages of 10 arrive whole: the cache is the server's state, RV for RV.
async fn paged_initial_list(backend: &Backend) {
    let client = backend.client().await;
    let ns = backend.namespace("paged").await;
    for i in 0..25 {
        create(&client, &ns, &format!("cm-{i:02}"), "x").await;
    }
    let informer = informer(&client, &ns, |c| {
        c.reflector.strategy = InitialListStrategy::ListWatch;
        c.reflector.page_size = 10;
    });
    let log = EventLog::new();
    informer
        .add_event_handler(Arc::clone(&log))
        .expect("handler");
    let _running = start_synced(&informer).await;
    // The first LIST is at resourceVersion "0": kube-apiserver answers it from its watch cache,
    // which may lag the last write by a moment; the watch then brings the rest. So the cache
    // converges to the server rather than holding every object at the sync.
    wait_for("the cache equals the server", || async {
        by_name(informer.indexer().list()) == server_config_maps(&client, &ns).await
    })
    .await;
    let counters = informer.reflector_handle().expect("reflector").counters();
    assert!(counters.list_requests >= 1, "{counters:?}");
    assert_eq!(counters.watch_list_fallbacks, 0);
    wait_until("25 adds", || {
        log.lines().iter().filter(|l| l.starts_with("add ")).count() == 25
    })
    .await;
    assert!(
        log.lines().iter().any(|l| l.ends_with(" initial")),
        "the listed objects are initial adds"
    );
}

conformance!(a_list_at_rv_0_is_one_response_whatever_its_limit);
/// A LIST at resourceVersion "0" is served from the watch cache in one response, whatever its
/// `limit` (KEP-4988 keeps that), with or without `resourceVersionMatch=NotOlderThan`; a
/// consistent LIST (`""`) with the same limit is paged. The runtime decodes either as it
/// arrives (R3), so both give every object.
async fn a_list_at_rv_0_is_one_response_whatever_its_limit(backend: &Backend) {
    let client = backend.client().await;
    let ns = backend.namespace("unpaged").await;
    for i in 0..25 {
        create(&client, &ns, &format!("cm-{i:02}"), "x").await;
    }
    let lw = ListWatch::<ConfigMap>::new(Api::namespaced(client.clone(), &ns));
    for rv_match in [None, Some("NotOlderThan")] {
        let at_zero = ListRequest {
            resource_version: Some("0".to_string()),
            resource_version_match: rv_match.map(str::to_string),
            limit: Some(10),
            ..Default::default()
        };
        // The watch cache may lag the last write by a moment.
        wait_for("the watch cache holds every object", || async {
            let page = lw.list(&at_zero).await.expect("a list at \"0\"");
            assert_eq!(page.continue_token, None, "{rv_match:?}: one response");
            page.items.len() == 25
        })
        .await;
    }
    let consistent = ListRequest {
        resource_version: Some(String::new()),
        limit: Some(10),
        ..Default::default()
    };
    let page = lw.list(&consistent).await.expect("a consistent list");
    assert_eq!(page.items.len(), 10, "a consistent list is paged");
    assert!(page.continue_token.is_some(), "more pages follow");
}

conformance!(
    without_the_watch_cache_a_list_at_rv_0_is_paged,
    NoWatchCache
);
/// Without the watch cache, a LIST at resourceVersion "0" is read from etcd and paged, and an
/// informer pages it to the end (R3).
async fn without_the_watch_cache_a_list_at_rv_0_is_paged(backend: &Backend) {
    let client = backend.client().await;
    let ns = backend.namespace("paged-rv0").await;
    for i in 0..25 {
        create(&client, &ns, &format!("cm-{i:02}"), "x").await;
    }
    let lw = ListWatch::<ConfigMap>::new(Api::namespaced(client.clone(), &ns));
    let at_zero = ListRequest {
        resource_version: Some("0".to_string()),
        limit: Some(10),
        ..Default::default()
    };
    let page = lw.list(&at_zero).await.expect("a list at \"0\"");
    assert_eq!(page.items.len(), 10, "paged");
    assert!(page.continue_token.is_some(), "more pages follow");
    let informer = informer(&client, &ns, |c| {
        c.reflector.strategy = InitialListStrategy::ListWatch;
        c.reflector.page_size = 10;
    });
    let _running = start_synced(&informer).await;
    assert_eq!(
        by_name(informer.indexer().list()),
        server_config_maps(&client, &ns).await
    );
}

conformance!(streaming_initial_list);
/// The streaming initial list (watch-list, `sendInitialEvents`) syncs without a single LIST and
/// without falling back, and ends at the bookmark's resourceVersion.
async fn streaming_initial_list(backend: &Backend) {
    let client = backend.client().await;
    let ns = backend.namespace("streaming").await;
    let mut last_rv = 0;
    for i in 0..12 {
        let cm = create(&client, &ns, &format!("cm-{i:02}"), "x").await;
        last_rv = rv_number(&cm.resource_version().unwrap_or_default());
    }
    let informer = informer(&client, &ns, |c| {
        c.reflector.strategy = InitialListStrategy::StreamingList;
    });
    let _running = start_synced(&informer).await;
    let handle = informer.reflector_handle().expect("reflector");
    let counters = handle.counters();
    assert_eq!(
        counters.list_requests, 0,
        "streamed, not listed: {counters:?}"
    );
    assert_eq!(counters.watch_list_fallbacks, 0, "{counters:?}");
    assert_eq!(
        by_name(informer.indexer().list()),
        server_config_maps(&client, &ns).await
    );
    // The reflector records the RV right after handing the list to the store, so the informer
    // may report synced a moment before it does.
    wait_until("the reflector's sync RV", || {
        handle.last_sync_resource_version().is_some()
    })
    .await;
    let synced_at = handle.last_sync_resource_version().expect("a sync RV");
    assert!(
        rv_number(&synced_at) >= last_rv,
        "the initial-events-end bookmark ({synced_at}) is at or after the last write ({last_rv})"
    );
}

conformance!(watch_follows_writes);
/// After the sync, a create, an update and a delete reach the handler in order and the cache
/// ends equal to the server.
async fn watch_follows_writes(backend: &Backend) {
    let client = backend.client().await;
    let ns = backend.namespace("follow").await;
    create(&client, &ns, "before", "1").await;
    let informer = informer(&client, &ns, |_| {});
    let log = EventLog::new();
    informer
        .add_event_handler(Arc::clone(&log))
        .expect("handler");
    let _running = start_synced(&informer).await;
    let api = Api::<ConfigMap>::namespaced(client.clone(), &ns);
    create(&client, &ns, "after", "1").await;
    let patch = serde_json::json!({ "data": { "v": "2" } });
    let patched = api
        .patch("after", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("patch");
    api.delete("before", &DeleteParams::default())
        .await
        .expect("delete");
    log.wait_line("delete before").await;
    log.wait_line("update after").await;
    let lines = log.lines();
    assert_eq!(
        lines,
        [
            "add before initial",
            "add after",
            "update after",
            "delete before"
        ],
        "in order"
    );
    let cached = informer
        .indexer()
        .get_by_key(&format!("{ns}/after"))
        .expect("cached");
    assert_eq!(cached.resource_version(), patched.resource_version());
    assert_eq!(
        by_name(informer.indexer().list()),
        server_config_maps(&client, &ns).await
    );
}

conformance!(watch_resumes_from_a_resource_version);
/// A watch from a LIST's resourceVersion sees exactly the changes made after that LIST, in order.
async fn watch_resumes_from_a_resource_version(backend: &Backend) {
    let client = backend.client().await;
    let ns = backend.namespace("resume").await;
    create(&client, &ns, "old", "1").await;
    let lw = ListWatch::<ConfigMap>::new(Api::namespaced(client.clone(), &ns));
    let page = lw.list(&ListRequest::default()).await.expect("list");
    let listed_rv = page.resource_version.clone();
    assert_eq!(page.items.len(), 1);
    let api = Api::<ConfigMap>::namespaced(client.clone(), &ns);
    create(&client, &ns, "new", "1").await;
    api.delete("old", &DeleteParams::default())
        .await
        .expect("delete");
    let mut stream = lw
        .watch(&WatchRequest {
            resource_version: listed_rv.clone(),
            timeout: Duration::from_secs(30),
            ..Default::default()
        })
        .await
        .expect("watch");
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let event = tokio::time::timeout(WAIT, stream.next())
            .await
            .expect("an event in time")
            .expect("the stream stays open")
            .expect("a good event");
        match event {
            WatchEvent::Added(cm) => seen.push(format!("added {}", cm.name_any())),
            WatchEvent::Deleted(cm) => seen.push(format!("deleted {}", cm.name_any())),
            WatchEvent::Modified(cm) => seen.push(format!("modified {}", cm.name_any())),
            WatchEvent::Bookmark(_) => {}
            WatchEvent::Error(e) => panic!("watch error {e:?}"),
        }
    }
    assert_eq!(seen, ["added new", "deleted old"], "from RV {listed_rv}");
}

conformance!(bookmarks_carry_progress_the_selector_hides);
/// A watch whose selector matches nothing still learns how far the collection has moved: before
/// its timeout the server sends a BOOKMARK at or past a write the selector filtered out, so a
/// reflector resumes from there rather than from its old resourceVersion. (kube-apiserver sends
/// it two seconds before the watch's deadline, so this watch asks for a short timeout.)
async fn bookmarks_carry_progress_the_selector_hides(backend: &Backend) {
    const NOTHING: &str = "conformance/matches=nothing";
    let client = backend.client().await;
    let ns = backend.namespace("bookmarks").await;
    let lw = ListWatch::<ConfigMap>::new(Api::namespaced(client.clone(), &ns));
    let page = lw
        .list(&ListRequest {
            label_selector: Some(NOTHING.into()),
            ..Default::default()
        })
        .await
        .expect("list");
    assert!(page.items.is_empty());
    let mut stream = lw
        .watch(&WatchRequest {
            resource_version: page.resource_version.clone(),
            timeout: Duration::from_secs(10),
            label_selector: Some(NOTHING.into()),
            ..Default::default()
        })
        .await
        .expect("watch");
    let hidden = create(&client, &ns, "hidden", "1").await;
    let hidden_rv = rv_number(&hidden.resource_version().expect("an RV"));
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let event = tokio::time::timeout_at(deadline, stream.next())
            .await
            .expect("a bookmark before the deadline")
            .unwrap_or_else(|| panic!("the watch ended with no bookmark at or past {hidden_rv}"))
            .expect("a good event");
        match event {
            WatchEvent::Bookmark(b) if rv_number(&b.metadata.resource_version) >= hidden_rv => {
                break;
            }
            // An earlier bookmark (sent before the write) is fine; wait for the next one.
            WatchEvent::Bookmark(_) => {}
            other => panic!("the selector matches nothing, yet the watch sent {other:?}"),
        }
    }
}

conformance!(relist_after_compaction, NoWatchCache);
/// A watch broken by a network cut resumes from its last resourceVersion; when that was
/// compacted away meanwhile the server answers 410 Gone, the reflector relists, and the cache
/// converges, losing nothing written meanwhile.
async fn relist_after_compaction(backend: &Backend) {
    let client = backend.client().await;
    let (proxied, proxy) = backend.proxied_client().await;
    let ns = backend.namespace("gone").await;
    let other = backend.namespace("busy").await;
    create(&client, &ns, "a", "1").await;
    let informer = informer(&proxied, &ns, |c| {
        c.reflector.strategy = InitialListStrategy::ListWatch;
    });
    let _running = start_synced(&informer).await;
    let handle = informer.reflector_handle().expect("reflector");
    let before = handle.counters();
    // Move the revision on elsewhere and compact: the informer's last RV is gone. Then break
    // its watch; meanwhile one more object lands in its namespace.
    for i in 0..5 {
        create(&client, &other, &format!("noise-{i}"), "x").await;
    }
    backend.compact().await;
    proxy.cut();
    create(&client, &ns, "b", "1").await;
    wait_until("a relist after 410 Gone", || {
        handle.counters().relists > before.relists
    })
    .await;
    wait_for("the cache equals the server after the relist", || async {
        by_name(informer.indexer().list()) == server_config_maps(&client, &ns).await
    })
    .await;
    assert!(informer.indexer().get_by_key(&format!("{ns}/b")).is_some());
}

conformance!(label_and_field_selectors);
/// A label-selected informer caches only matching objects and sees an object that stops matching
/// as deleted; a field-selected one caches only the named object.
async fn label_and_field_selectors(backend: &Backend) {
    let client = backend.client().await;
    let ns = backend.namespace("select").await;
    let api = Api::<ConfigMap>::namespaced(client.clone(), &ns);
    for (name, app) in [("a1", "a"), ("a2", "a"), ("b1", "b")] {
        api.create(
            &PostParams::default(),
            &config_map(&ns, name, "x", &[("app", app)]),
        )
        .await
        .expect("create");
    }
    let labelled = informer(&client, &ns, |c| {
        c.reflector.label_selector = Some("app=a".into());
    });
    let named = informer(&client, &ns, |c| {
        c.name = format!("named-{ns}");
        c.reflector.field_selector = Some("metadata.name=b1".into());
    });
    let log = EventLog::new();
    labelled
        .add_event_handler(Arc::clone(&log))
        .expect("handler");
    let _labelled = start_synced(&labelled).await;
    let _named = start_synced(&named).await;
    let names = |i: &SharedIndexInformer<ConfigMap>| -> Vec<String> {
        by_name(i.indexer().list()).into_keys().collect()
    };
    assert_eq!(names(&labelled), ["a1", "a2"]);
    assert_eq!(names(&named), ["b1"]);

    let relabel = serde_json::json!({ "metadata": { "labels": { "app": "b" } } });
    api.patch("a2", &PatchParams::default(), &Patch::Merge(&relabel))
        .await
        .expect("relabel");
    log.wait_line("delete a2").await;
    assert_eq!(names(&labelled), ["a1"]);
}

// The list scenarios once more with `ConsistentListFromCacheSkipTimeoutFallback` on (R13): with
// a watch cache that keeps up, the gate changes nothing a client sees.
conformance!(
    paged_initial_list,
    SkipTimeoutFallback,
    paged_initial_list_skip_timeout_fallback
);
conformance!(
    streaming_initial_list,
    SkipTimeoutFallback,
    streaming_initial_list_skip_timeout_fallback
);
conformance!(
    label_and_field_selectors,
    SkipTimeoutFallback,
    label_and_field_selectors_skip_timeout_fallback
);
conformance!(consistent_initial_list, SkipTimeoutFallback);
/// An informer whose first LIST is a consistent read (`resourceVersion=""`, M6) syncs to the
/// server's state with `ConsistentListFromCacheSkipTimeoutFallback` on: the watch cache serves
/// it, and no 429 reaches the reflector.
async fn consistent_initial_list(backend: &Backend) {
    let client = backend.client().await;
    let ns = backend.namespace("consistent").await;
    for i in 0..5 {
        create(&client, &ns, &format!("cm-{i}"), "x").await;
    }
    let informer = informer(&client, &ns, |c| {
        c.reflector.strategy = InitialListStrategy::ListWatch;
        c.reflector.initial_list_rv = String::new();
    });
    let _running = start_synced(&informer).await;
    // A consistent read holds every write made before it.
    assert_eq!(
        by_name(informer.indexer().list()),
        server_config_maps(&client, &ns).await
    );
    let counters = informer.reflector_handle().expect("reflector").counters();
    assert_eq!(counters.errors, 0, "{counters:?}");
}

conformance!(a_list_past_the_cache_budget_is_dropped_while_it_is_read);
/// B2 (decision record 30): 30 labelled objects against a budget of 20. A streaming list and a
/// paged LIST at "0" (one response, from kube-apiserver's watch cache) each stop at the 21st
/// object, cache nothing and give their charge back; once 15 are deleted, the list fits and
/// the informer syncs them.
async fn a_list_past_the_cache_budget_is_dropped_while_it_is_read(backend: &Backend) {
    use informer_runtime::budget::CacheBudget;

    let client = backend.client().await;
    let ns = backend.namespace("budget").await;
    let api = Api::<ConfigMap>::namespaced(client.clone(), &ns);
    for i in 0..30 {
        let cm = config_map(&ns, &format!("cm-{i:02}"), "x", &[("budget", "on")]);
        api.create(&PostParams::default(), &cm)
            .await
            .expect("create");
    }
    let budgeted = |strategy, budget: &CacheBudget, backoff: Duration| {
        informer(&client, &ns, |c| {
            c.reflector.strategy = strategy;
            c.reflector.page_size = 10;
            c.reflector.label_selector = Some("budget=on".into());
            c.reflector.budget = Some(budget.clone());
            c.reflector.backoff.initial = backoff;
            c.reflector.backoff.cap = backoff;
        })
    };
    for strategy in [
        InitialListStrategy::StreamingList,
        InitialListStrategy::ListWatch,
    ] {
        let budget = CacheBudget::objects(20);
        // No retry while the scenario looks.
        let informer = budgeted(strategy, &budget, Duration::from_secs(60));
        let cancel = CancellationToken::new();
        informer.start(cancel.clone());
        let _running = cancel.drop_guard();
        wait_until("a breach", || budget.breaches() >= 1).await;
        let breach = budget.last_breach().expect("a breach");
        assert_eq!((breach.wanted, breach.applied), (21, false), "{strategy:?}");
        assert!(!informer.has_synced(), "{strategy:?}");
        assert_eq!(informer.indexer().len(), 0, "{strategy:?}");
        wait_until("the charge given back", || budget.used() == 0).await;
    }

    for i in 0..15 {
        api.delete(&format!("cm-{i:02}"), &DeleteParams::default())
            .await
            .expect("delete");
    }
    let budget = CacheBudget::objects(20);
    let informer = budgeted(
        InitialListStrategy::StreamingList,
        &budget,
        Duration::from_millis(50),
    );
    let _running = start_synced(&informer).await;
    wait_until("the 15 left cached and charged", || {
        informer.indexer().len() == 15 && budget.used() == 15
    })
    .await;
}

conformance!(a_secrets_string_data_is_stored_in_its_data);
/// A Secret written with `stringData` is stored with each value base64-encoded in `data`, over
/// a `data` value of the same key, on create and on a patch alike; `stringData` itself is never
/// returned, to a GET or to an informer.
async fn a_secrets_string_data_is_stored_in_its_data(backend: &Backend) {
    use informer_runtime::SharedInformerFactory;
    use k8s_openapi::ByteString;
    use k8s_openapi::api::core::v1::Secret;

    let client = backend.client().await;
    let ns = backend.namespace("string-data").await;
    let api = Api::<Secret>::namespaced(client.clone(), &ns);
    let secret: Secret = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "creds", "namespace": ns },
        "data": { "user": "b2xk", "kept": "a2VwdA==" },
        "stringData": { "user": "admin", "password": "s3cr3t" }
    }))
    .expect("a Secret");
    api.create(&PostParams::default(), &secret)
        .await
        .expect("create");
    let bytes = |s: &Secret, key: &str| {
        s.data
            .as_ref()
            .and_then(|d| d.get(key))
            .map(|b: &ByteString| String::from_utf8_lossy(&b.0).into_owned())
    };
    let stored = api.get("creds").await.expect("get");
    assert_eq!(bytes(&stored, "user").as_deref(), Some("admin"));
    assert_eq!(bytes(&stored, "password").as_deref(), Some("s3cr3t"));
    assert_eq!(bytes(&stored, "kept").as_deref(), Some("kept"));
    assert_eq!(stored.string_data, None);

    let patch = serde_json::json!({ "stringData": { "password": "rotated" } });
    api.patch("creds", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("patch");
    let factory = SharedInformerFactory::builder(client.clone())
        .namespace(ns.clone())
        .build();
    let informer = factory.informer_for::<Secret>();
    factory.start();
    factory
        .wait_for_cache_sync_timeout(WAIT)
        .await
        .expect("synced");
    let cached = informer
        .indexer()
        .get_by_key(&format!("{ns}/creds"))
        .expect("cached");
    assert_eq!(bytes(&cached, "password").as_deref(), Some("rotated"));
    assert_eq!(bytes(&cached, "user").as_deref(), Some("admin"));
    assert_eq!(cached.string_data, None);
    factory.shutdown().await;
}
