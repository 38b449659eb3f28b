//! Parses `#[projection(...)]`; records every mistake and keeps going.

use syn::{Attribute, LitStr};

use super::IndexBody;
use crate::ctxt::Ctxt;
use crate::symbol::{CRATE, FUNCTION, INDEX, NAME, NESTED, OF, PATH, PROJECTION};

/// What the container attributes say.
pub(crate) struct Container {
    pub(crate) of: Option<syn::Type>,
    pub(crate) krate: Option<syn::Path>,
    pub(crate) nested: bool,
    pub(crate) indexes: Vec<(LitStr, IndexBody)>,
}

impl Container {
    pub(crate) fn from_attrs(cx: &Ctxt, attrs: &[Attribute]) -> Container {
        let mut c = Container {
            of: None,
            krate: None,
            nested: false,
            indexes: Vec::new(),
        };
        for attr in attrs.iter().filter(|a| a.path() == PROJECTION) {
            let res = attr.parse_nested_meta(|meta| {
                let key = meta.path.clone();
                if key == OF {
                    let ty: syn::Type = meta.value()?.parse()?;
                    if c.of.is_some() {
                        cx.error_spanned_by(&key, "duplicate `projection` attribute `of`");
                    }
                    c.of = Some(ty);
                } else if key == CRATE {
                    let lit: LitStr = meta.value()?.parse()?;
                    c.krate = Some(lit.parse()?);
                } else if key == NESTED {
                    c.nested = true;
                } else if key == INDEX {
                    if let Some(index) = parse_index(cx, &meta)? {
                        if c.indexes.iter().any(|(n, _)| n.value() == index.0.value()) {
                            cx.error_spanned_by(&index.0, "duplicate index name");
                        }
                        c.indexes.push(index);
                    }
                } else {
                    let name = quote::ToTokens::to_token_stream(&key)
                        .to_string()
                        .replace(' ', "");
                    return Err(meta.error(format!(
                        "unknown `projection` attribute `{name}`; expected `of`, `nested`, `index` or `crate`"
                    )));
                }
                Ok(())
            });
            if let Err(err) = res {
                cx.syn_error(err);
            }
        }
        c
    }
}

fn parse_index(
    cx: &Ctxt,
    meta: &syn::meta::ParseNestedMeta<'_>,
) -> syn::Result<Option<(LitStr, IndexBody)>> {
    let key = meta.path.clone();
    let mut name: Option<LitStr> = None;
    let mut body: Option<IndexBody> = None;
    meta.parse_nested_meta(|inner| {
        if inner.path == NAME {
            name = Some(inner.value()?.parse()?);
        } else if inner.path == PATH {
            let value = inner.value()?;
            let mut members = vec![value.parse::<syn::Member>()?];
            while value.peek(syn::Token![.]) {
                value.parse::<syn::Token![.]>()?;
                members.push(value.parse()?);
            }
            body = Some(IndexBody::Path(members));
        } else if inner.path == FUNCTION {
            body = Some(IndexBody::Function(inner.value()?.parse()?));
        } else {
            return Err(
                inner.error("expected `index(name = \"…\", path = a.b | function = path::to::fn)`")
            );
        }
        Ok(())
    })?;
    match (name, body) {
        (Some(name), Some(body)) => Ok(Some((name, body))),
        (None, _) => {
            cx.error_spanned_by(&key, "an index needs `name = \"…\"`");
            Ok(None)
        }
        (Some(name), None) => {
            cx.error_spanned_by(
                &name,
                "an index needs `path = a.b` or `function = path::to::fn`",
            );
            Ok(None)
        }
    }
}
