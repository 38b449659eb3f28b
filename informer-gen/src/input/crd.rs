//! CRD manifests (apiextensions.k8s.io/v1 YAML) → kinds; every malformed field is reported by name.

use std::path::Path;

use serde_json::Value;

use crate::error::Error;
use crate::model::{Kind, Origin};
use crate::naming;

/// Kinds of every served version of every CRD in the (multi-document) YAML file at `path`.
/// Rust types are `{module}::{version}::{Kind}` (kopium's per-version layout).
pub fn read_crds(path: &Path, display: &str, module: &str, errors: &mut Vec<Error>) -> Vec<Kind> {
    let text = match super::read(path) {
        Ok(t) => t,
        Err(e) => {
            errors.push(e);
            return Vec::new();
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
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    for (i, doc) in docs.iter().enumerate() {
        if doc.is_null() {
            continue;
        }
        let prefix = if docs.len() > 1 {
            format!("[{i}].")
        } else {
            String::new()
        };
        match crd_kinds(doc, display, module, &prefix) {
            Ok(kinds) => out.extend(kinds),
            Err((field, reason)) => errors.push(err(&field, reason)),
        }
    }
    out
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

fn crd_kinds(
    doc: &Value,
    display: &str,
    module: &str,
    prefix: &str,
) -> Result<Vec<Kind>, FieldError> {
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
    let versions = field(doc, prefix, "spec.versions")?
        .as_array()
        .ok_or_else(|| {
            (
                format!("{prefix}spec.versions"),
                "expected a list".to_owned(),
            )
        })?;
    let mut out = Vec::new();
    for (i, v) in versions.iter().enumerate() {
        let vprefix = format!("{prefix}spec.versions[{i}].");
        let name = string(v, &vprefix, "name")?;
        if !informer_handles::is_version(name) {
            return Err((
                format!("{vprefix}name"),
                format!("`{name}` is not a Kubernetes version such as `v1`"),
            ));
        }
        if v.get("served").and_then(Value::as_bool) == Some(false) {
            continue;
        }
        out.push(Kind {
            group: group.to_owned(),
            version: name.to_owned(),
            kind: kind.to_owned(),
            plural: plural.to_owned(),
            namespaced,
            accessor: naming::kind_accessor(kind, plural),
            rust_type: format!("{module}::{name}::{kind}"),
            origin: Origin::Crd,
            input: display.to_owned(),
            compact: None,
        });
    }
    Ok(out)
}
