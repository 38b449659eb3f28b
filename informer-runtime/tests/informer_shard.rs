//! Sharded informers (KEP-5866; S4) through `kube::Client` and informer-testserver:
//! four replicas, each `Shard::of(i, 4)` of 10 000 ConfigMaps, cache every object exactly once,
//! whether the server applies `shardSelector` (the `ShardedListAndWatch` gate on) or ignores it
//! (gate off: the reflector filters on the client, on LIST pages and on watch events), and stay so
//! through a write load; the mode is reported by the reflector and the factory's metrics.
//!
//! Run with `cargo test -p informer-runtime --test informer_shard`.

mod informer_support;

use std::collections::BTreeMap;
use std::sync::Arc;

use informer_runtime::factory::SharedInformerFactory;
use informer_runtime::informer::SharedIndexInformer;
use informer_runtime::shard::{Shard, ShardField, ShardMode};
use informer_support::*;
use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::ConfigMap;

const REPLICAS: u32 = 4;
const OBJECTS: usize = 10_000;

/// One replica: its factory, informer and metrics registry.
struct Replica {
    shard: Shard,
    factory: SharedInformerFactory,
    informer: Arc<SharedIndexInformer<ConfigMap>>,
    registry: prometheus_client::registry::Registry,
}

fn replicas(server: &TestServer) -> Vec<Replica> {
    (0..REPLICAS)
        .map(|i| {
            let shard = Shard::of(i, REPLICAS, ShardField::Uid).expect("i < 4");
            let mut registry = prometheus_client::registry::Registry::default();
            let factory = SharedInformerFactory::builder(server.client())
                .informer_name(format!("replica-{i}"))
                .metrics(&mut registry)
                .shard(shard.clone())
                .build();
            let informer = factory.informer_for::<ConfigMap>();
            factory.start();
            Replica {
                shard,
                factory,
                informer,
                registry,
            }
        })
        .collect()
}

/// Every replica's cache as key -> (RV, UID).
fn caches(replicas: &[Replica]) -> Vec<BTreeMap<String, (String, String)>> {
    replicas
        .iter()
        .map(|r| {
            r.informer
                .indexer()
                .list()
                .iter()
                .map(|o| {
                    let m = &o.metadata;
                    let key = format!(
                        "{}/{}",
                        m.namespace.as_deref().unwrap_or_default(),
                        m.name.as_deref().unwrap_or_default()
                    );
                    let rv = m.resource_version.clone().unwrap_or_default();
                    (key, (rv, m.uid.clone().unwrap_or_default()))
                })
                .collect()
        })
        .collect()
}

/// Asserts that every cached object is in its replica's shard and in no other cache, and that
/// the caches together are the server's state (key -> RV).
fn assert_partition(
    replicas: &[Replica],
    caches: &[BTreeMap<String, (String, String)>],
    server: &BTreeMap<String, String>,
) {
    let mut union = BTreeMap::new();
    for (r, cache) in replicas.iter().zip(caches) {
        for (key, (rv, uid)) in cache {
            assert!(r.shard.admits(uid), "{key} is outside {}", r.shard);
            assert!(
                union.insert(key.clone(), rv.clone()).is_none(),
                "{key} is cached by two replicas"
            );
        }
    }
    assert_eq!(
        union.len(),
        server.len(),
        "every object cached exactly once"
    );
    assert!(union == *server, "the union of the caches is the server");
}

fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

