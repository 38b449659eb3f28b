//! The operator binary: the controller against the cluster of KUBECONFIG (or in-cluster).

use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let client = kube::Client::try_default().await?; // KUBECONFIG, ~/.kube/config or in-cluster
    let stop = CancellationToken::new();
    tokio::spawn({
        let stop = stop.clone();
        async move {
            let _ = tokio::signal::ctrl_c().await;
            stop.cancel(); // finish in-flight reconciles, then return
        }
    });
    widget_operator::run(client, stop).await?;
    Ok(())
}
