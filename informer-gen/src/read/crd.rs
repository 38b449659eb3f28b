//! CRD manifests (apiextensions.k8s.io/v1 YAML), each parsed once into its kinds and, for
//! `crd-types`, the types of their schemas; every malformed field is reported by name.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use crate::error::Error;
use crate::model::types::TypeGraph;
use crate::model::{Kind, Origin, TypeRef};
use crate::naming;

/// What one manifest file defines.
#[derive(Default)]
pub(crate) struct Manifest {
    /// The kinds of every served version of every CRD.
    pub(crate) kinds: Vec<Kind>,
    /// The types of their schemas, keyed `<version>::<Type>` (empty unless asked for).
    pub(crate) types: TypeGraph,
}

/// A CRD document whose fields the accessors and the types rely on are all present and valid.
pub(crate) struct Crd<'v> {
    /// `metadata.name` (or `<plural>.<group>` when it has none), for errors.
    pub(crate) name: String,
    pub(crate) group: &'v str,
    pub(crate) kind: &'v str,
    pub(crate) plural: &'v str,
    /// `spec.names.listKind` (default `<Kind>List`).
    pub(crate) list_kind: String,
    pub(crate) namespaced: bool,
    /// The served versions: name and the version's object.
    pub(crate) versions: Vec<(&'v str, &'v Value)>,
}

/// Reads the (multi-document) YAML file at `path` once. `display` is how errors and the header
/// name it; `rust_type` gives the Rust type of a kind from its version and kind names; with
/// `types`, the schemas' types are read too.
/// Reads the types of parsed CRDs' schemas (`crd_schema::read_types`, passed in by the caller
/// so that the schema reader, which reads [`Crd`]s, and this parser do not name each other).
pub(crate) type SchemaReader = fn(&[Crd<'_>], &str, &mut Vec<Error>) -> TypeGraph;

pub(crate) fn read_manifest(
    path: &Path,
    display: &str,
    rust_type: &dyn Fn(&str, &str) -> TypeRef,
    types: Option<SchemaReader>,
    errors: &mut Vec<Error>,
) -> Manifest {
    let text = match super::read(path) {
        Ok(t) => t,
        Err(e) => {
            errors.push(e);
            return Manifest::default();
        }
    };
    let err = |field: &str, reason: String| Error::InvalidCrd {
        path: display.into(),
        field: field.into(),
        reason,
    };
    let docs: Vec<Value> = match serde_saphyr::from_multiple(&text) {
        Ok(d) => d,
        Err(e) => {
            errors.push(err("<document>", format!("invalid YAML: {e}")));
            return Manifest::default();
        }
    };
    let mut crds = Vec::new();
    for (i, doc) in docs.iter().enumerate() {
        if doc.is_null() {
            continue;
        }
        let prefix = if docs.len() > 1 {
            format!("[{i}].")
        } else {
            String::new()
        };
        match crd(doc, &prefix) {
            Ok(crd) => crds.push(crd),
            Err((field, reason)) => errors.push(err(&field, reason)),
        }
    }
    let kinds = crds
        .iter()
        .flat_map(|crd| {
            crd.versions.iter().map(|(version, _)| Kind {
                group: crd.group.to_owned(),
                version: (*version).to_owned(),
                kind: crd.kind.to_owned(),
                plural: crd.plural.to_owned(),
                namespaced: crd.namespaced,
                accessor: naming::kind_accessor(crd.kind, crd.plural),
                rust_type: rust_type(version, crd.kind),
                origin: Origin::Crd,
                input: display.to_owned(),
                compact: None,
                k8s_versions: BTreeSet::new(),
            })
        })
        .collect();
    let types = match types {
        Some(read_types) => read_types(&crds, display, errors),
        None => TypeGraph::new(),
    };
    Manifest { kinds, types }
}

type FieldError = (String, String);

fn field<'v>(doc: &'v Value, prefix: &str, path: &str) -> Result<&'v Value, FieldError> {
    let mut v = doc;
    for part in path.split('.') {
        v = v
            .get(part)
            .ok_or_else(|| (format!("{prefix}{path}"), "missing".to_owned()))?;
    }
    Ok(v)
}

fn string<'v>(doc: &'v Value, prefix: &str, path: &str) -> Result<&'v str, FieldError> {
    field(doc, prefix, path)?
        .as_str()
        .ok_or_else(|| (format!("{prefix}{path}"), "expected a string".to_owned()))
}

fn optional_string<'v>(
    doc: &'v Value,
    prefix: &str,
    path: &str,
) -> Result<Option<&'v str>, FieldError> {
    match field(doc, prefix, path) {
        Ok(_) => string(doc, prefix, path).map(Some),
        Err(_) => Ok(None),
    }
}

fn crd<'v>(doc: &'v Value, prefix: &str) -> Result<Crd<'v>, FieldError> {
    let api_version = string(doc, prefix, "apiVersion")?;
    if api_version != "apiextensions.k8s.io/v1" {
        return Err((
            format!("{prefix}apiVersion"),
            format!("expected `apiextensions.k8s.io/v1`, found `{api_version}`"),
        ));
    }
    let kind = string(doc, prefix, "kind")?;
    if kind != "CustomResourceDefinition" {
        return Err((
            format!("{prefix}kind"),
            format!("expected `CustomResourceDefinition`, found `{kind}`"),
        ));
    }
    let group = string(doc, prefix, "spec.group")?;
    let kind = string(doc, prefix, "spec.names.kind")?;
    if !kind.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        || !kind.chars().all(|c| c.is_ascii_alphanumeric())
    {
        return Err((
            format!("{prefix}spec.names.kind"),
            format!("`{kind}` is not an UpperCamelCase kind"),
        ));
    }
    let plural = string(doc, prefix, "spec.names.plural")?;
    let namespaced = match string(doc, prefix, "spec.scope")? {
        "Namespaced" => true,
        "Cluster" => false,
        other => {
            return Err((
                format!("{prefix}spec.scope"),
                format!("expected `Namespaced` or `Cluster`, found `{other}`"),
            ));
        }
    };
    let name = optional_string(doc, prefix, "metadata.name")?
        .map_or_else(|| format!("{plural}.{group}"), str::to_owned);
    let list_kind = optional_string(doc, prefix, "spec.names.listKind")?
        .map_or_else(|| format!("{kind}List"), str::to_owned);
    let versions = field(doc, prefix, "spec.versions")?
        .as_array()
        .ok_or_else(|| {
            (
                format!("{prefix}spec.versions"),
                "expected a list".to_owned(),
            )
        })?;
    let mut served = Vec::new();
    for (i, v) in versions.iter().enumerate() {
        let vprefix = format!("{prefix}spec.versions[{i}].");
        let name = string(v, &vprefix, "name")?;
        if !informer_handles::is_api_version(name) {
            return Err((
                format!("{vprefix}name"),
                format!("`{name}` is not a Kubernetes version such as `v1`"),
            ));
        }
        let is_served = match v.get("served") {
            None => true,
            Some(s) => s
                .as_bool()
                .ok_or_else(|| (format!("{vprefix}served"), "expected a boolean".to_owned()))?,
        };
        if is_served {
            served.push((name, v));
        }
    }
    Ok(Crd {
        name,
        group,
        kind,
        plural,
        list_kind,
        namespaced,
        versions: served,
    })
}
