//! A controller run's life on informers that outlive it, against informer-testserver: a run
//! whose future is dropped leaves no handler behind (C7), and a key waiting out its backoff is
//! not reconciled early by events (C10).
//!
//! Run with `cargo test -p informer-controller --test controller_runs`.

// Test helpers outside #[test] fns may unwrap too (clippy's test allowance covers only #[test]).
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;

use informer_controller::{Action, Context, Controller, Request};
use informer_runtime::SharedInformerFactory;
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
            async move {
                controller
                    .run(record, seen, CancellationToken::new())
                    .await
            }
        });
        seen.wait_until("the term's first reconcile", |s| !s.is_empty())
            .await;
        assert_eq!(registered(&registry, "standby"), 1, "term {term}");
        task.abort();
        assert!(within("the aborted run", task).await.unwrap_err().is_cancelled());
        assert_eq!(
            registered(&registry, "standby"),
            0,
            "C7: term {term}'s dropped run left its handler registered"
        );
    }
    factory.shutdown().await;
}
