//! Stub items emitted next to the errors so code naming the types does not cascade into more errors.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{DeriveInput, Ident};

/// Declares `XInformer`, `XLister` and `XNamespaceLister` without any runtime dependency.
pub(crate) fn stubs(input: &DeriveInput, resource: &Ident) -> TokenStream {
    let vis = &input.vis;
    let names = [
        format_ident!("{}Informer", resource),
        format_ident!("{}Lister", resource),
        format_ident!("{}NamespaceLister", resource),
    ];
    quote! {
        #(
            /// Not generated: `#[derive(Informer)]` reported errors.
            #vis struct #names;
        )*
    }
}
