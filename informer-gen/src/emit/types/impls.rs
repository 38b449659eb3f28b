//! The trait impls of a top-level kind: `kube::Resource` for CRD types, and the runtime's
//! `Meta`/`HasScope`/`Object` for compact and CRD types alike; compact kinds also get
//! `Lossless` and k8s-openapi's kind constants (not `kube::Resource`: decision record 23).

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use super::{Ctx, compact_ty, option_inner};
use crate::model::types::{CrdResource, Presence, Ty, TypeDef};

/// `group/version`, or `version` for the core group.
pub(super) fn api_version(r: &CrdResource) -> String {
    if r.group.is_empty() {
        r.version.clone()
    } else {
        format!("{}/{}", r.group, r.version)
    }
}

pub(super) fn resource_doc(r: &CrdResource) -> String {
    let api_version = api_version(r);
    let scope = if r.namespaced {
        "namespaced"
    } else {
        "cluster-scoped"
    };
    let mut doc = format!(
        "Kind `{}` of `{api_version}` (plural `{}`, {scope}): a `kube::Resource` for `kube::Api`, and an informer object.",
        r.kind, r.plural
    );
    if r.status_subresource {
        doc.push_str(
            " It has the status subresource (`Api::patch_status`, `Api::replace_status`).",
        );
    }
    if let Some((spec, status, selector)) = &r.scale {
        doc.push_str(&format!(
            " It has the scale subresource (`Api::get_scale`, `Api::patch_scale`): replicas at `{spec}` and `{status}`"
        ));
        if let Some(sel) = selector {
            doc.push_str(&format!(", label selector at `{sel}`"));
        }
        doc.push('.');
    }
    doc
}

pub(super) fn schema_resource_impls(
    def: &TypeDef,
    r: &CrdResource,
    at: &[String],
    cx: &Ctx<'_>,
) -> TokenStream {
    let rt = &cx.paths.rt;
    let ident = format_ident!("{}", def.name);
    let api_version = api_version(r);
    let (group, version, kind, plural, list_kind) =
        (&r.group, &r.version, &r.kind, &r.plural, &r.list_kind);
    let scope = if r.namespaced {
        quote!(#rt::NamespaceResourceScope)
    } else {
        quote!(#rt::ClusterResourceScope)
    };
    let field = |name: &str| def.fields.iter().find(|f| f.rust == name);
    let spec_status = spec_status_impls(def, at, cx);
    let constructor = field("spec")
        .filter(|f| f.presence == Presence::Required)
        .filter(|_| {
            def.fields.iter().all(|f| {
                matches!(f.presence, Presence::Optional | Presence::Nullable)
                    || f.rust == "spec"
                    || f.rust == "metadata"
            })
        })
        .map(|f| {
            let ty = compact_ty(&f.ty, at, cx);
            let rest = def.fields.iter().filter(|f| f.rust != "spec" && f.rust != "metadata").map(|f| {
                let name = crate::naming::ident(&f.rust);
                quote!(#name: #rt::Option::None,)
            });
            let unknown = def.unknown_fields.as_ref().map(|n| {
                let n = crate::naming::ident(n);
                quote!(#n: #rt::Default::default(),)
            });
            let doc = format!(" A `{}` called `name` with `spec` and nothing else set (as kube's `CustomResource` derive's `new`).", r.kind);
            quote! {
                impl #ident {
                    #[doc = #doc]
                    pub fn new(name: &str, spec: #ty) -> Self {
                        #ident {
                            api_version: #rt::Default::default(),
                            kind: #rt::Default::default(),
                            metadata: #rt::ObjectMeta {
                                name: #rt::Option::Some(#rt::String::from(name)),
                                ..#rt::Default::default()
                            },
                            spec,
                            #(#rest)*
                            #unknown
                        }
                    }
                }
            }
        });
    quote! {
        impl #rt::K8sResource for #ident {
            const API_VERSION: &'static str = #api_version;
            const GROUP: &'static str = #group;
            const KIND: &'static str = #kind;
            const VERSION: &'static str = #version;
            const URL_PATH_SEGMENT: &'static str = #plural;
            type Scope = #scope;
        }

        impl #rt::K8sListableResource for #ident {
            const LIST_KIND: &'static str = #list_kind;
        }

        impl #rt::K8sMetadata for #ident {
            type Ty = #rt::ObjectMeta;
            fn metadata(&self) -> &#rt::ObjectMeta {
                &self.metadata
            }
            fn metadata_mut(&mut self) -> &mut #rt::ObjectMeta {
                &mut self.metadata
            }
        }

        #spec_status
        #constructor
    }
}

/// kube's `HasSpec` (a required `spec`) and `HasStatus` (an optional `status`), for both forms of
/// a CRD kind.
pub(super) fn spec_status_impls(def: &TypeDef, at: &[String], cx: &Ctx<'_>) -> TokenStream {
    let rt = &cx.paths.rt;
    let ident = format_ident!("{}", def.name);
    let field = |name: &str| def.fields.iter().find(|f| f.rust == name);
    let spec = field("spec")
        .filter(|f| f.presence == Presence::Required)
        .map(|f| {
            let ty = compact_ty(&f.ty, at, cx);
            quote! {
                impl #rt::HasSpec for #ident {
                    type Spec = #ty;
                    fn spec(&self) -> &#ty {
                        &self.spec
                    }
                    fn spec_mut(&mut self) -> &mut #ty {
                        &mut self.spec
                    }
                }
            }
        });
    let status = field("status")
        .filter(|f| f.presence == Presence::Optional)
        .and_then(|f| {
            let Ty::Option(inner) = &f.ty else {
                return None;
            };
            let ty = option_inner(inner, at, cx);
            Some(quote! {
                impl #rt::HasStatus for #ident {
                    type Status = #ty;
                    fn status(&self) -> #rt::Option<&#ty> {
                        self.status.as_ref()
                    }
                    fn status_mut(&mut self) -> &mut #rt::Option<#ty> {
                        &mut self.status
                    }
                }
            })
        });
    quote!(#spec #status)
}

