//! The operator binary: the controller against the cluster of KUBECONFIG (or in-cluster).
//!
//! Logs go to stdout, filtered by `RUST_LOG` (default `info`: the controller's start, its caches
//! syncing, failed reconciles and its stop; `RUST_LOG=informer_runtime=debug,info` for more).

use tokio_util::sync::CancellationToken;
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt().with_env_filter(filter).init();
    let client = kube::Client::try_default().await?; // KUBECONFIG, ~/.kube/config or in-cluster
    let stop = CancellationToken::new();
    tokio::spawn({
        let stop = stop.clone();
        async move {
            let _ = tokio::signal::ctrl_c().await;
            tracing::info!("interrupted: finishing in-flight reconciles");
            stop.cancel(); // finish in-flight reconciles, then return
        }
    });
    if let Err(err) = widget_operator::run(client, stop).await {
        tracing::error!(error = %err, "the operator stopped");
        return Err(err.into());
    }
    Ok(())
}
