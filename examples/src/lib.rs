//! Example operators built on informer-rs generated code.

// The example operator reports its progress to a person on stdout.
#![allow(clippy::print_stdout)]

pub mod crd;

/// informer-gen output for the example CRD and built-ins; regenerate with `cargo codegen`.
#[rustfmt::skip]
pub mod generated;

pub mod demo;
pub mod fleet;
pub mod metrics;
pub mod operator;
pub mod views;
