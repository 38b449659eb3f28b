//! The one emitter of compact types: layout rules, serde shape and conversions (P1-P3, P7).
//!
//! Layout (decided here and nowhere else):
//! - strings and quantities are interned `IStr`s (8 B, one copy per distinct value, P3);
//! - sequences are exactly sized `Box<[T]>`; string maps `StrMap`, other maps `CMap<T>`;
//! - an optional struct whose estimated compact size exceeds [`BOX_ABOVE`] bytes is boxed, so an
//!   absent one costs 8 bytes instead of its full size;
//! - free-form JSON is `RawJson` (interned compact text);
//! - `Time`, `IntOrString`, `ByteString` stay k8s-openapi's types.
//!
//! Serde shape: the source's JSON names, `Option` fields skipped when `None`, required fields that
//! the source decodes with a default (absent or `null`) decoded the same way, unknown fields
//! ignored; a top-level kind writes `apiVersion` and `kind` first and checks them on decode.

use std::collections::BTreeMap;

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use super::{FieldDef, Presence, Ty, TypeDef, TypeGraph};

/// Optional structs estimated larger than this are boxed.
pub(crate) const BOX_ABOVE: usize = 8;

/// Paths the emitted code names.
pub(crate) struct TypePaths {
    /// `::informer_runtime::__private` as tokens.
    pub(crate) rt: TokenStream,
    /// The same path as a string, for serde's string attributes.
    pub(crate) rt_str: String,
    /// `::k8s_openapi` as tokens.
    pub(crate) k8s: TokenStream,
}

/// The key of k8s-openapi's `ObjectMeta`, which gets the runtime's `ProjectedMeta`.
pub(crate) const OBJECT_META: &str = "apimachinery::pkg::apis::meta::v1::ObjectMeta";

/// The items of the `compact` module: one nested module per source module.
pub(crate) fn compact_module(graph: &TypeGraph, paths: &TypePaths) -> TokenStream {
    let sizes = Sizes::new(graph);
    let mut tree = ModTree::default();
    for def in graph.values() {
        tree.insert(&def.module, def);
    }
    // Every module with types imports the two crates under short names, so the emitted code
    // (and serde's string attributes) read `rt::IStr` and `k8s::api::core::v1::Pod`.
    let local = TypePaths {
        rt: quote!(rt),
        rt_str: "rt".into(),
        k8s: quote!(k8s),
    };
    let k8s_name = paths.k8s.to_string().replace(' ', "");
    tree.emit(
        &[],
        &Ctx {
            paths: &local,
            real: paths,
            k8s_name: k8s_name.trim_start_matches("::"),
            sizes: &sizes,
        },
    )
}

