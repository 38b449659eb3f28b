//! Conversions between compact and k8s-openapi types (P2): the expression that turns one field
//! into the other, field shape by field shape, with no serde round trip.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use super::{Ctx, compact_path, full_path};
use crate::model::types::Ty;

/// Converted by copying or cloning (no string or struct inside to make compact).
pub(super) fn kept(t: &Ty) -> bool {
    match t {
        Ty::Bool | Ty::I32 | Ty::I64 | Ty::F64 | Ty::Number | Ty::Leaf(_) | Ty::Enum(_) => true,
        Ty::Option(t) => kept(t),
        _ => false,
    }
}

pub(super) fn copy(t: &Ty) -> bool {
    match t {
        Ty::Bool | Ty::I32 | Ty::I64 | Ty::F64 => true,
        Ty::Option(t) => copy(t),
        _ => false,
    }
}

/// Converted by one call of the runtime's generic impls (`rt::FromFull`, `rt::ToFull`): a shape
/// of options, lists and string maps over strings, quantities, numbers and generated structs.
/// The call replaces the closures and iterator chains a field of that shape would otherwise
/// carry, which the compiler checks once per field (decision record 26, "What it costs").
fn generic(t: &Ty) -> bool {
    match t {
        Ty::Str | Ty::Quantity | Ty::Bool | Ty::I32 | Ty::I64 | Ty::F64 | Ty::Struct(_) => true,
        Ty::Option(t) | Ty::List(t) | Ty::Map(t) => generic(t),
        Ty::Boxed(_) | Ty::Number | Ty::Leaf(_) | Ty::Enum(_) | Ty::Json(_) => false,
    }
}

/// A shape [`generic`] converts in one call that would otherwise take a closure: one with an
/// option, list or map around its leaf.
fn by_generic_call(t: &Ty) -> bool {
    matches!(t, Ty::Option(_) | Ty::List(_) | Ty::Map(_)) && generic(t)
}

/// The expression a conversion starts from: `e`, a place when `!is_ref` and a reference to one
/// when `is_ref`, converted at closure nesting `depth`.
#[derive(Clone, Copy)]
pub(super) struct Place<'e> {
    e: &'e TokenStream,
    is_ref: bool,
    depth: usize,
}

impl<'e> Place<'e> {
    /// A field of the value being converted (`full.name`, `compact.name`).
    pub(super) fn field(e: &'e TokenStream) -> Self {
        Place {
            e,
            is_ref: false,
            depth: 0,
        }
    }

