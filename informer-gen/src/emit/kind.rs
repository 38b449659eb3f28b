//! Emits the typed handles of one kind: `XInformer`, `XLister` and, for namespaced kinds, `XNamespaceLister` (G3).
//!
//! The item shapes live in `informer-handles`, shared with `#[derive(Informer)]`.

use proc_macro2::TokenStream;
use quote::quote;

use super::{Paths, docs};
use crate::model::{Kind, Origin};
use crate::naming;

/// How deep the handles sit below the generated root (`<root>::<group>::<version>`).
const VERSION_DEPTH: usize = 2;

/// The path of the kind's `XInformer` type as seen from its version module.
pub(crate) fn informer_type_path(k: &Kind) -> TokenStream {
    match &k.origin {
        Origin::Derive { module, ident } => {
            let module: syn::Path =
                syn::parse_str(module).expect("bug: module path validated by Builder");
            let ty = naming::kind_type(ident, "Informer");
            quote!(#module::#ty)
        }
        Origin::Builtin | Origin::Crd => {
            let ty = naming::kind_type(&k.kind, "Informer");
            quote!(self::#ty)
        }
    }
}

/// The three handle types for a built-in or CRD-manifest kind, from `informer-handles` (the
/// same items `#[derive(Informer)]` emits).
///
/// A kind with a compact form that is always compiled caches that form by default (decision
/// record 26): `informer()` and `lister()` are the compact kind's, `full()` hands out the full
/// type's and `compact()` stays as the old spelling of the default. Behind a cargo feature
/// (`Builder::compact_feature`) the default cannot change with the feature, so the handles cache
/// the full type and `compact()` is the feature's. A `crd-types` kind's compact form is never
/// behind the feature, so its handles always cache it (decision record 27).
pub(crate) fn handles(k: &Kind, paths: &Paths) -> TokenStream {
    let rt = &paths.rt;
    let full = paths.type_ref(&k.rust_type, VERSION_DEPTH);
    let compact = k
        .compact
        .as_ref()
        .map(|ty| paths.type_ref(ty, VERSION_DEPTH));
    // A CRD kind's compact form is generated with it, never behind the feature.
    let no_cfg = TokenStream::new();
    let cfg = match k.origin {
        Origin::Crd => &no_cfg,
        Origin::Builtin | Origin::Derive { .. } => &paths.compact_cfg,
    };
    let (resource, source, methods) = match compact {
        Some(compact) if cfg.is_empty() => {
            let (full_doc, compact_doc) =
                (docs::full_accessor(k), docs::compact_default_accessor(k));
            let methods = quote! {
                #full_doc
                #[inline]
                pub fn full(&self) -> #rt::Projected<#full> {
                    #rt::Projected::new(&self.factory)
                }
                #compact_doc
                #[inline]
                pub fn compact(&self) -> #rt::Projected<#compact> {
                    #rt::Projected::new(&self.factory)
                }
            };
            (compact, Some(full), methods)
        }
        Some(compact) => {
            let doc = docs::compact_accessor(k);
            let methods = quote! {
                #doc
                #cfg
                #[inline]
                pub fn compact(&self) -> #rt::Projected<#compact> {
                    #rt::Projected::new(&self.factory)
                }
            };
            (full, None, methods)
        }
        None => (full, None, TokenStream::new()),
    };
    informer_handles::handles(&informer_handles::Kind {
        vis: quote!(pub),
        rt: rt.clone(),
        resource,
        source,
        prefix: k.kind.clone(),
        namespaced: k.namespaced,
        subject: docs::kind_line(k),
        get_informer: None,
        informer_methods: methods,
        lister_methods: TokenStream::new(),
    })
}
