//! Cache budgets (decision record 30, B1-B4) against informer-testserver over real HTTP: the
//! reflectors charge a shared [`CacheBudget`] from inside, a list past it is dropped while it
//! is read and retried, a live event past it is applied and reported.

use std::time::Duration;

use informer_runtime::SharedInformerFactory;
use informer_runtime::budget::CacheBudget;
use informer_runtime::informer::InformerConfig;
use informer_runtime::reflector::{InitialListStrategy, ReflectorConfig};
use informer_test_support::{cm, wait_until};
use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use kube::api::{DeleteParams, ObjectMeta, PostParams};

const WAIT: Duration = Duration::from_secs(20);

/// The informers' default reflector (streaming) with a short backoff, so retries come quickly.
fn fast(strategy: InitialListStrategy) -> ReflectorConfig {
    let mut config = InformerConfig::<()>::default_reflector();
    config.strategy = strategy;
    config.backoff.initial = Duration::from_millis(20);
    config.backoff.cap = Duration::from_millis(100);
    config
}

async fn create_config_maps(server: &TestServer, range: std::ops::Range<usize>) {
    let api = Api::<ConfigMap>::namespaced(server.client(), "default");
    for i in range {
        api.create(
            &PostParams::default(),
            &cm("default", &format!("cm-{i}"), "1"),
        )
        .await
        .expect("create");
    }
}

async fn delete_config_maps(server: &TestServer, range: std::ops::Range<usize>) {
    let api = Api::<ConfigMap>::namespaced(server.client(), "default");
    for i in range {
        api.delete(&format!("cm-{i}"), &DeleteParams::default())
            .await
            .expect("delete");
    }
}

fn factory(
    server: &TestServer,
    reflector: ReflectorConfig,
    budget: &CacheBudget,
) -> SharedInformerFactory {
    SharedInformerFactory::builder(server.client())
        .reflector_config(reflector)
        .cache_budget(budget.clone())
        .build()
}

