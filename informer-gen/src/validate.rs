//! Validation: the settings before anything is read, and the lowered model before anything is
//! emitted. Every problem is collected; nothing is emitted while there is one.

use std::collections::{BTreeMap, BTreeSet};

use crate::K8sOpenApi;
use crate::emit::ROOT_NAMES;
use crate::error::Error;
use crate::model::Model;
use crate::model::types::{OBJECT_META, Ty};
use crate::naming;
use crate::settings::Settings;

/// Crate and module paths are Rust paths; accessor overrides are snake_case identifiers.
pub(crate) fn settings(s: &Settings, errors: &mut Vec<Error>) {
    let paths = [
        ("runtime crate path", &s.runtime_crate),
        ("k8s-openapi crate path", &s.k8s_crate),
    ];
    let modules = s
        .derive_sources
        .iter()
        .chain(&s.crd_manifests)
        .map(|(_, m)| ("module path", m));
    for (what, value) in paths.into_iter().chain(modules) {
        if syn::parse_str::<syn::Path>(value).is_err() {
            errors.push(Error::InvalidName {
                what,
                value: value.clone(),
                reason: "not a Rust path".into(),
            });
        }
    }
    if let Some(v) = &s.k8s_version
        && !crate::k8s_version::is_release(&v.version)
    {
        errors.push(Error::InvalidName {
            what: "Kubernetes version",
            value: v.version.clone(),
            reason: format!("set by {}; expected `1.<minor>`, like `1.37`", v.by),
        });
    }
    let accessors = s.group_accessors.values().chain(s.kind_accessors.values());
    for value in accessors {
        if !naming::is_snake_ident(value) {
            errors.push(Error::InvalidName {
                what: "accessor",
                value: value.clone(),
                reason: "expected a snake_case identifier".into(),
            });
        }
    }
}

/// The model's names are distinct where they share a module, the groups the settings name
/// exist, and every compact kind can be cached.
pub(crate) fn model(s: &Settings, model: &Model, errors: &mut Vec<Error>) {
    for g in s.group_accessors.keys() {
        if !model.groups.contains_key(g) {
            errors.push(Error::UnknownGroup {
                group: g.clone(),
                setting: "group_accessor",
            });
        }
    }
    accessors(model, errors);
    root_names(model, errors);
    compact_kinds(s, model, errors);
}

/// Group accessors are distinct, and kind accessors within a version (G1, G2).
fn accessors(model: &Model, errors: &mut Vec<Error>) {
    let mut by_accessor: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for g in model.groups.values() {
        by_accessor
            .entry(&g.accessor)
            .or_default()
            .push(g.name.clone());
        for v in g.versions.values() {
            let mut kinds: BTreeMap<&str, Vec<String>> = BTreeMap::new();
            for k in v.kinds.values() {
                kinds.entry(&k.accessor).or_default().push(k.kind.clone());
            }
            for (accessor, kinds) in kinds.into_iter().filter(|(_, k)| k.len() > 1) {
                errors.push(Error::KindAccessorCollision {
                    group: g.name.clone(),
                    version: v.name.clone(),
                    accessor: accessor.to_owned(),
                    kinds,
                });
            }
        }
    }
    for (accessor, groups) in by_accessor.into_iter().filter(|(_, g)| g.len() > 1) {
        errors.push(Error::GroupAccessorCollision {
            accessor: accessor.to_owned(),
            groups,
        });
    }
}

/// The generated root holds the group modules, the `crd-types` modules and the names every
/// generated module takes ([`ROOT_NAMES`]: the path aliases and `compact`); each name once.
fn root_names(model: &Model, errors: &mut Vec<Error>) {
    for g in model.groups.values() {
        if ROOT_NAMES.contains(&g.accessor.as_str()) {
            errors.push(Error::InvalidName {
                what: "group accessor",
                value: g.accessor.clone(),
                reason: format!(
                    "`{}` is a name the generated root module takes for itself ({}); give group `{}` another accessor with `group-accessors`",
                    g.accessor,
                    ROOT_NAMES.join(", "),
                    g.name
                ),
            });
        }
    }
    // Who holds each root name, for an error that says what a `crd-types` module clashes with.
    let mut owners: BTreeMap<&str, String> = model
        .groups
        .values()
        .map(|g| {
            let owner = format!(
                "the module of group `{}` (its accessor, `factory.{}()`)",
                g.name, g.accessor
            );
            (g.accessor.as_str(), owner)
        })
        .collect();
    for name in ROOT_NAMES {
        owners.insert(
            name,
            format!(
                "a name the generated root module takes for itself ({})",
                ROOT_NAMES.join(", ")
            ),
        );
    }
    let taken: BTreeSet<&str> = owners
        .keys()
        .copied()
        .chain(model.type_modules.iter().map(|t| t.module.as_str()))
        .collect();
    for t in &model.type_modules {
        if !naming::is_snake_ident(&t.module) {
            errors.push(Error::InvalidName {
                what: "crd-types module",
                value: t.module.clone(),
                reason: "expected a snake_case identifier".into(),
            });
        } else if let Some(owner) = owners.get(t.module.as_str()) {
            errors.push(Error::InvalidName {
                what: "crd-types module",
                value: t.module.clone(),
                reason: format!(
                    "`{}` (for {}) is already {owner}; choose another module name, such as `{}`",
                    t.module,
                    t.source,
                    free_name(&t.module, &taken)
                ),
            });
        } else {
            owners.insert(&t.module, format!("the `crd-types` module of {}", t.source));
        }
    }
}

/// A module name near `name` that nothing in `taken` holds: `<name>_types`, `<name>_crds`, then
/// `<name>_types_2`, `<name>_types_3`, ...
fn free_name(name: &str, taken: &BTreeSet<&str>) -> String {
    let candidates = [format!("{name}_types"), format!("{name}_crds")]
        .into_iter()
        .chain((2..).map(|n| format!("{name}_types_{n}")));
    candidates
        .into_iter()
        .find(|c| !taken.contains(c.as_str()))
        .unwrap_or_else(|| format!("{name}_types"))
}

/// A cached kind is keyed by its metadata (P6): every compact kind needs `metadata: ObjectMeta`.
fn compact_kinds(s: &Settings, model: &Model, errors: &mut Vec<Error>) {
    for (root, def) in model.compact.iter().filter(|(_, d)| d.resource) {
        // In every version the kind exists in.
        let has_meta = def.fields.iter().any(|f| {
            f.rust == "metadata"
                && f.ty == Ty::Struct(OBJECT_META.to_owned())
                && f.k8s_versions.is_empty()
        });
        if !has_meta {
            errors.push(Error::SourceType {
                path: s.k8s.as_ref().map(K8sOpenApi::version_dir).unwrap_or_default(),
                item: root.clone(),
                reason: "a compact kind needs a `metadata: ObjectMeta` field (its key, UID and resourceVersion)".into(),
            });
        }
    }
}
