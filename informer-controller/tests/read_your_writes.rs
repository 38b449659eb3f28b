//! Read your own writes (K1-K4 in docs/behaviour.md section 16), and the controller's informer
//! lifetimes on a shared factory (C7) and finalizer removal (C9), over HTTP against
//! informer-testserver.
//!
//! The stale-read scenario: the test server answers every WATCH request only after a delay, so
//! after the initial LIST the informer's cache lags the server. A reconcile that writes and
//! requeues is then run again before its write reached the cache.

// Test helpers outside #[test] fns may unwrap too (clippy's test allowance covers only #[test]).
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use informer_controller::finalizer::{self, Event};
use informer_controller::{Action, Context, Controller, Request, WriteRecorder};
use informer_runtime::SharedInformerFactory;
use informer_runtime::reflector::{InitialListStrategy, ReflectorConfig};
use informer_runtime::shard::{Shard, ShardField};
use informer_testserver::{FaultTarget, GroupResource, TestServer};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, Patch, PatchParams};
use prometheus_client::registry::Registry;
use support::*;
use tokio_util::sync::CancellationToken;

const NS: &str = "ryw";

/// What one reconcile saw: the counter in the cached copy, and when.
#[derive(Debug, Clone)]
struct Seen {
    count: u32,
    at: Instant,
}

fn count_of(cm: &ConfigMap) -> u32 {
    cm.data
        .as_ref()
        .and_then(|d| d.get("v"))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Counts `data.v` of each ConfigMap up to 3, one patch per reconcile, requeueing at once:
/// each reconcile must see the previous one's write.
async fn count_up(
    req: Request<ConfigMap>,
    ctx: Arc<Context<Arc<Recorder<Seen>>>>,
) -> Result<Action, kube::Error> {
    let Some(cm) = req.object.clone() else {
        return Ok(Action::Done);
    };
    let count = count_of(&cm);
    ctx.data().push(Seen {
        count,
        at: Instant::now(),
    });
    if count >= 3 {
        return Ok(Action::Done);
    }
    let api: Api<ConfigMap> = Api::namespaced(ctx.client().clone(), NS);
    let patch = serde_json::json!({"data": {"v": (count + 1).to_string()}});
    let written = api
        .patch(req.name(), &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    ctx.recorder(&req.key).record(&written);
    Ok(Action::Requeue)
}

/// `stale_sync_skips_total` of `controller` (0 before the first).
fn stale_sync_skips(registry: &Registry, controller: &str) -> f64 {
    let series = format!("stale_sync_skips_total{{controller=\"{controller}\"}}");
    sample(&scrape(registry), &series).unwrap_or(0.0)
}

/// A server whose WATCHes open `watch_delay` late, with ConfigMap `NS/counter` at 0.
async fn lagging_server(watch_delay: Duration) -> TestServer {
    let server = TestServer::start().await.unwrap();
    server.create(&cm(NS, "counter", "0")).unwrap();
    server.faults().delay(FaultTarget::Watch, watch_delay);
    server
}

/// A factory that syncs with a paged LIST (not delayed), so its caches lag from the sync on,
/// until the delayed WATCH opens.
fn paged_factory(server: &TestServer) -> SharedInformerFactory {
    SharedInformerFactory::builder(server.client())
        .reflector_config(ReflectorConfig {
            strategy: InitialListStrategy::ListWatch,
            ..ReflectorConfig::default()
        })
        .build()
}

/// Runs `controller` with [`count_up`] until the counter reached 3; returns what each
/// reconcile saw.
async fn count_to_three(controller: Controller<ConfigMap>) -> Vec<Seen> {
    let seen = Recorder::<Seen>::new();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let seen = Arc::clone(&seen);
        let cancel = cancel.clone();
        async move { controller.run(count_up, seen, cancel).await }
    });
    let log = seen
        .wait_until("a reconcile that sees 3", |s| {
            s.iter().any(|s| s.count == 3)
        })
        .await;
    cancel.cancel();
    within("the controller to stop", run)
        .await
        .unwrap()
        .unwrap();
    log
}