async fn synced(factory: &SharedInformerFactory) {
    factory
        .wait_for_cache_sync_timeout(WAIT)
        .await
        .expect("synced");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b2_a_streamed_list_past_the_budget_is_dropped_and_retried_until_it_fits() {
    let server = TestServer::start().await.expect("test server");
    create_config_maps(&server, 0..30).await;
    let budget = CacheBudget::objects(20);
    let factory = factory(&server, fast(InitialListStrategy::StreamingList), &budget);
    let informer = factory.informer_for::<ConfigMap>();
    factory.start();

    wait_until("two breaches (a retry)", || budget.breaches() >= 2).await;
    let breach = budget.last_breach().expect("a breach");
    // Charged object by object: the stream stops at the first object past the limit.
    assert_eq!(
        (breach.wanted, breach.limit, breach.applied),
        (21, 20, false)
    );
    assert!(
        !informer.has_synced(),
        "B2: a dropped initial list does not sync"
    );
    assert_eq!(informer.indexer().len(), 0, "B2: nothing of it is cached");
    let requests = server.requests();
    assert!(
        !requests.iter().any(|r| r.is_list()),
        "B2: the retry streams again, no fallback to a paged LIST"
    );
    let streams = requests
        .iter()
        .filter(|r| r.is_watch() && r.query.send_initial_events == Some(true))
        .count();
    assert!(streams >= 2, "B2: retried ({streams} streams)");

    // Once the collection fits, the next cycle syncs it.
    delete_config_maps(&server, 0..15).await;
    synced(&factory).await;
    assert_eq!(informer.indexer().len(), 15);
    assert_eq!(budget.used(), 15);
    factory.shutdown().await;
    assert_eq!(budget.used(), 0, "a stopped informer gives its charge back");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b2_a_paged_list_drops_each_object_past_the_budget_as_it_is_decoded() {
    // At "" the server pages; at "0" it answers whole from its cache, as kube-apiserver's
    // watch cache does: either way the 26th object is the first refused.
    for (first_rv, pages) in [("", true), ("0", false)] {
        let server = TestServer::start().await.expect("test server");
        create_config_maps(&server, 0..45).await;
        let budget = CacheBudget::objects(25);
        let mut reflector = fast(InitialListStrategy::ListWatch);
        reflector.page_size = 10;
        reflector.initial_list_rv = first_rv.to_string();
        // No retry while the test looks.
        reflector.backoff.initial = Duration::from_secs(30);
        reflector.backoff.cap = Duration::from_secs(30);
        let factory = factory(&server, reflector, &budget);
        let informer = factory.informer_for::<ConfigMap>();
        factory.start();

        wait_until("a breach", || budget.breaches() >= 1).await;
        let breach = budget.last_breach().expect("a breach");
        assert_eq!(
            (breach.wanted, breach.limit, breach.applied),
            (26, 25, false)
        );
        assert_eq!(
            budget.breaches(),
            1,
            "the rest is dropped without a new breach"
        );
        assert!(!informer.has_synced());
        assert_eq!(informer.indexer().len(), 0);
        let lists = server.requests().iter().filter(|r| r.is_list()).count();
        assert_eq!(lists > 1, pages, "at {first_rv:?}: {lists} LIST requests");
        factory.shutdown().await;
        assert_eq!(budget.used(), 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b3_a_live_event_past_the_budget_is_applied_and_reported() {
    let server = TestServer::start().await.expect("test server");
    create_config_maps(&server, 0..8).await;
    let budget = CacheBudget::objects(10);
    let factory = factory(&server, fast(InitialListStrategy::StreamingList), &budget);
    let informer = factory.informer_for::<ConfigMap>();
    factory.start();
    synced(&factory).await;
    assert_eq!(budget.used(), 8);
    assert_eq!(budget.breaches(), 0);

    create_config_maps(&server, 8..12).await;
    wait_until("every live ADDED applied", || {
        informer.indexer().len() == 12
    })
    .await;
    assert_eq!(budget.used(), 12);
    let breach = budget.last_breach().expect("B3: reported");
    assert_eq!(
        (breach.wanted, breach.limit, breach.applied),
        (12, 10, true)
    );
    assert_eq!(budget.breaches(), 2, "the 11th and the 12th");

    delete_config_maps(&server, 0..3).await;
    wait_until("the deletes applied", || informer.indexer().len() == 9).await;
    assert_eq!(budget.used(), 9, "B1: a DELETED gives its object back");
    factory.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b1_informers_sharing_a_budget_hold_no_more_than_it_together() {
    let server = TestServer::start().await.expect("test server");
    create_config_maps(&server, 0..15).await;
    let secrets = Api::<Secret>::namespaced(server.client(), "default");
    for i in 0..15 {
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(format!("s-{i}")),
                namespace: Some("default".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        secrets
            .create(&PostParams::default(), &secret)
            .await
            .expect("create");
    }
    let budget = CacheBudget::objects(20);
    let factory = factory(&server, fast(InitialListStrategy::StreamingList), &budget);
    let config_maps = factory.informer_for::<ConfigMap>();
    let secret_informer = factory.informer_for::<Secret>();
    factory.start();

    // 15 + 15 do not fit in 20: one informer syncs, the other keeps breaching while it holds.
    wait_until("one synced and the other retried", || {
        (config_maps.has_synced() != secret_informer.has_synced()) && budget.breaches() >= 3
    })
    .await;
    let (synced, starved) = if config_maps.has_synced() {
        (config_maps.indexer().len(), secret_informer.indexer().len())
    } else {
        (secret_informer.indexer().len(), config_maps.indexer().len())
    };
    assert_eq!((synced, starved), (15, 0));
    assert!(budget.used() <= 20, "used {}", budget.used());
    let breach = budget.last_breach().expect("a breach");
    assert_eq!((breach.wanted, breach.applied), (21, false));
    factory.shutdown().await;
}
