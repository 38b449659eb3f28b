//! G12: deep nested types of a CRD get short names, and a subtree the schema repeats is one set
//! of types: the generated files parse as Rust, every struct name is at most 40 characters, and
//! the repeated subtree's fields hold the first's types.

mod support;

/// `{"type": "object", "properties": {…}}` of `props`.
fn object(props: &str) -> String {
    format!(r#"{{"type": "object", "properties": {{{props}}}}}"#)
}

/// A Kyverno-like CRD `Policy`: `spec.rules[].validate.foreach[].context[].imageRegistry`,
/// repeated whole under `status.autogen.rules`, and two small structs of one shape under
/// different fields (`owner`, `target`).
fn policy() -> String {
    let registry = object(r#""reference": {"type": "string"}"#);
    let context = object(&format!(
        r#""imageRegistry": {registry}, "name": {{"type": "string"}}"#
    ));
    let foreach = object(&format!(
        r#""context": {{"type": "array", "items": {context}}}"#
    ));
    let validate = object(&format!(
        r#""foreach": {{"type": "array", "items": {foreach}}}, "mode": {{"type": "string", "enum": ["audit", "enforce"]}}"#
    ));
    let rules = format!(
        r#"{{"type": "array", "items": {}}}"#,
        object(&format!(r#""validate": {validate}"#))
    );
    let named = object(r#""name": {"type": "string"}"#);
    let spec = object(&format!(
        r#""rules": {rules}, "owner": {named}, "target": {named}"#
    ));
    let status = object(&format!(
        r#""autogen": {}"#,
        object(&format!(r#""rules": {rules}"#))
    ));
    format!(
        r#"{{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {{"name": "policies.example.com"}},
  "spec": {{"group": "example.com", "scope": "Cluster",
    "names": {{"kind": "Policy", "plural": "policies"}},
    "versions": [{{"name": "v1", "served": true, "storage": true,
      "schema": {{"openAPIV3Schema": {}}}}}]}}}}"#,
        object(&format!(r#""spec": {spec}, "status": {status}"#))
    )
}

/// The generated files, each parsed by syn.
fn generated() -> Vec<syn::File> {
    support::crd_types_parsed("type-names", "policies.yaml", &policy(), "policy_types")
}

/// Every struct and enum in `items` (nested modules included): its name and its fields, each
/// as `name: type`.
fn types(items: &[syn::Item], out: &mut Vec<(String, Vec<String>)>) {
    let field = |f: &syn::Field| {
        let ty = &f.ty;
        let name = f
            .ident
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default();
        format!("{name}: {}", quote::quote!(#ty)).replace(' ', "")
    };
    for item in items {
        match item {
            syn::Item::Struct(s) => {
                out.push((s.ident.to_string(), s.fields.iter().map(field).collect()))
            }
            syn::Item::Enum(e) => out.push((e.ident.to_string(), Vec::new())),
            syn::Item::Mod(m) => types(m.content.as_ref().map_or(&[][..], |c| &c.1), out),
            _ => {}
        }
    }
}

#[test]
fn g12_deep_types_are_short_and_a_repeated_subtree_is_one_set_of_types() {
    let mut found = Vec::new();
    for file in generated() {
        types(&file.items, &mut found);
    }
    let names: Vec<&str> = found.iter().map(|(n, _)| n.as_str()).collect();
    let fields = |name: &str| {
        found
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, f)| f.clone())
            .unwrap_or_else(|| panic!("no type `{name}` among {names:?}"))
    };
    let holds = |name: &str, field: &str, ty: &str| {
        let fields = fields(name);
        assert!(
            fields
                .iter()
                .any(|f| f.starts_with(&format!("{field}:")) && f.contains(ty)),
            "`{name}.{field}` does not hold `{ty}`: {fields:?}"
        );
    };
    // Parent + Field while short; past 40 characters, the kind and the last two field names
    // (`spec.rules.validate.foreach.context.imageRegistry`), and of two equal types the
    // shorter name (`status.autogen.rules.validate.foreach.context` is the shorter context).
    holds(
        "PolicySpecRulesValidateForeach",
        "context",
        "PolicyForeachContext",
    );
    holds(
        "PolicyForeachContext",
        "image_registry",
        "PolicyContextImageRegistry",
    );
    for (name, _) in &found {
        assert!(
            name.len() <= 40,
            "`{name}` is {} characters long",
            name.len()
        );
    }
    // `status.autogen.rules` holds `spec.rules`'s types; none of its own is generated.
    holds("PolicyStatusAutogen", "rules", "PolicySpecRules");
    holds(
        "PolicySpecRulesValidate",
        "mode",
        "PolicySpecRulesValidateMode",
    );
    assert!(
        names
            .iter()
            .all(|n| !n.starts_with("PolicyStatusAutogenRules")),
        "the repeated subtree got types of its own: {names:?}"
    );
    assert_eq!(
        names.iter().filter(|n| n.ends_with("ValidateMode")).count(),
        1,
        "one enum for both `mode`s: {names:?}"
    );
    // Equal shapes under different field names stay apart.
    holds("PolicySpec", "owner", "PolicySpecOwner");
    holds("PolicySpec", "target", "PolicySpecTarget");
}
