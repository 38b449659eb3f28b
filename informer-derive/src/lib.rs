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
//! ```
//! use informer_derive::Informer; // or `informer_runtime::Informer`, with its `derive` feature
//! use kube::CustomResource;
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(CustomResource, Informer, Clone, Debug, Serialize, Deserialize, JsonSchema)]
//! #[kube(group = "example.com", version = "v1", kind = "Foo", namespaced)]
//! #[informer(index(name = "by_node", path = spec.node_name))]
//! pub struct FooSpec { pub node_name: Option<String> }
//! // emits FooInformer, FooLister (with `by_node`), FooNamespaceLister for kube's generated `Foo`
//!
//! fn by_node(factory: &informer_runtime::SharedInformerFactory) -> Vec<std::sync::Arc<Foo>> {
//!     FooInformer::new(factory).lister().by_node("n1").unwrap_or_default()
//! }
//! # fn main() {}
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
/// Each field must exist in the source type under the same Rust name (`r#` aside), with a type
/// that can hold it (`informer_runtime::projection::ProjectFrom`).
///
/// **How names are matched.** A field is decoded from the JSON key of the source field with its
/// Rust name, which the `of` type states by implementing
/// `informer_runtime::projection::ProjectionSource`:
/// - types generated by informer-gen (CRD types, compact types) and types implementing it with
///   `JsonNames::Exact` list each field's exact JSON name, serde renames included, and a key fills
///   only its own field: in the generated `GizmoSpecItems`, `r#ref` reads `$ref`, `foo_bar` reads
///   `fooBar` and `foo_bar_2` reads `foo_bar`;
/// - k8s-openapi's types (`JsonNames::Normalized`) derive each Rust name from its JSON name, so a
///   key matches a field when both are equal ignoring ASCII case, `_` and `-` (`pod_ip` reads
///   `podIP`), and `ref_path`/`schema` read `$ref`/`$schema`.
///
/// The names are checked at compile time: a source that is not a `ProjectionSource` is an error at
/// `of`; a field the source has no JSON key for (a flattened or skipped field), a field that reads
/// the same key as an earlier one, and, for a normalized source, two fields that are the same name
/// ignoring case and `_`, are errors at the field.
///
/// A struct with a `metadata` field is a top-level projection: it implements `Meta` and `Object`
/// with `Source = of`, so `factory.informer_for::<PodView>()` lists and watches Pods into it.
#[proc_macro_derive(Projection, attributes(projection))]
pub fn derive_projection(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    projection::derive(&input).into()
}

/// Derives `informer_runtime::projection::ProjectionSource` for a struct of your own, so that
/// projections can be `of` it: each field's JSON name is the one serde deserializes it from, read
/// from the struct's `#[serde(...)]` attributes the way serde reads them (`rename` and
/// `rename(deserialize = "…")` on a field, `rename_all` on the struct with serde's rules). A field
/// that is `skip`ped, `skip_deserializing` or `flatten`ed has no key of its own and cannot be
/// projected. `alias`es are not read: a projection matches the main name only.
///
/// ```ignore
/// #[derive(serde::Deserialize, informer_runtime::ProjectionSource)]
/// #[serde(rename_all = "camelCase")]
/// pub struct WidgetSpec {
///     pub replica_count: i32,        // `replicaCount`
///     #[serde(rename = "$ref")]
///     pub reference: Option<String>, // `$ref`
/// }
/// ```
///
/// For a kube `#[derive(CustomResource)]` kind, add it to the generated root struct with
/// `#[kube(derive = "informer_runtime::ProjectionSource")]`. `#[projection(crate = "path")]` names
/// `informer_runtime` when it is re-exported.
#[proc_macro_derive(ProjectionSource, attributes(serde, projection))]
pub fn derive_projection_source(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    projection::source::derive(&input).into()
}
