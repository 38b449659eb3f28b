//! Parses `#[informer(...)]` and the relevant keys of kube's `#[kube(...)]`; records errors and keeps going.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::meta::ParseNestedMeta;
use syn::parse::ParseStream;
use syn::{Attribute, Ident, LitStr, Member, Token};

use crate::ctxt::Ctxt;
use crate::symbol::{
    CRATE, FUNCTION, GROUP, INDEX, INFORMER, KIND, KUBE, NAME, NAMESPACED, OWNER, PATH, PLURAL,
    ROOT, SINGULAR, Symbol, VERSION,
};

/// A value together with the tokens it came from (for spans) and the attribute that set it.
pub(crate) struct Spanned<T> {
    /// The tokens of the value (or of the key, for flags).
    pub(crate) tokens: TokenStream,
    /// The parsed value.
    pub(crate) value: T,
}

/// One attribute key that may be set once, across `#[kube]` and `#[informer]`.
pub(crate) struct Attr<T> {
    name: Symbol,
    origin: Option<Symbol>,
    value: Option<Spanned<T>>,
    /// The key was written but its value did not parse (already reported; no "missing" error).
    failed: bool,
}

impl<T> Attr<T> {
    fn none(name: Symbol) -> Self {
        Attr {
            name,
            origin: None,
            value: None,
            failed: false,
        }
    }

    /// Sets the value; a second set is a "duplicate" error on the second occurrence (`Attr::set` in serde).
    fn set<A: ToTokens>(
        &mut self,
        cx: &Ctxt,
        origin: Symbol,
        key: A,
        tokens: TokenStream,
        value: T,
    ) {
        match self.origin {
            Some(first) if first.0 != origin.0 => cx.error_spanned_by(
                key,
                format!(
                    "`{}` is already set in `#[{first}(...)]`; set it only once",
                    self.name
                ),
            ),
            Some(_) => cx.error_spanned_by(
                key,
                format!("duplicate `{origin}` attribute `{}`", self.name),
            ),
            None => {
                self.origin = Some(origin);
                self.value = Some(Spanned { tokens, value });
            }
        }
    }

    /// Whether the key was written with a value that failed to parse.
    pub(crate) fn failed(&self) -> bool {
        self.failed
    }

    /// The value, if it was set.
    pub(crate) fn get(&self) -> Option<&Spanned<T>> {
        self.value.as_ref()
    }
}

/// How an index computes its values from an object.
pub(crate) enum IndexSource {
    /// A field path from the object root, e.g. `spec.node_name`.
    Path(Vec<Member>),
    /// The names of the owner references of this kind.
    Owner(LitStr),
    /// A user function `fn(&K) -> Vec<String>`.
    Function(syn::Path),
}

/// One `index(...)` entry.
pub(crate) struct Index {
    /// The `index` keyword, for errors about the entry as a whole.
    pub(crate) key: Ident,
    /// `name = "…"`.
    pub(crate) name: Option<LitStr>,
    /// `path`, `owner` or `function`; more than one is recorded for `check`.
    pub(crate) sources: Vec<(Ident, IndexSource)>,
}

/// Everything the attributes of one derive input say.
pub(crate) struct Container {
    /// Whether a `#[kube(...)]` attribute is present (kube `CustomResource` mode).
    pub(crate) kube: Option<Span>,
    /// The first `#[informer]` or `#[kube]` attribute, for "missing key" errors.
    pub(crate) first_attr: Option<TokenStream>,
    pub(crate) group: Attr<String>,
    pub(crate) version: Attr<String>,
    pub(crate) kind: Attr<String>,
    pub(crate) plural: Attr<String>,
    pub(crate) singular: Attr<String>,
    pub(crate) namespaced: Attr<()>,
    pub(crate) root: Attr<String>,
    pub(crate) krate: Attr<syn::Path>,
    pub(crate) indexes: Vec<Index>,
}

impl Container {
    /// Parses every `#[kube]` and `#[informer]` attribute of the input.
    pub(crate) fn from_attrs(cx: &Ctxt, attrs: &[Attribute]) -> Container {
        let mut c = Container {
            kube: None,
            first_attr: None,
            group: Attr::none(GROUP),
            version: Attr::none(VERSION),
            kind: Attr::none(KIND),
            plural: Attr::none(PLURAL),
            singular: Attr::none(SINGULAR),
            namespaced: Attr::none(NAMESPACED),
            root: Attr::none(ROOT),
            krate: Attr::none(CRATE),
            indexes: Vec::new(),
        };
        for attr in attrs {
            let origin = if attr.path() == KUBE {
                c.kube.get_or_insert(attr.path().segments[0].ident.span());
                KUBE
            } else if attr.path() == INFORMER {
                INFORMER
            } else {
                continue;
            };
            if c.first_attr.is_none() {
                c.first_attr = Some(attr.to_token_stream());
            }
            let res = attr.parse_nested_meta(|meta| {
                if let Err(err) = c.parse_key(cx, origin, &meta) {
                    cx.syn_error(err);
                    skip_value(meta.input)?;
                }
                Ok(())
            });
            if let Err(err) = res {
                cx.syn_error(err);
            }
        }
        c
    }

