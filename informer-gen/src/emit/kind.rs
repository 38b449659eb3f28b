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
pub(crate) fn handles(k: &Kind, paths: &Paths) -> TokenStream {
    let rt = &paths.rt;
    let res = paths.type_ref(&k.rust_type, VERSION_DEPTH);
    let compact = k.compact.as_ref().map(|ty| {
        let ty = paths.type_ref(ty, VERSION_DEPTH);
        let doc = docs::compact_accessor(k);
        let cfg = &paths.compact_cfg;
        quote! {
            #doc
            #cfg
            #[inline]
            pub fn compact(&self) -> #rt::Projected<#ty> {
                #rt::Projected::new(&self.factory)
            }
        }
    });
    informer_handles::handles(&informer_handles::Kind {
        vis: quote!(pub),
        rt: rt.clone(),
        resource: res,
        prefix: k.kind.clone(),
        namespaced: k.namespaced,
        subject: docs::kind_line(k),
        get_informer: None,
        informer_methods: quote!(#compact),
        lister_methods: TokenStream::new(),
    })
}
