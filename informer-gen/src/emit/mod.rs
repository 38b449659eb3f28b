//! Drives the emitters over a sorted model: one token stream per group plus the root items.

mod docs;
mod factory;
mod kind;
mod version;

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use crate::model::{Group, Model};
use crate::naming;

/// Paths the emitted code uses, from the builder's configuration.
pub(crate) struct Paths {
    /// `::informer_runtime::__private` (or the configured crate's).
    pub(crate) rt: TokenStream,
}

/// The emitted code before rendering: root items and one module per group.
pub(crate) struct Emitted {
    /// The `InformerFactoryExt` trait and its impl.
    pub(crate) root: TokenStream,
    /// Group modules in sorted order.
    pub(crate) groups: Vec<GroupModule>,
    /// The items of the `compact` module, when compact kinds are configured.
    pub(crate) compact: Option<TokenStream>,
}

/// One group's module.
pub(crate) struct GroupModule {
    /// The module identifier (`apps`, `r#async`).
    pub(crate) ident: Ident,
    /// The module's file stem (`apps`, `async`).
    pub(crate) file_stem: String,
    /// Outer doc of the module declaration.
    pub(crate) doc: String,
    /// The module's items.
    pub(crate) body: TokenStream,
}

/// Emits everything for `model`.
pub(crate) fn emit(model: &Model, paths: &Paths) -> Emitted {
    let groups = model
        .groups
        .values()
        .map(|g| group_module(g, paths))
        .collect();
    Emitted {
        root: factory::extension_trait(model, paths),
        groups,
        compact: None,
    }
}

fn group_module(group: &Group, paths: &Paths) -> GroupModule {
    let ident = naming::ident(&group.accessor);
    let file_stem = ident.to_string().trim_start_matches("r#").to_owned();
    let group_ty = naming::group_type(&group.accessor);
    let rt = &paths.rt;
    let group_doc = docs::group_handle(group);
    let accessors = group.versions.values().map(|v| {
        let v_ident = naming::ident(&v.name);
        let v_ty = naming::version_type(&group.accessor, &v.name);
        let doc = docs::version_accessor(group, v);
        quote! {
            #[doc = #doc]
            pub fn #v_ident(&self) -> self::#v_ident::#v_ty {
                self::#v_ident::#v_ty::new(&self.factory)
            }
        }
    });
    let versions = group
        .versions
        .values()
        .map(|v| version::version_module(group, v, paths));
    let body = quote! {
        #[doc = #group_doc]
        #[derive(Clone)]
        pub struct #group_ty {
            factory: #rt::SharedInformerFactory,
        }

        impl #group_ty {
            /// A handle on `factory`; creates nothing until an informer is requested.
            pub fn new(factory: &#rt::SharedInformerFactory) -> Self {
                Self { factory: #rt::Clone::clone(factory) }
            }

            #(#accessors)*
        }

        #(#versions)*
    };
    GroupModule {
        ident,
        file_stem,
        doc: docs::group_module(group),
        body,
    }
}
