//! The one emitter of compact types: layout rules, serde shape and conversions (P1-P3, P7).
//!
//! Layout (decided here and nowhere else):
//! - strings and quantities are interned `IStr`s (8 B, one copy per distinct value, P3);
//! - sequences are exactly sized `Box<[T]>`; string maps `StrMap`, other maps `CMap<T>`;
//! - an optional struct whose estimated compact size exceeds [`sizes::BOX_ABOVE`] bytes is boxed, so an
//!   absent one costs 8 bytes instead of its full size;
//! - a struct that [`share`] decides to share is `Shared<T>` wherever it appears (8 bytes; equal
//!   values of all cached objects are one allocation), never boxed;
//! - free-form JSON is `RawJson` (a tree whose objects are shared);
//! - `Time`, `IntOrString`, `ByteString` stay k8s-openapi's types.
//!
//! Serde shape: the source's JSON names, `Option` fields skipped when `None`, required fields that
//! the source decodes with a default (absent or `null`) decoded the same way, unknown fields
//! ignored; a top-level kind writes `apiVersion` and `kind` first and checks them on decode.
//! `Serialize` is serde's derive; decoding is the runtime's one table-driven decoder wherever it
//! serves ([`decode`]), serde's derive elsewhere, both from the same field attributes.

use std::cell::RefCell;
use std::collections::BTreeMap;

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::Paths;
use crate::model::types::{
    CrdResource, FieldDef, OBJECT_META, Shape, Ty, TypeDef, TypeGraph, TypeOrigin, Variant,
};

mod condition;
mod convert;
mod decode;
mod impls;
mod share;
mod sizes;

use convert::{Place, to_compact, to_full};
use impls::{
    api_version, object_meta_impl, resource_doc, resource_impls, schema_resource_impls,
    spec_status_impls,
};
use share::Sharing;
use sizes::Sizes;

/// The items of the `compact` module: one nested module per source module.
pub(crate) fn compact_module(graph: &TypeGraph, paths: &Paths) -> TokenStream {
    types_module(graph, paths, None, &|path: &[String]| {
        format!(" Compact types of k8s-openapi's `{}`.", path.join("::"))
    })
}

/// The items of a module of types generated from the CRD manifest `source`: one module per
/// version (`v1::Widget`, `v1::WidgetSpec`), each kind in its compact form, the one informers
/// cache, with its full form for `kube::Api` in the version's `full` module (`v1::full::Widget`,
/// decision record 27). `meta` is the path of the compact `ObjectMeta` from the generated root.
pub(crate) fn schema_module(
    graph: &TypeGraph,
    paths: &Paths,
    source: &str,
    meta: &CompactMeta,
) -> TokenStream {
    let source = source.to_owned();
    types_module(graph, paths, Some(meta), &move |path: &[String]| {
        format!(
            " Types of version `{}` of the CRDs in `{source}`.",
            path.join("::")
        )
    })
}

/// Where the compact `ObjectMeta` a CRD kind's compact form holds comes from.
pub(crate) enum CompactMeta {
    /// The generated root's own `compact` module (the configuration has compact kinds).
    Local,
    /// A crate's compact module, by absolute path (`::informer_k8s::compact`).
    Crate(TokenStream),
}