async fn four_replicas_partition_the_collection(gate: bool) {
    let server = TestServer::start().await.expect("testserver");
    server.set_sharded_list_and_watch(gate);
    for i in 0..OBJECTS {
        server
            .create(&cm(&format!("ns-{}", i % 10), &format!("cm-{i:05}"), "0"))
            .expect("create");
    }
    let replicas = replicas(&server);
    for r in &replicas {
        assert_synced(r.informer.wait_for_sync()).await;
    }
    let want = if gate {
        ShardMode::Server
    } else {
        ShardMode::Client
    };
    for (i, r) in replicas.iter().enumerate() {
        let handle = r.informer.reflector_handle().expect("running");
        assert_eq!(handle.shard_mode(), Some(want), "replica {i}");
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &r.registry).expect("encode");
        let series = format!("informer_shard_mode{{informer=\"replica-{i}/v1/configmaps\"}}");
        let code = if gate { 1.0 } else { 2.0 };
        assert_eq!(metric(&text, &series), Some(code), "{series}");
    }
    // Every LIST and WATCH carried the replica's selector.
    let requests = server.requests();
    let sharded: Vec<_> = requests
        .iter()
        .filter(|r| r.is_list() || r.is_watch())
        .collect();
    assert!(!sharded.is_empty());
    for r in &sharded {
        let sel = r.query.shard_selector.as_deref().unwrap_or_default();
        assert!(
            replicas.iter().any(|rep| rep.shard.selector() == sel),
            "{} {:?} without a replica's shard selector",
            r.path,
            r.query
        );
    }
    let server_now = server_state(server.client()).await;
    assert_eq!(server_now.len(), OBJECTS);
    assert_partition(&replicas, &caches(&replicas), &server_now);
    let sizes: Vec<usize> = replicas
        .iter()
        .map(|r| r.informer.indexer().len())
        .collect();
    for n in &sizes {
        // 2 500 each on average; a hash spread over 10 000 objects stays well inside ±20%.
        assert!((2_000..=3_000).contains(n), "{sizes:?}");
    }

    // A write load through the watches: creates, updates and deletes land in exactly one
    // replica (in client mode the watch events of other shards are dropped before decoding).
    let api: kube::Api<ConfigMap> = kube::Api::all(server.client());
    let ns_api = |ns: &str| -> kube::Api<ConfigMap> { kube::Api::namespaced(server.client(), ns) };
    for i in 0..300 {
        let ns = format!("ns-{}", i % 10);
        ns_api(&ns)
            .create(&Default::default(), &cm(&ns, &format!("new-{i:03}"), "1"))
            .await
            .expect("create");
    }
    for i in (0..OBJECTS).step_by(50) {
        let ns = format!("ns-{}", i % 10);
        let name = format!("cm-{i:05}");
        let mut obj = ns_api(&ns).get(&name).await.expect("get");
        obj.data = Some(BTreeMap::from([("v".to_string(), "2".to_string())]));
        ns_api(&ns)
            .replace(&name, &Default::default(), &obj)
            .await
            .expect("update");
    }
    for i in (25..OBJECTS).step_by(50) {
        let ns = format!("ns-{}", i % 10);
        ns_api(&ns)
            .delete(&format!("cm-{i:05}"), &Default::default())
            .await
            .expect("delete");
    }
    let server_end = server_state(api.into_client()).await;
    wait_until("the replicas' caches to add up to the server", || {
        let caches = caches(&replicas);
        let mut union = BTreeMap::new();
        let mut total = 0;
        for cache in &caches {
            total += cache.len();
            union.extend(cache.iter().map(|(k, (rv, _))| (k.clone(), rv.clone())));
        }
        total == union.len() && union == server_end
    })
    .await;
    assert_partition(&replicas, &caches(&replicas), &server_end);
    for r in &replicas {
        r.factory.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kep5866_four_replicas_cache_each_object_once_when_the_server_shards() {
    four_replicas_partition_the_collection(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kep5866_four_replicas_cache_each_object_once_when_the_client_filters() {
    four_replicas_partition_the_collection(false).await;
}

proptest::proptest! {
    /// The runtime's hash is the one the test server shards by (both follow
    /// `k8s.io/apimachinery/pkg/sharding`), over any UTF-8 value.
    #[test]
    fn the_client_hash_is_the_server_hash(value in ".{0,64}") {
        proptest::prop_assert_eq!(
            informer_runtime::shard::fnv1a64(&value),
            informer_testserver::shard_hash(&value)
        );
    }
}
