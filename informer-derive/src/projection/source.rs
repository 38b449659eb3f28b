//! `#[derive(ProjectionSource)]`: a struct's JSON names as serde reads them, from its own
//! `#[serde(...)]` attributes (`rename`, `rename_all`, `skip`, `flatten`), for projections (P5).

use proc_macro2::TokenStream;
use quote::quote;
use syn::ext::IdentExt;
use syn::{Attribute, LitStr};

use crate::ctxt::Ctxt;
use crate::symbol::{CRATE, PROJECTION};

/// Entry point: the `ProjectionSource` impl, or the errors.
pub(crate) fn derive(input: &syn::DeriveInput) -> TokenStream {
    let cx = Ctxt::new();
    let pairs = pairs(&cx, input);
    let krate = krate(&cx, &input.attrs);
    if let Err(err) = cx.check() {
        return err.to_compile_error();
    }
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let (rust, json): (Vec<String>, Vec<String>) = pairs.into_iter().unzip();
    quote! {
        #[automatically_derived]
        impl #impl_generics #krate::__private::ProjectionSource for #ident #ty_generics #where_clause {
            const JSON_NAMES: #krate::__private::JsonNames =
                #krate::__private::JsonNames::Exact(&[#((#rust, #json)),*]);
        }
    }
}

/// Each field's Rust name (without `r#`) and the JSON name serde deserializes it from; fields
/// without a key of their own (skipped, flattened) are left out.
fn pairs(cx: &Ctxt, input: &syn::DeriveInput) -> Vec<(String, String)> {
    let syn::Data::Struct(syn::DataStruct {
        fields: syn::Fields::Named(named),
        ..
    }) = &input.data
    else {
        cx.error_spanned_by(
            &input.ident,
            "`ProjectionSource` needs a struct with named fields",
        );
        return Vec::new();
    };
    let container = serde_attrs(cx, &input.attrs);
    let rule = container.rename_all.and_then(|lit| {
        let rule = Rule::parse(&lit.value());
        if rule.is_none() {
            cx.error_spanned_by(&lit, format!("unknown serde rename rule `{}`", lit.value()));
        }
        rule
    });
    named
        .named
        .iter()
        .filter_map(|f| {
            let ident = f.ident.as_ref()?;
            let attrs = serde_attrs(cx, &f.attrs);
            if attrs.skip || attrs.flatten {
                return None;
            }
            let rust = ident.unraw().to_string();
            let json = match (attrs.rename, rule) {
                (Some(lit), _) => lit.value(),
                (None, Some(rule)) => rule.apply(&rust),
                (None, None) => rust.clone(),
            };
            Some((rust, json))
        })
        .collect()
}

/// `#[projection(crate = "…")]`: the path of `informer_runtime`. Other keys are
/// `#[derive(Projection)]`'s, which checks them.
fn krate(cx: &Ctxt, attrs: &[Attribute]) -> syn::Path {
    let mut krate = syn::parse_quote!(::informer_runtime);
    for attr in attrs.iter().filter(|a| a.path() == PROJECTION) {
        let res = attr.parse_nested_meta(|meta| {
            if meta.path == CRATE {
                let lit: LitStr = meta.value()?.parse()?;
                krate = lit.parse()?;
                Ok(())
            } else {
                skip_value(&meta)
            }
        });
        if let Err(err) = res {
            cx.syn_error(err);
        }
    }
    krate
}

/// What serde's attributes say about deserializing a container or a field.
#[derive(Default)]
struct SerdeAttrs {
    /// `rename = "…"` or `rename(deserialize = "…")`.
    rename: Option<LitStr>,
    /// `rename_all = "…"` or `rename_all(deserialize = "…")`.
    rename_all: Option<LitStr>,
    /// `skip` or `skip_deserializing`.
    skip: bool,
    /// `flatten`.
    flatten: bool,
}

