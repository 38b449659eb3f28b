//! `informer-gen` CLI: the same generator as the library `Builder`, driven by flags.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use informer_gen::{Builder, K8sOpenApi, Layout};

/// Generates typed informer factories, accessors and listers.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// Output directory.
    #[arg(long)]
    out: PathBuf,
    /// Directory that input paths are relative to (default: current directory).
    #[arg(long, default_value = ".")]
    root: PathBuf,
    /// Kubernetes version of k8s-openapi to read (`1.37`); default `K8S_OPENAPI_ENABLED_VERSION`.
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

fn run(args: Args) -> Result<bool, Box<dyn std::error::Error>> {
    let mut b = Builder::new();
    b.root(&args.root);
    if !args.include_groups.is_empty() || !args.include_kinds.is_empty() {
        b.k8s_openapi(K8sOpenApi::locate(&args.root, args.k8s_version.as_deref())?);
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
    if let Some(name) = args.single_file {
        b.layout(Layout::SingleFile(name));
    }
    let generated = b.generate()?;
    if args.check {
        let mut fresh = generated.stale_files(&args.out)?.is_empty();
        for (name, contents) in generated.files() {
            let on_disk = std::fs::read_to_string(args.out.join(name)).unwrap_or_default();
            if on_disk.replace("\r\n", "\n") != *contents {
                eprintln!("stale: {}", args.out.join(name).display());
                fresh = false;
            }
        }
        return Ok(fresh);
    }
    for path in generated.write_to(&args.out)? {
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