/// K2, K3: with the guard (the default) no reconcile runs on a copy older than the previous
/// reconcile's write: the counts seen go 0, 1, 2, 3 with no repeat, and each wait is counted in
/// `stale_sync_skips_total`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconcile_never_starts_on_a_copy_older_than_its_own_write() {
    init_tracing();
    let server = lagging_server(Duration::from_millis(800)).await;
    let factory = paged_factory(&server);
    let mut registry = Registry::default();
    let controller = Controller::<ConfigMap>::new(factory, "count-up").metrics(&mut registry);
    let log = count_to_three(controller).await;
    let counts: Vec<u32> = log.iter().map(|s| s.count).collect();
    // The write of 3 and the requeue after it may both reconcile 3; a stale read would repeat a
    // smaller count.
    let below: Vec<u32> = counts.iter().copied().filter(|c| *c < 3).collect();
    assert_eq!(
        below,
        [0, 1, 2],
        "every reconcile saw the previous write: {counts:?}"
    );
    assert!(counts.is_sorted(), "{counts:?}");
    let skips = stale_sync_skips(&registry, "count-up");
    assert!(
        skips >= 1.0,
        "the wait for the lagging watch is counted: {skips}"
    );
}

/// The same scenario without the guard reconciles on the stale copy: the test above is what the
/// guard changes (kube-runtime's behaviour).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_guard_the_same_controller_reads_its_stale_cache() {
    init_tracing();
    let server = lagging_server(Duration::from_millis(800)).await;
    let factory = paged_factory(&server);
    let controller = Controller::<ConfigMap>::new(factory, "count-up").read_your_writes(false);
    let log = count_to_three(controller).await;
    let zeros = log.iter().filter(|s| s.count == 0).count();
    assert!(
        zeros >= 2,
        "a requeue ran before the write reached the cache: {log:?}"
    );
}

/// K3: the wait is bounded; past the timeout the reconcile runs anyway (on the older state).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wait_for_own_writes_is_bounded() {
    init_tracing();
    let server = lagging_server(Duration::from_secs(3)).await;
    let factory = paged_factory(&server);
    let bound = Duration::from_millis(300);
    let controller =
        Controller::<ConfigMap>::new(factory, "count-up").read_your_writes_timeout(bound);
    let log = count_to_three(controller).await;
    let [first, second, ..] = &log[..] else {
        panic!("at least two reconciles: {log:?}");
    };
    assert_eq!(
        second.count, 0,
        "the watch opens after 3 s, so the bounded wait ended before the write was cached"
    );
    let waited = second.at.duration_since(first.at);
    assert!(
        waited >= bound && waited < Duration::from_secs(3),
        "waited {waited:?} (bound {bound:?})"
    );
}

/// A running controller over ConfigMaps that logs the name of each key it reconciles.
struct Logging {
    seen: Arc<Recorder<String>>,
    cancel: CancellationToken,
    run: tokio::task::JoinHandle<informer_controller::Result<()>>,
}

impl Logging {
    fn start(factory: &SharedInformerFactory, name: &str) -> Self {
        let seen = Recorder::<String>::new();
        let cancel = CancellationToken::new();
        let controller = Controller::<ConfigMap>::new(factory.clone(), name);
        let run = tokio::spawn({
            let (seen, cancel) = (Arc::clone(&seen), cancel.clone());
            async move {
                controller
                    .run(
                        |req: Request<ConfigMap>,
                         ctx: Arc<Context<Arc<Recorder<String>>>>| async move {
                            ctx.data().push(req.name().to_owned());
                            Ok::<_, kube::Error>(Action::Done)
                        },
                        seen,
                        cancel,
                    )
                    .await
            }
        });
        Logging { seen, cancel, run }
    }

    async fn saw(&self, name: &str) {
        self.seen
            .wait_until(&format!("a reconcile of {name}"), |s| {
                s.iter().any(|n| n == name)
            })
            .await;
    }