impl CompactMeta {
    /// The compact `ObjectMeta` as named from module `at` of a types module (a child of the
    /// generated root).
    fn path(&self, at: &[String]) -> TokenStream {
        let segs = OBJECT_META.split("::").map(crate::naming::ident);
        match self {
            CompactMeta::Local => {
                let ups = std::iter::repeat_n(quote!(super), at.len() + 1);
                quote!(#(#ups::)* compact #(::#segs)*)
            }
            CompactMeta::Crate(root) => quote!(#root #(::#segs)*),
        }
    }
}

fn types_module(
    graph: &TypeGraph,
    paths: &Paths,
    meta: Option<&CompactMeta>,
    mod_doc: &dyn Fn(&[String]) -> String,
) -> TokenStream {
    let sharing = Sharing::new(graph);
    let sizes = Sizes::new(graph, &sharing);
    let mut tree = ModTree::default();
    for def in graph.values() {
        tree.insert(&def.module, def);
    }
    let decode = RefCell::new(Vec::new());
    tree.emit(
        &[],
        &Ctx {
            graph,
            paths,
            sizes: &sizes,
            sharing: &sharing,
            mod_doc,
            meta,
            decode: &decode,
        },
    )
}

#[derive(Clone, Copy)]
struct Ctx<'a> {
    /// Every type, by key (a status field's enum, G10).
    graph: &'a TypeGraph,
    /// Paths as the emitted code names them (`rt`, `k8s`).
    paths: &'a Paths,
    sizes: &'a Sizes<'a>,
    /// Which structs are `Shared`.
    sharing: &'a Sharing,
    /// The doc of a module, by its path.
    mod_doc: &'a dyn Fn(&[String]) -> String,
    /// The compact `ObjectMeta` of CRD kinds' compact forms (`None` for the `compact` module).
    meta: Option<&'a CompactMeta>,
    /// The decoders of the module being emitted, for its `decode` child module ([`decode`]).
    decode: &'a RefCell<Vec<TokenStream>>,
}

#[derive(Default)]
struct ModTree<'a> {
    defs: Vec<&'a TypeDef>,
    children: BTreeMap<String, ModTree<'a>>,
}

impl<'a> ModTree<'a> {
    fn insert(&mut self, module: &[String], def: &'a TypeDef) {
        match module.split_first() {
            None => self.defs.push(def),
            Some((first, rest)) => self
                .children
                .entry(first.clone())
                .or_default()
                .insert(rest, def),
        }
    }

    fn emit(&self, at: &[String], cx: &Ctx<'_>) -> TokenStream {
        // This module's decoders, gathered as its types are emitted.
        let sink = RefCell::new(Vec::new());
        let cx = &Ctx {
            decode: &sink,
            ..*cx
        };
        let imports = (!self.defs.is_empty()).then(|| cx.paths.imports(true));
        let defs: Vec<TokenStream> = self.defs.iter().map(|d| type_def(d, at, cx)).collect();
        // The full forms of this module's CRD kinds, for `kube::Api` (decision record 27).
        let full: Vec<TokenStream> = self
            .defs
            .iter()
            .filter_map(|d| match &d.origin {
                TypeOrigin::Schema(Some(r)) if d.shape == Shape::Struct => {
                    Some(schema_full_def(d, r, at, cx))
                }
                _ => None,
            })
            .collect();
        let full = (!full.is_empty()).then(|| {
            let imports = cx.paths.imports(true);
            let doc = format!(
                " The full forms of the kinds of `{}`: `metadata` is k8s-openapi's `ObjectMeta`, \
                 so each is a `kube::Resource` for `kube::Api`. Informers cache the compact \
                 forms one module up; `From` converts both ways.",
                at.join("::")
            );
            quote! {
                #[doc = #doc]
                pub mod full {
                    #imports
                    #(#full)*
                }
            }
        });
        let decode = decode::module(sink.take(), cx);
        let children = self.children.iter().map(|(name, child)| {
            let ident = crate::naming::ident(name);
            let mut path = at.to_vec();
            path.push(name.clone());
            let body = child.emit(&path, cx);
            let doc = (cx.mod_doc)(&path);
            quote! {
                #[doc = #doc]
                pub mod #ident {
                    #body
                }
            }
        });
        quote!(#imports #(#defs)* #full #decode #(#children)*)
    }
}

