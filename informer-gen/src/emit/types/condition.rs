//! The runtime's `Condition` impl for a struct of the `metav1.Condition` shape (G10), so
//! `informer_runtime::conditions` sets, finds and removes conditions in a generated type's
//! `status.conditions` as it is held (`Option<Box<[_]>>`). The impl itself is the runtime's
//! `rt::impl_condition!` (`informer_runtime::__private`); this module emits one invocation.
//!
//! The rule, decided here and nowhere else: a struct gets the impl when its fields, by JSON name,
//! are `type` and `status` and `lastTransitionTime`, plus any of `reason`, `message` and
//! `observedGeneration`, and no other (no map of unknown fields either), each of its shape:
//! - `type`: a string, required;
//! - `status`: a string or a string enum, required;
//! - `lastTransitionTime`: a `Time`, required or optional;
//! - `reason`, `message`: strings, required or optional;
//! - `observedGeneration`: an integer (`i64`), required or optional;
//!
//! and no field is only in some Kubernetes versions. A field the struct lacks reads empty and
//! ignores writes; an optional string or generation written empty (`""`, `0`) becomes absent, as
//! Go's `omitempty` writes it (the runtime's macro does both).

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::{Ctx, compact_path, field_cfg};
use crate::model::types::{FieldDef, Shape, Ty, TypeDef};

const TIME: &str = "apimachinery::pkg::apis::meta::v1::Time";

/// The fields of a condition struct, by role.
struct Fields<'a> {
    condition_type: &'a FieldDef,
    status: &'a FieldDef,
    time: &'a FieldDef,
    reason: Option<&'a FieldDef>,
    message: Option<&'a FieldDef>,
    generation: Option<&'a FieldDef>,
}

/// `ty` without its `Option`, if any.
fn unwrapped(ty: &Ty) -> &Ty {
    match ty {
        Ty::Option(inner) => inner,
        ty => ty,
    }
}

/// The fields of `def` by role, if `def` has the condition shape of the module doc.
fn condition_fields<'a>(def: &'a TypeDef, cx: &Ctx<'_>) -> Option<Fields<'a>> {
    if def.shape != Shape::Struct || def.unknown_fields.is_some() || def.resource {
        return None;
    }
    let field = |json: &str| def.fields.iter().find(|f| f.json == json);
    let known = [
        "type",
        "status",
        "lastTransitionTime",
        "reason",
        "message",
        "observedGeneration",
    ];
    let plain = def
        .fields
        .iter()
        .all(|f| known.contains(&f.json.as_str()) && field_cfg(f, cx).is_empty());
    let fields = Fields {
        condition_type: field("type").filter(|f| f.ty == Ty::Str)?,
        status: field("status").filter(|f| match &f.ty {
            Ty::Str => true,
            Ty::Enum(k) => cx.graph.get(k).is_some_and(|e| e.shape != Shape::Struct),
            _ => false,
        })?,
        time: field("lastTransitionTime").filter(|f| unwrapped(&f.ty) == &Ty::Leaf(TIME.into()))?,
        reason: field("reason"),
        message: field("message"),
        generation: field("observedGeneration"),
    };
    let strings = [fields.reason, fields.message]
        .into_iter()
        .flatten()
        .all(|f| unwrapped(&f.ty) == &Ty::Str);
    let generation = fields
        .generation
        .is_none_or(|f| unwrapped(&f.ty) == &Ty::I64);
    (plain && strings && generation).then_some(fields)
}

/// `rt::impl_condition!` for `def`, if `def` has the condition shape (G10): the runtime's macro
/// writes the impl, this names the fields by role (their shapes, required or `Option`, the
/// runtime reads from their types) and, for an enum `status`, its listed values.
pub(super) fn condition_impl(def: &TypeDef, at: &[String], cx: &Ctx<'_>) -> Option<TokenStream> {
    let fields = condition_fields(def, cx)?;
    let rt = &cx.paths.rt;
    let ident = format_ident!("{}", def.name);
    let name = |f: &FieldDef| crate::naming::ident(&f.rust);
    let (type_name, status_name, time_name) = (
        name(fields.condition_type),
        name(fields.status),
        name(fields.time),
    );
    let status_enum = status_enum(fields.status, at, cx);
    let optional = [
        ("reason", fields.reason),
        ("message", fields.message),
        ("observed_generation", fields.generation),
    ]
    .into_iter()
    .filter_map(|(role, f)| {
        let (role, n) = (format_ident!("{role}"), name(f?));
        Some(quote!(#role = #n,))
    });
    Some(quote! {
        #rt::impl_condition! {
            #ident {
                type = #type_name,
                status = #status_name #status_enum,
                last_transition_time = #time_name,
                #(#optional)*
            }
        }
    })
}

/// For a `status` field of a string enum, `as <enum> { "<json>" => <variant>, …; else <other> }`:
/// the runtime's macro writes a listed spelling as its variant, any other string as the
/// catch-all variant. Nothing for a string `status`.
fn status_enum(f: &FieldDef, at: &[String], cx: &Ctx<'_>) -> TokenStream {
    let Ty::Enum(key) = &f.ty else {
        return TokenStream::new();
    };
    let Some(Shape::StrEnum { variants, other }) = cx.graph.get(key).map(|d| &d.shape) else {
        return TokenStream::new();
    };
    let path = compact_path(key, at);
    let other = format_ident!("{other}");
    let arms = variants.iter().map(|v| {
        let (json, rust) = (&v.json, format_ident!("{}", v.rust));
        quote!(#json => #rust)
    });
    quote!(as #path { #(#arms),*; else #other })
}
