//! Lowering: the kinds and types the inputs define, with the settings' accessor overrides and
//! compact kinds, into the one [`Model`] both emitters read.

use std::collections::BTreeMap;

use crate::error::Error;
use crate::model::{Group, Kind, Model, Origin, TypeRef};
use crate::naming;
use crate::read::Inputs;
use crate::settings::Settings;

/// The model of `inputs`. A kind defined twice, or a compact kind that is not a selected
/// built-in, is an error; everything else is checked by `validate::model`.
pub(crate) fn lower(s: &Settings, inputs: Inputs, errors: &mut Vec<Error>) -> Model {
    let Inputs {
        builtins,
        kinds,
        compact,
        type_modules,
        names,
    } = inputs;
    let mut model = Model {
        groups: BTreeMap::new(),
        compact,
        compact_feature: s.compact_feature.clone(),
        type_modules,
        inputs: if names.is_empty() {
            "no inputs".to_owned()
        } else {
            names.join(", ")
        },
    };
    for kind in builtins.into_iter().chain(kinds) {
        add_kind(s, &mut model, kind, errors);
    }
    mark_compact(s, &mut model, errors);
    model
}

/// Files `kind` under its group and version, with the configured accessors (G1, G2).
fn add_kind(s: &Settings, model: &mut Model, mut kind: Kind, errors: &mut Vec<Error>) {
    if let Some(a) = s
        .kind_accessors
        .get(&(kind.group.clone(), kind.plural.clone()))
    {
        kind.accessor = a.clone();
    }
    let group = model
        .groups
        .entry(kind.group.clone())
        .or_insert_with(|| Group {
            name: kind.group.clone(),
            accessor: s
                .group_accessors
                .get(&kind.group)
                .cloned()
                .unwrap_or_else(|| naming::group_accessor(&kind.group)),
            versions: BTreeMap::new(),
        });
    let version = group.versions.entry(kind.version.clone()).or_default();
    version.name = kind.version.clone();
    if let Some(first) = version.kinds.get(&kind.kind) {
        errors.push(Error::DuplicateKind {
            group: kind.group.clone(),
            version: kind.version.clone(),
            kind: kind.kind.clone(),
            first: first.input.clone(),
            second: kind.input.clone(),
        });
        return;
    }
    version.kinds.insert(kind.kind.clone(), kind);
}

/// Points each compact kind's handle at its compact type (`compact::<path in k8s-openapi>`).
fn mark_compact(s: &Settings, model: &mut Model, errors: &mut Vec<Error>) {
    for (g, v, k) in &s.compact_kinds {
        let kind = model
            .groups
            .get_mut(g)
            .and_then(|grp| grp.versions.get_mut(v))
            .and_then(|ver| ver.kinds.get_mut(k));
        let Some(kind) = kind else {
            errors.push(Error::InvalidName {
                what: "compact kind",
                value: format!("{g}/{v}/{k}"),
                reason: "not a selected kind: select it with include_kind or include_group too"
                    .into(),
            });
            continue;
        };
        match (&kind.origin, &kind.rust_type) {
            (Origin::Builtin, TypeRef::K8s(path)) => {
                kind.compact = Some(TypeRef::Generated(format!("compact::{path}")));
            }
            _ => errors.push(Error::InvalidName {
                what: "compact kind",
                value: format!("{g}/{v}/{k}"),
                reason: "compact types are generated for built-in (k8s-openapi) kinds only".into(),
            }),
        }
    }
}
