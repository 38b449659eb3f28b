//! kube-runtime interop (KR5): a real kube-runtime `Controller` and `reflector` consume our
//! shared informer's events over HTTP, and the server sees one watch, the informer's own.

// Test helpers outside #[test] fns may unwrap too (clippy's test allowance covers only #[test]).
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;

use futures::StreamExt;
use informer_controller::interop::watcher_events;
use informer_runtime::SharedInformerFactory;
use informer_testserver::{TestServer, Verb};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::{WatchStreamExt, watcher};
use support::*;
use tokio_util::sync::CancellationToken;

const NS: &str = "default";

/// A watcher event reduced to its kind and object name, for comparing sequences.
fn describe(e: &watcher::Event<ConfigMap>) -> String {
    let name = |cm: &ConfigMap| cm.metadata.name.clone().unwrap_or_default();
    match e {
        watcher::Event::Init => "Init".into(),
        watcher::Event::InitApply(cm) => format!("InitApply {}", name(cm)),
        watcher::Event::InitDone => "InitDone".into(),
        watcher::Event::Apply(cm) => format!("Apply {}", name(cm)),
        watcher::Event::Delete(cm) => format!("Delete {}", name(cm)),
    }
}

#[derive(Debug, thiserror::Error)]
#[error("never")]
struct Never;

#[tokio::test]
async fn k5_a_kube_runtime_controller_runs_on_our_shared_informer_with_one_watch() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    for name in ["a", "b", "c"] {
        server.create(&cm(NS, name, "x")).unwrap();
    }
    let factory = SharedInformerFactory::new(server.client());
    let informer = factory.informer_for::<ConfigMap>();

    let events_log: Arc<Recorder<String>> = Recorder::new();
    let reconciled: Arc<Recorder<String>> = Recorder::new();
    let (reader, writer) = reflector::store::<ConfigMap>();
    let el = Arc::clone(&events_log);
    // Exactly what one writes for `watcher(api, config)`, fed by the informer instead.
    let trigger = reflector::reflector(writer, watcher_events(&informer).unwrap())
        .inspect(move |e| {
            if let Ok(e) = e {
                el.push(describe(e));
            }
        })
        .applied_objects();
    let cancel = CancellationToken::new();
    let controller = Controller::for_stream(trigger, reader.clone())
        .graceful_shutdown_on(cancel.clone().cancelled_owned())
        .run(
            |cm: Arc<ConfigMap>, ctx: Arc<Recorder<String>>| async move {
                ctx.push(cm.metadata.name.clone().unwrap_or_default());
                Ok::<_, Never>(Action::await_change())
            },
            |_, _, _| Action::await_change(),
            Arc::clone(&reconciled),
        )
        .for_each(|_| std::future::ready(()));
    let controller = tokio::spawn(controller);
    factory.start();

    reconciled
        .wait_until("the initial objects reconciled", |l| {
            ["a", "b", "c"].iter().all(|n| l.iter().any(|x| x == n))
        })
        .await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), NS);
    api.create(&PostParams::default(), &cm(NS, "d", "x"))
        .await
        .unwrap();
    reconciled
        .wait_until("a live create reconciled", |l| l.iter().any(|x| x == "d"))
        .await;
    api.delete("a", &DeleteParams::default()).await.unwrap();
    let log = events_log
        .wait_until("the delete", |l| l.iter().any(|x| x == "Delete a"))
        .await;
    assert!(
        reader.get(&ObjectRef::new("a").within(NS)).is_none(),
        "kube's store dropped it"
    );
    assert!(reader.get(&ObjectRef::new("d").within(NS)).is_some());

    let mut initial: Vec<String> = log[1..4].to_vec();
    initial.sort();
    assert_eq!(log[0], "Init");
    assert_eq!(initial, ["InitApply a", "InitApply b", "InitApply c"]);
    assert_eq!(log[4], "InitDone");
    assert_eq!(&log[5..], ["Apply d", "Delete a"]);

    // A late subscriber gets the cache as its initial list, still on the same watch (H5).
    let late: Vec<String> = watcher_events(&informer)
        .unwrap()
        .take(5)
        .map(|e| describe(&e.unwrap()))
        .collect()
        .await;
    assert_eq!(late[0], "Init");
    assert_eq!(late[4], "InitDone");

    let requests = server.requests();
    let count = |verb: Verb| {
        requests
            .iter()
            .filter(|r| r.verb == verb && r.path.ends_with("/configmaps"))
            .count()
    };
    assert_eq!(
        count(Verb::Watch),
        1,
        "kube-runtime opened no watch of its own"
    );
    // V1: the factory's informer starts from a streaming list, so no LIST at all.
    assert_eq!(count(Verb::List), 0);

    cancel.cancel();
    within("kube-runtime controller shutdown", controller)
        .await
        .unwrap();
    factory.shutdown().await;
}
