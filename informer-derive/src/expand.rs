//! Emits `XInformer`, `XLister` and `XNamespaceLister` for a checked input: one function per item.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use crate::ast::{Index, Input, Source};

/// Everything the derive emits for a valid input.
pub(crate) fn expand(input: &Input<'_>) -> TokenStream {
    let informer = informer(input);
    let lister = lister(input);
    let ns_lister = if input.namespaced {
        namespace_lister(input)
    } else {
        TokenStream::new()
    };
    let scope = scope_assertion(input);
    quote! {
        #informer
        #lister
        #ns_lister
        #scope
    }
}

fn names(input: &Input<'_>) -> (syn::Ident, syn::Ident, syn::Ident) {
    let r = &input.resource;
    (
        format_ident!("{}Informer", r),
        format_ident!("{}Lister", r),
        format_ident!("{}NamespaceLister", r),
    )
}

fn gvk(input: &Input<'_>) -> String {
    let gv = if input.group.is_empty() {
        input.version.clone()
    } else {
        format!("{}/{}", input.group, input.version)
    };
    format!("`{gv}` kind `{}` (resource `{}`)", input.kind, input.plural)
}

fn informer(input: &Input<'_>) -> TokenStream {
    let (informer, lister, _) = names(input);
    let (vis, res, krate) = (input.vis, &input.resource, &input.krate);
    let p = quote!(#krate::__private);
    let doc = format!(
        "Typed handle to the shared informer for [`{res}`]: {}.",
        gvk(input)
    );
    let index_fns = input.indexes.iter().map(|i| index_fn(input, i));
    let index_entries = input.indexes.iter().map(|i| {
        let (name, func) = (&i.name, index_fn_ident(i));
        quote!((#name, #func as fn(&#res) -> #p::Vec<#p::String>))
    });
    let get_informer = if input.indexes.is_empty() {
        quote!(self.factory.informer_for::<#res>())
    } else {
        quote! {
            #(#index_fns)*
            self.factory.informer_for_with_indexers::<#res>(&[#(#index_entries),*])
        }
    };
    quote! {
        #[doc = #doc]
        #[derive(Clone)]
        #vis struct #informer {
            factory: #p::SharedInformerFactory,
        }

        #[automatically_derived]
        impl #informer {
            /// A handle on `factory`; the informer itself is created on the first [`Self::informer`] call (F1).
            #vis fn new(factory: &#p::SharedInformerFactory) -> Self {
                Self { factory: #p::Clone::clone(factory) }
            }

            /// The factory's shared informer for this type, created on first use; every call returns the same `Arc`.
            #vis fn informer(&self) -> #p::Arc<#p::SharedIndexInformer<#res>> {
                #get_informer
            }

            /// A typed lister over this informer's cache.
            #vis fn lister(&self) -> #lister {
                #lister::new(self.informer().indexer())
            }

            /// The shared informer and lister of a projection `P` of this kind (P4): it lists and
            /// watches this kind's endpoint and caches only `P`'s fields.
            #vis fn projected<P>(&self) -> #p::Projected<P>
            where
                P: #p::Object<Source = #res>,
            {
                #p::Projected::new(&self.factory)
            }
        }
    }
}

/// The local index function's name; prefixed so it never shadows a user function of the same name.
fn index_fn_ident(index: &Index) -> syn::Ident {
    format_ident!("__informer_index_{}", index.name)
}

