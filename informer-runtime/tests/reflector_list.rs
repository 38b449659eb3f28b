//! Reflector LIST behaviour against informer-testserver over real HTTP: paging (R2, R3), expired continue (R4), unavailable RVs (R11).

mod reflector_support;

use std::time::Duration;

use http::StatusCode;
use informer_testserver::{FaultTarget, TestServer};
use reflector_support::*;

#[tokio::test]
async fn r2_r3_1200_objects_list_in_three_pages_first_at_rv_0() {
    // Without the watch cache, the server pages the list at "0" too (R3).
    let server = TestServer::builder()
        .watch_cache(false)
        .start()
        .await
        .expect("server");
    seed(&server, 1200);
    let r = start(&server, fast_config());
    r.store
        .wait_for("1200 objects", WAIT, |s| s.objects.len() == 1200)
        .await;
    wait_log(&server, "the first watch", |log| {
        log.iter().any(|x| x.is_watch())
    })
    .await;

    let lists = lists(&server);
    assert_eq!(lists.len(), 3, "{:#?}", summary(&lists));
    assert!(
        lists.iter().all(|l| l.query.limit == Some(500)),
        "{:#?}",
        summary(&lists)
    );
    assert_eq!(
        lists[0].query.resource_version.as_deref(),
        Some("0"),
        "R2: first LIST at \"0\""
    );
    assert!(lists[0].query.continue_token.is_none());
    for page in &lists[1..] {
        assert!(
            page.query.continue_token.is_some(),
            "R3: pages 2 and 3 continue"
        );
        assert!(
            page.query
                .resource_version
                .as_deref()
                .unwrap_or_default()
                .is_empty(),
            "no resourceVersion with continue"
        );
    }
    assert_eq!(
        r.store.with(|s| s.replaces()),
        1,
        "one replace for the whole list"
    );
    assert_eq!(r.handle.counters().list_requests, 3);

    // The watch starts at the list's RV (R5 bookmarks on, R6 timeout in [300, 600)).
    let list_rv = r.store.with(|s| match &s.ops[0] {
        Op::Replace { rv, .. } => rv.clone(),
        op => panic!("first op {op:?}"),
    });
    assert_eq!(
        r.handle.last_sync_resource_version().as_deref(),
        Some(list_rv.as_str())
    );
    let w = &watches(&server)[0];
    assert_eq!(w.query.resource_version.as_deref(), Some(list_rv.as_str()));
    assert!(w.query.allow_watch_bookmarks, "R5");
    let t = w.query.timeout_seconds.expect("timeoutSeconds");
    assert!((300..600).contains(&t), "R6: timeoutSeconds {t}");
    assert_eq!(w.query.send_initial_events, None, "plain watch");
    r.stop().await;
}

#[tokio::test]
async fn r6_every_watch_timeout_is_in_5_to_10_minutes() {
    let server = TestServer::start().await.expect("server");
    seed(&server, 3);
    let r = start(&server, fast_config());
    wait_replaces(&r.store, 1).await;
    // Five server-side closes give six watches, each with its own random timeout.
    for n in 2..=6 {
        wait_log(&server, "a watch", |log| {
            log.iter().filter(|x| x.is_watch()).count() >= n - 1
        })
        .await;
        server.faults().close_open_watches();
    }
    wait_log(&server, "six watches", |log| {
        log.iter().filter(|x| x.is_watch()).count() >= 6
    })
    .await;
    for w in watches(&server) {
        let t = w.query.timeout_seconds.expect("timeoutSeconds");
        assert!((300..600).contains(&t), "R6: {t}");
    }
    r.stop().await;
}

#[tokio::test]
async fn r4_expired_continue_lists_once_unpaged_at_original_rv() {
    let server = TestServer::builder()
        .watch_cache(false)
        .start()
        .await
        .expect("server");
    seed(&server, 1200);
    // Every LIST answers after 400 ms, so page 2 (prefetched while page 1 decodes) is still
    // waiting when the test arms the 410 after seeing page 1 in the log.
    server
        .faults()
        .delay(FaultTarget::List, Duration::from_millis(400));
    let r = start(&server, fast_config());
    wait_log(&server, "page 1", |log| log.iter().any(|x| x.is_list())).await;
    server
        .faults()
        .fail_next(FaultTarget::List, StatusCode::GONE, None, 1);
    r.store
        .wait_for("1200 objects", WAIT, |s| s.objects.len() == 1200)
        .await;
    server.faults().delay(FaultTarget::List, Duration::ZERO);

    let lists = lists(&server);
    assert_eq!(lists.len(), 3, "{:#?}", summary(&lists));
    assert_eq!(lists[0].query.limit, Some(500));
    assert_eq!(lists[1].status, StatusCode::GONE, "page 2 expired");
    assert!(lists[1].query.continue_token.is_some());
    let full = &lists[2];
    assert_eq!(full.query.limit, None, "R4: unpaged");
    assert!(full.query.continue_token.is_none());
    assert_eq!(
        full.query.resource_version.as_deref(),
        Some("0"),
        "R4: at the original RV"
    );
    assert_eq!(r.store.with(|s| s.replaces()), 1);
    r.stop().await;
}

