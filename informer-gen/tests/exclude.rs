//! `exclude-kinds` (`Builder::exclude_kind`) leaves a kind out whatever input defines it: a CRD
//! manifest's version goes with its accessors and, for `crd-types`, with the types only it holds;
//! a kind no input defines is an error naming it.

use informer_gen::{Builder, Error};

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "informer-gen-exclude-{}-{name}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// A CRD `Policy` served in `v1` and `v2beta1`, each version with its own spec type.
const POLICIES: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: policies.example.com}
spec:
  group: example.com
  scope: Cluster
  names: {kind: Policy, plural: policies}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec: {type: object, properties: {rules: {type: array, items: {type: object, properties: {name: {type: string}}}}}}
    - name: v2beta1
      served: true
      storage: false
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec: {type: object, properties: {mode: {type: string, enum: [audit, Audit]}}}
";

fn generated_text(exclude: Option<(&str, &str, &str)>) -> Result<String, informer_gen::Errors> {
    let dir = tmp("versions");
    std::fs::write(dir.join("policies.yaml"), POLICIES).expect("write");
    let mut builder = Builder::new();
    builder
        .root(&dir)
        .crd_types("policies.yaml", "policy_types");
    if let Some((g, v, k)) = exclude {
        builder.exclude_kind(g, v, k);
    }
    let generated = builder.generate()?;
    Ok(generated
        .files()
        .values()
        .cloned()
        .collect::<Vec<_>>()
        .join("\n"))
}

#[test]
fn an_excluded_crd_types_version_takes_its_types_and_accessors_with_it() {
    let all = generated_text(None).expect("generates");
    for item in [
        "pub mod v2beta1",
        "pub struct PolicySpecRules",
        "pub enum PolicySpecMode",
    ] {
        assert!(all.contains(item), "without the exclusion: `{item}`");
    }
    let text = generated_text(Some(("example.com", "v2beta1", "Policy"))).expect("generates");
    assert!(
        !text.contains("v2beta1"),
        "nothing of v2beta1 is left:\n{text}"
    );
    assert!(!text.contains("PolicySpecMode"), "its enum went with it");
    for item in [
        "pub mod v1",
        "pub struct PolicySpecRules",
        "pub fn v1(&self)",
    ] {
        assert!(text.contains(item), "v1 stays: `{item}`");
    }
}

#[test]
fn an_exclusion_that_matches_nothing_is_an_error_naming_it() {
    let errs = generated_text(Some(("example.com", "v3", "Policy"))).unwrap_err();
    assert!(
        matches!(&errs.0[..], [Error::ExcludedKindUnknown { group, version, kind }]
            if group == "example.com" && version == "v3" && kind == "Policy"),
        "{errs}"
    );
    assert!(
        errs.to_string()
            .contains("`exclude-kinds` names `example.com/v3/Policy`, which no input defines"),
        "{errs}"
    );
}
