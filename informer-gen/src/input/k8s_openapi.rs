//! Built-in kinds, found by reading the `Resource`/`ListableResource` impls in k8s-openapi's sources (G6).

use std::path::{Path, PathBuf};

use syn::{Expr, ImplItem, Item, Lit, Type};

use crate::error::Error;
use crate::model::{Kind, Origin};

/// Where the k8s-openapi sources are and which Kubernetes version module to read.
#[derive(Debug, Clone)]
pub struct K8sOpenApi {
    /// The crate's `src/` directory.
    pub src_dir: PathBuf,
    /// The crate version (`0.29.0`), shown in the generated header.
    pub crate_version: String,
    /// The Kubernetes version feature (`1.37`), selecting `src/v1_37/`.
    pub k8s_version: String,
}

impl K8sOpenApi {
    /// Uses the sources at `src_dir` (k8s-openapi's `src/`).
    pub fn at(src_dir: impl Into<PathBuf>, crate_version: &str, k8s_version: &str) -> Self {
        K8sOpenApi {
            src_dir: src_dir.into(),
            crate_version: crate_version.into(),
            k8s_version: k8s_version.into(),
        }
    }

    /// Finds the k8s-openapi package used by the workspace at `manifest_dir` with `cargo metadata`.
    /// `k8s_version` is `1.37`-style; `None` reads `K8S_OPENAPI_ENABLED_VERSION`.
    pub fn locate(manifest_dir: &Path, k8s_version: Option<&str>) -> Result<Self, Error> {
        let k8s_version = match k8s_version {
            Some(v) => v.to_owned(),
            None => {
                std::env::var("K8S_OPENAPI_ENABLED_VERSION").map_err(|_| Error::K8sOpenApi {
                    reason:
                        "no Kubernetes version given and `K8S_OPENAPI_ENABLED_VERSION` is not set"
                            .into(),
                })?
            }
        };
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let out = std::process::Command::new(cargo)
            .args(["metadata", "--format-version", "1"])
            .current_dir(manifest_dir)
            .output()
            .map_err(|e| Error::K8sOpenApi {
                reason: format!("cannot run `cargo metadata`: {e}"),
            })?;
        if !out.status.success() {
            return Err(Error::K8sOpenApi {
                reason: format!(
                    "`cargo metadata` failed: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
            });
        }
        let meta: serde_json::Value =
            serde_json::from_slice(&out.stdout).map_err(|e| Error::K8sOpenApi {
                reason: format!("bad `cargo metadata` output: {e}"),
            })?;
        let pkg = meta["packages"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["name"] == "k8s-openapi")
            .ok_or_else(|| Error::K8sOpenApi {
                reason: "no `k8s-openapi` package in `cargo metadata`".into(),
            })?;
        let manifest = pkg["manifest_path"].as_str().unwrap_or_default();
        let src_dir = Path::new(manifest)
            .parent()
            .map(|p| p.join("src"))
            .unwrap_or_default();
        let crate_version = pkg["version"].as_str().unwrap_or_default();
        Ok(K8sOpenApi::at(src_dir, crate_version, &k8s_version))
    }

    /// The directory of the selected version module (`src/v1_37`).
    pub fn version_dir(&self) -> PathBuf {
        self.src_dir
            .join(format!("v{}", self.k8s_version.replace('.', "_")))
    }

    /// How the header names this input: `k8s-openapi 0.29.0 (v1_37)`; never a path.
    pub fn describe(&self) -> String {
        format!(
            "k8s-openapi {} (v{})",
            self.crate_version,
            self.k8s_version.replace('.', "_")
        )
    }
}

/// Every listable, watchable built-in kind, sorted by file path.
pub fn read_builtins(k: &K8sOpenApi, crate_path: &str, errors: &mut Vec<Error>) -> Vec<Kind> {
    let dir = k.version_dir();
    if !dir.is_dir() {
        errors.push(Error::K8sOpenApi {
            reason: format!("no directory `{}`", dir.display()),
        });
        return Vec::new();
    }
    let mut files = Vec::new();
    collect_rs(&dir, &mut files, errors);
    files.sort();
    let mut kinds = Vec::new();
    for file in files {
        let Ok(text) = super::read(&file).map_err(|e| errors.push(e)) else {
            continue;
        };
        // Cheap filter: only files with a ListableResource impl are parsed.
        if !text.contains("impl crate::ListableResource for") {
            continue;
        }
        let rel = file.strip_prefix(&dir).unwrap_or(&file);
        match syn::parse_file(&text) {
            Ok(ast) => kinds.extend(kinds_in_file(&ast, rel, crate_path, &k.describe())),
            Err(e) => errors.push(Error::RustSyntax {
                path: file.clone(),
                line: e.span().start().line,
                column: e.span().start().column,
                message: e.to_string(),
            }),
        }
    }
    kinds
}

fn collect_rs(dir: &Path, out: &mut Vec<PathBuf>, errors: &mut Vec<Error>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(source) => {
            return errors.push(Error::Io {
                path: dir.to_owned(),
                source,
            });
        }
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_rs(&path, out, errors);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Kinds defined in one file: types with both a `Resource` and a `ListableResource` impl.
fn kinds_in_file(ast: &syn::File, rel: &Path, crate_path: &str, input: &str) -> Vec<Kind> {
    let module: Vec<String> = rel
        .parent()
        .into_iter()
        .flat_map(|p| p.components())
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let mut listable = Vec::new();
    let mut resources = Vec::new();
    for item in &ast.items {
        let Item::Impl(imp) = item else { continue };
        let (Some((trait_path, _)), Type::Path(self_ty)) = (&imp.trait_, &*imp.self_ty) else {
            continue;
        };
        let Some(self_ident) = self_ty.path.get_ident().map(ToString::to_string) else {
            continue;
        };
        let trait_name = trait_path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        if trait_name == "ListableResource" {
            listable.push(self_ident);
        } else if trait_name == "Resource" {
            resources.push((self_ident, imp));
        }
    }
    let mut out = Vec::new();
    for (ident, imp) in resources {
        if !listable.contains(&ident) {
            continue;
        }
        let mut c = std::collections::BTreeMap::new();
        let mut namespaced = false;
        for item in &imp.items {
            match item {
                ImplItem::Const(k) => {
                    if let Expr::Lit(l) = &k.expr
                        && let Lit::Str(s) = &l.lit
                    {
                        c.insert(k.ident.to_string(), s.value());
                    }
                }
                ImplItem::Type(t) if t.ident == "Scope" => {
                    namespaced = quote::quote!(#t)
                        .to_string()
                        .contains("NamespaceResourceScope");
                }
                _ => {}
            }
        }
        let get = |k: &str| c.get(k).cloned().unwrap_or_default();
        let (group, version, kind, plural) = (
            get("GROUP"),
            get("VERSION"),
            get("KIND"),
            get("URL_PATH_SEGMENT"),
        );
        if kind.is_empty() || version.is_empty() || plural.is_empty() {
            continue;
        }
        let mut path = vec![crate_path.trim_end_matches("::").to_owned()];
        path.extend(module.iter().cloned());
        path.push(ident);
        out.push(Kind {
            accessor: crate::naming::kind_accessor(&kind, &plural),
            group,
            version,
            kind,
            plural,
            namespaced,
            rust_type: path.join("::"),
            origin: Origin::Builtin,
            input: input.to_owned(),
            compact: None,
        });
    }
    out
}
