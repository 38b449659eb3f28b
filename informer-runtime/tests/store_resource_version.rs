//! K4 (docs/behaviour.md section 16): bookmarks advance the store's resource version of an idle
//! informer, so a read-your-own-writes waiter on a quiet kind catches up without a change to
//! that kind; `wait_for_store_resource_version` wakes when the store reaches a version.

mod informer_support;

use std::time::Duration;

use informer_runtime::factory::SharedInformerFactory;
use informer_support::*;
use informer_test_support::within;
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

/// K3 in the keyed FIFO: the store's resource version never passes a change that is still
/// queued. With `a@100` queued, then `b@101` (a controller's own write), then `a@102`, the keyed
/// FIFO holds `[a(100, 102), b(101)]`; after `a` is applied the store must not claim 101 or more
/// while `b` still shows its old state, or a read-your-own-writes guard waiting for 101 lets a
/// reconcile read the old `b`. A `Block` handler with a backlog of one holds the loop between
/// keys (V3: one key per pop), so the state after `a` is observed while `b` is still queued.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k3_the_store_version_never_passes_a_queued_change() {
    use std::sync::mpsc;

    use informer_runtime::informer::{HandlerOptions, OverflowPolicy, handler_fn};
    use parking_lot::Mutex;
    use tokio_util::sync::CancellationToken;

    init_tracing();
    let server = TestServer::start().await.unwrap();
    let writer = Writer::new(server.client(), "rw");
    for name in ["a", "b", "c"] {
        writer.create(name, "0").await;
    }
    let informer = informer(server.client(), |c| c.batch_size = 1);
    // Every update call announces itself and then waits for a permit; dropping the sender
    // opens the gate for good.
    let (entered_tx, mut entered) = tokio::sync::mpsc::unbounded_channel::<(String, u64)>();
    let (permit_tx, permit_rx) = mpsc::channel::<()>();
    let permits = Mutex::new(permit_rx);
    let handler = handler_fn::<ConfigMap>().on_update(move |_, new| {
        let name = new.metadata.name.clone().unwrap_or_default();
        let rv = rv_of(new);
        let _ = entered_tx.send((name, rv));
        let _ = permits.lock().recv();
    });
    informer
        .add_event_handler_with(
            handler,
            HandlerOptions::new()
                .overflow(OverflowPolicy::Block)
                .backlog_max(1),
        )
        .unwrap();
    let cancel = CancellationToken::new();
    let run = informer.start(cancel.clone());
    assert_synced(informer.wait_for_sync()).await;

    // The handler blocks in `c`'s first update and holds the second in its backlog of one:
    // the loop now waits for room before its next pop.
    let c1 = rv_of(&writer.set("c", "1").await);
    assert_eq!(
        within("c's first update", entered.recv()).await,
        Some(("c".into(), c1))
    );
    let c2 = rv_of(&writer.set("c", "2").await);
    let a100 = rv_of(&writer.set("a", "1").await);
    let b101 = rv_of(&writer.set("b", "1").await);
    let a102 = rv_of(&writer.set("a", "2").await);
    assert!(c2 < a100 && a100 < b101 && b101 < a102);
    let rv_of_b = || {
        informer
            .indexer()
            .get_by_key("rw/b")
            .map(|b| rv_of(&b))
            .unwrap_or(0)
    };
    wait_until("the FIFO holds [a(a100, a102), b(b101)]", || {
        informer
            .last_sync_resource_version()
            .and_then(|rv| rv.parse::<u64>().ok())
            .is_some_and(|rv| rv >= a102)
            && informer.queued() == 2
    })
    .await;
    // A read-your-own-writes waiter for the controller's write to `b`: once woken it reads `b`.
    let waiter = tokio::spawn({
        let informer = informer.clone();
        async move {
            let reached = informer.wait_for_store_resource_version(b101).await;
            let seen = informer
                .indexer()
                .get_by_key("rw/b")
                .map(|b| rv_of(&b))
                .unwrap_or(0);
            (reached, seen)
        }
    });

    // Let `c` through: the loop pops `a` (both deltas), the handler takes `a@100` and holds
    // `a@102` in its backlog, the loop finishes `a` and publishes the store's version, then
    // waits for room again with `b` still queued.
    permit_tx.send(()).unwrap();
    assert_eq!(
        within("c's second update", entered.recv()).await,
        Some(("c".into(), c2))
    );
    permit_tx.send(()).unwrap();
    assert_eq!(
        within("a's first update", entered.recv()).await,
        Some(("a".into(), a100))
    );
    within(
        "the store's version after a",
        informer.wait_for_store_resource_version(a100),
    )
    .await;
    assert_eq!(informer.queued(), 1, "b is still queued");
    assert!(rv_of_b() < b101, "b is not applied yet");
    let store: u64 = informer
        .last_store_resource_version()
        .expect("an RV")
        .parse()
        .unwrap();
    assert!(
        store < b101,
        "the store claims {store} while b@{b101} is still queued (K3)"
    );

    // Open the gate: b is applied, and only then does the waiter wake.
    drop(permit_tx);
    let (reached, seen) = within("the read-your-own-writes waiter", waiter)
        .await
        .unwrap();
    assert!(reached);
    assert_eq!(
        seen, b101,
        "the waiter woke before b@{b101} was in the store"
    );
    within(
        "the store at a102",
        informer.wait_for_store_resource_version(a102),
    )
    .await;
    cancel.cancel();
    run.await.unwrap();
}

fn rv_of(obj: &ConfigMap) -> u64 {
    obj.metadata
        .resource_version
        .as_deref()
        .and_then(|rv| rv.parse().ok())
        .expect("a numeric resourceVersion")
}