    async fn stop(self) {
        self.cancel.cancel();
        within("the controller to stop", self.run)
            .await
            .unwrap()
            .unwrap();
    }
}

/// C7: two controllers on one factory share its informers; stopping one leaves the
/// other's informers running (before, the first to stop removed the informer it had started).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_one_controller_leaves_the_informers_another_uses() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    server.create(&cm(NS, "a", "0")).unwrap();
    let factory = SharedInformerFactory::new(server.client());
    let first = Logging::start(&factory, "first");
    first.saw("a").await;
    let second = Logging::start(&factory, "second");
    second.saw("a").await;
    first.stop().await;
    server.create(&cm(NS, "b", "0")).unwrap();
    second.saw("b").await;
    second.stop().await;
    assert!(
        factory.existing_informer::<ConfigMap>().is_none(),
        "the last run out stops the informer a run started"
    );
}

/// C7: a run starts only the informers it reads and stops them when it returns;
/// other informers of the factory are left alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_starts_and_stops_only_what_it_reads() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    server.create(&cm(NS, "a", "0")).unwrap();
    let factory = SharedInformerFactory::new(server.client());
    let secrets = factory.informer_for::<Secret>();
    let only = Logging::start(&factory, "only-configmaps");
    only.saw("a").await;
    assert!(
        !secrets.is_started(),
        "the controller does not start informers it does not read"
    );
    let configmaps = factory
        .existing_informer::<ConfigMap>()
        .expect("the run's informer");
    only.stop().await;
    assert!(configmaps.is_stopped(), "what the run started is stopped");
    assert!(factory.existing_informer::<ConfigMap>().is_none());
    assert!(!secrets.is_started() && factory.existing_informer::<Secret>().is_some());
}

/// C9: removing the finalizer from an object that is already gone (a second
/// cleanup of a completed deletion) is success, not a failed reconcile.
#[tokio::test]
async fn removing_a_finalizer_from_a_deleted_object_succeeds() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), NS);
    let mut stale = cm(NS, "gone", "0");
    stale.metadata.finalizers = Some(vec!["test.example.com/cleanup".into()]);
    stale.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::now()));
    stale.metadata.resource_version = Some("7".into());
    let cleaned = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let action = finalizer::finalizer(
        &api,
        "test.example.com/cleanup",
        Arc::new(stale),
        &WriteRecorder::detached(),
        |event| {
            let cleaned = Arc::clone(&cleaned);
            async move {
                assert!(matches!(event, Event::Cleanup(_)));
                cleaned.store(true, std::sync::atomic::Ordering::SeqCst);
                Ok::<_, std::io::Error>(Action::Done)
            }
        },
    )
    .await
    .expect("a 404 on removal means the deletion completed");
    assert_eq!(action, Action::Done);
    assert!(cleaned.load(std::sync::atomic::Ordering::SeqCst));
}

