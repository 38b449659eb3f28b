//! A generated struct's JSON decoding: the table that the runtime's one decoder reads
//! (`informer_runtime::compact::decode`, decision record 26), in place of serde's derived
//! `Deserialize`, which wrote several times as much code per struct.
//!
//! Each field decodes as its serde attributes say ([`decoding`], shared with the field's
//! declaration), so the two paths cannot drift apart.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::{Ctx, field_cfg, holds_quantities};
use crate::model::types::{FieldDef, Presence, TypeDef};

/// The runtime decoder keeps the fields it has seen in a `u128`.
const MAX_KEYS: usize = 128;

/// How a field decodes: whether an absent field is its default, whether `None` is left out of
/// the JSON, and the runtime function that reads its value (`None`: plain `Deserialize`).
pub(super) fn decoding(f: &FieldDef) -> (bool, bool, Option<&'static str>) {
    // A quantity reads a JSON number too, as k8s-openapi's `Quantity` does (P1).
    let quantities = holds_quantities(&f.ty);
    match f.presence {
        Presence::Optional => (true, true, quantities.then_some("quantity")),
        Presence::DefaultIfMissing => (
            true,
            false,
            Some(if quantities {
                "quantity_or_default"
            } else {
                "null_default"
            }),
        ),
        Presence::Required => (false, false, quantities.then_some("quantity")),
        Presence::Nullable => (
            true,
            true,
            Some(if quantities {
                "quantity_nullable"
            } else {
                "nullable"
            }),
        ),
    }
}

/// Whether `def` decodes through the table: it has a `Default` to start from, no map of unknown
/// fields (serde's `flatten`, which buffers the object), and fewer keys than the decoder tracks.
pub(super) fn uses_table(def: &TypeDef, tags: bool) -> bool {
    def.default && def.unknown_fields.is_none() && keys(def, tags).len() <= MAX_KEYS
}

/// The JSON keys by index: the tags, then each field's name once (a field that some versions
/// give another shape is two [`FieldDef`]s with one name and one index).
fn keys(def: &TypeDef, tags: bool) -> Vec<&str> {
    let mut keys: Vec<&str> = Vec::new();
    if tags {
        keys.extend(["apiVersion", "kind"]);
    }
    for f in &def.fields {
        if !keys.contains(&f.json.as_str()) {
            keys.push(&f.json);
        }
    }
    keys
}

/// A module's decoders in a child module of their own, `decode`, so that a module over the file
/// bound splits into its types and their decoders (informer-k8s's `compact/api/core/v1`);
/// nothing when the module has none.
pub(super) fn module(impls: Vec<TokenStream>, cx: &Ctx<'_>) -> Option<TokenStream> {
    if impls.is_empty() {
        return None;
    }
    let imports = cx.paths.imports(false);
    Some(quote! {
        /// The JSON decoders of this module's structs (the runtime's `compact::decode`).
        mod decode {
            #imports
            #(#impls)*
        }
    })
}

/// `Deserialize` and `decode::Fields` for a struct that [`uses_table`], named `ident` (a path
/// from the `decode` module).
pub(super) fn decode_impls(
    def: &TypeDef,
    tags: bool,
    ident: &TokenStream,
    cx: &Ctx<'_>,
) -> TokenStream {
    let rt = &cx.paths.rt;
    let name = &def.name;
    let keys = keys(def, tags);
    let index_of = |json: &str| {
        let i = keys.iter().position(|k| *k == json).unwrap_or(0);
        proc_macro2::Literal::u8_unsuffixed(u8::try_from(i).unwrap_or(u8::MAX))
    };
    let tag_arms = tags.then(|| {
        quote! {
            "apiVersion" => #rt::Option::Some(0),
            "kind" => #rt::Option::Some(1),
        }
    });
    let tag_sets = tags.then(|| {
        quote! {
            0 => self.api_version = #rt::decode::value(map)?,
            1 => self.kind = #rt::decode::value(map)?,
        }
    });
    let mut index_arms = Vec::new();
    let mut set_arms = Vec::new();
    let mut missing = Vec::new();
    for f in &def.fields {
        let cfg = field_cfg(f, cx);
        let json = &f.json;
        let i = index_of(json);
        let field = crate::naming::ident(&f.rust);
        let (default, _, with) = decoding(f);
        let read = format_ident!("{}", with.unwrap_or("value"));
        set_arms.push(quote!(#cfg #i => self.#field = #rt::decode::#read(map)?,));
        // An absent field without `default`: serde's derive reads an `Option` as `None` and
        // refuses anything else, and refuses any field with a `deserialize_with`.
        if !default {
            let bit = quote!((1u128 << #i));
            let absent = match with {
                None => quote!(self.#field = #rt::decode::missing(#json)?;),
                Some(_) => quote!(return #rt::Result::Err(E::missing_field(#json));),
            };
            missing.push(quote! {
                #cfg
                if seen & #bit == 0 {
                    #absent
                }
            });
        }
    }
    // One arm per key, behind the union of its fields' versions: a key whose versions differ
    // in shape is one index with one `set` arm per shape.
    for json in keys.iter().skip(if tags { 2 } else { 0 }) {
        let variants: Vec<&FieldDef> = def.fields.iter().filter(|f| f.json == *json).collect();
        let cfg = if variants.iter().any(|f| f.k8s_versions.is_empty()) {
            TokenStream::new()
        } else {
            let versions = variants
                .iter()
                .flat_map(|f| f.k8s_versions.iter().cloned())
                .collect();
            cx.paths.k8s_cfg_within(&versions, &def.k8s_versions)
        };
        let i = index_of(json);
        index_arms.push(quote!(#cfg #json => #rt::Option::Some(#i),));
    }
    let finish = (!missing.is_empty()).then(|| {
        quote! {
            fn finish<E: #rt::serde::de::Error>(&mut self, seen: u128) -> #rt::Result<(), E> {
                #(#missing)*
                #rt::Result::Ok(())
            }
        }
    });
    quote! {
        impl<'de> #rt::serde::Deserialize<'de> for #ident {
            fn deserialize<D: #rt::serde::Deserializer<'de>>(
                deserializer: D,
            ) -> #rt::Result<Self, D::Error> {
                #rt::decode::deserialize(deserializer)
            }
        }

        impl #rt::decode::Fields for #ident {
            const NAME: &'static str = #name;
            const KEYS: &'static [&'static str] = &[#(#keys),*];
            fn index(key: &str) -> #rt::Option<u8> {
                match key {
                    #tag_arms
                    #(#index_arms)*
                    _ => #rt::Option::None,
                }
            }
            fn set<'de, A: #rt::serde::de::MapAccess<'de>>(
                &mut self,
                index: u8,
                map: &mut A,
            ) -> #rt::Result<(), A::Error> {
                match index {
                    #tag_sets
                    #(#set_arms)*
                    _ => {
                        map.next_value::<#rt::serde::de::IgnoredAny>()?;
                    }
                }
                #rt::Result::Ok(())
            }
            #finish
        }
    }
}
