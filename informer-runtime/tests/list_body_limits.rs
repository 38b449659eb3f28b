//! T4 (docs/behaviour.md section 18): a LIST body that makes no progress fails after the idle time,
//! like a dead watch, instead of freezing a relist for the kernel's TCP timeout; a body above
//! its cap fails with a clear error.

mod informer_support;

use std::time::{Duration, Instant};

use informer_runtime::informer::{InformerConfig, SharedIndexInformer};
use informer_runtime::list_watch::{BodyLimits, Error, ListRequest, ListWatch};
use informer_runtime::reflector::InitialListStrategy;
use informer_support::*;
use informer_testserver::{FaultTarget, HostileResponse, TestServer};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use tokio_util::sync::CancellationToken;

const IDLE: Duration = Duration::from_millis(300);

fn limits() -> BodyLimits {
    BodyLimits {
        idle: IDLE,
        ..BodyLimits::default()
    }
}

#[tokio::test]
async fn a_list_body_that_stalls_after_its_headers_fails_after_the_idle_time() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    server.create(&cm("default", "a", "1")).unwrap();
    let lw = ListWatch::<ConfigMap>::new(Api::all(server.client())).body_limits(limits());
    server
        .faults()
        .hostile_next(FaultTarget::List, HostileResponse::StalledListBody, 1);
    let started = Instant::now();
    let err = tokio::time::timeout(WAIT, lw.list(&ListRequest::default()))
        .await
        .expect("the LIST does not hang")
        .expect_err("a stalled body is an error");
    assert!(
        matches!(err, Error::BodyStalled { what: "LIST", idle } if idle == IDLE),
        "{err:?}"
    );
    assert!(started.elapsed() >= IDLE);
    let page = lw
        .list(&ListRequest::default())
        .await
        .expect("the next LIST");
    assert_eq!(page.items.len(), 1);
}

#[tokio::test]
async fn a_list_body_above_its_cap_fails_with_a_clear_error() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    for i in 0..20 {
        server
            .create(&cm("default", &format!("cm-{i}"), "1"))
            .unwrap();
    }
    let lw = ListWatch::<ConfigMap>::new(Api::all(server.client())).body_limits(BodyLimits {
        max_list_bytes: 1024,
        ..BodyLimits::default()
    });
    let err = lw
        .list(&ListRequest::default())
        .await
        .expect_err("20 ConfigMaps are more than 1 KiB");
    assert!(
        matches!(
            err,
            Error::BodyTooLarge {
                what: "LIST",
                limit: 1024
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("larger than 1024 bytes"));
}

/// The informer recovers from a stalled LIST by itself: the reflector backs off and lists again
/// (R15), where before it waited on the dead connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_informer_syncs_past_a_stalled_list() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    server.create(&cm("default", "a", "1")).unwrap();
    server
        .faults()
        .hostile_next(FaultTarget::List, HostileResponse::StalledListBody, 1);
    let lw = ListWatch::<ConfigMap>::new(Api::all(server.client())).body_limits(limits());
    let mut config = InformerConfig::<ConfigMap>::default();
    config.reflector.strategy = InitialListStrategy::ListWatch;
    config.reflector.backoff.initial = Duration::from_millis(50);
    let informer = SharedIndexInformer::new(lw, config).unwrap();
    let cancel = CancellationToken::new();
    let _stop = cancel.clone().drop_guard();
    informer.start(cancel);
    assert_synced(informer.wait_for_sync()).await;
    assert_eq!(informer.indexer().len(), 1);
    let lists = server.requests().iter().filter(|r| r.is_list()).count();
    assert!(lists >= 2, "the stalled LIST, then a good one: {lists}");
}