/// K1: a recorded write whose resourceVersion is not a number (an API server or proxy with
/// opaque versions) cannot be compared, so the guard is off for it: the next reconcile runs at
/// once, without an error, although the watch that would deliver the write is held for 3 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_incomparable_resource_version_turns_the_guard_off_for_that_write() {
    init_tracing();
    let server = lagging_server(Duration::from_secs(3)).await;
    let factory = paged_factory(&server);
    let mut registry = Registry::default();
    let controller = Controller::<ConfigMap>::new(factory, "opaque").metrics(&mut registry);
    let seen = Recorder::<Seen>::new();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (seen, cancel) = (Arc::clone(&seen), cancel.clone());
        async move {
            controller
                .run(
                    |req: Request<ConfigMap>, ctx: Arc<Context<Arc<Recorder<Seen>>>>| async move {
                        let Some(cm) = req.object.clone() else {
                            return Ok(Action::Done);
                        };
                        let count = count_of(&cm);
                        ctx.data().push(Seen {
                            count,
                            at: Instant::now(),
                        });
                        if count > 0 || ctx.data().snapshot().len() > 1 {
                            return Ok(Action::Done);
                        }
                        let api: Api<ConfigMap> = Api::namespaced(ctx.client().clone(), NS);
                        let patch = serde_json::json!({"data": {"v": "1"}});
                        let mut written = api
                            .patch(req.name(), &PatchParams::default(), &Patch::Merge(&patch))
                            .await?;
                        written.metadata.resource_version = Some("opaque-v1".into());
                        ctx.recorder(&req.key).record(&written);
                        Ok::<_, kube::Error>(Action::Requeue)
                    },
                    seen,
                    cancel,
                )
                .await
        }
    });
    let log = seen
        .wait_until("the requeued reconcile", |s| s.len() >= 2)
        .await;
    cancel.cancel();
    within("the controller to stop", run)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        log[1].count, 0,
        "the cache still lags: nothing waited for it"
    );
    assert!(
        log[1].at.duration_since(log[0].at) < Duration::from_secs(2),
        "no wait for an incomparable version: {log:?}"
    );
    let skips = stale_sync_skips(&registry, "opaque");
    assert_eq!(skips, 0.0);
}

/// Where the first reconcile of [`write_elsewhere`] writes an object its factory's informer
/// never stores.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Elsewhere {
    /// A Secret: the factory has a Secret informer (a lister asked for it), never started.
    Unstarted,
    /// A Secret: the factory's Secret informer runs, but every Secret request is forbidden
    /// (an RBAC 403), so it never syncs.
    Unsynced,
    /// A ConfigMap in another namespace than the factory's.
    OtherNamespace,
    /// A ConfigMap outside the factory's label selector.
    Label,
    /// A ConfigMap outside the factory's field selector.
    Field,
    /// A ConfigMap in a namespace of another shard than the factory's.
    Shard,
}

/// The case, a namespace the factory does not admit, and the reconciles' instants.
type ElsewhereData = (Elsewhere, String, Arc<Recorder<Instant>>);

/// The first reconcile writes per `case` (into `foreign`, a namespace the factory does not
/// admit where that matters), records the write and requeues; later ones log their instant.
async fn write_elsewhere(
    req: Request<ConfigMap>,
    ctx: Arc<Context<ElsewhereData>>,
) -> Result<Action, kube::Error> {
    let (case, foreign, log) = ctx.data();
    log.push(Instant::now());
    if log.snapshot().len() > 1 {
        return Ok(Action::Done);
    }
    let client = ctx.client().clone();
    let recorder = ctx.recorder(&req.key);
    let mut obj = cm(NS, "beside", "1");
    match case {
        Elsewhere::Unstarted => {
            let mut secret = Secret::default();
            secret.metadata.name = Some("beside".into());
            let api: Api<Secret> = Api::namespaced(client, NS);
            recorder.record(&api.create(&Default::default(), &secret).await?);
            return Ok(Action::Requeue);
        }
        Elsewhere::Unsynced => {
            // The server refuses Secrets here, so this stands for the Secret a create
            // returned (a role may grant create but not list and watch).
            let mut secret = Secret::default();
            secret.metadata.name = Some("beside".into());
            secret.metadata.namespace = Some(NS.into());
            secret.metadata.resource_version = Some("1000000".into());
            recorder.record(&secret);
            return Ok(Action::Requeue);
        }
        Elsewhere::OtherNamespace | Elsewhere::Shard => {
            obj.metadata.namespace = Some(foreign.clone());
        }
        Elsewhere::Label => {
            obj.metadata.labels = Some([("app".to_string(), "other".to_string())].into());
        }
        Elsewhere::Field => obj.metadata.name = Some("hidden".into()),
    }
    let ns = obj.metadata.namespace.clone().unwrap_or_default();
    let api: Api<ConfigMap> = Api::namespaced(client, &ns);
    recorder.record(&api.create(&Default::default(), &obj).await?);
    Ok(Action::Requeue)
}

