//! Emits the typed handles of one kind: `XInformer`, `XLister` and, for namespaced kinds, `XNamespaceLister` (G3).
//!
//! The shapes match what `#[derive(Informer)]` emits (informer-derive `expand.rs`); keep them in step.

use proc_macro2::TokenStream;
use quote::quote;

use super::{Paths, docs};
use crate::model::{Kind, Origin};
use crate::naming;

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

/// The three handle types for a built-in or CRD-manifest kind.
pub(crate) fn handles(k: &Kind, paths: &Paths) -> TokenStream {
    let rt = &paths.rt;
    let res: syn::Path =
        syn::parse_str(&k.rust_type).expect("bug: rust type path validated by Builder");
    let informer = naming::kind_type(&k.kind, "Informer");
    let lister = naming::kind_type(&k.kind, "Lister");
    let ns_lister = naming::kind_type(&k.kind, "NamespaceLister");
    let line = docs::kind_line(k);
    let informer_doc = format!(" Typed handle to the shared informer for {line}.");
    let lister_doc = format!(" Typed lister over the informer cache of {line}.");
    let ns_doc = format!(" Typed lister for one namespace of {line}.");
    let scoped = if k.namespaced {
        quote! {
            /// A lister restricted to one namespace (L2, L3).
            pub fn namespaced(&self, namespace: &str) -> #ns_lister {
                #ns_lister { inner: self.inner.namespaced(namespace) }
            }
        }
    } else {
        quote! {
            /// The object called `name`; a miss is `NotFound` (L3, L4).
            pub fn get(&self, name: &str) -> #rt::Result<#rt::Arc<#res>, #rt::ListerError> {
                self.inner.get(name)
            }
        }
    };
    let compact = k.compact.as_ref().map(|path| {
        let segs = path.split("::").map(naming::ident);
        let doc = format!(
            " The shared informer and lister of the compact {} (P1): every field, a fraction of the memory.",
            k.kind
        );
        quote! {
            #[doc = #doc]
            pub fn compact(&self) -> #rt::Projected<super::super #(::#segs)*> {
                #rt::Projected::new(&self.factory)
            }
        }
    });
    let ns_type = if k.namespaced {
        quote! {
            #[doc = #ns_doc]
            #[derive(Clone)]
            pub struct #ns_lister {
                inner: #rt::NamespacedLister<#res>,
            }

            impl #ns_lister {
                /// The object called `name` in this namespace; a miss is `NotFound` (L3).
                pub fn get(&self, name: &str) -> #rt::Result<#rt::Arc<#res>, #rt::ListerError> {
                    self.inner.get(name)
                }

                /// Every object in this namespace matching `selector` (L2).
                pub fn list(&self, selector: &#rt::Selector) -> #rt::Vec<#rt::Arc<#res>> {
                    self.inner.list(selector)
                }
            }
        }
    } else {
        TokenStream::new()
    };
    quote! {
        #[doc = #informer_doc]
        #[derive(Clone)]
        pub struct #informer {
            factory: #rt::SharedInformerFactory,
        }

        impl #informer {
            /// A handle on `factory`; the informer itself is created on the first [`Self::informer`] call (F1).
            pub fn new(factory: &#rt::SharedInformerFactory) -> Self {
                Self { factory: #rt::Clone::clone(factory) }
            }

            /// The factory's shared informer for this type, created on first use; every call returns the same `Arc`.
            pub fn informer(&self) -> #rt::Arc<#rt::SharedIndexInformer<#res>> {
                self.factory.informer_for::<#res>()
            }

            /// A typed lister over this informer's cache.
            pub fn lister(&self) -> #lister {
                #lister::new(self.informer().indexer())
            }

            /// The shared informer and lister of a projection `P` of this kind (P4): it lists and
            /// watches this kind's endpoint and caches only `P`'s fields.
            pub fn projected<P>(&self) -> #rt::Projected<P>
            where
                P: #rt::Object<Source = #res>,
            {
                #rt::Projected::new(&self.factory)
            }

            #compact
        }

        #[doc = #lister_doc]
        #[derive(Clone)]
        pub struct #lister {
            inner: #rt::Lister<#res>,
        }

        impl #lister {
            /// A lister over `indexer` (usually `informer.indexer()`).
            pub fn new(indexer: #rt::Arc<#rt::Indexer<#res>>) -> Self {
                Self { inner: #rt::Lister::from_indexer(indexer) }
            }

            /// Every cached object matching `selector` (L1).
            pub fn list(&self, selector: &#rt::Selector) -> #rt::Vec<#rt::Arc<#res>> {
                self.inner.list(selector)
            }

            #scoped

            /// The untyped runtime lister this wraps.
            pub fn as_lister(&self) -> &#rt::Lister<#res> {
                &self.inner
            }
        }

        #ns_type
    }
}
