//! Factory options that must be honoured, not silently dropped (F6, F10): the list
//! options a tweak sets (or a rejection of those that cannot be), and a watch error handler in
//! the factory's reflector config.
//!
//! Run with `cargo test -p informer-runtime --test factory_options`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use informer_runtime::SharedInformerFactory;
use informer_runtime::factory::Error;
use informer_runtime::reflector::ReflectorConfig;
use informer_testserver::{GroupResource, TestServer};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::ObjectMeta;

const WAIT: Duration = Duration::from_secs(20);

fn cm(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

#[tokio::test]
async fn f10_watch_error_handler_in_the_factory_reflector_config_is_honoured() {
    let server = TestServer::start().await.expect("server");
    server.faults().forbid(GroupResource::new("", "secrets"));
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&seen);
    let config = ReflectorConfig {
        watch_error_handler: Some(Arc::new(move |_e| {
            counter.fetch_add(1, Ordering::SeqCst);
        })),
        ..ReflectorConfig::default()
    };
    let factory = SharedInformerFactory::builder(server.client())
        .reflector_config(config)
        .build();
    factory.informer_for::<Secret>();
    factory.start();
    // The factory still records the last error for its sync timeout (F4)...
    let err = factory
        .wait_for_cache_sync_timeout(Duration::from_secs(2))
        .await
        .expect_err("secrets are forbidden");
    let Error::CacheSyncTimeout(unsynced) = &err else {
        panic!("unexpected error {err}")
    };
    assert!(unsynced[0].last_error.is_some(), "{err}");
    // ...and the handler the user configured hears about every error too.
    assert!(
        seen.load(Ordering::SeqCst) >= 1,
        "the configured watch error handler was replaced"
    );
    factory.shutdown().await;
}

/// R21: a tweak that only sets a selector keeps the streaming initial list;
/// before, the tweak's pre-filled page size counted as "set" and switched every tweaked factory
/// to paged LISTs.
#[tokio::test]
async fn a_selector_only_tweak_keeps_the_streaming_list() {
    let server = TestServer::start().await.expect("server");
    let mut labelled = cm("web");
    labelled.metadata.labels = Some([("app".to_string(), "web".to_string())].into());
    server.create(&labelled).expect("create");
    server.create(&cm("other")).expect("create");
    let factory = SharedInformerFactory::builder(server.client())
        .tweak_list_options(|lp| lp.label_selector = Some("app=web".into()))
        .build();
    let cms = factory.informer_for::<ConfigMap>();
    factory.start();
    factory
        .wait_for_cache_sync_timeout(WAIT)
        .await
        .expect("synced");
    assert_eq!(cms.indexer().len(), 1, "the selector applies");
    let requests = server.requests();
    assert!(
        !requests.iter().any(|r| r.is_list()),
        "no paged LIST: {requests:?}"
    );
    assert!(
        requests
            .iter()
            .any(|r| r.is_watch() && r.query.send_initial_events == Some(true)),
        "a streaming list: {requests:?}"
    );
    factory.shutdown().await;
}

#[tokio::test]
async fn f6_tweak_list_options_limit_is_the_page_size() {
    // Without the watch cache the first list (resourceVersion "0") is paged; with it, the
    // server answers it whole whatever the limit, as kube-apiserver does.
    let server = TestServer::builder()
        .watch_cache(false)
        .start()
        .await
        .expect("server");
    for i in 0..5 {
        server.create(&cm(&format!("cm-{i}"))).expect("create");
    }
    let factory = SharedInformerFactory::builder(server.client())
        .tweak_list_options(|lp| lp.limit = Some(2))
        .build();
    let cms = factory.informer_for::<ConfigMap>();
    factory.start();
    factory
        .wait_for_cache_sync_timeout(WAIT)
        .await
        .expect("synced");
    assert_eq!(cms.indexer().len(), 5);
    let lists: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.is_list())
        .collect();
    assert_eq!(lists.len(), 3, "5 objects, 2 a page");
    assert!(lists.iter().all(|r| r.query.limit == Some(2)));
    factory.shutdown().await;
}

