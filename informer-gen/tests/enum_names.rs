//! G11: the string enums informer-gen emits for colliding values, down to values made only of
//! punctuation, name each variant with an identifier: the generated files parse as Rust.

mod support;

/// A CRD `Sign` (JSON, which YAML reads) whose spec has string enums of colliding values: only
/// punctuation (`sign`), spellings that are one identifier (`sep`), and `_` beside punctuation.
fn signs() -> String {
    r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "signs.example.com"},
  "spec": {"group": "example.com", "scope": "Namespaced",
    "names": {"kind": "Sign", "plural": "signs"},
    "versions": [{"name": "v1", "served": true, "storage": true,
      "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
        "type": "object",
        "properties": {
          "sign": {"type": "string", "enum": ["-", "+"]},
          "sep": {"type": "string", "enum": ["a-b", "a_b"]},
          "mark": {"type": "string", "enum": ["_", "-", "x"]}}}}}}}]}}"#
        .to_owned()
}

/// The generated files, each parsed by syn.
fn generated() -> Vec<syn::File> {
    support::crd_types_parsed("enum-names", "signs.yaml", &signs(), "sign_types")
}

/// The variant names of every enum in `items`, nested modules included, by enum name.
fn enums(items: &[syn::Item], out: &mut Vec<(String, Vec<String>)>) {
    for item in items {
        match item {
            syn::Item::Enum(e) => out.push((
                e.ident.to_string(),
                e.variants.iter().map(|v| v.ident.to_string()).collect(),
            )),
            syn::Item::Mod(m) => enums(m.content.as_ref().map_or(&[][..], |c| &c.1), out),
            _ => {}
        }
    }
}

#[test]
fn g11_colliding_punctuation_values_get_variant_identifiers() {
    let mut found = Vec::new();
    for file in generated() {
        enums(&file.items, &mut found);
    }
    let variants = |name: &str| {
        found
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no enum `{name}` among {found:?}"))
    };
    assert_eq!(variants("SignSpecSign"), ["__", "__2", "Other"]);
    assert_eq!(variants("SignSpecSep"), ["a_b", "a_b2", "Other"]);
    assert_eq!(variants("SignSpecMark"), ["__", "__2", "X", "Other"]);
}
