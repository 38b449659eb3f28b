//! Case conversion, keyword sanitising and accessor names (G1, G2); the only place names are made.

use heck::{ToSnakeCase, ToUpperCamelCase};
use proc_macro2::{Ident, Span};

/// Rust keywords (all editions) that become raw identifiers.
const KEYWORDS: &[&str] = &[
    "abstract", "as", "async", "await", "become", "box", "break", "const", "continue", "do", "dyn",
    "else", "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl", "in", "let",
    "loop", "macro", "match", "mod", "move", "mut", "override", "priv", "pub", "ref", "return",
    "static", "struct", "trait", "true", "try", "type", "typeof", "unsafe", "unsized", "use",
    "virtual", "where", "while", "yield",
];

/// Keywords that cannot be raw identifiers; they get a trailing `_` (as prost-build does).
const NON_RAW: &[&str] = &["self", "super", "crate", "Self", "_"];

/// A snake_case name as an identifier: keywords become raw (`r#type`), `self`/`super`/`crate` get `_`.
pub(crate) fn ident(name: &str) -> Ident {
    if NON_RAW.contains(&name) {
        Ident::new(&format!("{name}_"), Span::call_site())
    } else if KEYWORDS.contains(&name) {
        Ident::new_raw(name, Span::call_site())
    } else {
        Ident::new(name, Span::call_site())
    }
}

/// G1: `core` for the core group, else the snake_case of the first DNS label (`apps`, `networking`).
pub(crate) fn group_accessor(group: &str) -> String {
    if group.is_empty() {
        return "core".to_owned();
    }
    group.split('.').next().unwrap_or(group).to_snake_case()
}

/// G2: the snake_case plural, splitting the API plural at the kind's word boundaries
/// (`NetworkPolicy` + `networkpolicies` → `network_policies`). When the plural does not start with the
/// kind's words (an irregular plural), the lowercase plural is used as is.
pub(crate) fn kind_accessor(kind: &str, plural: &str) -> String {
    let kind_snake = kind.to_snake_case();
    let words: Vec<&str> = kind_snake.split('_').collect();
    let mut rest = plural;
    let mut out: Vec<&str> = Vec::new();
    for word in &words[..words.len().saturating_sub(1)] {
        match rest.strip_prefix(word) {
            Some(tail) if !tail.is_empty() => {
                out.push(word);
                rest = tail;
            }
            _ => return plural.replace('-', "_"),
        }
    }
    out.push(rest);
    out.join("_").replace('-', "_")
}

/// `apps` → `AppsInformers` (the group handle type).
pub(crate) fn group_type(accessor: &str) -> Ident {
    Ident::new(
        &format!("{}Informers", accessor.to_upper_camel_case()),
        Span::call_site(),
    )
}

/// `apps`, `v1` → `AppsV1Informers` (the version handle type).
pub(crate) fn version_type(accessor: &str, version: &str) -> Ident {
    let name = format!(
        "{}{}Informers",
        accessor.to_upper_camel_case(),
        version.to_upper_camel_case()
    );
    Ident::new(&name, Span::call_site())
}

/// `Deployment` + `Informer` → `DeploymentInformer`.
pub(crate) fn kind_type(kind: &str, suffix: &str) -> Ident {
    Ident::new(&format!("{kind}{suffix}"), Span::call_site())
}

/// Whether `s` is a valid snake_case accessor name (before keyword sanitising).
pub(crate) fn is_snake_ident(s: &str) -> bool {
    s.chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// kube-derive's default plural (kube-derive 5.0.0 `to_plural`): `-s/-x/-z/-ch/-sh` → `-es`,
/// consonant + `y` → `-ies`, otherwise `-s`.
pub(crate) fn default_plural(kind: &str) -> String {
    let word = kind.to_ascii_lowercase();
    if ["s", "x", "z", "ch", "sh"]
        .iter()
        .any(|e| word.ends_with(e))
    {
        return format!("{word}es");
    }
    let b = word.as_bytes();
    if b.len() >= 2
        && word.ends_with('y')
        && !matches!(b[b.len() - 2], b'a' | b'e' | b'i' | b'o' | b'u')
    {
        return format!("{}ies", &word[..word.len() - 1]);
    }
    format!("{word}s")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g1_group_accessors() {
        assert_eq!(group_accessor(""), "core");
        assert_eq!(group_accessor("apps"), "apps");
        assert_eq!(group_accessor("networking.k8s.io"), "networking");
        assert_eq!(group_accessor("rbac.authorization.k8s.io"), "rbac");
        assert_eq!(group_accessor("my-group.example.com"), "my_group");
    }

    #[test]
    fn g2_kind_accessors() {
        assert_eq!(kind_accessor("Deployment", "deployments"), "deployments");
        assert_eq!(
            kind_accessor("NetworkPolicy", "networkpolicies"),
            "network_policies"
        );
        assert_eq!(kind_accessor("Endpoints", "endpoints"), "endpoints");
        assert_eq!(
            kind_accessor("CustomResourceDefinition", "customresourcedefinitions"),
            "custom_resource_definitions"
        );
        assert_eq!(kind_accessor("Foo", "feetz"), "feetz");
        assert_eq!(kind_accessor("PodIP", "podips"), "pod_ips");
        assert_eq!(kind_accessor("BigThing", "giants"), "giants");
    }

    #[test]
    fn keywords_are_sanitised() {
        assert_eq!(ident("type").to_string(), "r#type");
        assert_eq!(ident("self").to_string(), "self_");
        assert_eq!(ident("crate").to_string(), "crate_");
        assert_eq!(ident("deployments").to_string(), "deployments");
    }

    #[test]
    fn handle_type_names() {
        assert_eq!(group_type("apps").to_string(), "AppsInformers");
        assert_eq!(
            version_type("core", "v1beta1").to_string(),
            "CoreV1beta1Informers"
        );
    }

    #[test]
    fn plural_matches_kube_derive() {
        assert_eq!(default_plural("Foo"), "foos");
        assert_eq!(default_plural("Policy"), "policies");
        assert_eq!(default_plural("Box"), "boxes");
        assert_eq!(default_plural("Gateway"), "gateways");
    }
}
