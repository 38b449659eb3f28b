//! An in-memory Kubernetes API server that speaks the real HTTP protocol, for tests.
//!
//! `kube::Client`, kube-runtime's `watcher`/`reflector` and `kubectl` work against it unchanged:
//! LIST with consistent pages, WATCH with bookmarks and 410s, resourceVersions, CRDs served as
//! soon as they are created, status subresources, finalizers, patches, protobuf and gzip. Put it
//! in `[dev-dependencies]`; an operator binary has no use for it.
//!
//! # Quick start
//!
//! ```no_run
//! # async fn demo() -> Result<(), informer_testserver::Error> {
//! use std::time::Duration;
//! use informer_testserver::{FaultTarget, TestServer};
//! use k8s_openapi::api::core::v1::ConfigMap;
//!
//! let server = TestServer::start().await?; // 127.0.0.1, a free port
//! let client: kube::Client = server.client(); // hand this to the code under test
//! let mut cm = ConfigMap::default();
//! cm.metadata.name = Some("seed".into());
//! server.create(&cm)?; // same path as an HTTP create: gets an RV and a watch event
//!
//! // Wait for what the code under test writes, re-checked after every write: no sleeps.
//! let seen = server
//!     .wait_until::<ConfigMap>(Some("default"), "seed", Duration::from_secs(10), |cm| cm.is_some())
//!     .await?;
//! # let _ = (client, seen);
//! // Make the next WATCH fail, as an overloaded server would.
//! server.faults().fail_next(FaultTarget::Watch, http::StatusCode::TOO_MANY_REQUESTS, Some(1), 1);
//! # Ok(()) }
//! ```
//!
//! # What it does not do
//!
//! It stores and serves objects; nothing acts on them. There is **no garbage collector**
//! (deleting an owner leaves the objects it owns, unless a finalizer removes them), **no
//! admission** (no webhooks, no quota, no policy), **no defaulting or validation of built-in
//! kinds** (custom resources are pruned and checked against their CRD schema, without `default`s
//! or CEL), **no controllers** (a Deployment never gets a ReplicaSet, a Pod never runs), and no
//! RBAC beyond an optional bearer token. A test that needs one of these does the work itself
//! or runs against a real kube-apiserver. The crate README lists the protocol coverage and every
//! deviation from kube-apiserver.
//!
//! # The standalone server
//!
//! `cargo install informer-testserver --features cli` installs the `informer-testserver` binary
//! (the `cli` feature is off by default, so a library user does not compile clap).
//! `informer-testserver --port 8080` serves on loopback, prints `url: <base URL>` and
//! `kubeconfig: <path>` on stdout once it accepts connections, and serves until Ctrl-C; `kubectl
//! --kubeconfig <path>` then works against it. The feature picks Kubernetes 1.37 for
//! k8s-openapi, as a binary must: never enable `cli` in a library's dependency on this crate.

mod clock;
mod crd;
mod error;
mod faults;
mod gc;
mod http;
mod log;
mod names;
mod ops;
mod patch;
mod printers;
mod protobuf;
mod resources;
mod schema;
mod secret;
mod seed;
mod selectors;
mod server;
mod shard;
mod state;
mod status;
mod store;
mod stored;
mod wait;

pub use error::Error;
pub use faults::{FaultTarget, Faults, GroupResource, HostileProtobuf, HostileResponse};
pub use log::{QueryParams, RequestRecord, Verb};
pub use resources::{ResourceInfo, builtin_resources};
pub use server::{TestServer, TestServerBuilder};
pub use shard::fnv1a64 as shard_hash;
pub use status::ApiError;

/// Encodes an object's JSON (with `apiVersion` and `kind`) as Kubernetes protobuf (`k8s\0` +
/// `runtime.Unknown`), as the server answers a client that accepts only protobuf; for tests of
/// protobuf readers (informer-proto's T2 tests). The error is the reason, as text.
pub fn encode_protobuf(object: &serde_json::Value) -> Result<Vec<u8>, String> {
    protobuf::encode_object(object, protobuf::Schema::Built).map_err(|e| e.to_string())
}

/// Decodes a Kubernetes protobuf object (`k8s\0` + `runtime.Unknown`) into the JSON the server
/// stores for it, `apiVersion` and `kind` included. The error is the reason, as text.
pub fn decode_protobuf(body: &[u8]) -> Result<serde_json::Value, String> {
    protobuf::decode_object(body).map_err(|e| e.to_string())
}
