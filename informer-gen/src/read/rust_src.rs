//! Rust sources scanned with syn for `#[derive(Informer)]` types (G7): their handles already exist.

use std::collections::BTreeSet;
use std::path::Path;

use syn::{Attribute, Item, LitStr};

use crate::error::Error;
use crate::model::{Kind, Origin, TypeRef};
use crate::naming;

/// Kinds of every `#[derive(Informer)]` struct in `path`, whose items live in Rust module `module`.
/// `display` is how the file is named in errors and the header (a relative path).
pub(crate) fn read_derives(
    path: &Path,
    display: &str,
    module: &str,
    errors: &mut Vec<Error>,
) -> Vec<Kind> {
    let text = match super::read(path) {
        Ok(t) => t,
        Err(e) => {
            errors.push(e);
            return Vec::new();
        }
    };
    let ast = match syn::parse_file(&text) {
        Ok(ast) => ast,
        Err(e) => {
            errors.push(Error::rust_syntax(display, &e));
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    scan_items(&ast.items, display, module, &mut out, errors);
    out
}

fn scan_items(
    items: &[Item],
    display: &str,
    module: &str,
    out: &mut Vec<Kind>,
    errors: &mut Vec<Error>,
) {
    for item in items {
        match item {
            Item::Struct(s) if derives_informer(&s.attrs) => {
                match kind_of(&s.attrs, &s.ident.to_string(), display, module) {
                    Ok(k) => out.push(k),
                    Err(e) => errors.push(e),
                }
            }
            Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    scan_items(
                        inner,
                        display,
                        &format!("{module}::{}", m.ident),
                        out,
                        errors,
                    );
                }
            }
            _ => {}
        }
    }
}

fn derives_informer(attrs: &[Attribute]) -> bool {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("derive"))
        .any(|a| {
            let mut found = false;
            // A malformed `derive` list is rustc's to report; the names before the mistake count.
            let _ = a.parse_nested_meta(|m| {
                found |= m
                    .path
                    .segments
                    .last()
                    .is_some_and(|s| s.ident == "Informer");
                Ok(())
            });
            found
        })
}

#[derive(Default)]
struct Keys {
    group: Option<String>,
    version: Option<String>,
    kind: Option<String>,
    plural: Option<String>,
    singular: Option<String>,
    root: Option<String>,
    namespaced: bool,
    kube: bool,
}

/// Reads the keys the derive reads; malformed attributes are the derive's to report, so this only
/// fails when a required key is missing.
fn kind_of(attrs: &[Attribute], ident: &str, display: &str, module: &str) -> Result<Kind, Error> {
    let mut k = Keys::default();
    for attr in attrs {
        let is_kube = attr.path().is_ident("kube");
        if !is_kube && !attr.path().is_ident("informer") {
            continue;
        }
        k.kube |= is_kube;
        let _ = attr.parse_nested_meta(|m| {
            let key = m
                .path
                .get_ident()
                .map(ToString::to_string)
                .unwrap_or_default();
            let slot = match key.as_str() {
                "group" => Some(&mut k.group),
                "version" => Some(&mut k.version),
                "kind" => Some(&mut k.kind),
                "plural" => Some(&mut k.plural),
                "singular" => Some(&mut k.singular),
                "root" => Some(&mut k.root),
                "namespaced" => {
                    k.namespaced = true;
                    None
                }
                _ => None,
            };
            match slot {
                Some(slot) => *slot = Some(m.value()?.parse::<LitStr>()?.value()),
                None => {
                    // Skip whatever value the key has.
                    while !m.input.is_empty() && !m.input.peek(syn::Token![,]) {
                        m.input.parse::<proc_macro2::TokenTree>()?;
                    }
                }
            }
            Ok(())
        });
    }
    let missing = |key: &str| Error::DeriveAttr {
        path: display.into(),
        item: ident.into(),
        reason: format!("missing `{key}` in `#[kube]`/`#[informer]`"),
    };
    let group = k.group.ok_or_else(|| missing("group"))?;
    let version = k.version.ok_or_else(|| missing("version"))?;
    let kind = k.kind.ok_or_else(|| missing("kind"))?;
    let plural = k
        .plural
        .unwrap_or_else(|| naming::default_plural(k.singular.as_deref().unwrap_or(&kind)));
    let resource = if k.kube {
        k.root.unwrap_or_else(|| kind.clone())
    } else {
        ident.to_owned()
    };
    Ok(Kind {
        accessor: naming::kind_accessor(&kind, &plural),
        rust_type: TypeRef::User(format!("{module}::{resource}")),
        origin: Origin::Derive {
            module: module.to_owned(),
            ident: resource,
        },
        input: display.to_owned(),
        group,
        version,
        kind,
        plural,
        namespaced: k.namespaced,
        compact: None,
        k8s_versions: BTreeSet::new(),
    })
}
