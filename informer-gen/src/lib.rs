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
//!
//! # How it works
//!
//! One pipeline, one module a step: `read` parses each input exactly once (k8s-openapi's sources
//! through one cache, each CRD manifest into its kinds and its schemas' types together), `lower`
//! turns what was read into the one model (`model`: groups, versions and kinds for the accessors,
//! the type IR for compact and `crd-types` types), `validate` checks the settings and the model and
//! returns every problem together, `emit` writes accessors and types from the model in one path
//! style, and `render` formats the files with their `@generated` header. [`Builder`] only collects
//! the configuration and runs these steps.
//!
//! Generated code names the runtime and k8s-openapi through two aliases that a generated module
//! imports, `use <runtime>::__private as rt;` and, where it names a k8s-openapi type,
//! `use <k8s-openapi> as k8s;`, so the configured crate paths appear once per module; `rt` and
//! `compact` are names the generated root keeps for itself, and no group or `crd-types` module
//! may take them.

mod builder;
pub mod config;
mod emit;
mod error;
mod lower;
mod model;
mod naming;
mod read;
mod render;
mod settings;
mod validate;

pub use builder::{Builder, Generated};
pub use error::{Error, Errors};
pub use read::k8s_openapi::K8sOpenApi;
pub use render::{GENERATED_MARKER, Layout};
