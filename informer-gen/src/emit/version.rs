//! Emits one version module: its handle type with kind accessors, and the kinds' typed handles.

use std::collections::BTreeSet;

use proc_macro2::TokenStream;
use quote::quote;

use super::{Paths, docs, gate_items, kind};
use crate::model::{Group, Origin, TypeRef, Version};
use crate::naming;

/// `pub mod v1 { pub struct AppsV1Informers {…} … }`.
/// `group_versions`: the Kubernetes versions the group module exists in (empty: every one).
pub(crate) fn version_module(
    group: &Group,
    v: &Version,
    group_versions: &BTreeSet<String>,
    paths: &Paths,
) -> TokenStream {
    let v_versions = v.k8s_versions();
    let rt = &paths.rt;
    let builtins = v
        .kinds
        .values()
        .any(|k| matches!(k.rust_type, TypeRef::K8s(_)));
    let imports = paths.imports(builtins);
    let v_ident = naming::ident(&v.name);
    let v_ty = naming::version_type(&group.accessor, &v.name);
    let (mod_doc, handle_doc) = (
        docs::version_module(group, v),
        docs::version_handle(group, v),
    );
    let accessors = v.kinds.values().map(|k| {
        let accessor = naming::ident(&k.accessor);
        let handle = kind::informer_type_path(k);
        let doc = docs::kind_accessor(k);
        let cfg = paths.k8s_cfg_within(&k.k8s_versions, &v_versions);
        quote! {
            #doc
            #cfg
            pub fn #accessor(&self) -> #handle {
                #handle::new(&self.factory)
            }
        }
    });
    let handles = v
        .kinds
        .values()
        .filter(|k| !matches!(k.origin, Origin::Derive { .. }))
        .map(|k| {
            let cfg = paths.k8s_cfg_within(&k.k8s_versions, &v_versions);
            gate_items(kind::handles(k, paths), &cfg)
        });
    let cfg = paths.k8s_cfg_within(&v_versions, group_versions);
    quote! {
        #[doc = #mod_doc]
        #cfg
        pub mod #v_ident {
            #imports

            #[doc = #handle_doc]
            #[derive(Clone)]
            pub struct #v_ty {
                factory: #rt::SharedInformerFactory,
            }

            impl #v_ty {
                /// A handle on `factory`; creates nothing until an informer is requested.
                pub fn new(factory: &#rt::SharedInformerFactory) -> Self {
                    Self { factory: #rt::Clone::clone(factory) }
                }

                #(#accessors)*
            }

            #(#handles)*
        }
    }
}
