//! Emits the `InformerFactoryExt` extension trait: group accessors (G1) and the GVR table (G5).

use proc_macro2::TokenStream;
use quote::quote;

use super::{Paths, docs};
use crate::model::Model;
use crate::naming;

/// `pub trait InformerFactoryExt { fn apps(&self) -> … }` and its impl for the runtime factory.
pub(crate) fn extension_trait(model: &Model, paths: &Paths) -> TokenStream {
    let rt = &paths.rt;
    let decls = model.groups.values().map(|g| {
        let (ident, ty, doc) = (
            naming::ident(&g.accessor),
            naming::group_type(&g.accessor),
            docs::group_accessor(g),
        );
        let cfg = paths.k8s_cfg(&g.k8s_versions());
        quote! {
            #doc
            #cfg
            fn #ident(&self) -> self::#ident::#ty;
        }
    });
    let impls = model.groups.values().map(|g| {
        let (ident, ty) = (naming::ident(&g.accessor), naming::group_type(&g.accessor));
        let cfg = paths.k8s_cfg(&g.k8s_versions());
        quote! {
            #cfg
            fn #ident(&self) -> self::#ident::#ty {
                self::#ident::#ty::new(self)
            }
        }
    });
    let arms = model.groups.values().flat_map(|g| {
        g.versions.values().flat_map(move |v| {
            v.kinds.values().map(move |k| {
                let (gi, vi, ki) = (naming::ident(&g.accessor), naming::ident(&v.name), naming::ident(&k.accessor));
                let (group, version, plural) = (&k.group, &k.version, &k.plural);
                let cfg = paths.k8s_cfg(&k.k8s_versions);
                quote! {
                    #cfg
                    (#group, #version, #plural) => #rt::Option::Some(#rt::GenericInformer::new(self.#gi().#vi().#ki().informer())),
                }
            })
        })
    });
    quote! {
        /// Typed group accessors for the runtime's `SharedInformerFactory`: `factory.apps().v1().deployments()`.
        ///
        /// Bring it into scope with `use` to call the accessors; options, `start`, `wait_for_cache_sync` and
        /// `shutdown` stay on the factory itself.
        pub trait InformerFactoryExt {
            #(#decls)*

            /// The generic informer for `gvr` (G5): a kind known to this generated code is created on first
            /// use through its typed accessor; any other resource is looked up with `find_by_resource`.
            /// `None` means neither applies: use the factory's async `for_resource`, which asks discovery
            /// (F9).
            fn informer_for_resource(
                &self,
                gvr: &#rt::GroupVersionResource,
            ) -> #rt::Option<#rt::GenericInformer>;
        }

        impl InformerFactoryExt for #rt::SharedInformerFactory {
            #(#impls)*

            // Inline, so that only a crate calling it instantiates an informer of every kind it knows.
            #[inline]
            fn informer_for_resource(
                &self,
                gvr: &#rt::GroupVersionResource,
            ) -> #rt::Option<#rt::GenericInformer> {
                match (gvr.group.as_str(), gvr.version.as_str(), gvr.resource.as_str()) {
                    #(#arms)*
                    _ => self.find_by_resource(gvr),
                }
            }
        }
    }
}