#[tokio::test]
async fn f6_r2_m6_tweak_of_the_first_list_rv_is_honoured() {
    let server = TestServer::start().await.expect("server");
    server.create(&cm("a")).expect("create");
    let factory = SharedInformerFactory::builder(server.client())
        .tweak_list_options(|lp| lp.resource_version = Some(String::new()))
        .build();
    factory.informer_for::<ConfigMap>();
    factory.start();
    factory
        .wait_for_cache_sync_timeout(WAIT)
        .await
        .expect("synced");
    let log = server.requests();
    let list = log.iter().find(|r| r.is_list()).expect("a list");
    assert_eq!(
        list.query.resource_version.as_deref(),
        Some(""),
        "R2/M6: the first list at the tweaked RV"
    );
    factory.shutdown().await;
}

#[tokio::test]
async fn f6_tweak_that_sets_a_continue_token_or_version_match_is_rejected() {
    let server = TestServer::start().await.expect("server");
    let res = SharedInformerFactory::builder(server.client())
        .tweak_list_options(|lp| lp.continue_token = Some("abc".into()))
        .try_build();
    assert!(
        matches!(res, Err(Error::UnsupportedListOption("continue_token"))),
        "{:?}",
        res.err()
    );
    let res = SharedInformerFactory::builder(server.client())
        .tweak_list_options(|lp| lp.version_match = Some(kube::api::VersionMatch::Exact))
        .try_build();
    assert!(matches!(
        res,
        Err(Error::UnsupportedListOption("version_match"))
    ));
    let ok = SharedInformerFactory::builder(server.client())
        .tweak_list_options(|lp| lp.label_selector = Some("app=web".into()))
        .try_build();
    assert!(ok.is_ok());
}

/// F6: the tweak, a user's closure, runs once, when the factory is built; what the informers
/// list with and what [`SharedInformerFactory::selection_of`] answers for every recorded write
/// (K3) are its result then, not a new run each time.
#[tokio::test]
async fn f6_the_tweak_runs_once_when_the_factory_is_built() {
    use informer_runtime::lister::GroupResource as Resource;

    let server = TestServer::start().await.expect("server");
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&runs);
    let factory = SharedInformerFactory::builder(server.client())
        .tweak_list_options(move |lp| {
            counted.fetch_add(1, Ordering::SeqCst);
            lp.label_selector = Some("app=web".into());
        })
        .build();
    for _ in 0..3 {
        let selection = factory.selection_of(&Resource::of::<ConfigMap>());
        assert_eq!(selection.label_selector.as_deref(), Some("app=web"));
    }
    assert_eq!(factory.label_selector().as_deref(), Some("app=web"));
    let _cms = factory.informer_for::<ConfigMap>();
    let _secrets = factory.informer_for::<Secret>();
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the tweak ran more than once"
    );
}

/// T1/T3 at the factory: by default informers of built-in kinds read protobuf and offer gzip
/// (the server gzips the watch-list stream); `protobuf(false)` and `gzip(false)` turn both off
/// for every informer of the factory.
#[tokio::test]
async fn t1_t3_the_factory_chooses_protobuf_and_gzip_for_its_informers() {
    for (protobuf, gzip) in [(true, true), (false, false), (true, false), (false, true)] {
        let server = TestServer::start().await.expect("server");
        let big = informer_test_support::big_config_map("default", "big", 200);
        server.create(&big).expect("create");
        let mut builder = SharedInformerFactory::builder(server.client());
        if !protobuf {
            builder = builder.protobuf(false);
        }
        if !gzip {
            builder = builder.gzip(false);
        }
        let factory = builder.build();
        let informer = factory.informer_for::<ConfigMap>();
        factory.start();
        factory
            .wait_for_cache_sync_timeout(WAIT)
            .await
            .expect("synced");
        assert_eq!(informer.indexer().len(), 1);
        let first = server
            .requests()
            .into_iter()
            .find(|r| (r.is_list() || r.is_watch()) && r.path.contains("configmaps"))
            .expect("the informer's first request");
        assert_eq!(
            (first.protobuf, first.gzip),
            (protobuf, gzip),
            "protobuf({protobuf}), gzip({gzip}): {first:?}"
        );
        factory.shutdown().await;
    }
}

