//! Convergence under faults: thousands of random writes while watches are closed, expired and fed malformed lines; the cache and every handler end equal to the server.
//!
//! Run with `cargo test -p informer-runtime --test informer_convergence`. The seed is printed;
//! set `CONVERGENCE_SEED` to replay one.

mod informer_support;

use std::collections::BTreeMap;

use informer_runtime::informer::HandlerOptions;
use informer_support::*;
use informer_testserver::TestServer;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio_util::sync::CancellationToken;

const KEYS: usize = 40;
const OPS: usize = 2500;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn r9_r12_d5_h10_cache_and_handlers_converge_on_the_server_under_faults() {
    init_tracing();
    let seed: u64 = std::env::var("CONVERGENCE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    println!("CONVERGENCE_SEED={seed}");
    let mut rng = StdRng::seed_from_u64(seed);

    let server = TestServer::start().await.expect("testserver");
    let w = Writer::new(server.client(), "default");
    let inf = informer(server.client(), |c| c.reflector.page_size = 7);
    let (plain, coalescing) = (Recorder::new(), Recorder::new());
    let reg1 = inf.add_event_handler(plain.clone()).unwrap();
    // A tiny backlog exercises coalescing (H10) while faults fire.
    let reg2 = inf
        .add_event_handler_with(coalescing.clone(), HandlerOptions::new().backlog_max(4))
        .unwrap();
    let cancel = CancellationToken::new();
    let task = inf.start(cancel.clone());

    let mut present = [false; KEYS];
    for (i, p) in present.iter_mut().enumerate().take(KEYS / 2) {
        w.create(&format!("k{i:02}"), "0").await;
        *p = true;
    }
    assert!(
        tokio::time::timeout(WAIT, reg1.wait_for_sync())
            .await
            .unwrap(),
        "synced before the informer stopped"
    );
    assert!(
        tokio::time::timeout(WAIT, reg2.wait_for_sync())
            .await
            .unwrap(),
        "synced before the informer stopped"
    );

    server.faults().close_watches_after(Some(40));
    for op in 0..OPS {
        let i = rng.random_range(0..KEYS);
        let name = format!("k{i:02}");
        if !present[i] {
            w.create(&name, &op.to_string()).await;
            present[i] = true;
        } else if rng.random_bool(0.7) {
            w.set(&name, &op.to_string()).await;
        } else {
            w.delete(&name).await;
            present[i] = false;
        }
        match op % 500 {
            123 => server.faults().expire_open_watches(),
            250 => server.faults().malformed_next_watch_event(),
            377 => server.faults().close_open_watches(),
            _ => {}
        }
    }
    server.faults().reset();
    server.faults().close_watches_after(None);

    let truth = server_state(server.client()).await;
    assert_eq!(truth.len(), present.iter().filter(|p| **p).count());
    let indexer = inf.indexer();
    // Handlers are notified after the store (H2), so re-checking on each event is enough.
    plain
        .wait_for("the cache to equal the server", |_| {
            cache_state(&indexer) == truth
        })
        .await;
    let expected: BTreeMap<String, Option<String>> = truth
        .iter()
        .map(|(k, v)| (k.clone(), Some(v.clone())))
        .collect();
    for (name, rec) in [("plain", &plain), ("coalescing", &coalescing)] {
        rec.wait_for(name, |e| live(view_of(e)) == expected).await;
    }
    let counters = inf.reflector_handle().unwrap().counters();
    println!(
        "{counters:?}; coalesced by the small backlog: {}",
        reg2.coalesced()
    );
    assert!(
        counters.watch_requests > 10,
        "faults forced re-watches: {counters:?}"
    );
    assert!(
        counters.relists >= 1,
        "the 410 forced a relist: {counters:?}"
    );
    cancel.cancel();
    tokio::time::timeout(WAIT, task).await.unwrap().unwrap();
}

/// A handler's view without deleted keys.
fn live(view: BTreeMap<String, Option<String>>) -> BTreeMap<String, Option<String>> {
    view.into_iter().filter(|(_, v)| v.is_some()).collect()
}
