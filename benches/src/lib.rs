//! Benchmark scenarios comparing informer-rs with kube-runtime and client-go; driven by
//! `cargo xtask bench`.
//!
//! The `informer-bench` binary has two roles. `informer-bench orchestrate` hosts an
//! informer-testserver, seeds it with realistic Pods ([`pods`]), and starts one child process per
//! (scenario, implementation, repetition). `informer-bench child …` is that child: it runs one
//! scenario with informer-rs, kube-runtime or plain serde_json, measures itself with the counting
//! allocator ([`alloc`]) and `/proc` ([`sys`]), and reports JSON lines ([`protocol`]). The
//! client-go children are a Go program (`benches/client-go/`) that speaks the same protocol with
//! the same arguments. The orchestrator summarises the repetitions ([`stats`]) into a table and a
//! JSON file ([`report`]).
//!
//! Scenario 11 (`operator`) runs one operator written twice, each side at its documented
//! defaults: on controller-runtime (`benches/controller-runtime/`, a Go program) and on
//! informer-controller ([`child::operator`]), both reconciling the Deployments of a [`fleet`]
//! into ConfigMaps while caching every Pod. It has a server of its own, and the orchestrator
//! times each side from its start until every ConfigMap on the server is right
//! (`orchestrate/operator.rs`). The Go children share their protocol code (`benches/childio/`).
//! See `BENCHMARKS.md` at the repository root for the scenarios, the latest results and how to
//! reproduce them.

pub mod alloc;
pub mod baseline;
pub mod chart;
pub mod child;
pub mod corpus;
pub mod fleet;

/// The compact Pod (P1) that informer-k8s's handles cache by default, as users get it.
pub use informer_k8s::compact::api::core::v1::Pod as CompactPod;
pub mod goals;
pub mod orchestrate;
pub mod pods;
pub mod podset;
pub mod projection;
pub mod protocol;
pub mod report;
pub mod stats;
pub mod sys;
