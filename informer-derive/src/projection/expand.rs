//! Emits a projection's decoder, its compile-time field checks and, for top-level projections,
//! its `Meta`/`HasScope`/`Object` impls. Every path goes through `__private`.

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use super::{IndexBody, Model};

pub(crate) fn expand(m: &Model<'_>) -> TokenStream {
    let keys = keys(m);
    let de = deserialize(m);
    let checks = checks(m);
    let object = if m.object { object(m) } else { quote!() };
    quote! {
        #[doc(hidden)]
        #[allow(non_upper_case_globals, unused_qualifications, clippy::all)]
        const _: () = {
            #keys
            #de
            #checks
            #object
        };
    }
}

/// The JSON key of every field, as constants the decoder and the checks share: each field's
/// source field's JSON name from the source's `ProjectionSource`, or its normalized name when
/// the source names fields by k8s-openapi's rule.
fn keys(m: &Model<'_>) -> TokenStream {
    let krate = &m.krate;
    let p = quote!(#krate::__private);
    let d = quote!(#p::projection);
    let of = &m.of;
    let n = m.fields.len();
    let rust: Vec<&str> = m.fields.iter().map(|f| f.rust.as_str()).collect();
    let normalized: Vec<&str> = m.fields.iter().map(|f| f.normalized.as_str()).collect();
    let names = quote_spanned!(of.span()=> <#of as #p::ProjectionSource>::JSON_NAMES);
    quote! {
        const __INFORMER_JSON_NAMES: #d::JsonNames = #names;
        const __INFORMER_RUST_NAMES: [&str; #n] = [#(#rust),*];
        const __INFORMER_KEYS: [&str; #n] = [
            #( #d::json_key(__INFORMER_JSON_NAMES, #rust, #normalized) ),*
        ];
    }
}

fn deserialize(m: &Model<'_>) -> TokenStream {
    let ident = &m.input.ident;
    let krate = &m.krate;
    let p = quote!(#krate::__private);
    let d = quote!(#p::projection);
    let of = &m.of;
    let locals: Vec<_> = (0..m.fields.len())
        .map(|i| format_ident!("__field{}", i))
        .collect();
    let inner: Vec<&syn::Type> = m
        .fields
        .iter()
        .map(|f| f.option_inner.unwrap_or(f.ty))
        .collect();
    let idx: Vec<Literal> = (0..m.fields.len()).map(Literal::usize_unsuffixed).collect();
    let finish: Vec<TokenStream> = m
        .fields
        .iter()
        .zip(&locals)
        .map(|(f, local)| {
            let name = f.ident;
            if f.option_inner.is_some() {
                quote!(#name: #local)
            } else {
                quote_spanned!(f.ty.span()=> #name: #p::Option::unwrap_or_default(#local))
            }
        })
        .collect();
    let check_kind = m.object;
    let kind_arm = if m.object {
        quote! {
            #d::Key::Kind => #d::check_kind(
                &mut __map,
                &<#of as #p::Resource>::kind(&()),
            )?,
        }
    } else {
        quote!()
    };
    let expecting = format!("an object to project into `{ident}`");
    quote! {
        impl<'de> #p::serde::Deserialize<'de> for #ident {
            fn deserialize<__D>(__deserializer: __D) -> #p::Result<Self, __D::Error>
            where
                __D: #p::serde::Deserializer<'de>,
            {
                struct __Visitor;
                impl<'de> #p::serde::de::Visitor<'de> for __Visitor {
                    type Value = #ident;
                    fn expecting(&self, f: &mut #p::fmt::Formatter<'_>) -> #p::fmt::Result {
                        f.write_str(#expecting)
                    }
                    fn visit_map<__A>(self, mut __map: __A) -> #p::Result<#ident, __A::Error>
                    where
                        __A: #p::serde::de::MapAccess<'de>,
                    {
                        #( let mut #locals: #p::Option<#inner> = #p::Option::None; )*
                        while let #p::Option::Some(__key) = __map.next_key_seed(#d::KeySeed {
                            names: &__INFORMER_KEYS,
                            exact: #d::is_exact(__INFORMER_JSON_NAMES),
                            check_kind: #check_kind,
                        })? {
                            match __key {
                                #( #d::Key::Field(#idx) => {
                                    #locals = __map.next_value::<#p::Option<#inner>>()?;
                                } )*
                                #kind_arm
                                _ => {
                                    __map.next_value::<#p::serde::de::IgnoredAny>()?;
                                }
                            }
                        }
                        #p::Result::Ok(#ident { #(#finish),* })
                    }
                }
                __deserializer.deserialize_map(__Visitor)
            }
        }
    }
}

/// P5: every field exists in the source under its name and can hold the source field's type;
/// the source has a JSON name for it, and no two fields read the same key. Each check is spanned
/// on its field.
fn checks(m: &Model<'_>) -> TokenStream {
    let (ident, of) = (&m.input.ident, &m.of);
    let krate = &m.krate;
    let p = quote!(#krate::__private);
    let d = quote!(#p::projection);
    let each = m.fields.iter().map(|f| {
        let (name, ty) = (f.ident, f.ty);
        let access = quote_spanned!(name.span()=> &__source.#name);
        quote_spanned!(ty.span()=> #d::SourceField(#access).holds::<#ty>();)
    });
    let of_name = quote!(#of).to_string().replace(' ', "");
    let names = m
        .fields
        .iter()
        .enumerate()
        .map(|(i, f)| name_check(m, &of_name, i, f));
    quote! {
        impl #d::ProjectFrom<#of> for #ident {}
        fn __informer_projection_checks(__source: &#of) {
            #(#each)*
        }
        #(#names)*
    }
}

/// The compile-time check of field `i`'s JSON key: a constant that panics, at the field, with a
/// message naming the fields involved.
fn name_check(m: &Model<'_>, of_name: &str, i: usize, f: &super::Field<'_>) -> TokenStream {
    let krate = &m.krate;
    let d = quote!(#krate::__private::projection);
    let name = &f.rust;
    let missing = format!(
        "`{of_name}` has no JSON key for field `{name}`: it is flattened or skipped there, or missing from its `ProjectionSource` names"
    );
    let earlier = &m.fields[..i];
    let same = earlier.iter().map(|e| {
        format!(
            "projection fields `{}` and `{name}` read the same JSON key of `{of_name}`",
            e.rust
        )
    });
    let normalized = earlier.iter().map(|e| {
        format!(
            "projection fields `{}` and `{name}` are the same name ignoring case and `_`, which is how JSON keys of `{of_name}` are matched (k8s-openapi's naming, `JsonNames::Normalized`): keep one",
            e.rust
        )
    });
    let collisions = (i > 0).then(|| {
        quote_spanned! {f.ident.span()=>
            #d::FieldCheck::SameJsonName(__k) => {
                const __M: [&str; #i] = [#(#same),*];
                ::core::panic!("{}", __M[__k])
            }
            #d::FieldCheck::SameNormalized(__k) => {
                const __M: [&str; #i] = [#(#normalized),*];
                ::core::panic!("{}", __M[__k])
            }
        }
    });
    quote_spanned! {f.ident.span()=>
        const _: () = match #d::check_field(
            __INFORMER_JSON_NAMES,
            &__INFORMER_RUST_NAMES,
            &__INFORMER_KEYS,
            #i,
        ) {
            #d::FieldCheck::NoJsonName => ::core::panic!("{}", #missing),
            #collisions
            _ => {}
        };
    }
}

fn object(m: &Model<'_>) -> TokenStream {
    let (ident, of) = (&m.input.ident, &m.of);
    let krate = &m.krate;
    let p = quote!(#krate::__private);
    let d = quote!(#p::projection);
    let meta_ty = m
        .fields
        .iter()
        .find(|f| f.ident == "metadata")
        .map(|f| f.ty.span())
        .unwrap_or_else(proc_macro2::Span::call_site);
    let pm = quote_spanned!(meta_ty=> #d::ProjectedMeta);
    let meta_field_ty = m
        .fields
        .iter()
        .find(|f| f.ident == "metadata")
        .map(|f| {
            let ty = &f.ty;
            quote!(#ty)
        })
        .unwrap_or_else(|| quote!(#d::SlimMeta));
    let indexers = m.indexes.iter().map(|(name, body)| {
        let call = match body {
            IndexBody::Path(members) => {
                let span = members
                    .first()
                    .map_or_else(proc_macro2::Span::call_site, |m| m.span());
                quote_spanned!(span=> #p::index_values(&obj #(.#members)*))
            }
            IndexBody::Function(path) => quote_spanned!(path.span()=> #path(obj)),
        };
        quote! {
            (#name, {
                fn __index(obj: &#ident) -> #p::Vec<#p::String> { #call }
                __index as fn(&#ident) -> #p::Vec<#p::String>
            })
        }
    });
    quote! {
        impl #p::Meta for #ident {
            fn object_name(&self) -> #p::Option<&str> {
                #pm::name(&self.metadata)
            }
            fn object_namespace(&self) -> #p::Option<&str> {
                #pm::namespace(&self.metadata)
            }
            fn object_uid(&self) -> #p::Option<&str> {
                #pm::uid(&self.metadata)
            }
            fn object_resource_version(&self) -> #p::Option<&str> {
                #pm::resource_version(&self.metadata)
            }
            fn object_label(&self, key: &str) -> #p::Option<&str> {
                #pm::label(&self.metadata, key)
            }
            fn object_controller_ref(&self) -> #p::Option<#p::OwnerRef<'_>> {
                #pm::controller_ref(&self.metadata)
            }
            fn object_finalizers(&self) -> #p::Finalizers<'_> {
                #pm::finalizers(&self.metadata)
            }
            fn object_deletion_timestamp(&self) -> #p::Option<&#p::Time> {
                #pm::deletion_timestamp(&self.metadata)
            }
            fn object_labels(&self) -> impl ::core::iter::Iterator<Item = (&str, &str)> {
                #pm::labels(&self.metadata)
            }
            fn object_annotations(&self) -> impl ::core::iter::Iterator<Item = (&str, &str)> {
                #pm::annotations(&self.metadata)
            }
            fn object_owner_references(
                &self,
            ) -> impl ::core::iter::Iterator<Item = #p::OwnerRef<'_>> {
                #pm::owner_references(&self.metadata)
            }
            fn object_generation(&self) -> #p::Option<i64> {
                #pm::generation(&self.metadata)
            }
            fn object_meta(&self) -> #p::Option<&#p::ObjectMeta> {
                #pm::full(&self.metadata)
            }
            fn object_meta_mut(&mut self) -> #p::Option<&mut #p::ObjectMeta> {
                #pm::full_mut(&mut self.metadata)
            }
        }
        impl #p::HasScope for #ident {
            type Scope = <#of as #p::Resource>::Scope;
        }
        impl #p::Object for #ident {
            type Source = #of;
            fn indexers() -> &'static [#p::StaticIndexer<Self>] {
                &[#(#indexers),*]
            }
            fn keeps_managed_fields() -> bool {
                <#meta_field_ty as #pm>::KEEPS_MANAGED_FIELDS
            }
        }
    }
}
