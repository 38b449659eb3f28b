//! Emits `XInformer`, `XLister` and `XNamespaceLister` for a checked input: one function per item.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use crate::ast::{Index, Input, Source};

/// Everything the derive emits for a valid input: the per-kind handles from `informer-handles`
/// (the same items informer-gen emits for built-in and CRD-manifest kinds) and a scope check.
pub(crate) fn expand(input: &Input<'_>) -> TokenStream {
    let (vis, res, krate) = (input.vis, &input.resource, &input.krate);
    let p = quote!(#krate::__private);
    let index_fns = input.indexes.iter().map(|i| index_fn(input, i));
    let index_entries = input.indexes.iter().map(|i| {
        let (name, func) = (&i.name, index_fn_ident(i));
        quote!((#name, #func as fn(&#res) -> #p::Vec<#p::String>))
    });
    let get_informer = (!input.indexes.is_empty()).then(|| {
        quote! {
            #(#index_fns)*
            self.factory.informer_for_with_indexers::<#res>(&[#(#index_entries),*])
        }
    });
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
    let handles = informer_handles::handles(&informer_handles::Kind {
        vis: quote!(#vis),
        rt: p.clone(),
        resource: quote!(#res),
        source: None,
        prefix: res.to_string(),
        namespaced: input.namespaced,
        subject: format!("[`{res}`]: {}", gvk(input)),
        get_informer,
        informer_methods: TokenStream::new(),
        lister_methods: quote!(#(#by_index)*),
    });
    let scope = scope_assertion(input);
    quote! {
        #handles
        #scope
    }
}

fn gvk(input: &Input<'_>) -> String {
    let gv = if input.group.is_empty() {
        input.version.clone()
    } else {
        format!("{}/{}", input.group, input.version)
    };
    format!("`{gv}` kind `{}` (resource `{}`)", input.kind, input.plural)
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