pub(super) fn object_meta_impl(ident: &Ident, rt: &TokenStream) -> TokenStream {
    quote! {
        impl #rt::ProjectedMeta for #ident {
            fn name(&self) -> #rt::Option<&str> {
                self.name.as_deref()
            }
            fn namespace(&self) -> #rt::Option<&str> {
                self.namespace.as_deref()
            }
            fn uid(&self) -> #rt::Option<&str> {
                self.uid.as_deref()
            }
            fn resource_version(&self) -> #rt::Option<&str> {
                self.resource_version.as_deref()
            }
            fn label(&self, key: &str) -> #rt::Option<&str> {
                self.labels.as_ref()?.get(key)
            }
            fn controller_ref(&self) -> #rt::Option<#rt::OwnerRef<'_>> {
                self.owner_references
                    .as_deref()?
                    .iter()
                    .find(|o| o.controller == #rt::Option::Some(true))
                    .map(|o| #rt::OwnerRef::new(&o.api_version, &o.kind, &o.name, &o.uid))
            }
            fn finalizers(&self) -> #rt::Finalizers<'_> {
                self.finalizers.as_deref().into()
            }
            fn deletion_timestamp(&self) -> #rt::Option<&#rt::Time> {
                self.deletion_timestamp.as_ref()
            }
            fn labels(&self) -> impl ::core::iter::Iterator<Item = (&str, &str)> {
                self.labels.iter().flat_map(|m| m.iter())
            }
            fn annotations(&self) -> impl ::core::iter::Iterator<Item = (&str, &str)> {
                self.annotations.iter().flat_map(|m| m.iter())
            }
            fn owner_references(&self) -> impl ::core::iter::Iterator<Item = #rt::OwnerRef<'_>> {
                self.owner_references
                    .iter()
                    .flat_map(|refs| refs.iter())
                    .map(|o| #rt::OwnerRef::new(&o.api_version, &o.kind, &o.name, &o.uid))
            }
            fn generation(&self) -> #rt::Option<i64> {
                self.generation
            }
        }
    }
}

pub(super) fn resource_impls(ident: &Ident, full: &TokenStream, rt: &TokenStream) -> TokenStream {
    quote! {
        impl #rt::Meta for #ident {
            fn object_name(&self) -> #rt::Option<&str> {
                #rt::ProjectedMeta::name(&self.metadata)
            }
            fn object_namespace(&self) -> #rt::Option<&str> {
                #rt::ProjectedMeta::namespace(&self.metadata)
            }
            fn object_uid(&self) -> #rt::Option<&str> {
                #rt::ProjectedMeta::uid(&self.metadata)
            }
            fn object_resource_version(&self) -> #rt::Option<&str> {
                #rt::ProjectedMeta::resource_version(&self.metadata)
            }
            fn object_label(&self, key: &str) -> #rt::Option<&str> {
                #rt::ProjectedMeta::label(&self.metadata, key)
            }
            fn object_controller_ref(&self) -> #rt::Option<#rt::OwnerRef<'_>> {
                #rt::ProjectedMeta::controller_ref(&self.metadata)
            }
            fn object_finalizers(&self) -> #rt::Finalizers<'_> {
                #rt::ProjectedMeta::finalizers(&self.metadata)
            }
            fn object_deletion_timestamp(&self) -> #rt::Option<&#rt::Time> {
                #rt::ProjectedMeta::deletion_timestamp(&self.metadata)
            }
            fn object_labels(&self) -> impl ::core::iter::Iterator<Item = (&str, &str)> {
                #rt::ProjectedMeta::labels(&self.metadata)
            }
            fn object_annotations(&self) -> impl ::core::iter::Iterator<Item = (&str, &str)> {
                #rt::ProjectedMeta::annotations(&self.metadata)
            }
            fn object_owner_references(&self) -> impl ::core::iter::Iterator<Item = #rt::OwnerRef<'_>> {
                #rt::ProjectedMeta::owner_references(&self.metadata)
            }
            fn object_generation(&self) -> #rt::Option<i64> {
                #rt::ProjectedMeta::generation(&self.metadata)
            }
        }

        impl #rt::HasScope for #ident {
            type Scope = <#full as #rt::Resource>::Scope;
        }

        impl #rt::Object for #ident {
            type Source = #full;
        }

        impl #rt::Lossless for #ident {
            fn to_source(&self) -> #rt::Cow<'_, #full> {
                #rt::Cow::Owned(#full::from(self))
            }
            fn from_source(source: #full) -> Self {
                #ident::from(&source)
            }
        }

        // The kind's constants are the full kind's own, so the two cannot disagree.
        impl #rt::K8sResource for #ident {
            const API_VERSION: &'static str = <#full as #rt::K8sResource>::API_VERSION;
            const GROUP: &'static str = <#full as #rt::K8sResource>::GROUP;
            const KIND: &'static str = <#full as #rt::K8sResource>::KIND;
            const VERSION: &'static str = <#full as #rt::K8sResource>::VERSION;
            const URL_PATH_SEGMENT: &'static str = <#full as #rt::K8sResource>::URL_PATH_SEGMENT;
            type Scope = <#full as #rt::K8sResource>::Scope;
        }
    }
}
