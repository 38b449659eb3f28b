//! Rustdoc text for every generated item.
//!
//! Generated docs describe behaviour in words and link each rule they cite to the behaviour
//! reference in the informer-rs repository, which users of the generated code can open.

use proc_macro2::TokenStream;
use quote::quote;

use crate::model::{Group, Kind, Version};

/// The behaviour reference, as users reach it from docs.rs.
const REFERENCE: &str = "https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md";

/// Its section of each rule the generated docs cite.
fn section(rule: &str) -> &'static str {
    match rule.as_bytes().first() {
        Some(b'F') => "6-shared-informer-factory",
        Some(b'P') => "12-compact-types-and-projections-ours",
        _ => "9-code-generation-output",
    }
}

/// `#[doc]` attributes: `text` (lines starting with a space, as rustdoc expects), then the
/// link definition of every rule it cites as `G1`.
pub(crate) fn linked(text: &str, rules: &[&str]) -> TokenStream {
    let mut lines: Vec<String> = text.split('\n').map(str::to_owned).collect();
    if !rules.is_empty() {
        lines.push(String::new());
    }
    lines.extend(
        rules
            .iter()
            .map(|rule| format!(" [{rule}]: {REFERENCE}#{}", section(rule))),
    );
    quote! { #(#[doc = #lines])* }
}

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
pub(crate) fn group_accessor(group: &Group) -> TokenStream {
    let text = if group.name.is_empty() {
        " Informers of the core (`\"\"`) API group ([G1]).".to_owned()
    } else {
        format!(
            " Informers of the `{}` API group, named after the group's first DNS label ([G1]).",
            group.name
        )
    };
    linked(&text, &["G1"])
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
pub(crate) fn kind_accessor(k: &Kind) -> TokenStream {
    let text = format!(
        " The shared informer handle for {}, named after its plural in snake case ([G2]).",
        kind_line(k)
    );
    linked(&text, &["G2"])
}

/// Doc of the `full()` accessor of a kind cached in its compact form by default.
pub(crate) fn full_accessor(k: &Kind) -> TokenStream {
    let text = format!(
        " The shared informer and lister of the full {kind}, the type `kube::Api` reads and \
         writes. It holds several times the compact form's memory per object (BENCHMARKS.md \
         has the Pod's figures); reach for it when code takes the full type by reference. A \
         cached compact object converts with `From` both ways.",
        kind = k.kind
    );
    quote!(#[doc = #text])
}

/// Doc of the `compact()` accessor of a kind whose default form is compact.
pub(crate) fn compact_default_accessor(k: &Kind) -> TokenStream {
    let text = format!(
        " The shared informer and lister of the compact {}, the form `informer()` and \
         `lister()` cache: the same informer.",
        k.kind
    );
    quote!(#[doc = #text])
}

/// Doc of the `compact()` accessor of a kind with a generated compact type behind a feature.
pub(crate) fn compact_accessor(k: &Kind) -> TokenStream {
    let text = format!(
        " The shared informer and lister of the compact {}: every field, the same JSON both ways \
         ([P1]), a fraction of the memory.",
        k.kind
    );
    linked(&text, &["P1"])
}
