//! K4 (docs/behaviour.md section 16): bookmarks advance the store's resource version of an idle
//! informer, so a read-your-own-writes waiter on a quiet kind catches up without a change to
//! that kind; `wait_for_store_resource_version` wakes when the store reaches a version.

mod informer_support;

use std::time::Duration;

use informer_runtime::factory::SharedInformerFactory;
use informer_support::*;
use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::ConfigMap;

/// An informer of namespace `quiet` learns, from bookmarks alone, that the collection moved past
/// a write in namespace `busy` that it never receives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bookmarks_advance_the_store_of_an_idle_informer() {
    init_tracing();
    let server = TestServer::builder()
        .bookmark_interval(Duration::from_millis(200))
        .start()
        .await
        .unwrap();
    server.create(&cm("quiet", "only", "1")).unwrap();
    let factory = SharedInformerFactory::builder(server.client())
        .namespace("quiet")
        .build();
    let informer = factory.informer_for::<ConfigMap>();
    factory.start();
    assert_synced(informer.wait_for_sync()).await;
    let before: u64 = informer
        .last_store_resource_version()
        .expect("synced")
        .parse()
        .unwrap();
    let elsewhere = server.create(&cm("busy", "write", "1")).unwrap();
    let written: u64 = elsewhere["metadata"]["resourceVersion"]
        .as_str()
        .expect("an RV")
        .parse()
        .unwrap();
    assert!(written > before);
    let reached = tokio::time::timeout(WAIT, informer.wait_for_store_resource_version(written))
        .await
        .expect("a bookmark carries the store past the other namespace's write");
    assert!(reached);
    assert!(informer.indexer().get_by_key("busy/write").is_none());
    let store: u64 = informer
        .last_store_resource_version()
        .expect("an RV")
        .parse()
        .unwrap();
    assert!(store >= written, "{store} >= {written}");
    factory.shutdown().await;
    // A stopped informer answers at once with what it reached.
    assert!(!informer.wait_for_store_resource_version(u64::MAX - 1).await);
}