struct Ctx<'a> {
    /// Paths as the emitted code names them (`rt`, `k8s`).
    paths: &'a TypePaths,
    /// The configured crate paths, imported once per module.
    real: &'a TypePaths,
    /// `k8s_openapi`, for docs.
    k8s_name: &'a str,
    sizes: &'a Sizes,
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
        let imports = (!self.defs.is_empty()).then(|| {
            let (rt, k8s) = (&cx.real.rt, &cx.real.k8s);
            quote! {
                #[allow(unused_imports)]
                use #rt as rt;
                #[allow(unused_imports)]
                use #k8s as k8s;
            }
        });
        let defs = self.defs.iter().map(|d| type_def(d, at, cx));
        let children = self.children.iter().map(|(name, child)| {
            let ident = crate::naming::ident(name);
            let mut path = at.to_vec();
            path.push(name.clone());
            let body = child.emit(&path, cx);
            let doc = format!(" Compact types of k8s-openapi's `{}`.", path.join("::"));
            quote! {
                #[doc = #doc]
                pub mod #ident {
                    #body
                }
            }
        });
        quote!(#imports #(#defs)* #(#children)*)
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

fn full_path(key: &str, paths: &TypePaths) -> TokenStream {
    let k8s = &paths.k8s;
    let segs = key.split("::").map(crate::naming::ident);
    quote!(#k8s #(::#segs)*)
}

fn type_def(def: &TypeDef, at: &[String], cx: &Ctx<'_>) -> TokenStream {
    let rt = &cx.paths.rt;
    let ident = format_ident!("{}", def.name);
    let full = full_path(&def.key(), cx.paths);
    let serde_crate = format!("{}::serde", cx.paths.rt_str);
    let k8s_name = format!("{}::{}", cx.k8s_name, def.key());
    let doc = if def.doc.is_empty() {
        format!(" Compact form of `{k8s_name}`.")
    } else {
        format!(" Compact form of `{k8s_name}`: {}", doc_text(&def.doc))
    };
    let default = def.default.then(|| quote!(#rt::Default,));
    let tags = def.resource.then(|| {
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
    let tag_init = def.resource.then(|| {
        quote! {
            api_version: #rt::Default::default(),
            kind: #rt::Default::default(),
        }
    });
    let into_compact = def.fields.iter().map(|f| {
        let name = crate::naming::ident(&f.rust);
        let e = quote!(full.#name);
        let conv = to_compact(&f.ty, &e, false, 0, at, cx);
        quote!(#name: #conv,)
    });
    let into_full = def.fields.iter().map(|f| {
        let name = crate::naming::ident(&f.rust);
        let e = quote!(compact.#name);
        let conv = to_full(&f.ty, &e, false, 0, cx);
        quote!(#name: #conv,)
    });
    let meta = (def.key() == OBJECT_META).then(|| object_meta_impl(&ident, rt));
    let resource = def.resource.then(|| resource_impls(&ident, &full, rt));
    quote! {
        #[doc = #doc]
        #[derive(#rt::Clone, #rt::fmt::Debug, #default #rt::PartialEq, #rt::serde::Serialize, #rt::serde::Deserialize)]
        #[serde(crate = #serde_crate)]
        pub struct #ident {
            #tags
            #(#fields)*
        }

        impl #rt::From<&#full> for #ident {
            fn from(full: &#full) -> Self {
                #ident {
                    #tag_init
                    #(#into_compact)*
                }
            }
        }

        impl #rt::From<&#ident> for #full {
            fn from(compact: &#ident) -> Self {
                #full {
                    #(#into_full)*
                }
            }
        }

        impl #rt::ProjectFrom<#full> for #ident {}

        #meta
        #resource
    }
}

fn field_decl(f: &FieldDef, at: &[String], cx: &Ctx<'_>) -> TokenStream {
    let name = crate::naming::ident(&f.rust);
    let ty = compact_ty(&f.ty, at, cx);
    let json = &f.json;
    let rt = &cx.paths.rt_str;
    let attr = match f.presence {
        Presence::Optional => {
            let skip = format!("{rt}::Option::is_none");
            quote!(#[serde(rename = #json, default, skip_serializing_if = #skip)])
        }
        Presence::DefaultIfMissing => {
            let with = format!("{rt}::null_default");
            quote!(#[serde(rename = #json, default, deserialize_with = #with)])
        }
        Presence::Required => quote!(#[serde(rename = #json)]),
    };
    let doc = (!f.doc.is_empty()).then(|| {
        let d = format!(" {}", doc_text(&f.doc));
        quote!(#[doc = #d])
    });
    quote! {
        #doc
        #attr
        pub #name: #ty,
    }
}

/// Source documentation made safe for rustdoc: bare URLs become `<url>` autolinks, and `[`, `]`,
/// `<`, `>` are escaped so prose is never read as a link or an HTML tag.
pub(crate) fn doc_text(doc: &str) -> String {
    let mut out = String::with_capacity(doc.len() + 8);
    for (i, word) in doc.split(' ').enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let start = word.find("https://").or_else(|| word.find("http://"));
        let Some(start) = start else {
            escape_into(word, &mut out);
            continue;
        };
        escape_into(&word[..start], &mut out);
        let rest = &word[start..];
        let url = rest.trim_end_matches(['.', ',', ';', ':', ')', '"', '\'']);
        out.push('<');
        out.push_str(url);
        out.push('>');
        escape_into(&rest[url.len()..], &mut out);
    }
    out
}

fn escape_into(text: &str, out: &mut String) {
    for c in text.chars() {
        match c {
            '[' => out.push_str("\\["),
            ']' => out.push_str("\\]"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
}

fn compact_ty(ty: &Ty, at: &[String], cx: &Ctx<'_>) -> TokenStream {
    let rt = &cx.paths.rt;
    match ty {
        Ty::Bool => quote!(bool),
        Ty::I32 => quote!(i32),
        Ty::I64 => quote!(i64),
        Ty::F64 => quote!(f64),
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
        Ty::Struct(k) => compact_path(k, at),
        Ty::Leaf(k) => full_path(k, cx.paths),
        Ty::Json(_) => quote!(#rt::RawJson),
    }
}

fn string_like(t: &Ty) -> bool {
    matches!(t, Ty::Str | Ty::Quantity)
}

/// Converted by copying or cloning (no string or struct inside to make compact).
fn kept(t: &Ty) -> bool {
    match t {
        Ty::Bool | Ty::I32 | Ty::I64 | Ty::F64 | Ty::Leaf(_) => true,
        Ty::Option(t) => kept(t),
        _ => false,
    }
}

fn copy(t: &Ty) -> bool {
    match t {
        Ty::Bool | Ty::I32 | Ty::I64 | Ty::F64 => true,
        Ty::Option(t) => copy(t),
        _ => false,
    }
}

fn var(prefix: &str, depth: usize) -> Ident {
    format_ident!("{prefix}{depth}")
}

/// `e` (a place of the full type when `!is_ref`, a reference to it when `is_ref`) as the compact type.
fn to_compact(
    ty: &Ty,
    e: &TokenStream,
    is_ref: bool,
    depth: usize,
    at: &[String],
    cx: &Ctx<'_>,
) -> TokenStream {
    let rt = &cx.paths.rt;
    let by_ref = if is_ref { quote!(#e) } else { quote!(&#e) };
    if copy(ty) {
        return if is_ref { quote!(*#e) } else { quote!(#e) };
    }
    if kept(ty) {
        return quote!(#rt::Clone::clone(#by_ref));
    }
    let v = var("v", depth);
    match ty {
        Ty::Str => quote!(#rt::IStr::new(#by_ref)),
        Ty::Quantity => quote!(#rt::IStr::new(&#e.0)),
        Ty::List(t) => {
            if let Ty::Struct(k) = &**t {
                let s = compact_path(k, at);
                return quote!(#e.iter().map(#s::from).collect());
            }
            if copy(t) {
                return quote!(#e.iter().copied().collect());
            }
            if kept(t) {
                return quote!(#e.iter().cloned().collect());
            }
            let inner = to_compact(t, &quote!(#v), true, depth + 1, at, cx);
            quote!(#e.iter().map(|#v| #inner).collect())
        }
        Ty::Map(t) if matches!(**t, Ty::Str) => quote!(#e.iter().collect()),
        Ty::Map(t) if matches!(**t, Ty::Quantity) => {
            let k = var("k", depth);
            quote!(#e.iter().map(|(#k, #v)| (#k, &#v.0)).collect())
        }
        Ty::Map(t) => {
            let k = var("k", depth);
            let inner = to_compact(t, &quote!(#v), true, depth + 1, at, cx);
            quote!(#e.iter().map(|(#k, #v)| (#k, #inner)).collect())
        }
        Ty::Option(t) => {
            if let Ty::Struct(k) = &**t {
                let s = compact_path(k, at);
                if cx.sizes.boxed(t) {
                    quote!(#e.as_ref().map(|#v| #rt::Box::new(#s::from(#v))))
                } else {
                    quote!(#e.as_ref().map(#s::from))
                }
            } else {
                let inner = to_compact(t, &quote!(#v), true, depth + 1, at, cx);
                quote!(#e.as_ref().map(|#v| #inner))
            }
        }
        Ty::Boxed(t) => {
            let deref = if is_ref { quote!(&**#e) } else { quote!(&*#e) };
            let inner = to_compact(t, &deref, true, depth + 1, at, cx);
            quote!(#rt::Box::new(#inner))
        }
        Ty::Struct(k) => {
            let s = compact_path(k, at);
            quote!(#s::from(#by_ref))
        }
        Ty::Json(None) => quote!(#rt::RawJson::from_value(#by_ref)),
        Ty::Json(Some(_)) => quote!(#rt::RawJson::from_value(&#e.0)),
        Ty::Bool | Ty::I32 | Ty::I64 | Ty::F64 | Ty::Leaf(_) => {
            quote!(#rt::Clone::clone(#by_ref))
        }
    }
}

/// `e` (a place of the compact type, or a reference to it when `is_ref`) as the full type.
fn to_full(ty: &Ty, e: &TokenStream, is_ref: bool, depth: usize, cx: &Ctx<'_>) -> TokenStream {
    let rt = &cx.paths.rt;
    let by_ref = if is_ref { quote!(#e) } else { quote!(&#e) };
    if copy(ty) {
        return if is_ref { quote!(*#e) } else { quote!(#e) };
    }
    if kept(ty) {
        return quote!(#rt::Clone::clone(#by_ref));
    }
    let v = var("v", depth);
    let quantity = full_path("apimachinery::pkg::api::resource::Quantity", cx.paths);
    match ty {
        Ty::Str => quote!(#rt::String::from(#e.as_str())),
        Ty::Quantity => quote!(#quantity(#rt::String::from(#e.as_str()))),
        Ty::List(t) => {
            if let Ty::Struct(k) = &**t {
                let full = full_path(k, cx.paths);
                return quote!(#e.iter().map(#full::from).collect());
            }
            if kept(t) {
                return quote!(#e.to_vec());
            }
            let inner = to_full(t, &quote!(#v), true, depth + 1, cx);
            quote!(#e.iter().map(|#v| #inner).collect())
        }
        Ty::Map(t) if matches!(**t, Ty::Str) => quote!(#e.to_btree_map()),
        Ty::Map(t) if matches!(**t, Ty::Quantity) => {
            let k = var("k", depth);
            quote!(#e.iter().map(|(#k, #v)| (#rt::String::from(#k), #quantity(#rt::String::from(#v)))).collect())
        }
        Ty::Map(t) => {
            let k = var("k", depth);
            let inner = to_full(t, &quote!(#v), true, depth + 1, cx);
            quote!(#e.iter().map(|(#k, #v)| (#rt::String::from(#k), #inner)).collect())
        }
        Ty::Option(t) => {
            if let Ty::Struct(k) = &**t {
                let full = full_path(k, cx.paths);
                if cx.sizes.boxed(t) {
                    quote!(#e.as_deref().map(#full::from))
                } else {
                    quote!(#e.as_ref().map(#full::from))
                }
            } else {
                let inner = to_full(t, &quote!(#v), true, depth + 1, cx);
                quote!(#e.as_ref().map(|#v| #inner))
            }
        }
        Ty::Boxed(t) => {
            let deref = if is_ref { quote!(&**#e) } else { quote!(&*#e) };
            let inner = to_full(t, &deref, true, depth + 1, cx);
            quote!(#rt::Box::new(#inner))
        }
        Ty::Struct(k) => {
            let full = full_path(k, cx.paths);
            quote!(#full::from(#by_ref))
        }
        Ty::Json(None) => quote!(#e.to_value()),
        Ty::Json(Some(k)) => {
            let full = full_path(k, cx.paths);
            quote!(#full(#e.to_value()))
        }
        Ty::Bool | Ty::I32 | Ty::I64 | Ty::F64 | Ty::Leaf(_) => {
            quote!(#rt::Clone::clone(#by_ref))
        }
    }
}

fn object_meta_impl(ident: &Ident, rt: &TokenStream) -> TokenStream {
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
        }
    }
}

fn resource_impls(ident: &Ident, full: &TokenStream, rt: &TokenStream) -> TokenStream {
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
        }

        impl #rt::HasScope for #ident {
            type Scope = <#full as #rt::Resource>::Scope;
        }

        impl #rt::Object for #ident {
            type Source = #full;
        }
    }
}

/// Estimated compact sizes in bytes (the boxing rule's input; not a layout guarantee, P7 tests
/// assert the real `size_of`).
struct Sizes {
    structs: BTreeMap<String, usize>,
}

impl Sizes {
    fn new(graph: &TypeGraph) -> Self {
        let mut sizes = Sizes {
            structs: BTreeMap::new(),
        };
        for key in graph.keys() {
            sizes.of_struct(key, graph, 0);
        }
        sizes
    }

    fn of_struct(&mut self, key: &str, graph: &TypeGraph, depth: usize) -> usize {
        if let Some(s) = self.structs.get(key) {
            return *s;
        }
        // A struct can only contain itself through a `Box`, `Vec` or map, which stop the walk;
        // the depth guard only protects against a malformed graph.
        let Some(def) = graph.get(key).filter(|_| depth < 64) else {
            return 8;
        };
        let sum: usize = def
            .fields
            .iter()
            .map(|f| self.of(&f.ty, graph, depth + 1))
            .sum();
        let size = sum.div_ceil(8) * 8;
        self.structs.insert(key.to_owned(), size);
        size
    }

    fn of(&mut self, ty: &Ty, graph: &TypeGraph, depth: usize) -> usize {
        match ty {
            Ty::Bool => 1,
            Ty::I32 => 4,
            Ty::I64 | Ty::F64 | Ty::Boxed(_) | Ty::Str | Ty::Quantity | Ty::Json(_) => 8,
            Ty::List(_) | Ty::Map(_) => 16,
            Ty::Leaf(k) if k.ends_with("Time") => 16,
            Ty::Leaf(_) => 32,
            Ty::Struct(k) => self.of_struct(k, graph, depth),
            Ty::Option(t) => match &**t {
                Ty::Bool => 1,
                Ty::I32 => 8,
                Ty::I64 | Ty::F64 => 16,
                Ty::Struct(k) => {
                    let inner = self.of_struct(k, graph, depth);
                    if inner > BOX_ABOVE { 8 } else { inner + 8 }
                }
                Ty::Leaf(_) => self.of(t, graph, depth) + 8,
                other => self.of(other, graph, depth),
            },
        }
    }

    fn boxed(&self, t: &Ty) -> bool {
        matches!(t, Ty::Struct(k) if self.structs.get(k).is_some_and(|s| *s > BOX_ABOVE))
    }
}

#[cfg(test)]
mod tests {
    use super::doc_text;

    #[test]
    fn docs_are_safe_for_rustdoc() {
        assert_eq!(
            doc_text("More info: https://k8s.io/docs/x#y. Keys [a-z] <name> (https://a.b/c)."),
            r"More info: <https://k8s.io/docs/x#y>. Keys \[a-z\] &lt;name&gt; (<https://a.b/c>)."
        );
    }
}
