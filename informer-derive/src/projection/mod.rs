//! `#[derive(Projection)]`: parse, check, expand (P4-P6).

mod attr;
mod expand;
pub(crate) mod source;

use proc_macro2::TokenStream;

use crate::ctxt::Ctxt;

pub(crate) use attr::Container;

/// The checked model of one projection struct.
pub(crate) struct Model<'a> {
    pub(crate) input: &'a syn::DeriveInput,
    pub(crate) krate: syn::Path,
    pub(crate) of: syn::Type,
    pub(crate) fields: Vec<Field<'a>>,
    /// Top-level: has `metadata` and is not `nested`; gets `Meta`/`Object` impls.
    pub(crate) object: bool,
    pub(crate) indexes: Vec<(syn::LitStr, IndexBody)>,
}

/// One declared field.
pub(crate) struct Field<'a> {
    pub(crate) ident: &'a syn::Ident,
    pub(crate) ty: &'a syn::Type,
    /// The `T` of an `Option<T>` field.
    pub(crate) option_inner: Option<&'a syn::Type>,
    /// The name without `r#`: the source field's Rust name, looked up in its JSON names.
    pub(crate) rust: String,
    /// Lowercase, without `_`: what JSON keys are compared with for a source whose names are
    /// `JsonNames::Normalized` (k8s-openapi's).
    pub(crate) normalized: String,
}

/// How an index computes its values.
pub(crate) enum IndexBody {
    Path(Vec<syn::Member>),
    Function(syn::Path),
}

/// Entry point: the impls, or the errors plus a fallback that keeps the type usable.
pub(crate) fn derive(input: &syn::DeriveInput) -> TokenStream {
    let cx = Ctxt::new();
    let container = Container::from_attrs(&cx, &input.attrs);
    let model = check(&cx, input, container);
    match (cx.check(), model) {
        (Ok(()), Some(model)) => expand::expand(&model),
        (Err(err), _) => err.to_compile_error(),
        (Ok(()), None) => {
            let err = syn::Error::new_spanned(&input.ident, "informer-derive bug: no model");
            err.to_compile_error()
        }
    }
}

fn check<'a>(cx: &Ctxt, input: &'a syn::DeriveInput, c: Container) -> Option<Model<'a>> {
    if !input.generics.params.is_empty() {
        cx.error_spanned_by(
            &input.generics,
            "`Projection` does not support generic structs",
        );
    }
    let fields = match &input.data {
        syn::Data::Struct(syn::DataStruct {
            fields: syn::Fields::Named(named),
            ..
        }) => named
            .named
            .iter()
            .filter_map(|f| {
                let ident = f.ident.as_ref()?;
                let name = ident.to_string();
                let name = name.strip_prefix("r#").unwrap_or(&name);
                Some(Field {
                    ident,
                    ty: &f.ty,
                    option_inner: option_inner(&f.ty),
                    rust: name.to_owned(),
                    normalized: name.replace('_', "").to_ascii_lowercase(),
                })
            })
            .collect::<Vec<_>>(),
        _ => {
            cx.error_spanned_by(
                &input.ident,
                "`Projection` needs a struct with named fields, one per source field it keeps",
            );
            return None;
        }
    };
    let Some(of) = c.of else {
        cx.error_spanned_by(
            &input.ident,
            "missing `#[projection(of = SourceType)]`: name the type this struct projects",
        );
        return None;
    };
    let has_metadata = fields.iter().any(|f| f.ident == "metadata");
    let object = has_metadata && !c.nested;
    if let (false, Some((name, _))) = (object, c.indexes.first()) {
        cx.error_spanned_by(
            name,
            "indexes need a top-level projection: a struct with a `metadata` field",
        );
    }
    Some(Model {
        input,
        krate: c
            .krate
            .unwrap_or_else(|| syn::parse_quote!(::informer_runtime)),
        of,
        fields,
        object,
        indexes: c.indexes,
    })
}

/// `Some(T)` for a type written `Option<T>` (any path ending in `Option`).
fn option_inner(ty: &syn::Type) -> Option<&syn::Type> {
    let syn::Type::Path(tp) = ty else { return None };
    let last = tp.path.segments.last()?;
    if last.ident != "Option" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    match args.args.first()? {
        syn::GenericArgument::Type(t) if args.args.len() == 1 => Some(t),
        _ => None,
    }
}
