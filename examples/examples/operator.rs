//! A complete operator on generated informers: each `Foo` owns a ConfigMap holding its message.
//!
//! With no cluster configured it starts informer-testserver in process (loopback, bearer token),
//! installs the CRD, creates sample Foos, shows the reconcile loop converging, edits and deletes a
//! Foo, then exits 0. The embedded server is a demo and test aid only: informer-testserver is a
//! dev-dependency of this crate (Cargo examples may use those), and everything it needs lives in
//! `run_embedded`; an operator binary keeps `run_on_cluster` and depends on informer-testserver
//! only in `[dev-dependencies]`, for its tests.
//!
//! ```sh
//! cargo run -p informer-examples --example operator
//! cargo run -p informer-examples --example operator -- --keep-running   # then: curl 127.0.0.1:9464/metrics
//! ```
//!
//! With `--kubeconfig PATH`, `KUBECONFIG`, or inside a pod, it runs against that cluster until
//! Ctrl-C (the `Foo` CRD must be installed there: `--print-crd | kubectl apply -f -`).
//! `--leader-elect` runs the controller only on the replica holding the Lease
//! `informer-rs-example-operator` (15 s / 10 s / 2 s, released on Ctrl-C), with warm caches on
//! every replica. `--shards N` instead splits the namespaces into N shards assigned over Leases
//! (`informer-rs-example-operator-shard-<i>`): run several replicas with the same N and each
//! caches and reconciles only its shards' namespaces (server-side sharded list and watch where
//! the API server has `ShardedListAndWatch`, filtered on the client elsewhere). On the embedded
//! server `--shards N` runs N replicas in process:
//!
//! ```sh
//! cargo run -p informer-examples --example operator -- --shards 3
//! # or several processes against one server:
//! cargo run -p informer-examples --example operator -- --keep-running   # writes a kubeconfig
//! cargo run -p informer-examples --example operator -- --kubeconfig /tmp/informer-rs-demo.kubeconfig --shards 4
//! ```

#![allow(clippy::print_stdout)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use anyhow::Context;
use clap::Parser;
use informer_examples::crd::Foo;
use informer_examples::demo;
use informer_examples::operator::{Operator, OperatorConfig, Sharding};
use informer_testserver::TestServer;
use kube::CustomResourceExt;
use tokio_util::sync::CancellationToken;

#[derive(Parser, Debug)]
#[command(about = "Example operator on informer-rs generated code")]
struct Args {
    /// Run against the cluster in this kubeconfig instead of the embedded API server.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Use the embedded API server even when KUBECONFIG is set.
    #[arg(long, conflicts_with = "kubeconfig")]
    embedded: bool,
    /// After the demo, keep the operator running and serve metrics until Ctrl-C.
    #[arg(long)]
    keep_running: bool,
    /// Where to serve Prometheus metrics (with --keep-running or on a real cluster).
    #[arg(long, default_value = "127.0.0.1:9464")]
    metrics_addr: SocketAddr,
    /// Watch only this namespace on a real cluster.
    #[arg(long)]
    namespace: Option<String>,
    /// Reconcile only while holding the Lease (identity: `POD_NAME`, `HOSTNAME`, or random).
    #[arg(long)]
    leader_elect: bool,
    /// The namespace of the Lease (default: `--namespace`, else `default`).
    #[arg(long)]
    leader_elect_namespace: Option<String>,
    /// Split the namespaces into this many shards shared by the replicas over Leases (on the
    /// embedded server: run this many replicas in process).
    #[arg(long, conflicts_with = "leader_elect", value_parser = clap::value_parser!(u32).range(1..))]
    shards: Option<u32>,
    /// Print the Foo CRD as YAML and exit.
    #[arg(long)]
    print_crd: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    if args.print_crd {
        println!("{}", serde_saphyr::to_string(&Foo::crd())?);
        return Ok(());
    }
    let real_cluster = args.kubeconfig.is_some()
        || (!args.embedded
            && (std::env::var_os("KUBECONFIG").is_some()
                || std::env::var_os("KUBERNETES_SERVICE_HOST").is_some()));
    if real_cluster {
        run_on_cluster(&args).await
    } else {
        run_embedded(&args).await
    }
}

async fn run_on_cluster(args: &Args) -> anyhow::Result<()> {
    let config = match &args.kubeconfig {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("reading {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?
        }
        None => kube::Config::infer().await?,
    };
    println!(
        "operator: running against {} (Ctrl-C to stop)",
        config.cluster_url
    );
    let client = kube::Client::try_from(config)?;
    let operator = Operator::new(
        client,
        OperatorConfig {
            namespace: args.namespace.clone(),
            leader_election: leader_election(args, args.namespace.as_deref()),
            sharding: sharding(args, args.namespace.as_deref(), None),
            ..Default::default()
        },
    )?;
    let cancel = CancellationToken::new();
    let metrics = tokio::spawn(informer_examples::metrics::serve(
        args.metrics_addr,
        Arc::clone(&operator.registry),
        cancel.clone(),
    ));
    let run = tokio::spawn(Arc::clone(&operator).run(cancel.clone()));
    tokio::signal::ctrl_c().await?;
    cancel.cancel();
    run.await??;
    metrics.await??;
    Ok(())
}