    fn parse_key(
        &mut self,
        cx: &Ctxt,
        origin: Symbol,
        meta: &ParseNestedMeta<'_>,
    ) -> syn::Result<()> {
        let key = &meta.path;
        let string_key = [
            (GROUP, &mut self.group),
            (VERSION, &mut self.version),
            (KIND, &mut self.kind),
            (PLURAL, &mut self.plural),
            (SINGULAR, &mut self.singular),
            (ROOT, &mut self.root),
        ]
        .into_iter()
        .find(|(sym, _)| key == *sym);
        if let Some((_, slot)) = string_key {
            let lit = meta
                .value()?
                .parse::<LitStr>()
                .inspect_err(|_| slot.failed = true)?;
            slot.set(cx, origin, key, lit.to_token_stream(), lit.value());
        } else if key == NAMESPACED {
            if !meta.input.is_empty() && !meta.input.peek(Token![,]) {
                return Err(meta.error("`namespaced` is a flag and takes no value"));
            }
            self.namespaced
                .set(cx, origin, key, key.to_token_stream(), ());
        } else if origin.0 == KUBE.0 {
            // Every other kube key belongs to kube's own derive, which validates it.
            skip_value(meta.input)?;
        } else if key == CRATE {
            let value = meta.value()?;
            let path = if value.peek(LitStr) {
                value.parse::<LitStr>()?.parse()?
            } else {
                value.parse()?
            };
            self.krate.set(cx, origin, key, key.to_token_stream(), path);
        } else if key == INDEX {
            self.indexes.push(parse_index(cx, meta)?);
        } else {
            let name = key.to_token_stream().to_string().replace(' ', "");
            return Err(meta.error(format!("unknown `informer` attribute `{name}`")));
        }
        Ok(())
    }
}

fn parse_index(cx: &Ctxt, meta: &ParseNestedMeta<'_>) -> syn::Result<Index> {
    let key = meta.path.require_ident()?.clone();
    if !meta.input.peek(syn::token::Paren) {
        return Err(meta.error(
            "expected `index(name = \"…\", path = a.b | owner = \"Kind\" | function = path::to::fn)`",
        ));
    }
    let mut index = Index {
        key,
        name: None,
        sources: Vec::new(),
    };
    meta.parse_nested_meta(|inner| {
        let res = parse_index_key(cx, &mut index, &inner);
        if let Err(err) = res {
            cx.syn_error(err);
            skip_value(inner.input)?;
        }
        Ok(())
    })?;
    Ok(index)
}

fn parse_index_key(cx: &Ctxt, index: &mut Index, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    let key = meta.path.require_ident()?.clone();
    if key == NAME {
        let lit: LitStr = meta.value()?.parse()?;
        if index.name.is_some() {
            cx.error_spanned_by(&key, "duplicate `index` attribute `name`");
        } else {
            index.name = Some(lit);
        }
    } else if key == PATH {
        let value = meta.value()?;
        let members = if value.peek(LitStr) {
            let lit: LitStr = value.parse()?;
            lit.parse_with(parse_members)?
        } else {
            parse_members(value)?
        };
        index.sources.push((key, IndexSource::Path(members)));
    } else if key == OWNER {
        let lit: LitStr = meta.value()?.parse()?;
        index.sources.push((key, IndexSource::Owner(lit)));
    } else if key == FUNCTION {
        let value = meta.value()?;
        let path = if value.peek(LitStr) {
            value.parse::<LitStr>()?.parse()?
        } else {
            value.parse()?
        };
        index.sources.push((key, IndexSource::Function(path)));
    } else {
        return Err(syn::Error::new_spanned(
            &key,
            format!("unknown `index` attribute `{key}`"),
        ));
    }
    Ok(())
}

/// `a.b.c` (named fields or tuple indices).
fn parse_members(input: ParseStream<'_>) -> syn::Result<Vec<Member>> {
    let mut members = vec![input.parse::<Member>()?];
    while input.peek(Token![.]) {
        input.parse::<Token![.]>()?;
        members.push(input.parse()?);
    }
    Ok(members)
}

/// Skips the rest of one `key = value` / `key(...)` entry so parsing continues after an error.
fn skip_value(input: ParseStream<'_>) -> syn::Result<()> {
    while !input.is_empty() && !input.peek(Token![,]) {
        input.parse::<proc_macro2::TokenTree>()?;
    }
    Ok(())
}
