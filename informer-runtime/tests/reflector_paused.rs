//! Reflector rules whose timers run for minutes, tested with tokio's paused clock: the
//! test server runs on its own real-time runtime, the reflector on a paused one
//! whose clock jumps ahead whenever it is idle. The client has no read, write or connect
//! timeout here, so no client timer can fire early while a request waits on the socket.
//!
//! Run with `cargo test -p informer-runtime --test reflector_paused`.

mod reflector_support;

use std::time::Duration;

use informer_runtime::list_watch::ListWatch;
use informer_runtime::reflector::Reflector;
use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::ConfigMap;
use reflector_support::*;
use tokio_util::sync::CancellationToken;

/// Polls `cond` every `step` of (virtual) time until `limit` has passed.
async fn wait_virtual(what: &str, step: Duration, limit: Duration, cond: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + limit;
    while !cond() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(step).await;
    }
}

/// R7: a watch that sends nothing (no event, no bookmark) for its `timeoutSeconds` + 5 s is
/// treated as dead and handled like a normal close (R9): a re-watch at the same RV, no LIST.
#[test]
fn r7_a_silent_watch_is_dead_after_its_timeout_plus_5s_and_rewatched_without_a_list() {
    let server_rt = tokio::runtime::Runtime::new().unwrap();
    let server = server_rt
        .block_on(
            TestServer::builder()
                .bookmark_interval(Duration::from_secs(24 * 3600))
                .start(),
        )
        .unwrap();
    seed(&server, 2);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async {
        let mut kc = server.kube_config();
        kc.read_timeout = None;
        kc.write_timeout = None;
        kc.connect_timeout = None;
        let client = kube::Client::try_from(kc).unwrap();
        let store = RecordingStore::<ConfigMap>::new();
        // The clock is paused and jumps ahead whenever this runtime waits on the server's I/O,
        // so T4's bounds on a response head and a body (90 s, 60 s) could pass in virtual time
        // before a real answer arrives and turn a slow answer into a failed LIST. This test is
        // about R7's silent-watch bound only: put the others out of reach.
        let far = Duration::from_secs(365 * 24 * 3600);
        let limits = informer_runtime::list_watch::BodyLimits {
            head: far,
            idle: far,
            ..Default::default()
        };
        let reflector = Reflector::new(
            ListWatch::new(kube::Api::<ConfigMap>::all(client)).body_limits(limits),
            store.clone(),
            fast_config(),
        );
        let handle = reflector.handle();
        let cancel = CancellationToken::new();
        let task = tokio::spawn(reflector.run(cancel.clone()));
        let step = Duration::from_millis(10);
        // The server logs a request when its response head is ready, just after the watch
        // registers: wait for both.
        wait_virtual("the first watch", step, Duration::from_secs(60), || {
            server.active_watches() == 1 && watches(&server).len() == 1
        })
        .await;
        let opened = tokio::time::Instant::now();
        let first = watches(&server).remove(0);
        let timeout = Duration::from_secs(first.query.timeout_seconds.unwrap());
        assert!(timeout >= Duration::from_secs(300), "R6: {timeout:?}");
        wait_virtual(
            "the re-watch",
            Duration::from_secs(1),
            Duration::from_secs(3600),
            || watches(&server).len() >= 2,
        )
        .await;
        let waited = opened.elapsed();
        assert!(
            waited >= timeout + Duration::from_secs(5),
            "R7: declared dead after {waited:?}, before timeout + 5 s ({timeout:?})"
        );
        let w = watches(&server);
        assert_eq!(
            w[1].query.resource_version, first.query.resource_version,
            "R9: the same RV"
        );
        assert_eq!(lists(&server).len(), 1, "R9: no relist");
        assert_eq!(handle.counters().rewatches, 1);
        assert_eq!(handle.counters().cycles, 1);
        cancel.cancel();
        task.await.unwrap();
    });
    drop(rt);
    server_rt.block_on(server.shutdown());
}
