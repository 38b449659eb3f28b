//! The readers: each input is read and parsed exactly once, into what the model is lowered from,
//! and every problem is collected with the file and the field it is about.
//!
//! - `k8s_openapi`: the built-in kinds (`Resource`/`ListableResource` impls), through one cache of
//!   k8s-openapi's sources ([`k8s_openapi::Sources`]) that `k8s_types` reads the compact kinds'
//!   structs from as well, so no file is parsed twice;
//! - `rust_src`: `#[derive(Informer)]` types in Rust sources;
//! - `crd`: CRD manifests, each parsed once into its kinds and, for `crd-types`, the types of
//!   their schemas (`crd_schema`).

pub(crate) mod crd;
mod crd_schema;
pub(crate) mod fixups;
pub(crate) mod k8s_openapi;
mod k8s_types;
mod rust_src;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::error::Error;
use crate::model::merge;
use crate::model::types::{self, TypeGraph, TypeOrigin};
use crate::model::{Kind, TypeModule, TypeRef};
use crate::settings::Settings;

/// Everything the inputs define, before lowering.
pub(crate) struct Inputs {
    /// The selected built-in kinds (`include-groups`, `include-kinds`, less the excluded ones).
    pub(crate) builtins: Vec<Kind>,
    /// The kinds of derive sources and CRD manifests, in configuration order.
    pub(crate) kinds: Vec<Kind>,
    /// The structs reachable from the compact kinds that are selected built-ins; when several
    /// Kubernetes versions are read (`K8sOpenApi::every_version`), the graphs of every version
    /// merged into one whose types and fields record their versions.
    pub(crate) compact: TypeGraph,
    /// The types of each `crd-types` manifest.
    pub(crate) type_modules: Vec<TypeModule>,
    /// How the header names each input.
    pub(crate) names: Vec<String>,
}

/// Reads every configured input once.
pub(crate) fn read_inputs(s: &Settings, errors: &mut Vec<Error>) -> Inputs {
    let mut names = Vec::new();
    let mut builtins = Vec::new();
    // Every kind an input defines, excluded or not: what `exclude-kinds` may name.
    let mut defined: BTreeSet<(String, String, String)> = BTreeSet::new();
    let mut compact = TypeGraph::new();
    if !s.include_groups.is_empty() || !s.include_kinds.is_empty() {
        match &s.k8s {
            Some(k8s) => {
                names.push(k8s.describe());
                let (all, mut sources) = k8s_openapi::read_every_version(k8s, errors);
                defined.extend(all.iter().map(gvk));
                builtins = select_builtins(s, all, errors);
                // The compact kinds' k8s-openapi paths that exist in `version` (`None`: the
                // one version read).
                let roots = |version: Option<&String>| -> Vec<String> {
                    builtins
                        .iter()
                        .filter(|k| s.compact_kinds.contains(&gvk(k)))
                        .filter(|k| {
                            version.is_none_or(|v| {
                                k.k8s_versions.is_empty() || k.k8s_versions.contains(v)
                            })
                        })
                        .filter_map(|k| match &k.rust_type {
                            TypeRef::K8s(path) => Some(path.clone()),
                            TypeRef::User(_) | TypeRef::Generated(_) => None,
                        })
                        .collect()
                };
                if k8s.gated_versions.len() <= 1 {
                    let roots = roots(None);
                    if let (false, Some(sources)) =
                        (roots.is_empty(), sources.get_mut(&k8s.k8s_version))
                    {
                        compact = k8s_types::read_graph(sources, &roots, errors);
                    }
                } else {
                    // A kind's fields differ between Kubernetes versions: one graph each, merged
                    // into one that records where each type and field exists.
                    let mut by_version = BTreeMap::new();
                    for version in &k8s.gated_versions {
                        let roots = roots(Some(version));
                        if let (false, Some(sources)) = (roots.is_empty(), sources.get_mut(version))
                        {
                            let graph = k8s_types::read_graph(sources, &roots, errors);
                            by_version.insert(version.as_str(), graph);
                        }
                    }
                    if !by_version.is_empty() {
                        // Versions without a compact kind still count: a type they lack is gated.
                        let empty = TypeGraph::new();
                        let every = k8s
                            .gated_versions
                            .iter()
                            .map(|v| (v.as_str(), by_version.get(v.as_str()).unwrap_or(&empty)));
                        compact = merge::merge_versions(every);
                    }
                }
            }
            None => errors.push(Error::K8sOpenApi {
                reason: "built-in kinds were selected but no k8s-openapi sources were configured"
                    .into(),
            }),
        }
    }
    let mut kinds = Vec::new();
    for (rel, module) in &s.derive_sources {
        names.push(rel.clone());
        let derived = rust_src::read_derives(&s.root.join(rel), rel, module, errors);
        kinds.extend(not_excluded(s, derived, &mut defined));
    }
    for (rel, module) in &s.crd_manifests {
        names.push(rel.clone());
        let user =
            |version: &str, kind: &str| TypeRef::User(format!("{module}::{version}::{kind}"));
        let manifest = crd::read_manifest(&s.root.join(rel), rel, &user, None, errors);
        kinds.extend(not_excluded(s, manifest.kinds, &mut defined));
    }
    let mut type_modules: Vec<TypeModule> = Vec::new();
    for (rel, module) in &s.crd_types {
        names.push(rel.clone());
        // The types live in the generated module `<module>`, beside the group modules: each
        // kind's full form in `<version>::full`, its compact form, which the handles cache, in
        // `<version>` (decision record 27).
        let generated = |version: &str, kind: &str| {
            TypeRef::Generated(format!("{module}::{version}::full::{kind}"))
        };
        let mut manifest = crd::read_manifest(
            &s.root.join(rel),
            rel,
            &generated,
            Some(crd_schema::read_types),
            errors,
        );
        // An excluded kind's types go with it, but for the ones a kind still generated holds.
        types::retain_reachable(&mut manifest.types, |d| match &d.origin {
            TypeOrigin::Schema(Some(r)) => {
                !s.exclude_kinds
                    .contains(&(r.group.clone(), r.version.clone(), r.kind.clone()))
            }
            _ => false,
        });
        let kinds_of = not_excluded(s, manifest.kinds, &mut defined);
        kinds.extend(kinds_of.into_iter().map(|mut k| {
            k.compact = Some(TypeRef::Generated(format!(
                "{module}::{}::{}",
                k.version, k.kind
            )));
            k
        }));
        // Several manifests may share a module (one group's CRDs, shipped as one file per kind):
        // their types go into one graph, and a type two of them would both write is an error.
        match type_modules.iter_mut().find(|t| t.module == *module) {
            Some(shared) => {
                for (key, def) in manifest.types {
                    match shared.graph.entry(key) {
                        std::collections::btree_map::Entry::Vacant(slot) => {
                            slot.insert(def);
                        }
                        std::collections::btree_map::Entry::Occupied(taken) => {
                            errors.push(Error::InvalidName {
                                what: "crd-types type",
                                value: format!("{module}::{}", taken.key()),
                                reason: format!(
                                    "{rel} and {} both generate it; give one of them a module of its own",
                                    shared.source
                                ),
                            });
                        }
                    }
                }
                shared.source = format!("{}, {rel}", shared.source);
            }
            None => type_modules.push(TypeModule {
                module: module.clone(),
                source: rel.clone(),
                graph: manifest.types,
            }),
        }
    }
    for (g, v, k) in &s.exclude_kinds {
        if !defined.contains(&(g.clone(), v.clone(), k.clone())) {
            errors.push(Error::ExcludedKindUnknown {
                group: g.clone(),
                version: v.clone(),
                kind: k.clone(),
            });
        }
    }
    Inputs {
        builtins,
        kinds,
        compact,
        type_modules,
        names,
    }
}