/// The path of the compact type `key` as seen from module `at` (both relative to the compact root).
fn compact_path(key: &str, at: &[String]) -> TokenStream {
    let ups = at.iter().map(|_| quote!(super));
    let segs = key.split("::").map(crate::naming::ident);
    if let Some((module, name)) = key.rsplit_once("::")
        && module.split("::").eq(at.iter().map(String::as_str))
    {
        let name = crate::naming::ident(name);
        return quote!(#name);
    }
    if at.is_empty() {
        quote!(self #(::#segs)*)
    } else {
        quote!(#(#ups)::* #(::#segs)*)
    }
}

fn full_path(key: &str, paths: &Paths) -> TokenStream {
    paths.k8s_type(key)
}

fn type_def(def: &TypeDef, at: &[String], cx: &Ctx<'_>) -> TokenStream {
    let item = match (&def.shape, &def.origin) {
        (Shape::StrEnum { variants, other }, _) => enum_def(def, variants, other, cx),
        (Shape::Struct, TypeOrigin::K8sOpenApi) => compact_def(def, at, cx),
        (Shape::Struct, TypeOrigin::Schema(res)) => schema_def(def, res.as_ref(), at, cx),
    };
    let share = share::share_impls(def, cx);
    let condition = condition::condition_impl(def, at, cx);
    // A type some Kubernetes versions lack: every item behind their `cfg` (decision record 19).
    super::gate_items(
        quote!(#item #share #condition),
        &cx.paths.k8s_cfg(&def.k8s_versions),
    )
}

/// `#[cfg(…)]` on a field that only some versions of its type have (decision record 19).
fn field_cfg(f: &FieldDef, cx: &Ctx<'_>) -> TokenStream {
    cx.paths.k8s_cfg(&f.k8s_versions)
}

/// Doc attributes, one per line of `text` (which readers keep markdown-safe).
fn doc_attrs(text: &str) -> TokenStream {
    let lines = text.lines().map(|l| {
        let l = if l.is_empty() {
            String::new()
        } else {
            format!(" {l}")
        };
        quote!(#[doc = #l])
    });
    quote!(#(#lines)*)
}

/// A string enum that keeps values it does not know (forward compatibility): each known value
/// is a unit variant, any other string lands in the catch-all variant and is written back as it
/// came (serde's untagged variant after the tagged ones). `as_str()` and `Display` give the value
/// as the JSON has it. Variants are named by G11 (`read::crd_schema`): values whose UpperCamelCase
/// names collide keep their own spelling (`audit`, `Audit`), and such an enum allows
/// `non_camel_case_types`.
fn enum_def(def: &TypeDef, variants: &[Variant], other: &str, cx: &Ctx<'_>) -> TokenStream {
    let rt = &cx.paths.rt;
    let ident = format_ident!("{}", def.name);
    let serde_crate = format!("{}::serde", cx.paths.rt_str);
    let doc = doc_attrs(&def.doc);
    let other = format_ident!("{other}");
    let spelled = variants.iter().any(|v| {
        let name = v.rust.trim_matches('_');
        name.starts_with(|c: char| c.is_lowercase()) || name.contains('_')
    });
    let allow = spelled.then(|| quote!(#[allow(non_camel_case_types)]));
    let spellings = variants.iter().map(|v| {
        let name = format_ident!("{}", v.rust);
        let json = &v.json;
        quote!(Self::#name => #json,)
    });
    let variants = variants.iter().map(|v| {
        let name = format_ident!("{}", v.rust);
        let json = &v.json;
        let doc = format!(" `{json:?}`");
        quote! {
            #[doc = #doc]
            #[serde(rename = #json)]
            #name,
        }
    });
    quote! {
        #doc
        #[derive(#rt::Clone, #rt::fmt::Debug, #rt::PartialEq, #rt::serde::Serialize, #rt::serde::Deserialize)]
        #[serde(crate = #serde_crate)]
        #allow
        pub enum #ident {
            #(#variants)*
            /// A value the schema this type was generated from does not list (a newer version's);
            /// kept and written back as it came.
            #[serde(untagged)]
            #other(#rt::IStr),
        }

        impl #ident {
            /// The value as the JSON has it: a listed value in the schema's own spelling, any
            /// other as it came.
            pub fn as_str(&self) -> &str {
                match self {
                    #(#spellings)*
                    Self::#other(value) => value.as_str(),
                }
            }
        }

        impl #rt::fmt::Display for #ident {
            /// Writes [`Self::as_str`].
            fn fmt(&self, f: &mut #rt::fmt::Formatter<'_>) -> #rt::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    }
}

/// The struct declaration shared by compact and schema types: derives, tags, fields and the map
/// of unknown fields.
fn struct_decl(
    def: &TypeDef,
    doc: TokenStream,
    tag_of: Option<TokenStream>,
    at: &[String],
    cx: &Ctx<'_>,
) -> TokenStream {
    let rt = &cx.paths.rt;
    let ident = format_ident!("{}", def.name);
    let serde_crate = format!("{}::serde", cx.paths.rt_str);
    let default = def.default.then(|| quote!(#rt::Default,));
    let tags = tag_of.map(|full| {
        quote! {
            /// `apiVersion`: zero bytes, written from the kind's constant, checked on decode.
            #[serde(rename = "apiVersion", default)]
            pub api_version: #rt::ApiVersionTag<#full>,
            /// `kind`: zero bytes, written from the kind's constant, checked on decode (R16).
            #[serde(rename = "kind", default)]
            pub kind: #rt::KindTag<#full>,
        }
    });
    let fields = def.fields.iter().map(|f| field_decl(f, at, cx));
    let json_names = json_names_impl(def, tags.is_some(), cx);
    // serde's derived `Deserialize` only where the runtime's table decoder cannot serve; the
    // table goes to the module's `decode` child, named from there.
    let derive_de = if decode::uses_table(def, tags.is_some()) {
        let path = if at.last().is_some_and(|m| m == "full") {
            quote!(super::full::#ident)
        } else {
            quote!(super::#ident)
        };
        let impls = decode::decode_impls(def, tags.is_some(), &path, cx);
        let gated = super::gate_items(impls, &cx.paths.k8s_cfg(&def.k8s_versions));
        cx.decode.borrow_mut().push(gated);
        None
    } else {
        Some(quote!(, #rt::serde::Deserialize))
    };
    let unknown = def.unknown_fields.as_ref().map(|name| {
        let name = crate::naming::ident(name);
        quote! {
            /// Fields the schema does not declare (`x-kubernetes-preserve-unknown-fields`), kept as they came.
            #[serde(flatten)]
            pub #name: #rt::CMap<#rt::RawJson>,
        }
    });
    quote! {
        #doc
        #[derive(#rt::Clone, #rt::fmt::Debug, #default #rt::PartialEq, #rt::serde::Serialize #derive_de)]
        #[serde(crate = #serde_crate)]
        pub struct #ident {
            #tags
            #(#fields)*
            #unknown
        }
        #json_names
    }
}

/// The type's JSON names for projections (`#[derive(Projection)]` decodes and checks by them,
/// P4/P5): each field's Rust name, without `r#`, and its exact JSON name. The map of unknown
/// fields has no key of its own and is left out.
fn json_names_impl(def: &TypeDef, tags: bool, cx: &Ctx<'_>) -> TokenStream {
    use syn::ext::IdentExt;
    let rt = &cx.paths.rt;
    let ident = format_ident!("{}", def.name);
    let tag_names = tags.then(|| quote!(("api_version", "apiVersion"), ("kind", "kind"),));
    let pairs = def.fields.iter().map(|f| {
        let rust = crate::naming::ident(&f.rust).unraw().to_string();
        let json = &f.json;
        let cfg = field_cfg(f, cx);
        quote!(#cfg (#rust, #json),)
    });
    quote! {
        impl #rt::ProjectionSource for #ident {
            const JSON_NAMES: #rt::JsonNames = #rt::JsonNames::Exact(&[#tag_names #(#pairs)*]);
        }
    }
}

/// A type of its own from a CRD schema: no k8s-openapi counterpart. A nested type is one type,
/// which both forms of its kind hold; a top-level kind is its compact form here
/// ([`schema_compact_def`]) and its full form in the version's `full` module
/// ([`schema_full_def`]).
fn schema_def(
    def: &TypeDef,
    res: Option<&CrdResource>,
    at: &[String],
    cx: &Ctx<'_>,
) -> TokenStream {
    match res {
        Some(r) => schema_compact_def(def, r, at, cx),
        None => struct_decl(def, doc_attrs(&def.doc), None, at, cx),
    }
}

/// The module of the full forms inside version module `at`.
fn full_module(at: &[String]) -> Vec<String> {
    let mut full = at.to_vec();
    full.push("full".to_owned());
    full
}

/// The full form of a CRD kind (in `<version>::full`): `metadata` is k8s-openapi's `ObjectMeta`,
/// so it is a `kube::Resource` through k8s-openapi's `Resource` and `Metadata` traits; `kube::Api`
/// reads and writes it, and `full()` on the kind's handle caches it.
fn schema_full_def(def: &TypeDef, r: &CrdResource, at: &[String], cx: &Ctx<'_>) -> TokenStream {
    let ident = format_ident!("{}", def.name);
    let at = full_module(at);
    let doc = format!(
        "{}\n\n{} The informers cache the compact form, `super::{}`; `From` converts both ways.",
        def.doc,
        resource_doc(r),
        def.name
    );
    let decl = struct_decl(
        def,
        doc_attrs(doc.trim_start()),
        Some(quote!(#ident)),
        &at,
        cx,
    );
    let impls = schema_resource_impls(def, r, &at, cx);
    quote!(#decl #impls)
}

/// The compact form of a CRD kind, the one its informers cache (decision record 27): the full
/// form's fields with `metadata` in the compact `ObjectMeta` (interned strings, exact slices,
/// shared managedFields), converted field by field to and from `full::<Kind>`. Not a
/// `kube::Resource`, as no compact kind is (decision record 23).
fn schema_compact_def(def: &TypeDef, r: &CrdResource, at: &[String], cx: &Ctx<'_>) -> TokenStream {
    let rt = &cx.paths.rt;
    let ident = format_ident!("{}", def.name);
    let full = quote!(full::#ident);
    let mut compact = def.clone();
    for f in &mut compact.fields {
        if f.rust == "metadata" && f.ty == Ty::Leaf(OBJECT_META.into()) {
            f.ty = Ty::Leaf(COMPACT_META.into());
        }
    }
    let doc = format!(
        "{}\n\nThe compact form of `{kind}` (`{api_version}`), the one its informers, listers \
         and controllers cache: `metadata` is the compact `ObjectMeta`. Not a `kube::Resource`: \
         `kube::Api` takes `full::{kind}`, and `From` converts both ways.",
        def.doc,
        kind = r.kind,
        api_version = api_version(r),
    );
    let decl = struct_decl(
        &compact,
        doc_attrs(doc.trim_start()),
        Some(full.clone()),
        at,
        cx,
    );
    let convert = |from: &TokenStream, to_meta: TokenStream| {
        let fields = def.fields.iter().map(|f| {
            let name = crate::naming::ident(&f.rust);
            if f.rust == "metadata" && f.ty == Ty::Leaf(OBJECT_META.into()) {
                quote!(#name: #to_meta(&#from.#name),)
            } else {
                quote!(#name: #rt::Clone::clone(&#from.#name),)
            }
        });
        let unknown = def.unknown_fields.as_ref().map(|n| {
            let n = crate::naming::ident(n);
            quote!(#n: #rt::Clone::clone(&#from.#n),)
        });
        quote! {
            api_version: #rt::Default::default(),
            kind: #rt::Default::default(),
            #(#fields)*
            #unknown
        }
    };
    let to_compact = convert(&quote!(full), quote!(#rt::FromFull::from_full));
    let to_full = convert(&quote!(compact), quote!(#rt::ToFull::to_full));
    let spec_status = spec_status_impls(def, at, cx);
    let resource = resource_impls(&ident, &full, rt);
    let conversions = conversion_impls(&ident, &full, to_compact, to_full, rt);
    quote! {
        #decl
        #conversions
        #spec_status
        #resource
    }
}

/// The conversions of a compact type and its full counterpart, whose struct bodies are given
/// (fields from `full`, fields from `compact`): `From` both ways, the runtime's `FromFull` and
/// `ToFull` over them, and `ProjectFrom`.
fn conversion_impls(
    ident: &proc_macro2::Ident,
    full: &TokenStream,
    to_compact: TokenStream,
    to_full: TokenStream,
    rt: &TokenStream,
) -> TokenStream {
    quote! {
        impl #rt::From<&#full> for #ident {
            fn from(full: &#full) -> Self {
                #ident { #to_compact }
            }
        }

        impl #rt::From<&#ident> for #full {
            fn from(compact: &#ident) -> Self {
                #full { #to_full }
            }
        }

        impl #rt::FromFull<#full> for #ident {
            #[inline]
            fn from_full(full: &#full) -> Self {
                <Self as #rt::From<&#full>>::from(full)
            }
        }

        impl #rt::ToFull<#full> for #ident {
            #[inline]
            fn to_full(&self) -> #full {
                <#full as #rt::From<&Self>>::from(self)
            }
        }

        impl #rt::ProjectFrom<#full> for #ident {}
    }
}

/// The leaf key of a compact CRD kind's `metadata`: the compact `ObjectMeta`, named by
/// [`CompactMeta::path`].
const COMPACT_META: &str = "__informer_gen_compact_object_meta";

/// The type inside the `Option` of an optional field of shape `Option(inner)`, boxed as the
/// field declaration boxes it.
fn option_inner(inner: &Ty, at: &[String], cx: &Ctx<'_>) -> TokenStream {
    let rt = &cx.paths.rt;
    let t = compact_ty(inner, at, cx);
    if cx.sizes.boxed(inner) {
        quote!(#rt::Box<#t>)
    } else {
        t
    }
}

fn compact_def(def: &TypeDef, at: &[String], cx: &Ctx<'_>) -> TokenStream {
    let rt = &cx.paths.rt;
    let ident = format_ident!("{}", def.name);
    let full = full_path(&def.key(), cx.paths);
    let k8s_name = format!("{}::{}", cx.paths.k8s_name, def.key());
    let mut doc = if def.doc.is_empty() {
        format!("Compact form of `{k8s_name}`.")
    } else {
        format!("Compact form of `{k8s_name}`: {}", def.doc)
    };
    if def.resource {
        doc.push_str(
            "\n\nNot a `kube::Resource`, whose `meta()` needs a full `ObjectMeta`: informers, \
             listers and informer-controller (primary, owned, watched, recorded writes, the \
             finalizer and status helpers) take this form as it is, and `kube::Api` takes the \
             full kind (`From` converts both ways). Its kind constants are k8s-openapi's \
             (`k8s_openapi::Resource`).",
        );
    }
    let decl = struct_decl(
        def,
        doc_attrs(&doc),
        def.resource.then(|| full.clone()),
        at,
        cx,
    );
    let tag_init = def.resource.then(|| {
        quote! {
            api_version: #rt::Default::default(),
            kind: #rt::Default::default(),
        }
    });
    let into_compact = def.fields.iter().map(|f| {
        let name = crate::naming::ident(&f.rust);
        let e = quote!(full.#name);
        let conv = to_compact(&f.ty, Place::field(&e), at, cx);
        let cfg = field_cfg(f, cx);
        quote!(#cfg #name: #conv,)
    });
    let into_full = def.fields.iter().map(|f| {
        let name = crate::naming::ident(&f.rust);
        let e = quote!(compact.#name);
        let conv = to_full(&f.ty, Place::field(&e), cx);
        let cfg = field_cfg(f, cx);
        quote!(#cfg #name: #conv,)
    });
    let meta = (def.key() == OBJECT_META).then(|| object_meta_impl(&ident, rt));
    let resource = def.resource.then(|| resource_impls(&ident, &full, rt));
    let conversions = conversion_impls(
        &ident,
        &full,
        quote!(#tag_init #(#into_compact)*),
        quote!(#(#into_full)*),
        rt,
    );
    quote! {
        #decl
        #conversions
        #meta
        #resource
    }
}

fn field_decl(f: &FieldDef, at: &[String], cx: &Ctx<'_>) -> TokenStream {
    let name = crate::naming::ident(&f.rust);
    let ty = compact_ty(&f.ty, at, cx);
    let json = &f.json;
    let rt = &cx.paths.rt_str;
    let (default, skip, with) = decode::decoding(f);
    let mut args = vec![quote!(rename = #json)];
    if default {
        args.push(quote!(default));
    }
    if skip {
        let skip = format!("{rt}::Option::is_none");
        args.push(quote!(skip_serializing_if = #skip));
    }
    if let Some(with) = with {
        let with = format!("{rt}::{with}");
        args.push(quote!(deserialize_with = #with));
    }
    let attr = quote!(#[serde(#(#args),*)]);
    // k8s-openapi leaves some fields undocumented (the apiextensions `ExternalDocumentation`);
    // a public field still needs a doc.
    let doc = if f.doc.is_empty() {
        doc_attrs(&format!("The `{json}` field."))
    } else {
        doc_attrs(&f.doc)
    };
    let cfg = field_cfg(f, cx);
    quote! {
        #doc
        #cfg
        #attr
        pub #name: #ty,
    }
}

fn compact_ty(ty: &Ty, at: &[String], cx: &Ctx<'_>) -> TokenStream {
    let rt = &cx.paths.rt;
    match ty {
        Ty::Bool => quote!(bool),
        Ty::I32 => quote!(i32),
        Ty::I64 => quote!(i64),
        Ty::F64 => quote!(f64),
        Ty::Number => quote!(#rt::JsonNumber),
        Ty::Str | Ty::Quantity => quote!(#rt::IStr),
        Ty::List(t) => {
            let t = compact_ty(t, at, cx);
            quote!(#rt::Box<[#t]>)
        }
        Ty::Map(t) if string_like(t) => quote!(#rt::StrMap),
        Ty::Map(t) => {
            let t = compact_ty(t, at, cx);
            quote!(#rt::CMap<#t>)
        }
        Ty::Option(t) => {
            let inner = compact_ty(t, at, cx);
            if cx.sizes.boxed(t) {
                quote!(#rt::Option<#rt::Box<#inner>>)
            } else {
                quote!(#rt::Option<#inner>)
            }
        }
        Ty::Boxed(t) => {
            let t = compact_ty(t, at, cx);
            quote!(#rt::Box<#t>)
        }
        Ty::Struct(k) if cx.sharing.is_shared(k) => {
            let t = compact_path(k, at);
            quote!(#rt::Shared<#t>)
        }
        Ty::Struct(k) | Ty::Enum(k) => compact_path(k, at),
        Ty::Leaf(k) if k == COMPACT_META => match cx.meta {
            Some(meta) => meta.path(at),
            None => full_path(OBJECT_META, cx.paths),
        },
        Ty::Leaf(k) => full_path(k, cx.paths),
        Ty::Json(_) => quote!(#rt::RawJson),
    }
}

/// Whether a field's compact type holds quantities in a shape `rt::quantity` decodes: a
/// quantity, a list of them, a quantity-valued map (`StrMap`), or an option of one of those.
/// (No kind has quantities deeper in a field; a CRD that does keeps strict decoding there.)
fn holds_quantities(ty: &Ty) -> bool {
    let direct = |t: &Ty| match t {
        Ty::Quantity => true,
        Ty::List(t) | Ty::Map(t) => matches!(**t, Ty::Quantity),
        _ => false,
    };
    match ty {
        Ty::Option(t) => direct(t),
        t => direct(t),
    }
}

fn string_like(t: &Ty) -> bool {
    matches!(t, Ty::Str | Ty::Quantity)
}