/// F11: a resource's scope replaces the factory's namespace, selectors and transform for every
/// informer of that resource (typed and metadata-only) and for nothing else; the scoped LIST and
/// WATCH go to the scope's namespace with the scope's field selector.
#[tokio::test]
async fn f11_a_resource_scope_applies_to_every_form_of_its_resource_only() {
    use informer_runtime::factory::CacheScope;
    use informer_runtime::lister::GroupResource as Resource;

    let server = TestServer::start().await.expect("server");
    for (ns, name, labelled) in [("a", "x", true), ("a", "y", false), ("b", "y", true)] {
        let mut obj = cm(name);
        obj.metadata.namespace = Some(ns.into());
        if labelled {
            obj.metadata.labels = Some([("app".to_string(), "web".to_string())].into());
        }
        server.create(&obj).expect("create");
        let secret = Secret {
            metadata: obj.metadata.clone(),
            ..Default::default()
        };
        server.create(&secret).expect("create");
    }
    let factory = SharedInformerFactory::builder(server.client())
        .tweak_list_options(|lp| lp.label_selector = Some("app=web".into()))
        .scope_for::<ConfigMap>(
            CacheScope::new()
                .namespace("a")
                .label_selector("")
                .field_selector("metadata.name=y")
                .transform(|obj| {
                    if let Some(meta) = obj.object_meta_mut() {
                        meta.annotations = Some([("scoped".to_string(), "yes".to_string())].into());
                    }
                }),
        )
        .build();
    let selection = factory.selection_of(&Resource::of::<ConfigMap>());
    assert_eq!(selection.namespace.as_deref(), Some("a"));
    assert_eq!(selection.label_selector, None);
    assert_eq!(selection.field_selector.as_deref(), Some("metadata.name=y"));
    let cms = factory.informer_for::<ConfigMap>();
    let cm_meta = factory.metadata_informer_for::<ConfigMap>();
    let secrets = factory.informer_for::<Secret>();
    factory.start();
    factory
        .wait_for_cache_sync_timeout(WAIT)
        .await
        .expect("synced");
    let keys = |keys: Vec<informer_runtime::key::ObjectKey>| {
        let mut keys: Vec<String> = keys.iter().map(ToString::to_string).collect();
        keys.sort();
        keys
    };
    assert_eq!(
        keys(cms.indexer().list_keys()),
        ["a/y"],
        "the scope's namespace and selectors, not the factory's"
    );
    let cached = cms.indexer().get_by_key("a/y").expect("cached");
    assert_eq!(
        cached
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("scoped"))
            .map(String::as_str),
        Some("yes"),
        "the scope's transform"
    );
    assert_eq!(
        keys(cm_meta.indexer().list_keys()),
        ["a/y"],
        "the metadata-only form too"
    );
    assert_eq!(
        keys(secrets.indexer().list_keys()),
        ["a/x", "b/y"],
        "other kinds keep the factory's selector, every namespace"
    );
    let requests = server.requests();
    let cm_requests: Vec<_> = requests
        .iter()
        .filter(|r| r.path.ends_with("/configmaps"))
        .collect();
    assert!(!cm_requests.is_empty());
    assert!(
        cm_requests
            .iter()
            .all(|r| r.path == "/api/v1/namespaces/a/configmaps"
                && r.query.field_selector.as_deref() == Some("metadata.name=y")
                && r.query.label_selector.is_none()),
        "{cm_requests:?}"
    );
    factory.shutdown().await;
}
