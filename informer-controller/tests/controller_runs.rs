//! A controller run's life on informers that outlive it, against informer-testserver: a run
//! whose future is dropped leaves no handler behind (C7), a run in a leader's term drains within
//! the term's drain limit (S6, S11), and a key waiting out its backoff is not reconciled early by
//! events (C10).
//!
//! Run with `cargo test -p informer-controller --test controller_runs`.

// Test helpers outside #[test] fns may unwrap too (clippy's test allowance covers only #[test]).
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use informer_controller::leader::LeaderElector;
use informer_controller::{Action, Context, Controller, Request};
use informer_runtime::SharedInformerFactory;
use informer_runtime::key::ObjectKey;
use informer_runtime::workqueue::ItemExponentialFailureRateLimiter;
use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::ConfigMap;
use prometheus_client::registry::Registry;
use support::*;
use tokio_util::sync::CancellationToken;

const NS: &str = "default";

/// The handler registrations of the controller `name` that the factory's metrics show (one
/// `informer_handler_pending` series per registered handler, removed with it).
fn registered(registry: &Registry, controller: &str) -> usize {
    let handler = format!("handler=\"controller-{controller}-ConfigMap\"");
    scrape(registry)
        .lines()
        .filter(|l| l.starts_with("informer_handler_pending{") && l.contains(&handler))
        .count()
}

async fn record(
    req: Request<ConfigMap>,
    ctx: Arc<Context<Arc<Recorder<String>>>>,
) -> Result<Action, String> {
    ctx.data().push(req.key.to_string());
    Ok(Action::Done)
}

/// C7: the warm-standby pattern. The factory's informers run for the whole process; each term
/// runs the controller, and a term that ends by dropping the run future (its task aborted, as a
/// leader aborts work past its drain limit) must take its handler registration (and that
/// handler's thread) with it. Three such terms leave none behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c7_a_dropped_run_leaves_no_handler_on_informers_that_outlive_it() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    server.create(&cm(NS, "a", "1")).unwrap();
    let mut registry = Registry::default();
    let factory = SharedInformerFactory::builder(server.client())
        .metrics(&mut registry)
        .build();
    let _ = factory.informer_for::<ConfigMap>();
    factory.start();
    for term in 0..3 {
        let seen = Recorder::<String>::new();
        let controller = Controller::<ConfigMap>::new(factory.clone(), "standby");
        let task = tokio::spawn({
            let seen = Arc::clone(&seen);
            async move { controller.run(record, seen, CancellationToken::new()).await }
        });
        seen.wait_until("the term's first reconcile", |s| !s.is_empty())
            .await;
        assert_eq!(registered(&registry, "standby"), 1, "term {term}");
        task.abort();
        assert!(
            within("the aborted run", task)
                .await
                .unwrap_err()
                .is_cancelled()
        );
        assert_eq!(
            registered(&registry, "standby"),
            0,
            "C7: term {term}'s dropped run left its handler registered"
        );
    }
    factory.shutdown().await;
}

/// One reconcile of `failing`: when, and the `data.v` it read.
#[derive(Debug, Clone)]
struct Attempt {
    at: Instant,
    v: String,
}

/// Fails until the object says `fixed`.
async fn fail_until_fixed(
    req: Request<ConfigMap>,
    ctx: Arc<Context<Arc<Recorder<Attempt>>>>,
) -> Result<Action, String> {
    let v = req
        .object
        .as_ref()
        .and_then(|cm| cm.data.as_ref()?.get("v").cloned())
        .unwrap_or_default();
    ctx.data().push(Attempt {
        at: Instant::now(),
        v: v.clone(),
    });
    if v == "fixed" {
        Ok(Action::Done)
    } else {
        Err(format!("v = {v}"))
    }
}

