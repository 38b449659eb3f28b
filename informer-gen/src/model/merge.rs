//! One version-ranged type graph from the graphs of several Kubernetes versions (decision record
//! 19): each type and each field records the versions it exists in, so the emitter writes one
//! module with a `cfg` per type and per field instead of one module per version.
//!
//! A field whose shape or presence changed between versions becomes one [`FieldDef`] per shape,
//! with the same names and disjoint versions. Docs come from the newest version that has the item;
//! fields keep the newest version's order, and a field that newer versions dropped follows the
//! field it followed in the version that last had it.

use std::collections::BTreeSet;

use super::types::{FieldDef, TypeDef, TypeGraph};

/// Merges `graphs`, one per Kubernetes version (`"1.37"`), into one graph whose
/// `k8s_versions` say where each type and field exists. A version set that holds every version
/// a type exists in is left empty (no gate), so an item present everywhere is written as before.
pub(crate) fn merge_versions<'a>(
    graphs: impl IntoIterator<Item = (&'a str, &'a TypeGraph)>,
) -> TypeGraph {
    let mut graphs: Vec<(&str, &TypeGraph)> = graphs.into_iter().collect();
    // Newest first: its docs and field order win.
    graphs.sort_by_key(|(v, _)| std::cmp::Reverse(version_key(v)));
    let every: BTreeSet<String> = graphs.iter().map(|(v, _)| (*v).to_owned()).collect();
    let mut out = TypeGraph::new();
    for (version, graph) in &graphs {
        for (key, def) in *graph {
            let merged = out.entry(key.clone()).or_insert_with(|| TypeDef {
                fields: Vec::new(),
                k8s_versions: BTreeSet::new(),
                ..def.clone()
            });
            merged.k8s_versions.insert((*version).to_owned());
            merged.resource |= def.resource;
            merged.default &= def.default;
            merge_fields(&mut merged.fields, &def.fields, version);
        }
    }
    for def in out.values_mut() {
        for f in &mut def.fields {
            if f.k8s_versions == def.k8s_versions {
                f.k8s_versions.clear();
            }
        }
        if def.k8s_versions == every {
            def.k8s_versions.clear();
        }
    }
    out
}

/// Adds the fields of one (older) version to `merged`.
fn merge_fields(merged: &mut Vec<FieldDef>, fields: &[FieldDef], version: &str) {
    // Where the next field of this version that is new to `merged` goes: after the last field
    // of this version already placed.
    let mut after: Option<usize> = None;
    for f in fields {
        let same = merged.iter().position(|m| {
            m.rust == f.rust && m.json == f.json && m.presence == f.presence && m.ty == f.ty
        });
        let at = match same {
            Some(at) => at,
            None => {
                // Another shape of a field already placed goes beside it; a field of its own
                // after its predecessor in this version.
                let at = merged
                    .iter()
                    .rposition(|m| m.rust == f.rust)
                    .or(after)
                    .map_or(0, |i| i + 1);
                merged.insert(
                    at,
                    FieldDef {
                        k8s_versions: BTreeSet::new(),
                        ..f.clone()
                    },
                );
                at
            }
        };
        merged[at].k8s_versions.insert(version.to_owned());
        after = Some(at);
    }
}

/// `1.37` → `(1, 37)`, so `1.100` sorts after `1.99`.
pub(crate) fn version_key(version: &str) -> (u32, u32) {
    let (major, minor) = version.split_once('.').unwrap_or((version, "0"));
    (major.parse().unwrap_or(0), minor.parse().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::types::{Presence, Shape, Ty, TypeOrigin};

    fn field(name: &str, ty: Ty) -> FieldDef {
        FieldDef {
            rust: name.into(),
            json: name.into(),
            doc: format!("{name} doc"),
            presence: Presence::Optional,
            ty,
            k8s_versions: BTreeSet::new(),
        }
    }

    fn graph(types: Vec<(&str, Vec<FieldDef>)>) -> TypeGraph {
        types
            .into_iter()
            .map(|(name, fields)| {
                let def = TypeDef {
                    module: vec!["api".into()],
                    name: name.into(),
                    doc: String::new(),
                    fields,
                    default: true,
                    resource: false,
                    shape: Shape::Struct,
                    origin: TypeOrigin::K8sOpenApi,
                    unknown_fields: None,
                    k8s_versions: BTreeSet::new(),
                };
                (def.key(), def)
            })
            .collect()
    }

    fn set(versions: &[&str]) -> BTreeSet<String> {
        versions.iter().map(|v| (*v).to_owned()).collect()
    }

    #[test]
    fn types_and_fields_record_their_versions() {
        let str_ = || Ty::Option(Box::new(Ty::Str));
        let old = graph(vec![
            (
                "Spec",
                vec![
                    field("a", str_()),
                    field("gone", str_()),
                    field("b", str_()),
                ],
            ),
            ("Old", vec![field("x", str_())]),
        ]);
        let mid = graph(vec![(
            "Spec",
            vec![
                field("a", str_()),
                field("b", Ty::Option(Box::new(Ty::I32))),
            ],
        )]);
        let new = graph(vec![
            (
                "Spec",
                vec![
                    field("a", str_()),
                    field("b", Ty::Option(Box::new(Ty::I32))),
                    field("c", str_()),
                ],
            ),
            ("New", vec![field("y", str_())]),
        ]);
        let merged = merge_versions([("1.33", &old), ("1.36", &new), ("1.34", &mid)]);
        let spec = &merged["api::Spec"];
        assert!(spec.k8s_versions.is_empty(), "in every version");
        let fields: Vec<(&str, BTreeSet<String>)> = spec
            .fields
            .iter()
            .map(|f| (f.rust.as_str(), f.k8s_versions.clone()))
            .collect();
        assert_eq!(
            fields,
            [
                ("a", set(&[])),
                ("gone", set(&["1.33"])),
                ("b", set(&["1.34", "1.36"])),
                ("b", set(&["1.33"])),
                ("c", set(&["1.36"])),
            ]
        );
        assert_eq!(merged["api::Old"].k8s_versions, set(&["1.33"]));
        assert_eq!(merged["api::New"].k8s_versions, set(&["1.36"]));
        assert!(merged["api::New"].fields[0].k8s_versions.is_empty());
    }

    #[test]
    fn versions_sort_by_number() {
        assert!(version_key("1.100") > version_key("1.99"));
    }
}