fn serde_attrs(cx: &Ctxt, attrs: &[Attribute]) -> SerdeAttrs {
    let mut out = SerdeAttrs::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let res = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename") {
                if let Some(lit) = deserialize_name(&meta)? {
                    out.rename = Some(lit);
                }
            } else if meta.path.is_ident("rename_all") {
                if let Some(lit) = deserialize_name(&meta)? {
                    out.rename_all = Some(lit);
                }
            } else if meta.path.is_ident("skip") || meta.path.is_ident("skip_deserializing") {
                out.skip = true;
            } else if meta.path.is_ident("flatten") {
                out.flatten = true;
            } else {
                skip_value(&meta)?;
            }
            Ok(())
        });
        if let Err(err) = res {
            cx.syn_error(err);
        }
    }
    out
}

/// The deserialize side of `key = "…"` or `key(serialize = "…", deserialize = "…")`.
fn deserialize_name(meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<Option<LitStr>> {
    if meta.input.peek(syn::Token![=]) {
        return Ok(Some(meta.value()?.parse()?));
    }
    let mut found = None;
    meta.parse_nested_meta(|inner| {
        let lit: LitStr = inner.value()?.parse()?;
        if inner.path.is_ident("deserialize") {
            found = Some(lit);
        }
        Ok(())
    })?;
    Ok(found)
}

/// Consumes the value of a serde key this derive does not read (`default`, `with = "…"`,
/// `bound(…)`, …).
fn skip_value(meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in meta.input);
        content.parse::<TokenStream>()?;
    }
    Ok(())
}

/// serde's `rename_all` rules, as serde applies them to field names.
#[derive(Clone, Copy)]
enum Rule {
    Lower,
    Upper,
    Pascal,
    Camel,
    Snake,
    ScreamingSnake,
    Kebab,
    ScreamingKebab,
}

impl Rule {
    fn parse(name: &str) -> Option<Rule> {
        Some(match name {
            "lowercase" => Rule::Lower,
            "UPPERCASE" => Rule::Upper,
            "PascalCase" => Rule::Pascal,
            "camelCase" => Rule::Camel,
            "snake_case" => Rule::Snake,
            "SCREAMING_SNAKE_CASE" => Rule::ScreamingSnake,
            "kebab-case" => Rule::Kebab,
            "SCREAMING-KEBAB-CASE" => Rule::ScreamingKebab,
            _ => return None,
        })
    }

    /// serde's `RenameRule::apply_to_field`.
    fn apply(self, field: &str) -> String {
        match self {
            Rule::Lower | Rule::Snake => field.to_owned(),
            Rule::Upper | Rule::ScreamingSnake => field.to_ascii_uppercase(),
            Rule::Pascal => {
                let mut out = String::new();
                let mut capitalize = true;
                for ch in field.chars() {
                    if ch == '_' {
                        capitalize = true;
                    } else if capitalize {
                        out.push(ch.to_ascii_uppercase());
                        capitalize = false;
                    } else {
                        out.push(ch);
                    }
                }
                out
            }
            Rule::Camel => {
                let pascal = Rule::Pascal.apply(field);
                let mut chars = pascal.chars();
                match chars.next() {
                    Some(first) => first.to_ascii_lowercase().to_string() + chars.as_str(),
                    None => pascal,
                }
            }
            Rule::Kebab => field.replace('_', "-"),
            Rule::ScreamingKebab => field.to_ascii_uppercase().replace('_', "-"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Rule;

    #[test]
    fn rename_rules_follow_serde() {
        let cases = [
            ("camelCase", "pod_ip_address", "podIpAddress"),
            ("PascalCase", "pod_ip", "PodIp"),
            ("snake_case", "pod_ip", "pod_ip"),
            ("lowercase", "pod_ip", "pod_ip"),
            ("UPPERCASE", "pod_ip", "POD_IP"),
            ("SCREAMING_SNAKE_CASE", "pod_ip", "POD_IP"),
            ("kebab-case", "pod_ip", "pod-ip"),
            ("SCREAMING-KEBAB-CASE", "pod_ip", "POD-IP"),
        ];
        for (rule, field, json) in cases {
            let applied = Rule::parse(rule).map(|r| r.apply(field));
            assert_eq!(applied.as_deref(), Some(json), "{rule}");
        }
        assert!(Rule::parse("Camel").is_none());
    }
}
