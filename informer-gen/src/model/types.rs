//! The type side of the model: Rust type definitions as data (structs, string enums, field shapes).
//!
//! Two readers fill it: `read::k8s_types` from k8s-openapi's sources, for the kinds a configuration
//! marks compact, and `read::crd_schema` from CRD manifests' `openAPIV3Schema`s
//! (decision record 07); `emit::types` writes every type from it. The IR says what a field is (its
//! JSON name, whether it is required, its shape); the emitter alone decides the compact layout
//! (interned strings, exact slices, boxed large optional structs, raw JSON), so the layout rules
//! live in exactly one place.

use std::collections::{BTreeMap, BTreeSet};

/// The key of k8s-openapi's `ObjectMeta`: every cached kind's `metadata`, which the compact
/// emitter gives the runtime's `ProjectedMeta`.
pub(crate) const OBJECT_META: &str = "apimachinery::pkg::apis::meta::v1::ObjectMeta";

/// Type definitions by path relative to the source crate root (`api::core::v1::Pod`).
pub(crate) type TypeGraph = BTreeMap<String, TypeDef>;

/// One struct with named fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TypeDef {
    /// Module path relative to the crate root (`["api", "core", "v1"]`).
    pub(crate) module: Vec<String>,
    /// The type name (`Pod`).
    pub(crate) name: String,
    /// The first sentence of the source type's documentation.
    pub(crate) doc: String,
    /// Fields in declaration (and serialization) order.
    pub(crate) fields: Vec<FieldDef>,
    /// Whether the source type implements `Default`.
    pub(crate) default: bool,
    /// Set for a top-level kind: it serializes `apiVersion` and `kind` and is cacheable.
    pub(crate) resource: bool,
    /// A struct or a string enum.
    pub(crate) shape: Shape,
    /// Where the definition comes from: a compact form of a k8s-openapi type (with conversions
    /// both ways), or a type of its own generated from a CRD schema.
    pub(crate) origin: TypeOrigin,
    /// Unknown fields are kept (`x-kubernetes-preserve-unknown-fields` next to `properties`): the
    /// Rust name of the map that holds them.
    pub(crate) unknown_fields: Option<String>,
    /// The Kubernetes versions (`1.36`) the type exists in, when informer-gen read several
    /// (`K8sOpenApi::every_version`) and some lack it: the type and its impls are generated
    /// behind a `cfg` on these. Empty for a type of every version read (decision record 19).
    pub(crate) k8s_versions: BTreeSet<String>,
}

/// What a definition is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Shape {
    /// A struct with [`TypeDef::fields`].
    Struct,
    /// An enum of strings (a schema's `enum`): one unit variant per known value plus a variant
    /// holding any other string, so that values added by a newer schema still decode.
    StrEnum {
        /// The known values.
        variants: Vec<Variant>,
        /// The name of the catch-all variant (`Other`, unless a known value took it).
        other: String,
    },
}

/// One known value of a string enum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Variant {
    /// The Rust name (`Running`).
    pub(crate) rust: String,
    /// The JSON value (`running`).
    pub(crate) json: String,
}

/// Where a [`TypeDef`] comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TypeOrigin {
    /// The compact form of the k8s-openapi type with the same key.
    K8sOpenApi,
    /// A type of its own, from a CRD's schema; `Some` for the top-level kind.
    Schema(Option<CrdResource>),
}

/// What the top-level type of a CRD version needs to be a `kube::Resource` and an informer object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CrdResource {
    /// API group.
    pub(crate) group: String,
    /// API version.
    pub(crate) version: String,
    /// Kind.
    pub(crate) kind: String,
    /// The URL plural.
    pub(crate) plural: String,
    /// `spec.names.listKind` (default `<Kind>List`).
    pub(crate) list_kind: String,
    /// Namespaced or cluster-scoped.
    pub(crate) namespaced: bool,
    /// The version has the status subresource.
    pub(crate) status_subresource: bool,
    /// The version's scale subresource: spec replicas, status replicas and label selector paths.
    pub(crate) scale: Option<(String, String, Option<String>)>,
}

impl TypeDef {
    /// `api::core::v1::Pod`.
    pub(crate) fn key(&self) -> String {
        let mut parts = self.module.clone();
        parts.push(self.name.clone());
        parts.join("::")
    }
}

/// Keeps of `graph` only the definitions `root` selects and the ones they reach through their
/// fields (structs and enums, through options, lists, maps and boxes): the types of a kind left
/// out (`exclude-kinds`) go with it, the ones another kind still holds stay.
pub(crate) fn retain_reachable(graph: &mut TypeGraph, root: impl Fn(&TypeDef) -> bool) {
    fn refs(ty: &Ty, out: &mut Vec<String>) {
        match ty {
            Ty::Struct(k) | Ty::Enum(k) => out.push(k.clone()),
            Ty::List(t) | Ty::Map(t) | Ty::Option(t) | Ty::Boxed(t) => refs(t, out),
            _ => {}
        }
    }
    let mut todo: Vec<String> = graph
        .iter()
        .filter(|(_, d)| root(d))
        .map(|(k, _)| k.clone())
        .collect();
    let mut keep = BTreeSet::new();
    while let Some(key) = todo.pop() {
        if !keep.insert(key.clone()) {
            continue;
        }
        if let Some(def) = graph.get(&key) {
            for f in &def.fields {
                refs(&f.ty, &mut todo);
            }
        }
    }
    graph.retain(|k, _| keep.contains(k));
}