async fn run_embedded(args: &Args) -> anyhow::Result<()> {
    let token = format!("demo-{:016x}", rand_token());
    let server = TestServer::builder().bearer_token(token).start().await?;
    let client = server.client();
    println!(
        "[1/6] embedded API server at {} (bearer token required)",
        server.base_url()
    );

    demo::install(&client).await?;
    println!(
        "[2/6] installed CRD foos.example.com and namespace {}",
        demo::NAMESPACE
    );
    demo::create_samples(
        &client,
        &[("alpha", "hello"), ("beta", "hola"), ("gamma", "salut")],
    )
    .await?;
    println!("[3/6] created Foos alpha, beta, gamma; starting the operator");

    let replicas = args.shards.unwrap_or(1);
    let operators = (0..replicas)
        .map(|r| {
            Operator::new(
                client.clone(),
                OperatorConfig {
                    namespace: Some(demo::NAMESPACE.into()),
                    leader_election: leader_election(args, Some(demo::NAMESPACE)),
                    sharding: sharding(args, Some(demo::NAMESPACE), Some(r)),
                    ..Default::default()
                },
            )
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let operator = Arc::clone(&operators[0]);
    let cancel = CancellationToken::new();
    let runs: Vec<_> = operators
        .iter()
        .map(|op| tokio::spawn(Arc::clone(op).run(cancel.clone())))
        .collect();

    let state = demo::wait_converged(&client).await?;
    println!(
        "[4/6] converged: {} Foos ready, ConfigMaps {:?}",
        state.foos.len(),
        state.config_maps
    );

    demo::set_message(&client, "beta", "bonjour").await?;
    demo::delete_foo(&client, "gamma").await?;
    println!("[5/6] changed beta's message and deleted gamma");
    let state = demo::wait_converged(&client).await?;
    println!("[6/6] converged again: ConfigMaps {:?}", state.config_maps);

    let sum = |f: fn(&informer_examples::operator::Stats) -> u64| -> u64 {
        operators.iter().map(|op| f(op.stats())).sum()
    };
    println!(
        "done: {} reconciles, {} failed and retried, {} ConfigMap writes",
        sum(|s| s.reconciled.load(Ordering::Relaxed)),
        sum(|s| s.failed.load(Ordering::Relaxed)),
        sum(|s| s.writes.load(Ordering::Relaxed)),
    );

    if args.keep_running {
        let kubeconfig = std::env::temp_dir().join("informer-rs-demo.kubeconfig");
        server.write_kubeconfig(&kubeconfig)?;
        println!(
            "keeping the operator running: metrics on http://{}/metrics, \
             `kubectl --kubeconfig {} get foos -n {}`; Ctrl-C to stop",
            args.metrics_addr,
            kubeconfig.display(),
            demo::NAMESPACE
        );
        let metrics = tokio::spawn(informer_examples::metrics::serve(
            args.metrics_addr,
            Arc::clone(&operator.registry),
            cancel.clone(),
        ));
        tokio::signal::ctrl_c().await?;
        cancel.cancel();
        metrics.await??;
    } else {
        cancel.cancel();
    }
    for run in runs {
        run.await??;
    }
    server.shutdown().await;
    Ok(())
}

/// `(lease namespace, identity)` when `--leader-elect` is given.
fn leader_election(args: &Args, namespace: Option<&str>) -> Option<(String, String)> {
    args.leader_elect
        .then(|| (lease_namespace(args, namespace), identity()))
}

/// The sharding settings when `--shards` is given; `replica` names an in-process replica.
fn sharding(args: &Args, namespace: Option<&str>, replica: Option<u32>) -> Option<Sharding> {
    Some(Sharding {
        shards: args.shards?,
        lease_namespace: lease_namespace(args, namespace),
        identity: replica.map_or_else(identity, |r| format!("replica-{r}")),
        lease: Default::default(),
    })
}

/// Where the Leases live: `--leader-elect-namespace`, else the watched namespace, else `default`.
fn lease_namespace(args: &Args, namespace: Option<&str>) -> String {
    args.leader_elect_namespace
        .as_deref()
        .or(namespace)
        .unwrap_or("default")
        .to_owned()
}

/// This replica's identity: `POD_NAME`, `HOSTNAME`, or a random one.
fn identity() -> String {
    std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| format!("operator-{:08x}", rand_token() as u32))
}

/// A per-run token; not a secret worth a CSPRNG, the server only listens on loopback.
fn rand_token() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now())
}
