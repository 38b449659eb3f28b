//! Dead connections (T4, R7) over real HTTP: a request that gets no response headers, and a
//! running watch that goes silent after the server has shown it sends bookmarks, are noticed in
//! seconds, not after the kernel's TCP timeout or the watch's own 5-10 minutes.
//!
//! Run with `cargo test -p informer-runtime --test reflector_dead_connections`.

mod reflector_support;

use std::sync::Arc;
use std::time::Duration;

use informer_runtime::list_watch::{BodyLimits, ListWatch};
use informer_runtime::reflector::{Error, Reflector, ReflectorConfig};
use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::ConfigMap;
use parking_lot::Mutex;
use reflector_support::*;
use tokio_util::sync::CancellationToken;

/// A ConfigMap reflector whose client sends `agent` as its User-Agent, with `limits`; its
/// errors are collected, and each one is announced on the returned channel.
fn start_with(
    server: &TestServer,
    agent: &str,
    limits: BodyLimits,
    mut config: ReflectorConfig,
) -> (Running, tokio::sync::watch::Receiver<usize>) {
    let errors = Arc::new(Mutex::new(Vec::new()));
    let (reported, announced) = tokio::sync::watch::channel(0);
    let seen = errors.clone();
    config.watch_error_handler = Some(Arc::new(move |e: &Error| {
        let mut all = seen.lock();
        all.push(format!("{e:?}"));
        reported.send_replace(all.len());
    }));
    let client = informer_test_support::client_with_agent(server, agent);
    let lw = ListWatch::new(kube::Api::<ConfigMap>::all(client)).body_limits(limits);
    let store = RecordingStore::<ConfigMap>::new();
    let reflector = Reflector::new(lw, store.clone(), config);
    let handle = reflector.handle();
    let cancel = CancellationToken::new();
    let task = tokio::spawn(reflector.run(cancel.clone()));
    (Running::new(store, handle, errors, cancel, task), announced)
}

/// Waits until an error whose debug text contains `needle` was reported.
async fn wait_error(
    r: &Running,
    announced: &mut tokio::sync::watch::Receiver<usize>,
    needle: &str,
) {
    let found = tokio::time::timeout(
        WAIT,
        announced.wait_for(|_| r.errors().iter().any(|e| e.contains(needle))),
    )
    .await;
    assert!(
        matches!(found, Ok(Ok(_))),
        "timed out waiting for an error with {needle:?}: {:#?}",
        r.errors()
    );
}

/// T4: a LIST whose response headers never come (the request went into a half-open
/// connection: the test server holds every request of this client) fails after
/// `BodyLimits::head`; once the server answers again, the reflector lists.
#[tokio::test]
async fn t4_a_request_without_response_headers_fails_after_the_head_timeout() {
    let server = TestServer::start().await.expect("server");
    seed(&server, 3);
    server.faults().hang_user_agent("half-open");
    let limits = BodyLimits {
        head: Duration::from_millis(300),
        ..BodyLimits::default()
    };
    let (r, mut errors) = start_with(&server, "half-open", limits, fast_config());
    wait_error(&r, &mut errors, "NoResponse").await;
    assert_eq!(r.store.with(|s| s.replaces()), 0, "nothing listed yet");
    server.faults().admit_user_agent("half-open");
    wait_replaces(&r.store, 1).await;
    r.stop().await;
}

/// R7: once a periodic bookmark has arrived, a watch that hears nothing (no event, no bookmark)
/// for `max_bookmark_gap` is dead: the reflector re-watches from the same RV, without a LIST,
/// long before the watch's own timeout (5-10 minutes) would tell.
#[tokio::test]
async fn r7_a_watch_silent_past_the_bookmark_gap_is_dead_and_rewatched() {
    let server = TestServer::builder()
        .bookmark_interval(Duration::from_millis(100))
        .start()
        .await
        .expect("server");
    seed(&server, 2);
    let config = ReflectorConfig {
        max_bookmark_gap: Duration::from_secs(1),
        ..fast_config()
    };
    let (r, mut errors) = start_with(&server, "bookmarks", BodyLimits::default(), config);
    r.store
        .wait_for("a periodic bookmark", WAIT, |s| {
            s.ops.iter().any(|o| matches!(o, Op::Bookmark(_)))
        })
        .await;
    server.faults().freeze_open_watches();
    wait_error(&r, &mut errors, "DeadWatch").await;
    wait_log(&server, "the re-watch", |log| {
        log.iter().filter(|x| x.is_watch()).count() >= 2
    })
    .await;
    let w = watches(&server);
    assert_eq!(lists(&server).len(), 1, "R9: no relist");
    assert!(
        w[1].query
            .resource_version
            .as_deref()
            .is_some_and(|rv| !rv.is_empty() && rv != "0"),
        "R9: from the last RV: {:?}",
        w[1].query.resource_version
    );
    r.stop().await;
}

/// R7: a server that never sent a periodic bookmark (only the watch's own events) keeps the
/// watch's own timeout: a quiet watch is not cut at the bookmark gap.
#[tokio::test]
async fn r7_without_periodic_bookmarks_a_quiet_watch_lives_on() {
    let server = TestServer::builder()
        .bookmark_interval(Duration::from_secs(24 * 3600))
        .start()
        .await
        .expect("server");
    seed(&server, 2);
    let config = ReflectorConfig {
        max_bookmark_gap: Duration::from_millis(200),
        ..fast_config()
    };
    let (r, _errors) = start_with(&server, "quiet", BodyLimits::default(), config);
    wait_log(&server, "the watch", |log| log.iter().any(|x| x.is_watch())).await;
    // What is tested is that nothing happens: six bookmark gaps of silence pass.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    server.create(&cm("late")).expect("create");
    r.store
        .wait_for("the late object", WAIT, |s| {
            s.objects.contains_key("default/late")
        })
        .await;
    assert_eq!(watches(&server).len(), 1, "one watch: {:?}", r.errors());
    assert!(!r.errors().iter().any(|e| e.contains("DeadWatch")));
    r.stop().await;
}
