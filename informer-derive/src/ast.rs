//! The checked model of one `#[derive(Informer)]` input: plain values plus the tokens they came from.

use proc_macro2::TokenStream;
use syn::{Ident, Member, Visibility};

/// A validated derive input, ready for [`crate::expand`].
pub(crate) struct Input<'a> {
    /// The resource type the informer is for: kube's generated root (`Foo` for `FooSpec`) or the item itself.
    pub(crate) resource: Ident,
    /// The visibility the emitted types get (the item's own).
    pub(crate) vis: &'a Visibility,
    /// API group (`""` for core).
    pub(crate) group: String,
    /// API version.
    pub(crate) version: String,
    /// Kind.
    pub(crate) kind: String,
    /// API plural (explicit or kube-derive's default).
    pub(crate) plural: String,
    /// Namespaced (`Some(tokens of the flag)`) or cluster-scoped (`None`).
    pub(crate) namespaced: bool,
    /// Tokens to point scope errors at.
    pub(crate) scope_span: TokenStream,
    /// Whether kube's `CustomResource` derive produces the resource type (then it declares the scope itself).
    pub(crate) kube_mode: bool,
    /// The path of the runtime crate (default `::informer_runtime`).
    pub(crate) krate: syn::Path,
    /// Declared indexes, in declaration order.
    pub(crate) indexes: Vec<Index>,
}

/// A validated index.
pub(crate) struct Index {
    /// The index name, also the lister method name.
    pub(crate) name: String,
    /// The method identifier (`by_node`), spanned on the name literal.
    pub(crate) method: Ident,
    /// How values are computed.
    pub(crate) source: Source,
}

/// How a validated index computes its values.
pub(crate) enum Source {
    /// `obj.<members>`, converted with `IndexValues`.
    Path(Vec<Member>),
    /// Names of owner references of this kind.
    Owner(String),
    /// A user function, emitted with its own span so a signature mismatch points at it.
    Function(syn::Path),
}