#[tokio::test]
async fn r11_too_large_rv_on_list_relists_at_empty_rv() {
    let server = TestServer::start().await.expect("server");
    seed(&server, 10);
    server.faults().too_large_resource_version_next_list();
    let r = start(&server, fast_config());
    wait_replaces(&r.store, 1).await;

    let lists = lists(&server);
    assert_eq!(lists.len(), 2, "{:#?}", summary(&lists));
    assert_eq!(lists[0].status, StatusCode::GATEWAY_TIMEOUT);
    assert_eq!(lists[0].query.resource_version.as_deref(), Some("0"));
    assert_eq!(
        lists[1].query.resource_version.as_deref(),
        Some(""),
        "R11: quorum read"
    );
    assert_eq!(lists[1].status, StatusCode::OK);
    assert_eq!(
        r.handle.counters().cycles,
        1,
        "R11: relisted at once, in the same cycle"
    );
    assert_eq!(r.store.with(|s| s.objects.len()), 10);
    r.stop().await;
}

#[tokio::test]
async fn r11_410_on_first_list_relists_at_empty_rv_then_unavailable_is_cleared() {
    let server = TestServer::start().await.expect("server");
    seed(&server, 10);
    server
        .faults()
        .fail_next(FaultTarget::List, StatusCode::GONE, None, 1);
    let r = start(&server, fast_config());
    wait_replaces(&r.store, 1).await;
    let first = lists(&server);
    assert_eq!(first.len(), 2, "{:#?}", summary(&first));
    assert_eq!(first[1].query.resource_version.as_deref(), Some(""));

    // The next relist (after a watch 410, R12) is at the last RV again, not "".
    let last = r.handle.last_sync_resource_version().expect("synced");
    let lists = relist_after_watch_410(&server, &r).await;
    assert_eq!(lists.len(), 3, "{:#?}", summary(&lists));
    assert_eq!(
        lists[2].query.resource_version.as_deref(),
        Some(last.as_str())
    );
    assert_eq!(lists[2].query.limit, None, "R3: concrete RV, unpaged");
    r.stop().await;
}

#[tokio::test]
async fn r15_list_429_retries_after_backoff_and_honours_retry_after() {
    let server = TestServer::start().await.expect("server");
    seed(&server, 5);
    server
        .faults()
        .fail_next(FaultTarget::List, StatusCode::TOO_MANY_REQUESTS, Some(1), 1);
    // Retry-After is capped at the backoff maximum (R1): raise it above 1 s.
    let mut config = fast_config();
    config.backoff.cap = Duration::from_secs(2);
    let r = start(&server, config);
    wait_replaces(&r.store, 1).await;
    let lists = lists(&server);
    let ok = lists
        .iter()
        .find(|l| l.status == StatusCode::OK)
        .expect("a successful LIST");
    let gap = ok.time.duration_since(lists[0].time).unwrap_or_default();
    assert!(
        gap >= Duration::from_millis(950),
        "Retry-After 1 s is the minimum delay: {gap:?}"
    );
    assert_eq!(
        ok.query.resource_version.as_deref(),
        Some("0"),
        "not marked unavailable"
    );
    r.stop().await;
}

#[tokio::test]
async fn selectors_are_sent_on_list_and_watch() {
    let server = TestServer::start().await.expect("server");
    seed(&server, 3);
    let mut other = cm("other");
    other.metadata.labels = Some([("app".to_string(), "else".to_string())].into());
    server.create(&other).expect("create");
    let config = informer_runtime::reflector::ReflectorConfig {
        label_selector: Some("app=demo".into()),
        field_selector: Some("metadata.namespace=default".into()),
        ..fast_config()
    };
    let r = start(&server, config);
    wait_replaces(&r.store, 1).await;
    wait_log(&server, "a watch", |log| log.iter().any(|x| x.is_watch())).await;
    assert_eq!(r.store.with(|s| s.objects.len()), 3);
    for rec in lists(&server).iter().chain(watches(&server).iter()) {
        assert_eq!(rec.query.label_selector.as_deref(), Some("app=demo"));
        assert_eq!(
            rec.query.field_selector.as_deref(),
            Some("metadata.namespace=default")
        );
    }
    r.stop().await;
}

#[tokio::test]
async fn r3_a_paged_quorum_list_does_not_make_later_relists_paged() {
    let server = TestServer::start().await.expect("server");
    seed(&server, 1200);
    // The first LIST ("0") gets 410, so the first list that succeeds is the paged one at "" (R11).
    server
        .faults()
        .fail_next(FaultTarget::List, StatusCode::GONE, None, 1);
    let r = start(&server, fast_config());
    wait_replaces(&r.store, 1).await;
    let first = lists(&server);
    assert_eq!(first.len(), 4, "410, then 3 pages: {:#?}", summary(&first));
    assert_eq!(first[1].query.resource_version.as_deref(), Some(""));
    let last = r.handle.last_sync_resource_version().expect("synced");
    // R12: the watch's 410 relists at the last RV, which the watch cache serves unpaged (R3).
    let lists = relist_after_watch_410(&server, &r).await;
    let relist = &lists[4];
    assert_eq!(
        relist.query.resource_version.as_deref(),
        Some(last.as_str())
    );
    assert_eq!(
        relist.query.limit,
        None,
        "R3: a paged list at \"\" is no reason to page a concrete RV: {:#?}",
        summary(&lists)
    );
    r.stop().await;
}
