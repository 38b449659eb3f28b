//! Tells the generated code which Kubernetes version k8s-openapi was built for.
//!
//! k8s-openapi builds for exactly one version, chosen by the final binary, and hands it to its
//! direct dependents as `links` metadata: `DEP_K8S_OPENAPI_<crate version>_VERSION`, the number
//! `0x00_01_MM_00` (major 1, minor MM) in decimal. This script turns it into the cfgs the
//! generated code is gated on (decision records 16, 19 and 22), so an item that the chosen
//! version lacks is not compiled:
//!
//! - `k8s_openapi_enabled_version = "1.MM"` (the name k8s-openapi uses for itself);
//! - `k8s_since = "1.NN"` for every generated version 1.NN up to the chosen one;
//! - `k8s_until = "1.NN"` for every generated version from the chosen one on;
//!
//! and sets `INFORMER_KUBERNETES_VERSION=1.MM` for `env!` in the crate.
//!
//! The generated versions are listed in `src/generated/k8s-versions.txt`, written by
//! `cargo codegen` with the rest of `src/generated/`: a new Kubernetes version needs no edit here.
//! informer-proto's build script is a copy of this one, written by `cargo codegen` (whose
//! `--check` fails when the two differ): a published crate's build script cannot reach outside its
//! package (`include!` of this file breaks `cargo package`), and a build-dependency crate for
//! these few lines would be one more crate to publish.

// A build script talks to cargo on stdout.
#![allow(clippy::print_stdout)]

use std::process::ExitCode;

/// The list of versions the checked-in code was generated for.
const VERSIONS: &str = "src/generated/k8s-versions.txt";
/// This package, for messages.
const CRATE: &str = env!("CARGO_PKG_NAME");

fn main() -> ExitCode {
    println!("cargo::rerun-if-changed={VERSIONS}");
    let text = match std::fs::read_to_string(VERSIONS) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("{CRATE}: reading {VERSIONS}: {e}");
            return ExitCode::FAILURE;
        }
    };
    // `1.MM` per line, oldest first; `#` starts a comment.
    let mut minors = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match line.strip_prefix("1.").and_then(|m| m.parse::<u32>().ok()) {
            Some(minor) => minors.push(minor),
            None => {
                eprintln!("{CRATE}: {VERSIONS}: {line:?} is not a version `1.MM`");
                return ExitCode::FAILURE;
            }
        }
    }
    let (Some(&min), Some(&max)) = (minors.iter().min(), minors.iter().max()) else {
        eprintln!("{CRATE}: {VERSIONS} lists no version");
        return ExitCode::FAILURE;
    };
    let values: Vec<String> = minors.iter().map(|m| format!("\"1.{m}\"")).collect();
    for name in ["k8s_openapi_enabled_version", "k8s_since", "k8s_until"] {
        println!(
            "cargo::rustc-check-cfg=cfg({name}, values({}))",
            values.join(", ")
        );
    }
    let found = std::env::vars()
        .find(|(key, _)| key.starts_with("DEP_K8S_OPENAPI_") && key.ends_with("_VERSION"));
    let Some((key, value)) = found else {
        eprintln!(
            "{CRATE}: no DEP_K8S_OPENAPI_*_VERSION from k8s-openapi's build script; \
             is k8s-openapi in the dependency graph with one version feature (v1_{min} .. v1_{max}) enabled?"
        );
        return ExitCode::FAILURE;
    };
    let Ok(number) = value.parse::<u32>() else {
        eprintln!("{CRATE}: {key}={value:?} is not the number k8s-openapi writes");
        return ExitCode::FAILURE;
    };
    let (major, minor) = ((number >> 16) & 0xff, (number >> 8) & 0xff);
    if major != 1 || !minors.contains(&minor) {
        eprintln!(
            "{CRATE}: k8s-openapi is built for Kubernetes {major}.{minor}; this {CRATE} \
             was generated for 1.{min} to 1.{max}"
        );
        return ExitCode::FAILURE;
    }
    println!("cargo::rustc-cfg=k8s_openapi_enabled_version=\"1.{minor}\"");
    println!("cargo::rustc-env=INFORMER_KUBERNETES_VERSION=1.{minor}");
    for &m in &minors {
        if m <= minor {
            println!("cargo::rustc-cfg=k8s_since=\"1.{m}\"");
        }
        if m >= minor {
            println!("cargo::rustc-cfg=k8s_until=\"1.{m}\"");
        }
    }
    ExitCode::SUCCESS
}
