//! Rust type definitions as data, and the one emitter that turns them into compact types (P1-P3).
//!
//! The reader of k8s-openapi's sources (`k8s`) fills this IR for the kinds a configuration
//! marks compact; `emit` writes every type from it. The IR says what a field is (its JSON name,
//! whether it is required, its shape); the emitter alone decides the compact layout (interned
//! strings, exact slices, boxed large optional structs, raw JSON), so the layout rules live in
//! exactly one place.

pub(crate) mod emit;
pub(crate) mod k8s;

use std::collections::BTreeMap;

/// Type definitions by path relative to the source crate root (`api::core::v1::Pod`).
pub type TypeGraph = BTreeMap<String, TypeDef>;

/// One struct with named fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeDef {
    /// Module path relative to the crate root (`["api", "core", "v1"]`).
    pub module: Vec<String>,
    /// The type name (`Pod`).
    pub name: String,
    /// The first sentence of the source type's documentation.
    pub doc: String,
    /// Fields in declaration (and serialization) order.
    pub fields: Vec<FieldDef>,
    /// Whether the source type implements `Default`.
    pub default: bool,
    /// Set for a top-level kind: it serializes `apiVersion` and `kind` and is cacheable.
    pub resource: bool,
}

impl TypeDef {
    /// `api::core::v1::Pod`.
    pub fn key(&self) -> String {
        let mut parts = self.module.clone();
        parts.push(self.name.clone());
        parts.join("::")
    }
}

/// One field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldDef {
    /// The Rust name (`pod_ip`, `type_`).
    pub rust: String,
    /// The JSON name (`podIP`, `type`).
    pub json: String,
    /// The first sentence of the field's documentation.
    pub doc: String,
    /// What an absent field means.
    pub presence: Presence,
    /// The field's shape; `Option` at the top for [`Presence::Optional`].
    pub ty: Ty,
}

/// What an absent (or `null`) field decodes to, as the source type decodes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// `Option`: absent and `null` are `None`; `None` is not serialized.
    Optional,
    /// Required, but absent and `null` decode as the type's default (k8s-openapi's `unwrap_or_default`).
    DefaultIfMissing,
    /// Required: absent is an error.
    Required,
}

/// The shape of a field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ty {
    /// `bool`.
    Bool,
    /// `i32`.
    I32,
    /// `i64`.
    I64,
    /// `f64`.
    F64,
    /// A string.
    Str,
    /// A resource quantity (`Quantity`, a string newtype).
    Quantity,
    /// A sequence.
    List(Box<Ty>),
    /// A map with string keys.
    Map(Box<Ty>),
    /// An optional value.
    Option(Box<Ty>),
    /// A boxed value (recursive types).
    Boxed(Box<Ty>),
    /// Another struct of the graph, by key.
    Struct(String),
    /// A type kept as it is (`Time`, `IntOrString`, `ByteString`), by path from the crate root.
    Leaf(String),
    /// Free-form JSON: `None` for a bare `serde_json::Value`, or the path of a newtype around one
    /// (`apimachinery::pkg::apis::meta::v1::FieldsV1`).
    Json(Option<String>),
}
