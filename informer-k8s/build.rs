//! Tells the generated code which Kubernetes version k8s-openapi was built for.
//!
//! k8s-openapi builds for exactly one version, chosen by the final binary, and hands it to its
//! direct dependents as `links` metadata: `DEP_K8S_OPENAPI_<crate version>_VERSION`, the number
//! `0x00_01_MM_00` (major 1, minor MM) in decimal. This script turns it into the cfg the
//! generated code is gated on, `k8s_openapi_enabled_version = "1.MM"` (the name k8s-openapi uses
//! for itself), so a kind that the chosen version lacks is not compiled.

// A build script talks to cargo on stdout.
#![allow(clippy::print_stdout)]

use std::process::ExitCode;

/// The versions the checked-in code was generated for (`cargo codegen`).
const MIN: u32 = 33;
const MAX: u32 = 37;

fn main() -> ExitCode {
    let values: Vec<String> = (MIN..=MAX).map(|m| format!("\"1.{m}\"")).collect();
    println!(
        "cargo::rustc-check-cfg=cfg(k8s_openapi_enabled_version, values({}))",
        values.join(", ")
    );
    let found = std::env::vars()
        .find(|(key, _)| key.starts_with("DEP_K8S_OPENAPI_") && key.ends_with("_VERSION"));
    let Some((key, value)) = found else {
        eprintln!(
            "informer-k8s: no DEP_K8S_OPENAPI_*_VERSION from k8s-openapi's build script; \
             is k8s-openapi 0.29 in the dependency graph with one version feature (v1_33 .. v1_37) enabled?"
        );
        return ExitCode::FAILURE;
    };
    let Ok(number) = value.parse::<u32>() else {
        eprintln!("informer-k8s: {key}={value:?} is not the number k8s-openapi 0.29 writes");
        return ExitCode::FAILURE;
    };
    let (major, minor) = ((number >> 16) & 0xff, (number >> 8) & 0xff);
    if major != 1 || !(MIN..=MAX).contains(&minor) {
        eprintln!(
            "informer-k8s: k8s-openapi is built for Kubernetes {major}.{minor}; this informer-k8s \
             was generated for 1.{MIN} to 1.{MAX}"
        );
        return ExitCode::FAILURE;
    }
    println!("cargo::rustc-cfg=k8s_openapi_enabled_version=\"1.{minor}\"");
    ExitCode::SUCCESS
}
