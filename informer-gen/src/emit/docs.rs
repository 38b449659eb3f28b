//! Rustdoc text for every generated item.

use crate::model::{Group, Kind, Version};

fn group_name(group: &Group) -> String {
    if group.name.is_empty() {
        "core (`\"\"`)".to_owned()
    } else {
        format!("`{}`", group.name)
    }
}

fn gv(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    }
}

/// Doc of a group module.
pub(crate) fn group_module(group: &Group) -> String {
    format!(
        " Informers and listers for the {} API group.",
        group_name(group)
    )
}

/// Doc of a group handle type.
pub(crate) fn group_handle(group: &Group) -> String {
    format!(" Version accessors of the {} API group.", group_name(group))
}

/// Doc of a group accessor on the factory.
pub(crate) fn group_accessor(group: &Group) -> String {
    format!(" Informers of the {} API group (G1).", group_name(group))
}

/// Doc of a version accessor.
pub(crate) fn version_accessor(group: &Group, v: &Version) -> String {
    format!(" Informers of `{}`.", gv(&group.name, &v.name))
}

/// Doc of a version module.
pub(crate) fn version_module(group: &Group, v: &Version) -> String {
    format!(" Informers and listers for `{}`.", gv(&group.name, &v.name))
}

/// Doc of a version handle type.
pub(crate) fn version_handle(group: &Group, v: &Version) -> String {
    format!(" Kind accessors of `{}`.", gv(&group.name, &v.name))
}

/// One-line description of a kind: `` `apps/v1` kind `Deployment` (resource `deployments`, namespaced) ``.
pub(crate) fn kind_line(k: &Kind) -> String {
    let scope = if k.namespaced {
        "namespaced"
    } else {
        "cluster-scoped"
    };
    format!(
        "`{}` kind `{}` (resource `{}`, {scope})",
        gv(&k.group, &k.version),
        k.kind,
        k.plural
    )
}

/// Doc of a kind accessor.
pub(crate) fn kind_accessor(k: &Kind) -> String {
    format!(" The shared informer handle for {} (G2).", kind_line(k))
}