fn index_fn(input: &Input<'_>, index: &Index) -> TokenStream {
    let (res, krate, func) = (&input.resource, &input.krate, index_fn_ident(index));
    let p = quote!(#krate::__private);
    let body = match &index.source {
        Source::Path(members) => {
            let span = members
                .first()
                .map_or_else(proc_macro2::Span::call_site, |m| m.span());
            quote_spanned!(span=> #p::index_values(&obj #(.#members)*))
        }
        Source::Owner(kind) => quote!(#p::owner_index_values(obj, #kind)),
        Source::Function(path) => quote_spanned!(path.span()=> #path(obj)),
    };
    quote! {
        fn #func(obj: &#res) -> #p::Vec<#p::String> {
            #body
        }
    }
}

fn lister(input: &Input<'_>) -> TokenStream {
    let (_, lister, ns_lister) = names(input);
    let (vis, res, krate) = (input.vis, &input.resource, &input.krate);
    let p = quote!(#krate::__private);
    let doc = format!(
        "Typed lister over the informer cache of [`{res}`]: {}.",
        gvk(input)
    );
    let scoped = if input.namespaced {
        quote! {
            /// A lister restricted to one namespace (L2, L3).
            #vis fn namespaced(&self, namespace: &str) -> #ns_lister {
                #ns_lister { inner: self.inner.namespaced(namespace) }
            }
        }
    } else {
        quote! {
            /// The object called `name`; a miss is `NotFound` (L3, L4).
            #vis fn get(&self, name: &str) -> #p::Result<#p::Arc<#res>, #p::ListerError> {
                self.inner.get(name)
            }
        }
    };
    let by_index = input.indexes.iter().map(|i| {
        let (name, method) = (&i.name, &i.method);
        let doc = format!("Objects whose `{name}` index contains `value` (X5).");
        quote! {
            #[doc = #doc]
            #vis fn #method(&self, value: &str) -> #p::Result<#p::Vec<#p::Arc<#res>>, #p::ListerError> {
                self.inner.by_index(#name, value)
            }
        }
    });
    quote! {
        #[doc = #doc]
        #[derive(Clone)]
        #vis struct #lister {
            inner: #p::Lister<#res>,
        }

        #[automatically_derived]
        impl #lister {
            /// A lister over `indexer` (usually `informer.indexer()`).
            #vis fn new(indexer: #p::Arc<#p::Indexer<#res>>) -> Self {
                Self { inner: #p::Lister::from_indexer(indexer) }
            }

            /// Every cached object matching `selector` (L1).
            #vis fn list(&self, selector: &#p::Selector) -> #p::Vec<#p::Arc<#res>> {
                self.inner.list(selector)
            }

            #scoped

            #(#by_index)*

            /// The untyped runtime lister this wraps.
            #vis fn as_lister(&self) -> &#p::Lister<#res> {
                &self.inner
            }
        }
    }
}

fn namespace_lister(input: &Input<'_>) -> TokenStream {
    let (_, _, ns_lister) = names(input);
    let (vis, res, krate) = (input.vis, &input.resource, &input.krate);
    let p = quote!(#krate::__private);
    let doc = format!(
        "Typed lister for one namespace of [`{res}`]: {}.",
        gvk(input)
    );
    quote! {
        #[doc = #doc]
        #[derive(Clone)]
        #vis struct #ns_lister {
            inner: #p::NamespacedLister<#res>,
        }

        #[automatically_derived]
        impl #ns_lister {
            /// The object called `name` in this namespace; a miss is `NotFound` (L3).
            #vis fn get(&self, name: &str) -> #p::Result<#p::Arc<#res>, #p::ListerError> {
                self.inner.get(name)
            }

            /// Every object in this namespace matching `selector` (L2).
            #vis fn list(&self, selector: &#p::Selector) -> #p::Vec<#p::Arc<#res>> {
                self.inner.list(selector)
            }
        }
    }
}

/// A standalone resource's declared scope must match its `kube::Resource::Scope`; kube's own derive
/// sets the scope from the same `namespaced` flag, so kube mode needs no check.
fn scope_assertion(input: &Input<'_>) -> TokenStream {
    if input.kube_mode {
        return TokenStream::new();
    }
    let (res, krate) = (&input.resource, &input.krate);
    let p = quote!(#krate::__private);
    let scope = if input.namespaced {
        quote!(#p::NamespaceResourceScope)
    } else {
        quote!(#p::ClusterResourceScope)
    };
    let span = input
        .scope_span
        .clone()
        .into_iter()
        .next()
        .map_or_else(proc_macro2::Span::call_site, |t| t.span());
    let assert = quote_spanned!(span=> __informer_assert_scope::<#res>());
    quote! {
        const _: () = {
            fn __informer_assert_scope<K: #p::Resource<Scope = #scope>>() {}
            fn __informer_check() {
                #assert;
            }
        };
    }
}
