//! informer-gen: emits typed informer factories, accessors and listers for Kubernetes resources.
//!
//! Inputs are the built-in kinds of the k8s-openapi version in use (read from its sources), Rust sources
//! with `#[derive(Informer)]` types, and CRD manifests. The output is a module tree with a
//! `InformerFactoryExt` extension trait for the runtime's `SharedInformerFactory`, so that
//! `factory.apps().v1().deployments().informer()` reads like client-go (semantics §9, G1–G8).
//!
//! ```no_run
//! // build.rs
//! use informer_gen::{Builder, K8sOpenApi, Layout};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?);
//! let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
//! Builder::new()
//!     .root(&dir)
//!     .k8s_openapi(K8sOpenApi::locate(&dir, None)?)
//!     .include_kind("apps", "v1", "Deployment")
//!     .derive_source("src/crd.rs", "crate::crd")
//!     .layout(Layout::SingleFile("informers.rs".into()))
//!     .generate()?
//!     .write_to(&out)?;
//! // src/lib.rs: pub mod informers { include!(concat!(env!("OUT_DIR"), "/informers.rs")); }
//! # Ok(()) }
//! ```

mod builder;
pub mod config;
mod emit;
pub mod error;
pub mod input;
pub mod model;
pub mod naming;
mod render;
pub mod types;

pub use builder::{Builder, Generated};
pub use error::{Error, Errors};
pub use input::k8s_openapi::K8sOpenApi;
pub use render::{GENERATED_MARKER, Layout};
