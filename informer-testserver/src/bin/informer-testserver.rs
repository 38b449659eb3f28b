//! Standalone informer-testserver for demos, `kubectl` and tests in other languages:
//! `cargo install informer-testserver --features cli`, then `informer-testserver --port 8080
//! [--seed DIR] [--token T]` (in this repository: `cargo run -p informer-testserver --features cli
//! -- --port 8080`). It prints `url: <base URL>` and `kubeconfig: <path>` on stdout, one line each,
//! once it accepts connections, and serves until Ctrl-C.

// The two lines on stdout are the binary's interface to scripts.
#![allow(clippy::print_stdout)]

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use informer_testserver::TestServer;

/// Command-line flags.
#[derive(Debug, Parser)]
#[command(
    name = "informer-testserver",
    about = "In-memory Kubernetes API server for tests and demos"
)]
struct Args {
    /// Port to listen on (0: a free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    bind: IpAddr,
    /// A folder of YAML/JSON manifests to load at start (CRDs first).
    #[arg(long)]
    seed: Option<PathBuf>,
    /// Require this bearer token.
    #[arg(long)]
    token: Option<String>,
    /// Where to write the kubeconfig (default: a file in the temp dir named after the port).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Events kept for watch replay.
    #[arg(long, default_value_t = 100_000)]
    history_size: usize,
    /// Interval of BOOKMARK events, in milliseconds.
    #[arg(long, default_value_t = 1_000)]
    bookmark_interval_ms: u64,
    /// Page LISTs at resourceVersion "0" too, as a kube-apiserver without its watch cache.
    #[arg(long)]
    no_watch_cache: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let args = Args::parse();
    let mut builder = TestServer::builder()
        .port(args.port)
        .bind_address(args.bind)
        .history_size(args.history_size)
        .bookmark_interval(Duration::from_millis(args.bookmark_interval_ms))
        .watch_cache(!args.no_watch_cache);
    if let Some(t) = &args.token {
        builder = builder.bearer_token(t.clone());
    }
    let server = builder.start().await.context("starting the server")?;
    if let Some(dir) = &args.seed {
        let n = server
            .seed_dir(dir)
            .with_context(|| format!("seeding from {}", dir.display()))?;
        eprintln!("seeded {n} objects from {}", dir.display());
    }
    let path = args.kubeconfig.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!(
            "informer-testserver-{}.kubeconfig",
            server.addr().port()
        ))
    });
    server
        .write_kubeconfig(&path)
        .with_context(|| format!("writing {}", path.display()))?;
    println!("url: {}", server.base_url());
    println!("kubeconfig: {}", path.display());
    eprintln!("try: kubectl --kubeconfig {} get pods -A", path.display());
    tokio::signal::ctrl_c()
        .await
        .context("waiting for Ctrl-C")?;
    server.shutdown().await;
    Ok(())
}
