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

/// `file:field` of every error, all of which must be `InvalidCrd`.
fn crd_fields(errs: &informer_gen::Errors) -> Vec<String> {
    errs.0
        .iter()
        .map(|e| match e {
            Error::InvalidCrd { path, field, .. } => format!("{}:{field}", path.display()),
            other => panic!("unexpected {other}"),
        })
        .collect()
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
    let fields = crd_fields(&errs);
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

/// A k8s-openapi-shaped source tree with one listable kind, `demo.example.com/v1` `Widget`.
fn fake_k8s_openapi(
    name: &str,
    fields: &str,
    json_names: &str,
    defaults: &str,
) -> informer_gen::K8sOpenApi {
    let src = tmp(name).join("src");
    let dir = src.join("v1_37/api/demo/v1");
    std::fs::create_dir_all(&dir).expect("fake tree");
    write(
        &dir,
        "mod.rs",
        "mod widget;\npub use self::widget::Widget;\n",
    );
    let meta = src.join("v1_37/apimachinery/pkg/apis/meta/v1");
    std::fs::create_dir_all(&meta).expect("fake tree");
    write(
        &meta,
        "mod.rs",
        "mod object_meta;\npub use self::object_meta::ObjectMeta;\n",
    );
    write(
        &meta,
        "object_meta.rs",
        r#"#[derive(Clone, Debug, Default, PartialEq)]
pub struct ObjectMeta {
    pub labels: Option<std::collections::BTreeMap<std::string::String, std::string::String>>,
    pub name: Option<std::string::String>,
    pub namespace: Option<std::string::String>,
    pub resource_version: Option<std::string::String>,
    pub uid: Option<std::string::String>,
}
fn visitor(k: &str) {
    let _ = match k {
        "labels" => Field::Key_labels,
        "name" => Field::Key_name,
        "namespace" => Field::Key_namespace,
        "resourceVersion" => Field::Key_resource_version,
        "uid" => Field::Key_uid,
        _ => Field::Other,
    };
}
"#,
    );
    write(
        &dir,
        "widget.rs",
        &format!(
            r#"#[derive(Clone, Debug, Default, PartialEq)]
pub struct Widget {{
{fields}
}}
impl crate::Resource for Widget {{
    const API_VERSION: &'static str = "demo.example.com/v1";
    const GROUP: &'static str = "demo.example.com";
    const KIND: &'static str = "Widget";
    const VERSION: &'static str = "v1";
    const URL_PATH_SEGMENT: &'static str = "widgets";
    type Scope = crate::NamespaceResourceScope;
}}
impl crate::ListableResource for Widget {{
    const LIST_KIND: &'static str = "WidgetList";
}}
fn visitor(k: &str) {{
    let _ = match k {{
{json_names}
        _ => Field::Other,
    }};
}}
fn build() -> Widget {{
    Widget {{
{defaults}
        ..Default::default()
    }}
}}
"#
        ),
    );
    informer_gen::K8sOpenApi::at(src, "0.0.0", "1.37")
}

#[test]
fn compact_kind_must_be_a_selected_built_in() {
    let k8s = fake_k8s_openapi(
        "compact-unselected",
        "    pub count: Option<i32>,",
        "    \"count\" => Field::Key_count,",
        "",
    );
    let errs = Builder::new()
        .k8s_openapi(k8s)
        .include_kind("demo.example.com", "v1", "Widget")
        .compact_kind("demo.example.com", "v1", "Gadget")
        .generate()
        .unwrap_err();
    assert!(
        matches!(&errs.0[..], [Error::InvalidName { what: "compact kind", value, reason }]
            if value == "demo.example.com/v1/Gadget" && reason.contains("include_kind")),
        "{errs}"
    );
}

#[test]
fn compact_type_errors_name_the_file_and_the_field() {
    let k8s = fake_k8s_openapi(
        "compact-unmappable",
        "    pub metadata: crate::apimachinery::pkg::apis::meta::v1::ObjectMeta,\n    pub tags: std::collections::HashSet<std::string::String>,\n    pub unnamed: Option<bool>,\n    pub count: Option<i32>,",
        "    \"metadata\" => Field::Key_metadata,\n    \"tags\" => Field::Key_tags,\n    \"count\" => Field::Key_count,",
        "",
    );
    let errs = Builder::new()
        .k8s_openapi(k8s)
        .include_kind("demo.example.com", "v1", "Widget")
        .compact_kind("demo.example.com", "v1", "Widget")
        .generate()
        .unwrap_err();
    let found: Vec<(String, String)> = errs
        .0
        .iter()
        .filter_map(|e| match e {
            Error::SourceType { path, item, reason } => {
                assert!(path.ends_with("widget.rs"), "{e}");
                Some((item.clone(), reason.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(found.len(), 2, "{errs}");
    assert_eq!(found[0].0, "Widget.tags");
    assert!(found[0].1.contains("unsupported type"), "{}", found[0].1);
    assert_eq!(found[1].0, "Widget.unnamed");
    assert!(found[1].1.contains("no JSON name"), "{}", found[1].1);
}

#[test]
fn a_type_missing_from_the_sources_is_reported_by_its_module() {
    let k8s = fake_k8s_openapi(
        "compact-missing",
        "    pub metadata: crate::apimachinery::pkg::apis::meta::v1::ObjectMeta,\n    pub gizmo: Option<crate::api::demo::v1::Gizmo>,",
        "    \"metadata\" => Field::Key_metadata,\n    \"gizmo\" => Field::Key_gizmo,",
        "",
    );
    let errs = Builder::new()
        .k8s_openapi(k8s)
        .include_kind("demo.example.com", "v1", "Widget")
        .compact_kind("demo.example.com", "v1", "Widget")
        .generate()
        .unwrap_err();
    assert!(
        errs.0
            .iter()
            .any(|e| matches!(e, Error::SourceType { path, item, .. }
            if path.ends_with("api/demo/v1/mod.rs") && item == "api::demo::v1::Gizmo")),
        "{errs}"
    );
}

#[test]
fn a_compact_kind_gets_its_types_and_a_compact_accessor() {
    let k8s = fake_k8s_openapi(
        "compact-ok",
        "    pub metadata: crate::apimachinery::pkg::apis::meta::v1::ObjectMeta,\n    pub count: Option<i32>,\n    pub labels: Option<std::collections::BTreeMap<std::string::String, std::string::String>>,\n    pub items: std::vec::Vec<std::string::String>,",
        "    \"metadata\" => Field::Key_metadata,\n    \"count\" => Field::Key_count,\n    \"labels\" => Field::Key_labels,\n    \"items\" => Field::Key_items,",
        "        items: value_items.unwrap_or_default(),",
    );
    let generated = Builder::new()
        .k8s_openapi(k8s)
        .include_kind("demo.example.com", "v1", "Widget")
        .compact_kind("demo.example.com", "v1", "Widget")
        .generate()
        .unwrap();
    // The compact module tree, in as many files as its modules take (`compact/mod.rs`,
    // `compact/api.rs`, …).
    let compact: String = generated
        .files()
        .iter()
        .filter(|(name, _)| name.starts_with("compact/"))
        .map(|(_, text)| text.as_str())
        .collect();
    assert!(generated.files().contains_key("compact/mod.rs"));
    assert!(compact.contains("pub struct Widget"), "{compact}");
    assert!(
        compact.contains("pub labels: rt::Option<rt::StrMap>"),
        "{compact}"
    );
    assert!(
        compact.contains("pub items: rt::Box<[rt::IStr]>"),
        "{compact}"
    );
    assert!(
        compact.contains("deserialize_with = \"rt::null_default\""),
        "{compact}"
    );
    assert!(
        compact.contains("impl rt::ProjectedMeta for ObjectMeta"),
        "{compact}"
    );
    assert!(
        compact.contains("type Source = k8s::api::demo::v1::Widget;"),
        "{compact}"
    );
    assert!(generated.files()["mod.rs"].contains("pub mod compact;"));
    let group = generated
        .files()
        .iter()
        .find(|(name, _)| name.as_str() != "mod.rs" && !name.starts_with("compact/"))
        .map(|(_, text)| text)
        .unwrap();
    assert!(group.contains("pub fn compact("), "{group}");
}

#[test]
fn a_compact_kind_without_object_meta_is_an_error() {
    let k8s = fake_k8s_openapi(
        "compact-no-meta",
        "    pub count: Option<i32>,",
        "    \"count\" => Field::Key_count,",
        "",
    );
    let errs = Builder::new()
        .k8s_openapi(k8s)
        .include_kind("demo.example.com", "v1", "Widget")
        .compact_kind("demo.example.com", "v1", "Widget")
        .generate()
        .unwrap_err();
    assert!(
        matches!(&errs.0[..], [Error::SourceType { item, reason, .. }]
            if item == "api::demo::v1::Widget" && reason.contains("metadata")),
        "{errs}"
    );
}

/// A CRD whose v1 schema has `schema_body` (indented under `openAPIV3Schema:`).
fn crd_with_schema(schema_body: &str) -> String {
    let mut text = String::from(
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: foos.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Foo, plural: foos}
  versions:
    - name: v1
      served: true
      schema:
        openAPIV3Schema:
",
    );
    for line in schema_body.lines() {
        text.push_str("          ");
        text.push_str(line);
        text.push('\n');
    }
    text
}

#[test]
fn unmappable_schemas_name_file_crd_version_and_json_path() {
    let dir = tmp("schema");
    let schema = "type: object
properties:
  spec:
    type: object
    properties:
      untyped: {description: no type}
      list: {type: array}
      odd: {type: tuple}
      both:
        type: object
        properties: {a: {type: string}}
        additionalProperties: {type: string}
      fine: {type: string}
";
    write(&dir, "foos.yaml", &crd_with_schema(schema));
    write(
        &dir,
        "noschema.yaml",
        &FOO_CRD.replace("Foo", "Bar").replace("foos", "bars"),
    );
    let errs = Builder::new()
        .root(&dir)
        .crd_types("foos.yaml", "foos")
        .crd_types("noschema.yaml", "bars")
        .generate()
        .unwrap_err();
    let found: Vec<(String, String, String, String)> = errs
        .0
        .iter()
        .filter_map(|e| match e {
            Error::CrdSchema {
                path,
                crd,
                version,
                json_path,
                reason,
            } => Some((
                path.display().to_string(),
                format!("{crd}/{version}"),
                json_path.clone(),
                reason.clone(),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(found.len(), 5, "{errs}");
    let at = |p: &str| {
        found
            .iter()
            .find(|f| f.2 == p)
            .unwrap_or_else(|| panic!("no error at {p}: {errs}"))
    };
    let untyped = at(".properties.spec.properties.untyped");
    assert_eq!(untyped.0, "foos.yaml");
    assert_eq!(untyped.1, "foos.example.com/v1");
    assert!(
        untyped.3.contains("x-kubernetes-preserve-unknown-fields"),
        "{errs}"
    );
    assert!(at(".properties.spec.properties.list").3.contains("items"));
    assert!(
        at(".properties.spec.properties.odd")
            .3
            .contains("type: tuple")
    );
    assert!(
        at(".properties.spec.properties.both")
            .3
            .contains("remove one")
    );
    let none = at(".");
    assert_eq!(
        (none.0.as_str(), none.1.as_str()),
        ("noschema.yaml", "bars.example.com/v1")
    );
    assert!(none.3.contains("openAPIV3Schema"), "{errs}");
    // The message a user reads names everything.
    let text = errs.to_string();
    assert!(
        text.contains(
            "foos.yaml: CRD `foos.example.com` version `v1`: .properties.spec.properties.list:"
        ),
        "{text}"
    );
}

#[test]
fn crd_types_modules_must_not_take_a_group_module_and_may_be_shared() {
    let dir = tmp("modules");
    write(&dir, "foos.yaml", &crd_with_schema("type: object\n"));
    let errs = Builder::new()
        .root(&dir)
        .crd_types("foos.yaml", "example")
        .generate()
        .unwrap_err();
    assert!(
        matches!(&errs.0[..], [Error::InvalidName { what: "crd-types module", value, .. }] if value == "example"),
        "the group module `example` is taken: {errs}"
    );
    // The message names what holds the name and a free one to use instead.
    let text = errs.to_string();
    assert!(
        text.contains(
            "invalid crd-types module `example`: `example` (for foos.yaml) is already the module of \
             group `example.com` (its accessor, `factory.example()`); choose another module name, \
             such as `example_types`"
        ),
        "{text}"
    );

    // A second manifest asking for the same module name, and the first suggestion taken too.
    write(
        &dir,
        "bars.yaml",
        &crd_with_schema("type: object\n")
            .replace("foo", "bar")
            .replace("Foo", "Bar"),
    );
    // Two manifests may share a module: one group's CRDs, one file per kind.
    let shared = Builder::new()
        .root(&dir)
        .crd_types("foos.yaml", "widgets")
        .crd_types("bars.yaml", "widgets")
        .generate()
        .expect("one module for both manifests");
    let types = &shared.files()["widgets.rs"];
    assert!(types.contains("pub struct Foo {") && types.contains("pub struct Bar {"));
    assert!(types.contains("foos.yaml, bars.yaml"), "{types}");
    // The same manifest twice in one module writes every type twice: refused, by name.
    let errs = Builder::new()
        .root(&dir)
        .crd_types("foos.yaml", "widgets")
        .crd_types("./foos.yaml", "widgets")
        .generate()
        .unwrap_err();
    assert!(
        errs.to_string().contains(
            "invalid crd-types type `widgets::v1::Foo`: ./foos.yaml and foos.yaml both generate \
             it; give one of them a module of its own"
        ),
        "{errs}"
    );
    let errs = Builder::new()
        .root(&dir)
        .crd_types("foos.yaml", "example")
        .crd_types("bars.yaml", "example_types")
        .generate()
        .unwrap_err();
    assert!(
        errs.to_string().contains("such as `example_crds`"),
        "{errs}"
    );
}

#[test]
fn a_group_accessor_may_not_take_a_root_name() {
    let dir = tmp("root-names");
    write(
        &dir,
        "a.yaml",
        &FOO_CRD.replace("example.com", "rt.example.com"),
    );
    let errs = Builder::new()
        .root(&dir)
        .crd_manifest("a.yaml", "crate::x")
        .generate()
        .unwrap_err();
    assert!(
        matches!(&errs.0[..], [Error::InvalidName { what: "group accessor", value, reason }]
            if value == "rt" && reason.contains("group-accessors")),
        "`rt` is the runtime alias of the generated root: {errs}"
    );
}

#[test]
fn a_crd_types_manifest_is_parsed_and_reported_once() {
    let dir = tmp("types-once");
    write(&dir, "bad.yaml", "apiVersion: [unclosed\n");
    write(
        &dir,
        "noplural.yaml",
        &crd_with_schema("type: object\n").replace(", plural: foos", ""),
    );
    let errs = Builder::new()
        .root(&dir)
        .crd_types("bad.yaml", "bad")
        .crd_types("noplural.yaml", "foos")
        .generate()
        .unwrap_err();
    let fields = crd_fields(&errs);
    assert_eq!(
        fields,
        ["bad.yaml:<document>", "noplural.yaml:spec.names.plural"]
    );
}