/// One field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FieldDef {
    /// The Rust name (`pod_ip`, `type_`).
    pub(crate) rust: String,
    /// The JSON name (`podIP`, `type`).
    pub(crate) json: String,
    /// The first sentence of the field's documentation.
    pub(crate) doc: String,
    /// What an absent field means.
    pub(crate) presence: Presence,
    /// The field's shape; `Option` at the top for [`Presence::Optional`].
    pub(crate) ty: Ty,
    /// The Kubernetes versions the field exists in with this shape and presence, when some
    /// versions of its type lack it or give it another shape (then the type has one
    /// [`FieldDef`] per shape, with the same names and disjoint versions): the field is generated
    /// behind a `cfg` on these. Empty for a field of every version its type exists in.
    pub(crate) k8s_versions: BTreeSet<String>,
}

/// What an absent (or `null`) field decodes to, as the source type decodes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Presence {
    /// `Option`: absent and `null` are `None`; `None` is not serialized.
    Optional,
    /// Required, but absent and `null` decode as the type's default (k8s-openapi's `unwrap_or_default`).
    DefaultIfMissing,
    /// Required: absent is an error.
    Required,
    /// Optional and `nullable`: `Option<Option<T>>`, where `Some(None)` is an explicit `null`
    /// (kept and written back, as the API server keeps it) and `None` is absent.
    Nullable,
}

/// The shape of a field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ty {
    /// `bool`.
    Bool,
    /// `i32`.
    I32,
    /// `i64`.
    I64,
    /// `f64`.
    F64,
    /// A JSON number kept as written (a CRD's `type: number`: `1` must not come back as `1.0`).
    Number,
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
    /// A string enum of the graph ([`Shape::StrEnum`]), by key.
    Enum(String),
}

/// A schema description as rustdoc text that renders as written and trips no rustdoc lint:
/// lines are trimmed (no indented code blocks, so nothing becomes a doctest), code fences are
/// broken, and outside inline code spans brackets (intra-doc links) and angle brackets (HTML
/// tags) are escaped and URLs wrapped in `<…>` (bare URLs).
pub(crate) fn doc_text(text: &str) -> String {
    text.lines()
        .map(|line| {
            let line = line.trim();
            let line = match line.strip_prefix("```") {
                Some(rest) => format!("\\`\\`\\`{rest}"),
                None => line.to_owned(),
            };
            // Inline code spans (between paired backticks) are kept as they are.
            let parts: Vec<&str> = line.split('`').collect();
            let paired = parts.len() % 2 == 1;
            parts
                .iter()
                .enumerate()
                .map(|(i, part)| {
                    if paired && i % 2 == 1 {
                        (*part).to_owned()
                    } else {
                        part.split(' ')
                            .map(prose_word)
                            .collect::<Vec<_>>()
                            .join(" ")
                    }
                })
                .collect::<Vec<_>>()
                .join("`")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn prose_word(word: &str) -> String {
    // A URL anywhere in the word (`(https://…)` of a markdown link included) is wrapped in
    // `<…>`; the text around it is escaped.
    let start = ["https://", "http://"]
        .iter()
        .filter_map(|p| word.find(p))
        .min();
    if let Some(start) = start {
        let (head, rest) = word.split_at(start);
        let end = rest
            .find(['<', '>', '`', '"', '\'', ' '])
            .unwrap_or(rest.len());
        let url = rest[..end].trim_end_matches(['.', ',', ')', ';', ':']);
        let tail = &rest[url.len()..];
        return format!("{}<{url}>{}", escape(head), prose_word(tail));
    }
    escape(word)
}

fn escape(text: &str) -> String {
    text.replace('[', "\\[")
        .replace(']', "\\]")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_become_safe_rustdoc() {
        assert_eq!(
            doc_text("  see https://example.com/x.\n    indented <b> [link] `code <a>`"),
            "see <https://example.com/x>.\nindented &lt;b&gt; \\[link\\] `code <a>`"
        );
        assert_eq!(
            doc_text("[rules](https://example.com/r/) and (https://a.b/c)."),
            "\\[rules\\](<https://example.com/r/>) and (<https://a.b/c>)."
        );
    }

    #[test]
    fn k8s_docs_are_safe_for_rustdoc() {
        assert_eq!(
            doc_text("More info: https://k8s.io/docs/x#y. Keys [a-z] <name> (https://a.b/c)."),
            r"More info: <https://k8s.io/docs/x#y>. Keys \[a-z\] &lt;name&gt; (<https://a.b/c>)."
        );
    }
}
