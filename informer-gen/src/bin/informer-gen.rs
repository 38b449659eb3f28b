//! `informer-gen` CLI: the same generator as the library `Builder`, driven by `informer-gen.toml`
//! and flags.
//!
//! ```sh
//! informer-gen                                   # ./informer-gen.toml, its `out-dir`
//! informer-gen --config operator/informer-gen.toml --out operator/src/generated
//! informer-gen --include-kind apps/v1/Deployment --out src/generated
//! ```
//!
//! The Kubernetes version of the built-in kinds is the `v1_*` feature enabled on k8s-openapi in
//! the crate at `--root` (read with `cargo metadata`), like the build script's.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use informer_gen::{Builder, Layout, config};

/// Generates typed informer factories, accessors and listers.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// The configuration file (default: `informer-gen.toml` in `--root`, if it exists). Paths
    /// in it are relative to its directory.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Output directory (default: `out-dir` of the configuration file).
    #[arg(long)]
    out: Option<PathBuf>,
    /// The crate directory: input paths are relative to it, and `cargo metadata` runs in it to
    /// find k8s-openapi (default: the current directory).
    #[arg(long, default_value = ".")]
    root: PathBuf,
    /// Kubernetes version of k8s-openapi to read (`1.37`); default: the `v1_*` feature enabled
    /// on k8s-openapi, else `K8S_OPENAPI_ENABLED_VERSION`. Must agree with the enabled feature.
    #[arg(long)]
    k8s_version: Option<String>,
    /// Include every built-in kind of a group (`""` for core).
    #[arg(long = "include-group")]
    include_groups: Vec<String>,
    /// Include one built-in kind, as `group/version/Kind` (`/v1/Pod` for core).
    #[arg(long = "include-kind")]
    include_kinds: Vec<String>,
    /// A Rust source with `#[derive(Informer)]` types, as `path=module` (`src/crd.rs=crate::crd`).
    #[arg(long = "derive-source")]
    derive_sources: Vec<String>,
    /// A CRD manifest, as `path=module` (types are `module::<version>::<Kind>`).
    #[arg(long = "crd")]
    crds: Vec<String>,
    /// A CRD manifest whose types are generated from its schemas, as `path=module` (types are
    /// `<out>::module::<version>::<Kind>`).
    #[arg(long = "crd-types")]
    crd_types: Vec<String>,
    /// Group accessor override, as `group=accessor`.
    #[arg(long = "group-accessor")]
    group_accessors: Vec<String>,
    /// Write one file with this name instead of `mod.rs` plus one file per group.
    #[arg(long)]
    single_file: Option<String>,
    /// Do not write; fail if the output directory is stale.
    #[arg(long)]
    check: bool,
}

fn split(s: &str, sep: char, what: &str) -> Result<(String, String), Box<dyn std::error::Error>> {
    s.split_once(sep)
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
        .ok_or_else(|| format!("`{s}`: expected {what}").into())
}

/// The builder the configuration file and the flags describe.
fn builder(args: &Args) -> Result<Builder, Box<dyn std::error::Error>> {
    let mut b = match &args.config {
        Some(path) => config::builder_for_file(path)?,
        None => Builder::from_dir(&args.root)?,
    };
    if let Some(v) = &args.k8s_version {
        b.k8s_version(v);
    }
    for g in &args.include_groups {
        b.include_group(g);
    }
    for k in &args.include_kinds {
        let parts: Vec<&str> = k.split('/').collect();
        let [g, v, kind] = parts.as_slice() else {
            return Err(format!("`{k}`: expected group/version/Kind").into());
        };
        b.include_kind(g, v, kind);
    }
    for s in &args.derive_sources {
        let (path, module) = split(s, '=', "path=module")?;
        b.derive_source(&path, &module);
    }
    for s in &args.crds {
        let (path, module) = split(s, '=', "path=module")?;
        b.crd_manifest(&path, &module);
    }
    for s in &args.crd_types {
        let (path, module) = split(s, '=', "path=module")?;
        b.crd_types(&path, &module);
    }
    for s in &args.group_accessors {
        let (group, accessor) = split(s, '=', "group=accessor")?;
        b.group_accessor(&group, &accessor);
    }
    if let Some(name) = &args.single_file {
        b.layout(Layout::SingleFile(name.clone()));
    }
    if let Some(out) = &args.out {
        // `--out` is relative to the current directory, not to the configuration file.
        b.out_dir(std::path::absolute(out)?);
    }
    // The header names the command that was run, so that it can be run again.
    // `--check` is left out: checking must compare against the header that writing produced.
    let invocation: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--check")
        .collect();
    b.regenerate_command(format!("informer-gen {}", invocation.join(" ")).trim_end());
    Ok(b)
}

fn run(args: Args) -> Result<bool, Box<dyn std::error::Error>> {
    let b = builder(&args)?;
    if args.check {
        let stale = b.check()?;
        for path in &stale {
            eprintln!("stale: {}", path.display());
        }
        return Ok(stale.is_empty());
    }
    for path in b.write()? {
        eprintln!("updated {}", path.display());
    }
    Ok(true)
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("generated files are stale; regenerate them");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
