//! The reflector against a hostile or broken API server over real HTTP (issue 14): 2xx answers
//! that are not lists (M14), endless paging (M15), unbounded watch lines (M16), redirects, ERROR
//! events without a Status, and Retry-After.
//!
//! Run with `cargo test -p informer-runtime --test reflector_hostile`.

mod reflector_support;

use informer_testserver::{FaultTarget, HostileResponse, TestServer};
use reflector_support::*;

/// Waits until the reflector has reported an error whose debug text contains `needle`.
async fn wait_error(r: &Running, needle: &str) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if r.errors().iter().any(|e| e.contains(needle)) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for an error with {needle:?}; errors: {:#?}",
            r.errors()
        );
        // The error log has no change notification; the store's does not cover errors.
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn m14_list_of_another_kind_is_an_error_not_an_empty_list() {
    let server = TestServer::start().await.expect("server");
    seed(&server, 4);
    server.faults().hostile_next(
        FaultTarget::List,
        HostileResponse::ListOfKind("PodList".into()),
        1,
    );
    let r = start(&server, fast_config());
    wait_replaces(&r.store, 1).await;
    let first = r.store.with(|s| s.ops[0].clone());
    assert!(
        matches!(first, Op::Replace { items: 4, .. }),
        "M14: the PodList was stored as a list: {first:?}"
    );
    wait_error(&r, "PodList").await;
    r.stop().await;
}
