//! Cross-attribute rules: group/version/kind present and well formed, index declarations valid.

use quote::ToTokens;
use syn::{Data, DeriveInput, Ident, parse_quote};

use crate::ast::{Index, Input, Source};
use crate::attr::{Attr, Container, IndexSource};
use crate::ctxt::Ctxt;

/// Lister and handle method names an index may not shadow; `namespace` is the factory's index (X3).
const RESERVED_INDEX_NAMES: &[&str] = &[
    "namespace",
    "new",
    "list",
    "get",
    "namespaced",
    "informer",
    "lister",
    "as_lister",
];

/// Validates the parsed attributes; `None` when something essential is missing (errors are in `cx`).
pub(crate) fn check<'a>(cx: &Ctxt, input: &'a DeriveInput, c: Container) -> Option<Input<'a>> {
    let kube_mode = c.kube.is_some();
    check_shape(cx, input);
    let anchor = c
        .first_attr
        .clone()
        .unwrap_or_else(|| input.ident.to_token_stream());
    let attr_name = if kube_mode { "kube" } else { "informer" };
    let group = required(cx, &c.group, &anchor, attr_name, "group", "example.com").map(|g| {
        check_group(cx, g);
        g.value.clone()
    });
    let version = required(cx, &c.version, &anchor, attr_name, "version", "v1").map(|v| {
        check_version(cx, v);
        v.value.clone()
    });
    let kind = required(cx, &c.kind, &anchor, attr_name, "kind", "Foo").map(|k| {
        check_kind(cx, k);
        k.value.clone()
    });
    if let Some(p) = c.plural.get() {
        check_dns_label(cx, p, "plural");
    }
    if let Some(s) = c.singular.get() {
        check_dns_label(cx, s, "singular");
    }
    if !kube_mode && let Some(root) = c.root.get() {
        cx.error_spanned_by(
            &root.tokens,
            "`root` is only meaningful inside `#[kube(...)]`",
        );
    }
    let indexes = check_indexes(cx, &c);
    let resource = resource_ident(input, &c);
    let (group, version, kind) = (group?, version?, kind?);
    let plural = match c.plural.get() {
        Some(p) => p.value.clone(),
        None => to_plural(
            &c.singular
                .get()
                .map_or_else(|| kind.to_ascii_lowercase(), |s| s.value.clone()),
        ),
    };
    Some(Input {
        resource,
        vis: &input.vis,
        group,
        version,
        kind,
        plural,
        namespaced: c.namespaced.get().is_some(),
        scope_span: c.namespaced.get().map_or(anchor, |n| n.tokens.clone()),
        kube_mode,
        krate: c
            .krate
            .get()
            .map_or_else(|| parse_quote!(::informer_runtime), |k| k.value.clone()),
        indexes,
    })
}

/// The type the emitted code is for: kube's root type (`root`, else the kind) or the item itself.
pub(crate) fn resource_ident(input: &DeriveInput, c: &Container) -> Ident {
    if c.kube.is_none() {
        return input.ident.clone();
    }
    let name = c.root.get().or(c.kind.get()).map(|s| s.value.clone());
    match name.and_then(|n| syn::parse_str::<Ident>(&n).ok()) {
        Some(ident) => Ident::new(&ident.to_string(), input.ident.span()),
        None => {
            let s = input.ident.to_string();
            Ident::new(
                s.strip_suffix("Spec")
                    .filter(|s| !s.is_empty())
                    .unwrap_or(&s),
                input.ident.span(),
            )
        }
    }
}

fn check_shape(cx: &Ctxt, input: &DeriveInput) {
    match &input.data {
        Data::Struct(_) => {}
        Data::Enum(e) => {
            cx.error_spanned_by(e.enum_token, "`#[derive(Informer)]` only supports structs")
        }
        Data::Union(u) => {
            cx.error_spanned_by(u.union_token, "`#[derive(Informer)]` only supports structs")
        }
    }
    if !input.generics.params.is_empty() {
        cx.error_spanned_by(
            &input.generics,
            "`#[derive(Informer)]` does not support generic resource types",
        );
    }
}

fn required<'c>(
    cx: &Ctxt,
    attr: &'c Attr<String>,
    anchor: &proc_macro2::TokenStream,
    attr_name: &str,
    key: &str,
    example: &str,
) -> Option<&'c crate::attr::Spanned<String>> {
    let value = attr.get();
    if value.is_none() && !attr.failed() {
        cx.error_spanned_by(
            anchor,
            format!("missing `{key}`: add `#[{attr_name}({key} = \"{example}\")]`"),
        );
    }
    value
}

fn check_group(cx: &Ctxt, g: &crate::attr::Spanned<String>) {
    let ok = g.value.is_empty()
        || (g.value.len() <= 253
            && g.value.split('.').all(|label| {
                !label.is_empty()
                    && label.len() <= 63
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    && !label.starts_with('-')
                    && !label.ends_with('-')
            }));
    if !ok {
        cx.error_spanned_by(
            &g.tokens,
            format!("invalid `group` `{}`: expected a lowercase DNS subdomain such as `example.com`, or `\"\"` for core", g.value),
        );
    }
}

