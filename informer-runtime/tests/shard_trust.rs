//! Server-side sharding is verified per response (S4), through `kube::Client` and
//! informer-testserver: a LIST whose echoed `shardInfo.selector` is missing or differs from the
//! request is filtered on the client, and watch events are probed on the client in server mode
//! too, so a WATCH served by an API server without the gate (behind a load balancer) never
//! puts foreign objects in the cache. Events the client shard drops are still watch activity
//! (R7, R10). Each test plays its server with the test server's split gate switches
//! (`set_sharded_list`, `set_sharded_watch`) or its selector override.
//!
//! Run with `cargo test -p informer-runtime --test shard_trust`.

mod informer_support;

use std::collections::BTreeSet;
use std::sync::Arc;

use informer_runtime::factory::SharedInformerFactory;
use informer_runtime::informer::SharedIndexInformer;
use informer_runtime::shard::{Shard, ShardField, ShardMode};
use informer_support::*;
use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::ConfigMap;

/// Namespaces `ns-0`..`ns-9` and `team-0`..`team-9`; a shard by namespace puts some inside and
/// some outside.
const NAMESPACES: usize = 20;

/// The shard every test caches: half of the namespaces' hash space.
fn shard() -> Shard {
    Shard::of(0, 2, ShardField::Namespace).expect("0 < 2")
}

/// Two families of names, since FNV-1a puts names that differ only in their last bytes close
/// together: the `ns-` ones fall in the lower half of the space, the `team-` ones in the upper.
fn ns(i: usize) -> String {
    let i = i % NAMESPACES;
    if i.is_multiple_of(2) {
        format!("ns-{}", i / 2)
    } else {
        format!("team-{}", i / 2)
    }
}

/// A namespace inside the shard and one outside it.
fn inside_and_outside() -> (String, String) {
    let shard = shard();
    let inside = (0..NAMESPACES).map(ns).find(|n| shard.admits(n));
    let outside = (0..NAMESPACES).map(ns).find(|n| !shard.admits(n));
    (
        inside.expect("a namespace in the shard"),
        outside.expect("a namespace outside the shard"),
    )
}

async fn seeded(n: usize) -> TestServer {
    init_tracing();
    let server = TestServer::start().await.expect("testserver");
    for i in 0..n {
        server
            .create(&cm(&ns(i), &format!("cm-{i:04}"), "0"))
            .expect("create");
    }
    server
}

/// A started, synced sharded informer and its factory.
async fn sharded_informer(
    server: &TestServer,
) -> (SharedInformerFactory, Arc<SharedIndexInformer<ConfigMap>>) {
    let factory = SharedInformerFactory::builder(server.client())
        .informer_name("s4")
        .shard(shard())
        .build();
    let informer = factory.informer_for::<ConfigMap>();
    factory.start();
    assert_synced(informer.wait_for_sync()).await;
    (factory, informer)
}

/// Namespaces of the cached objects that are outside the shard.
fn foreign_cached(informer: &SharedIndexInformer<ConfigMap>) -> BTreeSet<String> {
    let shard = shard();
    informer
        .indexer()
        .list()
        .iter()
        .filter_map(|o| o.metadata.namespace.clone())
        .filter(|n| !shard.admits(n))
        .collect()
}

/// The keys of the server's objects inside the shard.
async fn inside_keys(server: &TestServer) -> BTreeSet<String> {
    let shard = shard();
    let api: kube::Api<ConfigMap> = kube::Api::all(server.client());
    api.list(&Default::default())
        .await
        .expect("list")
        .items
        .iter()
        .filter(|o| shard.admits(o.metadata.namespace.as_deref().unwrap_or_default()))
        .map(|o| {
            format!(
                "{}/{}",
                o.metadata.namespace.as_deref().unwrap_or_default(),
                o.metadata.name.as_deref().unwrap_or_default()
            )
        })
        .collect()
}

fn cached_keys(informer: &SharedIndexInformer<ConfigMap>) -> BTreeSet<String> {
    cache_state(&informer.indexer()).into_keys().collect()
}

/// Writes `n` objects across every namespace through the watch, then one marker inside the
/// shard, and waits until the marker is cached: every event before it has been applied.
async fn write_through_the_watch(
    server: &TestServer,
    informer: &SharedIndexInformer<ConfigMap>,
    n: usize,
) {
    for i in 0..n {
        let name = format!("live-{i:04}");
        let api: kube::Api<ConfigMap> = kube::Api::namespaced(server.client(), &ns(i));
        api.create(&Default::default(), &cm(&ns(i), &name, "1"))
            .await
            .expect("create");
    }
    let (inside, _) = inside_and_outside();
    let api: kube::Api<ConfigMap> = kube::Api::namespaced(server.client(), &inside);
    api.create(&Default::default(), &cm(&inside, "marker", "1"))
        .await
        .expect("create");
    let marker = format!("{inside}/marker");
    wait_until("the marker to be cached", || {
        cached_keys(informer).contains(&marker)
    })
    .await;
}

