//! A minimal `/metrics` endpoint serving a prometheus-client registry in the text format.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use parking_lot::Mutex;
use prometheus_client::registry::Registry;
use tokio_util::sync::CancellationToken;

/// Serves `GET /metrics` on `addr` until `cancel` is cancelled.
pub async fn serve(
    addr: SocketAddr,
    registry: Arc<Mutex<Registry>>,
    cancel: CancellationToken,
) -> anyhow::Result<()> {
    let app = Router::new()
        .route("/metrics", get(metrics))
        .with_state(registry);
    let listener = tokio::net::TcpListener::bind(addr).await?;
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { cancel.cancelled().await })
        .await?;
    Ok(())
}

async fn metrics(State(registry): State<Arc<Mutex<Registry>>>) -> impl IntoResponse {
    let mut body = String::new();
    let encoded = prometheus_client::encoding::text::encode(&mut body, &registry.lock());
    match encoded {
        Ok(()) => (
            StatusCode::OK,
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            body,
        )
            .into_response(),
        Err(err) => (StatusCode::INTERNAL_SERVER_ERROR, err.to_string()).into_response(),
    }
}
