//! Bad inputs give typed errors naming the file and the item, all problems reported together.

use std::path::Path;

use informer_gen::{Builder, Error};

fn tmp(name: &str) -> std::path::PathBuf {
    let dir =
        std::env::temp_dir().join(format!("informer-gen-errors-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).expect("write input");
}

const FOO_CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Foo, plural: foos}
  versions: [{name: v1, served: true}]
";

#[test]
fn broken_yaml_names_the_file() {
    let dir = tmp("yaml");
    write(&dir, "bad.yaml", "apiVersion: [unclosed\n");
    let errs = Builder::new()
        .root(&dir)
        .crd_manifest("bad.yaml", "crate::x")
        .generate()
        .unwrap_err();
    assert!(
        matches!(&errs.0[..], [Error::InvalidCrd { path, field, .. }] if path.ends_with("bad.yaml") && field == "<document>"),
        "{errs}"
    );
}

#[test]
fn missing_and_wrong_crd_fields_are_named() {
    let dir = tmp("fields");
    write(
        &dir,
        "a.yaml",
        &FOO_CRD.replace(
            "  names: {kind: Foo, plural: foos}\n",
            "  names: {kind: Foo}\n",
        ),
    );
    write(&dir, "b.yaml", &FOO_CRD.replace("Namespaced", "Everywhere"));
    let errs = Builder::new()
        .root(&dir)
        .crd_manifest("a.yaml", "crate::x")
        .crd_manifest("b.yaml", "crate::x")
        .generate()
        .unwrap_err();
    let fields: Vec<String> = errs
        .0
        .iter()
        .map(|e| match e {
            Error::InvalidCrd { path, field, .. } => format!("{}:{field}", path.display()),
            other => panic!("unexpected {other}"),
        })
        .collect();
    assert_eq!(fields, ["a.yaml:spec.names.plural", "b.yaml:spec.scope"]);
}

#[test]
fn kind_defined_twice_and_unparsable_source_are_reported_together() {
    let dir = tmp("dup");
    write(&dir, "a.yaml", FOO_CRD);
    write(
        &dir,
        "foo.rs",
        "//! x\n#[derive(Informer)]\n#[informer(group = \"example.com\", version = \"v1\", kind = \"Foo\")]\npub struct Foo;\n",
    );
    write(&dir, "broken.rs", "pub struct {");
    let errs = Builder::new()
        .root(&dir)
        .crd_manifest("a.yaml", "crate::x")
        .derive_source("foo.rs", "crate::y")
        .derive_source("broken.rs", "crate::z")
        .generate()
        .unwrap_err();
    assert_eq!(errs.0.len(), 2, "{errs}");
    assert!(errs.0.iter().any(
        |e| matches!(e, Error::RustSyntax { path, line: 1, .. } if path.ends_with("broken.rs"))
    ));
    assert!(errs.0.iter().any(|e| matches!(e,
        Error::DuplicateKind { kind, first, second, .. } if kind == "Foo" && first == "foo.rs" && second == "a.yaml")));
}

#[test]
fn derive_without_kind_names_the_item() {
    let dir = tmp("derive");
    write(
        &dir,
        "foo.rs",
        "#[derive(Informer)]\n#[informer(group = \"example.com\", version = \"v1\")]\npub struct Bar;\n",
    );
    let errs = Builder::new()
        .root(&dir)
        .derive_source("foo.rs", "crate::y")
        .generate()
        .unwrap_err();
    assert!(
        matches!(&errs.0[..], [Error::DeriveAttr { item, reason, .. }] if item == "Bar" && reason.contains("`kind`")),
        "{errs}"
    );
}

#[test]
fn unknown_group_and_accessor_collision() {
    let dir = tmp("collide");
    write(&dir, "a.yaml", FOO_CRD);
    write(
        &dir,
        "b.yaml",
        &FOO_CRD.replace("example.com", "example.org"),
    );
    let errs = Builder::new()
        .root(&dir)
        .crd_manifest("a.yaml", "crate::x")
        .crd_manifest("b.yaml", "crate::x")
        .group_accessor("nope.example.com", "nope")
        .generate()
        .unwrap_err();
    assert!(
        errs.0
            .iter()
            .any(|e| matches!(e, Error::UnknownGroup { group, .. } if group == "nope.example.com")),
        "{errs}"
    );
    assert!(errs.0.iter().any(|e| matches!(e,
        Error::GroupAccessorCollision { accessor, groups } if accessor == "example" && groups.len() == 2)), "{errs}");
    assert!(
        errs.to_string()
            .starts_with("informer-gen found 2 problems")
    );
}