/// C10: a key that fails waits out its backoff (300 ms, then 600 ms, 1.2 s) while its object
/// changes every 20 ms. No event runs it early: the reconciles are spaced by the limiter's
/// delays, each failure counts once, and the retry due at the end of a delay reads the latest
/// state (the fix written during the storm is what the last reconcile sees).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c10_events_do_not_cut_a_backoff_short_nor_grow_it() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    server.create(&cm(NS, "failing", "0")).unwrap();
    let base = Duration::from_millis(300);
    let mut registry = Registry::default();
    let controller =
        Controller::<ConfigMap>::new(SharedInformerFactory::new(server.client()), "held")
            .workers(2)
            .rate_limiter(ItemExponentialFailureRateLimiter::<ObjectKey>::new(
                base,
                Duration::from_secs(30),
            ))
            .metrics(&mut registry);
    let attempts = Recorder::<Attempt>::new();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (attempts, cancel) = (Arc::clone(&attempts), cancel.clone());
        async move { controller.run(fail_until_fixed, attempts, cancel).await }
    });
    attempts
        .wait_until("the first failure", |a| !a.is_empty())
        .await;
    // An event storm: a change every 20 ms for 1.5 s, then the fix.
    let api: kube::Api<ConfigMap> = kube::Api::namespaced(server.client(), NS);
    let storm_end = Instant::now() + Duration::from_millis(1500);
    let mut n = 0u32;
    while Instant::now() < storm_end {
        n += 1;
        let mut obj = api.get("failing").await.unwrap();
        obj.data = Some([("v".to_string(), n.to_string())].into());
        api.replace("failing", &Default::default(), &obj)
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut obj = api.get("failing").await.unwrap();
    obj.data = Some([("v".to_string(), "fixed".to_string())].into());
    api.replace("failing", &Default::default(), &obj)
        .await
        .unwrap();
    let all = attempts
        .wait_until("the reconcile that reads the fix", |a| {
            a.last().is_some_and(|a| a.v == "fixed")
        })
        .await;
    eprintln!(
        "{n} changes; reconciles at {:?}",
        all.iter().map(|a| a.at - all[0].at).collect::<Vec<_>>()
    );
    // Spaced by base * 2^i: an event never ran the key early, and each delay grew once.
    for (i, pair) in all.windows(2).enumerate() {
        let gap = pair[1].at - pair[0].at;
        let min = base * 2u32.pow(i as u32);
        assert!(
            gap >= min,
            "C10: reconcile {} came {gap:?} after the one before, inside its {min:?} backoff: {all:#?}",
            i + 1
        );
    }
    // 0, 0.3, 0.9 and 2.1 s after the first: at most four failures for ~75 events.
    let failures = all.len() - 1;
    assert!(
        failures <= 4,
        "C10: {failures} failures counted for {n} events"
    );
    let text = scrape(&registry);
    assert_eq!(
        sample(
            &text,
            r#"controller_runtime_reconcile_errors_total{controller="held"}"#
        ),
        Some(failures as f64)
    );
    cancel.cancel();
    within("shutdown", run).await.unwrap().unwrap();
}

/// How a controller run inside a leader's term ended.
#[derive(Debug, Clone, PartialEq)]
enum RunEnd {
    /// `run` returned, having drained and unregistered itself.
    Returned(Instant),
    /// Its future was dropped (the elector aborted the work past the drain limit).
    Dropped(Instant),
}

/// Records `Dropped` unless the run returned first.
struct DropWatch(Arc<Recorder<RunEnd>>, bool);

impl Drop for DropWatch {
    fn drop(&mut self) {
        if !self.1 {
            self.0.push(RunEnd::Dropped(Instant::now()));
        }
    }
}

/// A reconcile of 30 s that ignores cancellation (a slow external call).
async fn stuck(
    req: Request<ConfigMap>,
    ctx: Arc<Context<Arc<Recorder<String>>>>,
) -> Result<Action, String> {
    ctx.data().push(req.key.to_string());
    tokio::time::sleep(Duration::from_secs(30)).await;
    Ok(Action::Done)
}

/// C7, S6, S11: a controller run in a leader's term with a reconcile stuck for 30 s (its
/// shutdown timeout is the default 30 s). The leader is cut off and its term ends; the run
/// aborts the reconcile itself and returns within the term's drain limit (0.8 s here), so it
/// unregisters and releases what it holds, instead of being dropped by the elector at the
/// drain limit (before, it waited for its 30 s shutdown timeout and was aborted).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c7_s6_a_run_in_a_leader_s_term_drains_within_the_term_s_drain_limit() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    server.create(&cm(NS, "slow", "1")).unwrap();
    let factory = SharedInformerFactory::new(server.client());
    let elector = LeaderElector::new(
        client_with_agent(&server, "leader"),
        NS,
        "drain-lock",
        "leader",
        fast(),
    )
    .unwrap();
    let (seen, ends) = (Recorder::<String>::new(), Recorder::<RunEnd>::new());
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (seen, ends, cancel) = (Arc::clone(&seen), Arc::clone(&ends), cancel.clone());
        async move {
            elector
                .run(cancel, move |term| {
                    let controller = Controller::<ConfigMap>::new(factory.clone(), "drains");
                    let (seen, ends) = (Arc::clone(&seen), Arc::clone(&ends));
                    async move {
                        let mut watch = DropWatch(Arc::clone(&ends), false);
                        controller.run(stuck, seen, term).await.unwrap();
                        watch.1 = true;
                        ends.push(RunEnd::Returned(Instant::now()));
                    }
                })
                .await
                .unwrap();
        }
    });
    seen.wait_until("the stuck reconcile", |s| !s.is_empty())
        .await;
    let cut = Instant::now();
    server.faults().refuse_user_agent("leader");
    let ended = ends.wait_until("the run to end", |e| !e.is_empty()).await;
    let config = fast();
    match ended[0] {
        RunEnd::Returned(at) => assert!(
            at - cut <= config.renew_deadline + config.drain_limit(),
            "S6: returned {:?} after the cut",
            at - cut
        ),
        RunEnd::Dropped(at) => panic!(
            "C7/S6: the run did not drain within the drain limit; the elector dropped it {:?} after the cut",
            at - cut
        ),
    }
    server.faults().admit_user_agent("leader");
    cancel.cancel();
    within("the elector to stop", run).await.unwrap();
}
