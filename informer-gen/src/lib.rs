//! informer-gen: emits typed informer factories, accessors and listers for Kubernetes resources.
//!
//! Inputs are the built-in kinds of the k8s-openapi version in use (read from its sources), Rust sources
//! with `#[derive(Informer)]` types, and CRD manifests. The output is a module tree with a
//! `InformerFactoryExt` extension trait for the runtime's `SharedInformerFactory`, so that
//! `factory.apps().v1().deployments().informer()` reads like client-go (the naming rules are
//! in [the behaviour reference](https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md#9-code-generation-output)).
//!
//! # Quick start: generate in build.rs
//!
//! In the crate that uses the generated code: `informer-gen` in `[build-dependencies]`,
//! `k8s-openapi` with one `v1_*` feature in `[dependencies]` (a direct dependency: its build
//! script tells this one which Kubernetes version the crate is built for), and an
//! `informer-gen.toml` beside `Cargo.toml` that says what to generate (see [`config`]):
//!
//! ```toml
//! include-kinds = ["apps/v1/Deployment", "/v1/ConfigMap"]
//! derive-sources = [{ path = "src/crd.rs", module = "crate::crd" }]
//! ```
//!
//! ```no_run
//! // build.rs
//! fn main() -> Result<(), informer_gen::Errors> {
//!     informer_gen::Builder::from_build_script()?.write()?;
//!     Ok(())
//! }
//! // src/lib.rs: pub mod informers { include!(concat!(env!("OUT_DIR"), "/informers.rs")); }
//! // then: use informers::InformerFactoryExt; factory.apps().v1().deployments().lister()
//! ```
//!
//! [`Builder::from_build_script`] reads the configuration; settings can also be made (or added)
//! in code, and [`Builder::write`] writes `$OUT_DIR/informers.rs` and tells Cargo to rerun when
//! an input changes. With `out-dir = "src/generated"` in the file it writes a checked-in module
//! tree instead, which is what the `informer-gen` binary does too (`cargo install informer-gen`,
//! then `informer-gen` in the crate's directory; `--check` fails when the files are stale).
//!
//! The Kubernetes version is never repeated by hand: in a build script it is the version
//! k8s-openapi is built for, elsewhere the `v1_*` feature enabled on k8s-openapi in
//! `cargo metadata`'s resolve (or `K8S_OPENAPI_ENABLED_VERSION`). An explicit version
//! ([`Builder::k8s_version`], `k8s-version` in the file, `--k8s-version`) must agree with it;
//! generation fails naming both when it does not.
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
mod k8s_version;
mod lower;
mod model;
mod naming;
mod read;
mod render;
mod settings;
mod validate;

pub use builder::{Builder, Generated, OUT_DIR_FILE};
pub use error::{Error, Errors};
pub use read::k8s_openapi::K8sOpenApi;
pub use render::{GENERATED_MARKER, Layout};