/// K3: a reconcile waits only for writes a running, synced informer of the written kind will
/// store. A write to a kind whose informer is not running or never synced (its requests
/// forbidden), or outside the factory's namespace, label selector, field selector or shard,
/// never reaches a store; recorded, it held the next reconcile for the whole timeout (3 s here,
/// 5 s by default), or until a bookmark advanced the store (kube-apiserver sends one about
/// every minute). The guard's waits are counted: none here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_the_informers_never_store_is_not_waited_for() {
    init_tracing();
    // kube-apiserver's bookmark interval (about a minute): a bookmark does not end the wait.
    let server = TestServer::builder()
        .bookmark_interval(Duration::from_secs(60))
        .start()
        .await
        .unwrap();
    server
        .create(&config_map(NS, "counter", "0", &[("app", "ryw")]))
        .unwrap();
    let home = (0..2)
        .map(|i| Shard::of(i, 2, ShardField::Namespace).unwrap())
        .find(|s| s.admits(NS))
        .unwrap();
    let foreign = (0..)
        .map(|i| format!("other-{i}"))
        .find(|ns| !home.admits(ns))
        .unwrap();
    let timeout = Duration::from_secs(3);
    let secrets = GroupResource::new("", "secrets");
    for case in [
        Elsewhere::Unstarted,
        Elsewhere::Unsynced,
        Elsewhere::OtherNamespace,
        Elsewhere::Label,
        Elsewhere::Field,
        Elsewhere::Shard,
    ] {
        let builder = SharedInformerFactory::builder(server.client());
        let factory = match case {
            Elsewhere::Unstarted | Elsewhere::Unsynced => builder.build(),
            Elsewhere::OtherNamespace => builder.namespace(NS).build(),
            Elsewhere::Label => builder
                .tweak_list_options(|p| p.label_selector = Some("app=ryw".into()))
                .build(),
            Elsewhere::Field => builder
                .tweak_list_options(|p| p.field_selector = Some("metadata.name!=hidden".into()))
                .build(),
            Elsewhere::Shard => builder.shard(home.clone()).build(),
        };
        let secret_informer = factory.informer_for::<Secret>();
        if case == Elsewhere::Unsynced {
            server.faults().forbid(secrets.clone());
            factory.start();
            wait_until("the Secret informer to start", || {
                secret_informer.is_started()
            })
            .await;
        }
        let mut registry = Registry::default();
        let controller = Controller::<ConfigMap>::new(factory.clone(), "elsewhere")
            .read_your_writes_timeout(timeout)
            .metrics(&mut registry);
        let log = Recorder::<Instant>::new();
        let cancel = CancellationToken::new();
        let run = tokio::spawn({
            let (data, cancel) = ((case, foreign.clone(), Arc::clone(&log)), cancel.clone());
            async move { controller.run(write_elsewhere, data, cancel).await }
        });
        let times = log
            .wait_until("the requeued reconcile", |l| l.len() >= 2)
            .await;
        cancel.cancel();
        within("the controller to stop", run)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            stale_sync_skips(&registry, "elsewhere"),
            0.0,
            "K3 ({case:?}): the guard waited for a write no informer stores"
        );
        let gap = times[1] - times[0];
        assert!(
            gap < Duration::from_secs(1),
            "K3 ({case:?}): the requeue waited {gap:?} for a write no informer stores"
        );
        if case == Elsewhere::Unsynced {
            assert!(
                secret_informer.is_started() && !secret_informer.has_synced(),
                "the Secret informer ran unsynced throughout"
            );
            factory.shutdown().await;
            server.faults().allow(&secrets);
        }
        // Clean up for the next case.
        let _ = server.delete::<Secret>(Some(NS), "beside");
        for (ns, name) in [(NS, "beside"), (NS, "hidden"), (foreign.as_str(), "beside")] {
            let _ = server.delete::<ConfigMap>(Some(ns), name);
        }
    }
}