fn check_version(cx: &Ctxt, v: &crate::attr::Spanned<String>) {
    if !informer_handles::is_api_version(&v.value) {
        cx.error_spanned_by(
            &v.tokens,
            format!(
                "invalid `version` `{}`: expected `v1`, `v1beta1`, `v2alpha1`, ...",
                v.value
            ),
        );
    }
}

fn check_kind(cx: &Ctxt, k: &crate::attr::Spanned<String>) {
    let ok = k
        .value
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_uppercase())
        && k.value.chars().all(|c| c.is_ascii_alphanumeric())
        && k.value != "Self";
    if !ok {
        cx.error_spanned_by(
            &k.tokens,
            format!(
                "invalid `kind` `{}`: expected an UpperCamelCase name such as `Foo`",
                k.value
            ),
        );
    }
}

fn check_dns_label(cx: &Ctxt, s: &crate::attr::Spanned<String>, key: &str) {
    let ok = s
        .value
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase())
        && s.value.len() <= 63
        && s.value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.value.ends_with('-');
    if !ok {
        cx.error_spanned_by(
            &s.tokens,
            format!(
                "invalid `{key}` `{}`: expected a lowercase name such as `foos`",
                s.value
            ),
        );
    }
}

fn check_indexes(cx: &Ctxt, c: &Container) -> Vec<Index> {
    let mut out: Vec<Index> = Vec::new();
    for index in &c.indexes {
        let Some(name) = &index.name else {
            cx.error_spanned_by(
                &index.key,
                "missing `name` in `index(...)`: add `name = \"by_…\"`",
            );
            continue;
        };
        let value = name.value();
        let method = match syn::parse_str::<Ident>(&value) {
            Ok(ident)
                if value
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_') =>
            {
                Some(Ident::new(&ident.to_string(), name.span()))
            }
            _ => {
                cx.error_spanned_by(
                    name,
                    format!("invalid index name `{value}`: expected a snake_case identifier such as `by_node`"),
                );
                None
            }
        };
        if RESERVED_INDEX_NAMES.contains(&value.as_str()) {
            cx.error_spanned_by(
                name,
                format!("index name `{value}` is reserved; choose another such as `by_{value}`"),
            );
            continue;
        }
        if out.iter().any(|i| i.name == value) {
            cx.error_spanned_by(name, format!("duplicate index name `{value}`"));
            continue;
        }
        let source = match index.sources.as_slice() {
            [] => {
                cx.error_spanned_by(
                    &index.key,
                    "`index(...)` needs one of `path`, `owner` or `function`",
                );
                None
            }
            [(_, src)] => Some(match src {
                IndexSource::Path(members) => Source::Path(members.clone()),
                IndexSource::Owner(kind) => {
                    let k = kind.value();
                    if k.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric()) {
                        cx.error_spanned_by(
                            kind,
                            format!(
                                "invalid owner kind `{k}`: expected a kind such as `ReplicaSet`"
                            ),
                        );
                    }
                    Source::Owner(k)
                }
                IndexSource::Function(path) => Source::Function(path.clone()),
            }),
            [_, rest @ ..] => {
                for (key, _) in rest {
                    cx.error_spanned_by(
                        key,
                        "`index(...)` takes only one of `path`, `owner` or `function`",
                    );
                }
                None
            }
        };
        if let (Some(method), Some(source)) = (method, source) {
            out.push(Index {
                name: value,
                method,
                source,
            });
        }
    }
    out
}

/// kube-derive's default plural (kube-derive 5.0.0 `custom_resource/mod.rs` `to_plural`), reproduced exactly:
/// `-s/-x/-z/-ch/-sh` → `-es`, consonant + `y` → `-ies`, otherwise `-s`. Irregular plurals must be given.
pub(crate) fn to_plural(word: &str) -> String {
    if word.ends_with('s')
        || word.ends_with('x')
        || word.ends_with('z')
        || word.ends_with("ch")
        || word.ends_with("sh")
    {
        return format!("{word}es");
    }
    let bytes = word.as_bytes();
    if bytes.len() >= 2
        && word.ends_with('y')
        && !matches!(bytes[bytes.len() - 2], b'a' | b'e' | b'i' | b'o' | b'u')
    {
        return format!("{}ies", &word[..word.len() - 1]);
    }
    format!("{word}s")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g7_plural_matches_kube_derive() {
        for (word, plural) in [
            ("foo", "foos"),
            ("box", "boxes"),
            ("bus", "buses"),
            ("quiz", "quizes"),
            ("match", "matches"),
            ("mesh", "meshes"),
            ("policy", "policies"),
            ("day", "days"),
            ("key", "keys"),
            ("y", "ys"),
            ("endpoints", "endpointses"),
        ] {
            assert_eq!(to_plural(word), plural, "{word}");
        }
    }
}