/// `kinds` less the ones `exclude-kinds` names, each recorded in `defined` first.
fn not_excluded(
    s: &Settings,
    kinds: Vec<Kind>,
    defined: &mut BTreeSet<(String, String, String)>,
) -> Vec<Kind> {
    kinds
        .into_iter()
        .filter(|k| {
            let id = gvk(k);
            defined.insert(id.clone());
            !s.exclude_kinds.contains(&id)
        })
        .collect()
}

/// `(group, version, kind)` of a kind, as the settings name kinds.
pub(crate) fn gvk(k: &Kind) -> (String, String, String) {
    (k.group.clone(), k.version.clone(), k.kind.clone())
}

/// The built-in kinds the settings select (`include-groups`, `include-kinds`), less the ones
/// excluded by the settings or because they cannot be watched (G6); a selection naming nothing
/// that exists is an error.
fn select_builtins(s: &Settings, all: Vec<Kind>, errors: &mut Vec<Error>) -> Vec<Kind> {
    if all.is_empty() {
        return all;
    }
    for g in &s.include_groups {
        if !all.iter().any(|b| &b.group == g) {
            errors.push(Error::UnknownGroup {
                group: g.clone(),
                setting: "include_group",
            });
        }
    }
    for (g, v, k) in &s.include_kinds {
        if !all
            .iter()
            .any(|b| (&b.group, &b.version, &b.kind) == (g, v, k))
        {
            errors.push(Error::UnknownKind {
                group: g.clone(),
                version: v.clone(),
                kind: k.clone(),
            });
        }
    }
    let unwatchable = |k: &Kind| {
        fixups::UNWATCHABLE.contains(&(k.group.as_str(), k.version.as_str(), k.kind.as_str()))
    };
    all.into_iter()
        .filter(|k| s.include_groups.contains(&k.group) || s.include_kinds.contains(&gvk(k)))
        .filter(|k| !unwatchable(k) && !s.exclude_kinds.contains(&gvk(k)))
        .collect()
}

/// Reads a file, mapping failures to [`Error::Io`].
pub(crate) fn read(path: &Path) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })
}
