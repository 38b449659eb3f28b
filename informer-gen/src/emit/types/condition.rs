//! The runtime's `Condition` impl for a struct of the `metav1.Condition` shape (G10), so
//! `informer_runtime::conditions` sets, finds and removes conditions in a generated type's
//! `status.conditions` as it is held (`Option<Box<[_]>>`).
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
//! Go's `omitempty` writes it.

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

/// `ty` itself, and whether it is optional.
fn unwrapped(ty: &Ty) -> (&Ty, bool) {
    match ty {
        Ty::Option(inner) => (inner, true),
        ty => (ty, false),
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
        time: field("lastTransitionTime")
            .filter(|f| unwrapped(&f.ty).0 == &Ty::Leaf(TIME.into()))?,
        reason: field("reason"),
        message: field("message"),
        generation: field("observedGeneration"),
    };
    let strings = [fields.reason, fields.message]
        .into_iter()
        .flatten()
        .all(|f| unwrapped(&f.ty).0 == &Ty::Str);
    let generation = fields
        .generation
        .is_none_or(|f| unwrapped(&f.ty).0 == &Ty::I64);
    (plain && strings && generation).then_some(fields)
}

/// `impl rt::Condition for <def>`, if `def` has the condition shape (G10).
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
    let status_of = status_conversion(fields.status, at, cx);
    let (time_get, time_set) = if unwrapped(&fields.time.ty).1 {
        (
            quote!(self.#time_name.as_ref()),
            quote!(#rt::Option::Some(time)),
        )
    } else {
        (quote!(#rt::Option::Some(&self.#time_name)), quote!(time))
    };
    let text = |f: Option<&FieldDef>, setter: &str| {
        let setter = format_ident!("{setter}");
        let getter = format_ident!("{}", setter.to_string().trim_start_matches("set_"));
        let Some(f) = f else {
            return (
                None,
                quote! {
                    fn #getter(&self) -> &str { "" }
                    fn #setter(&mut self, _: &str) {}
                },
            );
        };
        let n = name(f);
        let (init, get, set) = if unwrapped(&f.ty).1 {
            (
                quote!(#rt::Option::None),
                quote!(self.#n.as_ref().map_or("", |v| v.as_str())),
                quote!((!value.is_empty()).then(|| #rt::IStr::from(value))),
            )
        } else {
            (
                quote!(#rt::IStr::default()),
                quote!(self.#n.as_str()),
                quote!(#rt::IStr::from(value)),
            )
        };
        (
            Some(quote!(#n: #init,)),
            quote! {
                fn #getter(&self) -> &str { #get }
                fn #setter(&mut self, value: &str) { self.#n = #set; }
            },
        )
    };
    let (reason_init, reason) = text(fields.reason, "set_reason");
    let (message_init, message) = text(fields.message, "set_message");
    let (generation_init, generation) = match fields.generation {
        None => (
            None,
            quote! {
                fn observed_generation(&self) -> i64 { 0 }
                fn set_observed_generation(&mut self, _: i64) {}
            },
        ),
        Some(f) => {
            let n = name(f);
            let (init, get, set) = if unwrapped(&f.ty).1 {
                (
                    quote!(#rt::Option::None),
                    quote!(self.#n.unwrap_or(0)),
                    quote!((generation != 0).then_some(generation)),
                )
            } else {
                (quote!(0), quote!(self.#n), quote!(generation))
            };
            (
                Some(quote!(#n: #init,)),
                quote! {
                    fn observed_generation(&self) -> i64 { #get }
                    fn set_observed_generation(&mut self, generation: i64) { self.#n = #set; }
                },
            )
        }
    };
    Some(quote! {
        impl #rt::Condition for #ident {
            fn new_condition(condition_type: &str, status: &str, time: #rt::Time) -> Self {
                #ident {
                    #type_name: #rt::IStr::from(condition_type),
                    #status_name: #status_of,
                    #time_name: #time_set,
                    #reason_init
                    #message_init
                    #generation_init
                }
            }
            fn condition_type(&self) -> &str { self.#type_name.as_str() }
            fn condition_status(&self) -> &str { self.#status_name.as_str() }
            fn last_transition_time(&self) -> #rt::Option<&#rt::Time> { #time_get }
            fn set_condition_status(&mut self, status: &str) { self.#status_name = #status_of; }
            fn set_last_transition_time(&mut self, time: #rt::Time) { self.#time_name = #time_set; }
            #reason
            #message
            #generation
        }
    })
}

/// The `status` field's value for the string `status`: an `IStr`, or the enum's listed variant
/// of that spelling, else its catch-all variant.
fn status_conversion(f: &FieldDef, at: &[String], cx: &Ctx<'_>) -> TokenStream {
    let rt = &cx.paths.rt;
    let Ty::Enum(key) = &f.ty else {
        return quote!(#rt::IStr::from(status));
    };
    let Some(Shape::StrEnum { variants, other }) = cx.graph.get(key).map(|d| &d.shape) else {
        return quote!(#rt::IStr::from(status));
    };
    let path = compact_path(key, at);
    let other = format_ident!("{other}");
    let arms = variants.iter().map(|v| {
        let (json, rust) = (&v.json, format_ident!("{}", v.rust));
        quote!(#json => #path::#rust,)
    });
    quote! {
        match status {
            #(#arms)*
            other => #path::#other(#rt::IStr::from(other)),
        }
    }
}
