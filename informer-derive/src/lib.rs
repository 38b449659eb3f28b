//! `#[derive(Informer)]`: typed informers and listers for kube CRD structs.
//!
//! The derive emits `XInformer`, `XLister` and (for namespaced kinds) `XNamespaceLister` for a resource type
//! `X`, the same shapes `informer-gen` emits for built-in kinds (G3, G7). Generated bodies are single calls
//! into `informer-runtime`, reached through its `#[doc(hidden)] __private` module.
//!
//! # With kube's `CustomResource`
//!
//! Put both derives on the spec struct; the `#[kube(...)]` keys `group`, `version`, `kind`, `plural`,
//! `singular`, `root` and `namespaced` are read from kube's own attribute, so they are written once:
//!
//! ```ignore
//! #[derive(CustomResource, Informer, Clone, Debug, Serialize, Deserialize, JsonSchema)]
//! #[kube(group = "example.com", version = "v1", kind = "Foo", namespaced)]
//! #[informer(index(name = "by_node", path = spec.node_name))]
//! pub struct FooSpec { pub node_name: Option<String> }
//! // emits FooInformer, FooLister (with `by_node`), FooNamespaceLister for kube's generated `Foo`
//! ```
//!
//! # Standalone
//!
//! On a full resource type that implements `kube::Resource`, give the keys in `#[informer(...)]`:
//! `#[informer(group = "example.com", version = "v1", kind = "Bar", namespaced)]`. The declared scope is
//! checked against `Resource::Scope` at compile time.
//!
//! # Attribute reference (`#[informer(...)]`)
//!
//! | key | meaning |
//! |---|---|
//! | `group = "…"`, `version = "…"`, `kind = "…"` | required (from `#[kube]` or here, never both) |
//! | `plural = "…"` | API plural; default is kube-derive's rule (`-es`, `-ies`, `-s`) on the lowercased kind |
//! | `namespaced` | namespaced kind: the lister gets `namespaced(ns)`; without it the lister has `get(name)` (L4) |
//! | `crate = "path"` | path of `informer_runtime` for re-exporting crates (default `::informer_runtime`) |
//! | `index(name = "by_x", path = a.b)` | an index over a field path (`String`, `Option`, `Vec`, … of strings) |
//! | `index(name = "by_x", owner = "Kind")` | an index over the names of owner references of that kind |
//! | `index(name = "by_x", function = path::to::f)` | an index computed by `fn(&X) -> Vec<String>` |
//!
//! Every index becomes a lister method `by_x(&self, value: &str)`. All mistakes are reported in one
//! compile, each on the offending token.

mod ast;
mod attr;
mod check;
mod ctxt;
mod expand;
mod fallback;
mod projection;
mod symbol;

use proc_macro::TokenStream;

/// Derives typed informer and lister handles; see the crate documentation for the attributes.
#[proc_macro_derive(Informer, attributes(informer))]
pub fn derive_informer(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    derive(&input).into()
}

fn derive(input: &syn::DeriveInput) -> proc_macro2::TokenStream {
    let cx = ctxt::Ctxt::new();
    let container = attr::Container::from_attrs(&cx, &input.attrs);
    let resource = check::resource_ident(input, &container);
    let checked = check::check(&cx, input, container);
    match (cx.check(), checked) {
        (Ok(()), Some(model)) => expand::expand(&model),
        (Err(err), _) => {
            let stubs = fallback::stubs(input, &resource);
            let errors = err.to_compile_error();
            quote::quote!(#errors #stubs)
        }
        (Ok(()), None) => unreachable!("check returned no model without recording an error"),
    }
}

/// Derives a projection: a slim struct decoded straight from the wire of a source kind (P4-P6).
///
/// ```ignore
/// #[derive(Projection, Clone, Debug)]
/// #[projection(of = k8s_openapi::api::core::v1::Pod)]
/// pub struct PodView {
///     pub metadata: informer_runtime::projection::SlimMeta,
///     pub spec: Option<PodSpecView>,
/// }
/// ```
///
/// | key | meaning |
/// |---|---|
/// | `of = Type` | required: the type this struct projects (a `kube::Resource` for a top-level projection) |
/// | `nested` | never an object of its own, even with a `metadata` field |
/// | `index(name = "…", path = a.b)` | an index over a field path of the projection |
/// | `index(name = "…", function = path::to::f)` | an index computed by `fn(&Self) -> Vec<String>` |
/// | `crate = "path"` | path of `informer_runtime` (default `::informer_runtime`) |
///
/// Each field must exist in the source type under the same name, with a type that can hold it
/// (`informer_runtime::projection::ProjectFrom`); mistakes are compile errors at the field. A
/// struct with a `metadata` field is a top-level projection: it implements `Meta` and `Object`
/// with `Source = of`, so `factory.informer_for::<PodView>()` lists and watches Pods into it.
#[proc_macro_derive(Projection, attributes(projection))]
pub fn derive_projection(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    projection::derive(&input).into()
}