    /// The reference `e` one closure deeper.
    fn inner<'i>(&self, e: &'i TokenStream) -> Place<'i> {
        Place {
            e,
            is_ref: true,
            depth: self.depth + 1,
        }
    }

    /// A reference to the value.
    fn by_ref(&self) -> TokenStream {
        let e = self.e;
        if self.is_ref { quote!(#e) } else { quote!(&#e) }
    }

    /// The value itself as a reference to what a `Box` holds.
    fn unboxed(&self) -> TokenStream {
        let e = self.e;
        if self.is_ref {
            quote!(&**#e)
        } else {
            quote!(&*#e)
        }
    }

    /// The closure variable `prefix<depth>`.
    fn var(&self, prefix: &str) -> Ident {
        format_ident!("{prefix}{}", self.depth)
    }

    /// The value copied or cloned, when its type is the same on both sides ([`copy`], [`kept`]).
    fn unchanged(&self, ty: &Ty, rt: &TokenStream) -> Option<TokenStream> {
        let e = self.e;
        if copy(ty) {
            return Some(if self.is_ref { quote!(*#e) } else { quote!(#e) });
        }
        let by_ref = self.by_ref();
        kept(ty).then(|| quote!(#rt::Clone::clone(#by_ref)))
    }
}

/// `e` (a place of the full type when `!is_ref`, a reference to it when `is_ref`) as the compact type.
pub(super) fn to_compact(ty: &Ty, p: Place<'_>, at: &[String], cx: &Ctx<'_>) -> TokenStream {
    let rt = &cx.paths.rt;
    if let Some(same) = p.unchanged(ty, rt) {
        return same;
    }
    let (e, by_ref, v) = (p.e, p.by_ref(), p.var("v"));
    if by_generic_call(ty) {
        return quote!(#rt::FromFull::from_full(#by_ref));
    }
    match ty {
        Ty::Str => quote!(#rt::IStr::new(#by_ref)),
        Ty::Quantity => quote!(#rt::IStr::new(&#e.0)),
        Ty::List(t) => {
            if let Ty::Struct(k) = &**t {
                let s = compact_path(k, at);
                if cx.sharing.is_shared(k) {
                    return quote!(#e.iter().map(|#v| #rt::Shared::new(#s::from(#v))).collect());
                }
                return quote!(#e.iter().map(#s::from).collect());
            }
            if copy(t) {
                return quote!(#e.iter().copied().collect());
            }
            if kept(t) {
                return quote!(#e.iter().cloned().collect());
            }
            let inner = to_compact(t, p.inner(&quote!(#v)), at, cx);
            quote!(#e.iter().map(|#v| #inner).collect())
        }
        Ty::Map(t) if matches!(**t, Ty::Str) => quote!(#e.iter().collect()),
        Ty::Map(t) if matches!(**t, Ty::Quantity) => {
            let k = p.var("k");
            quote!(#e.iter().map(|(#k, #v)| (#k, &#v.0)).collect())
        }
        Ty::Map(t) => {
            let k = p.var("k");
            let inner = to_compact(t, p.inner(&quote!(#v)), at, cx);
            quote!(#e.iter().map(|(#k, #v)| (#k, #inner)).collect())
        }
        Ty::Option(t) => {
            if let Ty::Struct(k) = &**t {
                let s = compact_path(k, at);
                if cx.sharing.is_shared(k) {
                    quote!(#e.as_ref().map(|#v| #rt::Shared::new(#s::from(#v))))
                } else if cx.sizes.boxed(t) {
                    quote!(#e.as_ref().map(|#v| #rt::Box::new(#s::from(#v))))
                } else {
                    quote!(#e.as_ref().map(#s::from))
                }
            } else {
                let inner = to_compact(t, p.inner(&quote!(#v)), at, cx);
                quote!(#e.as_ref().map(|#v| #inner))
            }
        }
        Ty::Boxed(t) => {
            let inner = to_compact(t, p.inner(&p.unboxed()), at, cx);
            quote!(#rt::Box::new(#inner))
        }
        Ty::Struct(k) if cx.sharing.is_shared(k) => {
            let s = compact_path(k, at);
            quote!(#rt::Shared::new(#s::from(#by_ref)))
        }
        Ty::Struct(k) => {
            let s = compact_path(k, at);
            quote!(#s::from(#by_ref))
        }
        Ty::Json(None) => quote!(#rt::RawJson::from_value(#by_ref)),
        Ty::Json(Some(_)) => quote!(#rt::RawJson::from_value(&#e.0)),
        Ty::Bool | Ty::I32 | Ty::I64 | Ty::F64 | Ty::Number | Ty::Leaf(_) | Ty::Enum(_) => {
            quote!(#rt::Clone::clone(#by_ref))
        }
    }
}

/// `e` (a place of the compact type, or a reference to it when `is_ref`) as the full type.
pub(super) fn to_full(ty: &Ty, p: Place<'_>, cx: &Ctx<'_>) -> TokenStream {
    let rt = &cx.paths.rt;
    if let Some(same) = p.unchanged(ty, rt) {
        return same;
    }
    let (e, by_ref, v) = (p.e, p.by_ref(), p.var("v"));
    if by_generic_call(ty) {
        return quote!(#rt::ToFull::to_full(#by_ref));
    }
    let quantity = full_path("apimachinery::pkg::api::resource::Quantity", cx.paths);
    match ty {
        Ty::Str => quote!(#rt::String::from(#e.as_str())),
        Ty::Quantity => quote!(#quantity(#rt::String::from(#e.as_str()))),
        Ty::List(t) => {
            if let Ty::Struct(k) = &**t {
                let full = full_path(k, cx.paths);
                if cx.sharing.is_shared(k) {
                    return quote!(#e.iter().map(|#v| #full::from(&**#v)).collect());
                }
                return quote!(#e.iter().map(#full::from).collect());
            }
            if kept(t) {
                return quote!(#e.to_vec());
            }
            let inner = to_full(t, p.inner(&quote!(#v)), cx);
            quote!(#e.iter().map(|#v| #inner).collect())
        }
        Ty::Map(t) if matches!(**t, Ty::Str) => quote!(#e.to_btree_map()),
        Ty::Map(t) if matches!(**t, Ty::Quantity) => {
            let k = p.var("k");
            quote!(#e.iter().map(|(#k, #v)| (#rt::String::from(#k), #quantity(#rt::String::from(#v)))).collect())
        }
        Ty::Map(t) => {
            let k = p.var("k");
            let inner = to_full(t, p.inner(&quote!(#v)), cx);
            quote!(#e.iter().map(|(#k, #v)| (#rt::String::from(#k), #inner)).collect())
        }
        Ty::Option(t) => {
            if let Ty::Struct(k) = &**t {
                let full = full_path(k, cx.paths);
                if cx.sizes.boxed(t) || cx.sharing.is_shared(k) {
                    quote!(#e.as_deref().map(#full::from))
                } else {
                    quote!(#e.as_ref().map(#full::from))
                }
            } else {
                let inner = to_full(t, p.inner(&quote!(#v)), cx);
                quote!(#e.as_ref().map(|#v| #inner))
            }
        }
        Ty::Boxed(t) => {
            let inner = to_full(t, p.inner(&p.unboxed()), cx);
            quote!(#rt::Box::new(#inner))
        }
        Ty::Struct(k) if cx.sharing.is_shared(k) => {
            let full = full_path(k, cx.paths);
            let unshared = p.unboxed();
            quote!(#full::from(#unshared))
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
        Ty::Bool | Ty::I32 | Ty::I64 | Ty::F64 | Ty::Number | Ty::Leaf(_) | Ty::Enum(_) => {
            quote!(#rt::Clone::clone(#by_ref))
        }
    }
}
