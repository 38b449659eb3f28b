//! An in-memory Kubernetes API server that speaks the real HTTP protocol.
//!
//! `kube::Client`, kube-runtime's `watcher`/`reflector` and `kubectl` work against it unchanged.
//! Every test, example and benchmark of the workspace runs through it.
//!
//! ```no_run
//! # async fn demo() -> Result<(), informer_testserver::Error> {
//! use informer_testserver::{FaultTarget, TestServer};
//! use k8s_openapi::api::core::v1::ConfigMap;
//!
//! let server = TestServer::start().await?;
//! let mut cm = ConfigMap::default();
//! cm.metadata.name = Some("seed".into());
//! server.create(&cm)?; // same path as an HTTP create: gets an RV and a watch event
//! let api: kube::Api<ConfigMap> = kube::Api::namespaced(server.client(), "default");
//! server.faults().fail_next(FaultTarget::Watch, http::StatusCode::TOO_MANY_REQUESTS, Some(1), 1);
//! # let _ = api;
//! # Ok(()) }
//! ```
//!
//! See the crate README for the protocol coverage, the deviations from kube-apiserver, and the
//! measured throughput.

mod clock;
mod crd;
mod error;
mod faults;
mod http;
mod log;
mod ops;
mod patch;
mod printers;
mod protobuf;
mod resources;
mod schema;
mod seed;
mod selectors;
mod server;
mod shard;
mod state;
mod status;
mod store;

pub use error::Error;
pub use faults::{FaultTarget, Faults, GroupResource, HostileResponse};
pub use log::{QueryParams, RequestRecord, Verb};
pub use resources::{ResourceInfo, builtin_resources};
pub use server::{TestServer, TestServerBuilder};
pub use shard::fnv1a64 as shard_hash;
pub use status::ApiError;

/// Encodes an object's JSON (with `apiVersion` and `kind`) as Kubernetes protobuf (`k8s\0` +
/// `runtime.Unknown`), as the server answers a client that accepts only protobuf; for tests of
/// protobuf readers (informer-proto's T2 tests). The error is the reason, as text.
pub fn encode_protobuf(object: &serde_json::Value) -> Result<Vec<u8>, String> {
    protobuf::encode_object(object).map_err(|e| e.to_string())
}

/// Decodes a Kubernetes protobuf object (`k8s\0` + `runtime.Unknown`) into the JSON the server
/// stores for it, `apiVersion` and `kind` included. The error is the reason, as text.
pub fn decode_protobuf(body: &[u8]) -> Result<serde_json::Value, String> {
    protobuf::decode_object(body).map_err(|e| e.to_string())
}