/// S4: the LIST goes to an API server with the gate (it filters and echoes `shardInfo`), the
/// WATCH to one without (it sends every event). The watch's foreign events are dropped on the
/// client although the LIST said the server filters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s4_a_watch_from_a_server_without_the_gate_is_filtered_on_the_client() {
    let server = seeded(400).await;
    server.set_sharded_list(true);
    server.set_sharded_watch(false);
    let (factory, informer) = sharded_informer(&server).await;
    let mode = informer.reflector_handle().and_then(|h| h.shard_mode());
    assert_eq!(
        mode,
        Some(ShardMode::Server),
        "the LIST echoed the selector"
    );
    assert_eq!(cached_keys(&informer), inside_keys(&server).await);
    write_through_the_watch(&server, &informer, 200).await;
    assert_eq!(
        foreign_cached(&informer),
        BTreeSet::new(),
        "objects outside the shard reached the cache through the unfiltered watch"
    );
    assert_eq!(cached_keys(&informer), inside_keys(&server).await);
    factory.shutdown().await;
}

/// S4, the other way round: the LIST ignores the selector (client filtering), the WATCH
/// filters; the cache holds the shard exactly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s4_a_list_from_a_server_without_the_gate_is_filtered_on_the_client() {
    let server = seeded(400).await;
    server.set_sharded_list(false);
    server.set_sharded_watch(true);
    let (factory, informer) = sharded_informer(&server).await;
    let mode = informer.reflector_handle().and_then(|h| h.shard_mode());
    assert_eq!(mode, Some(ShardMode::Client));
    assert_eq!(cached_keys(&informer), inside_keys(&server).await);
    write_through_the_watch(&server, &informer, 200).await;
    assert_eq!(foreign_cached(&informer), BTreeSet::new());
    assert_eq!(cached_keys(&informer), inside_keys(&server).await);
    factory.shutdown().await;
}

/// S4: the server answers with a `shardInfo` that echoes another selector (here the whole hash
/// space, so it sends everything). Only an exact echo is trusted: the page is filtered on the
/// client, and so is the watch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s4_a_list_echoing_another_selector_is_filtered_on_the_client() {
    let server = seeded(400).await;
    let everything = Shard::range(ShardField::Namespace, 0, 1 << 64).expect("whole space");
    server.set_shard_selector_override(Some(&everything.selector()));
    let (factory, informer) = sharded_informer(&server).await;
    let mode = informer.reflector_handle().and_then(|h| h.shard_mode());
    assert_eq!(
        mode,
        Some(ShardMode::Client),
        "a mismatched echo is not trusted"
    );
    assert_eq!(
        foreign_cached(&informer),
        BTreeSet::new(),
        "objects outside the shard were cached from the LIST"
    );
    assert_eq!(cached_keys(&informer), inside_keys(&server).await);
    write_through_the_watch(&server, &informer, 200).await;
    assert_eq!(foreign_cached(&informer), BTreeSet::new());
    factory.shutdown().await;
}

/// R10 (and R7): a watch whose only event was dropped by the client shard is not a
/// "very short watch with 0 events": the server ends each watch after one event (foreign to the
/// shard) within a second of its start, and the reflector re-watches at the same RV (R9)
/// instead of backing off and relisting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r10_events_dropped_by_the_client_shard_are_watch_activity() {
    let server = seeded(40).await;
    server.set_sharded_list_and_watch(false);
    let (factory, informer) = sharded_informer(&server).await;
    assert_eq!(
        informer.reflector_handle().and_then(|h| h.shard_mode()),
        Some(ShardMode::Client)
    );
    let (_, outside) = inside_and_outside();
    let api: kube::Api<ConfigMap> = kube::Api::namespaced(server.client(), &outside);
    server.faults().close_watches_after(Some(1));
    // The open watch ends after the first event; each later watch gets its event at once.
    server.clear_requests();
    for i in 0..4 {
        let watches = server.requests().iter().filter(|r| r.is_watch()).count();
        api.create(
            &Default::default(),
            &cm(&outside, &format!("foreign-{i}"), "1"),
        )
        .await
        .expect("create");
        let log = server
            .wait_for_requests(WAIT, |log| {
                log.iter().filter(|r| r.is_watch()).count() > watches
            })
            .await
            .expect("a new watch after the foreign event ended the last one");
        assert!(
            !log.iter().any(|r| r.is_list()),
            "a relist after a watch whose event the shard dropped: {:?}",
            log.iter()
                .map(|r| format!("{:?} {}", r.verb, r.path))
                .collect::<Vec<_>>()
        );
    }
    assert_eq!(foreign_cached(&informer), BTreeSet::new());
    factory.shutdown().await;
}
