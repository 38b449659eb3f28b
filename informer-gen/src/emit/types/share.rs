//! Which compact types are shared (`Shared<T>`: equal values of cached objects are one
//! allocation), decided here from each type's estimated size and shape, never by hand
//! (ARCHITECTURE.md, decision record 18).
//!
//! A struct type is shared when all of these hold:
//! - it sits below a kind's `spec` or `metadata` (the desired state a template stamps onto its
//!   siblings: containers, volumes, tolerations, affinity, owner references), never only under
//!   `status`, which each object observes for itself;
//! - it is not itself the kind or one of the kind's top-level parts (a Pod's `PodSpec` carries
//!   its node name, so it never has an equal sibling);
//! - its estimated deep size (inline fields plus what its boxes, slices and optional parts hold
//!   when present) is at least [`SHARE_FROM`] bytes: below that a value costs more to share (an
//!   8-byte pointer, 16 bytes of counts and a pool slot) than a sibling saves;
//! - its equality is cheap and bounded: it cannot contain itself (JSON schemas nest without end),
//!   and it has no timestamp field of its own (a timestamp marks an observation, which siblings
//!   do not share, such as a managedFields entry or a condition).
//!
//! Sharing stops at the first shared type on each path: the parts of a shared container are
//! shared through it, one pool entry per container, which keeps the cost of a value without
//! siblings to one lookup. A type reached unshared on one path and shared on another is shared
//! on both (a field has one Rust type).

use std::collections::{BTreeMap, BTreeSet};

use crate::model::types::{Shape, Ty, TypeDef, TypeGraph};

/// Structs estimated smaller than this many bytes are never shared.
pub(crate) const SHARE_FROM: usize = 40;

/// The k8s-openapi timestamp leaves.
const TIMES: &[&str] = &[
    "apimachinery::pkg::apis::meta::v1::Time",
    "apimachinery::pkg::apis::meta::v1::MicroTime",
];

/// The leaf types the runtime's `ShareHash` covers; a field of another leaf type is compared
/// but left out of the hash.
const HASHED_LEAVES: &[&str] = &[
    "apimachinery::pkg::apis::meta::v1::Time",
    "apimachinery::pkg::apis::meta::v1::MicroTime",
    "apimachinery::pkg::util::intstr::IntOrString",
    "ByteString",
];

/// The set of shared types of one graph.
pub(super) struct Sharing {
    shared: BTreeSet<String>,
    /// The kinds some other type holds (a StatefulSet's `volumeClaimTemplates` holds
    /// PersistentVolumeClaims): they need `ShareHash` like any nested type.
    nested_kinds: BTreeSet<String>,
}

impl Sharing {
    pub(super) fn new(graph: &TypeGraph) -> Self {
        let mut deep = DeepSizes::default();
        let mut never = BTreeSet::new();
        for def in graph.values().filter(|d| d.resource) {
            never.insert(def.key());
            for f in &def.fields {
                never.extend(structs_in(&f.ty).map(str::to_owned));
            }
        }
        let mut shared = BTreeSet::new();
        let mut seen = BTreeSet::new();
        for def in graph.values().filter(|d| d.resource) {
            for f in def.fields.iter().filter(|f| f.json != "status") {
                for top in structs_in(&f.ty) {
                    let Some(top) = graph.get(top) else { continue };
                    for f in &top.fields {
                        walk(&f.ty, graph, &never, &mut deep, &mut shared, &mut seen);
                    }
                }
            }
        }
        let nested_kinds = graph
            .values()
            .flat_map(|def| &def.fields)
            .flat_map(|f| structs_in(&f.ty))
            .filter(|k| graph.get(*k).is_some_and(|d| d.resource))
            .map(str::to_owned)
            .collect();
        Sharing {
            shared,
            nested_kinds,
        }
    }

    /// Whether `ty` is a shared struct.
    pub(super) fn shared(&self, ty: &Ty) -> bool {
        matches!(ty, Ty::Struct(k) if self.shared.contains(k))
    }

    /// Whether the type `key` is shared.
    pub(super) fn is_shared(&self, key: &str) -> bool {
        self.shared.contains(key)
    }
}

/// Marks the shared types reachable from a field of type `ty`, stopping at each one.
fn walk(
    ty: &Ty,
    graph: &TypeGraph,
    never: &BTreeSet<String>,
    deep: &mut DeepSizes,
    shared: &mut BTreeSet<String>,
    seen: &mut BTreeSet<String>,
) {
    for key in structs_in(ty) {
        if shared.contains(key) || !seen.insert(key.to_owned()) {
            continue;
        }
        let Some(def) = graph.get(key) else { continue };
        if !never.contains(key) && shareable(def, graph, deep) {
            shared.insert(key.to_owned());
            continue;
        }
        for f in &def.fields {
            walk(&f.ty, graph, never, deep, shared, seen);
        }
    }
}

fn shareable(def: &TypeDef, graph: &TypeGraph, deep: &mut DeepSizes) -> bool {
    def.shape == Shape::Struct
        && !def.resource
        && !def.fields.iter().any(|f| has_time(&f.ty))
        && !recursive(&def.key(), graph)
        && deep.of_struct(&def.key(), graph) >= SHARE_FROM
}

/// The struct keys a field of type `ty` holds directly (through options, slices, maps, boxes).
fn structs_in(ty: &Ty) -> Box<dyn Iterator<Item = &str> + '_> {
    match ty {
        Ty::Struct(k) => Box::new(std::iter::once(k.as_str())),
        Ty::List(t) | Ty::Map(t) | Ty::Option(t) | Ty::Boxed(t) => structs_in(t),
        _ => Box::new(std::iter::empty()),
    }
}

fn has_time(ty: &Ty) -> bool {
    match ty {
        Ty::Leaf(k) => TIMES.contains(&k.as_str()),
        Ty::List(t) | Ty::Map(t) | Ty::Option(t) | Ty::Boxed(t) => has_time(t),
        _ => false,
    }
}

/// Whether `key` can reach itself.
fn recursive(key: &str, graph: &TypeGraph) -> bool {
    let mut stack: Vec<&str> = vec![key];
    let mut seen = BTreeSet::new();
    while let Some(k) = stack.pop() {
        let Some(def) = graph.get(k) else { continue };
        for f in &def.fields {
            for s in structs_in(&f.ty) {
                if s == key {
                    return true;
                }
                if seen.insert(s) {
                    stack.push(s);
                }
            }
        }
    }
    false
}

/// Whether the runtime's `ShareHash` covers a field of type `ty` (else the field is compared
/// but not hashed).
pub(super) fn hashed(ty: &Ty) -> bool {
    match ty {
        Ty::Leaf(k) => HASHED_LEAVES.contains(&k.as_str()),
        Ty::List(t) | Ty::Map(t) | Ty::Option(t) | Ty::Boxed(t) => hashed(t),
        _ => true,
    }
}

/// Estimated deep sizes: the bytes a value holds inline and behind its pointers, counting one
/// element per slice or map and every optional part as present.
#[derive(Default)]
struct DeepSizes {
    structs: BTreeMap<String, usize>,
}

impl DeepSizes {
    fn of_struct(&mut self, key: &str, graph: &TypeGraph) -> usize {
        if let Some(s) = self.structs.get(key) {
            return *s;
        }
        // Guards recursion (recursive types are never shared, so their estimate does not matter).
        self.structs.insert(key.to_owned(), 0);
        let size = graph.get(key).map_or(8, |def| {
            def.fields.iter().map(|f| self.of(&f.ty, graph)).sum()
        });
        self.structs.insert(key.to_owned(), size);
        size
    }

    fn of(&mut self, ty: &Ty, graph: &TypeGraph) -> usize {
        match ty {
            Ty::Bool => 1,
            Ty::I32 => 4,
            Ty::I64 | Ty::F64 | Ty::Str | Ty::Quantity | Ty::Json(_) | Ty::Enum(_) => 8,
            Ty::Number | Ty::Leaf(_) => 16,
            Ty::Struct(k) => self.of_struct(k, graph),
            Ty::List(t) | Ty::Map(t) => 16 + self.of(t, graph),
            Ty::Option(t) | Ty::Boxed(t) => 8 + self.of(t, graph),
        }
    }
}

/// `ShareHash` for every struct and string enum that is not a kind or is a kind another type
/// holds, and `Share` (with the type's pool) for the shared ones.
pub(super) fn share_impls(def: &TypeDef, cx: &super::Ctx<'_>) -> proc_macro2::TokenStream {
    use quote::{format_ident, quote};
    if def.resource && !cx.sharing.nested_kinds.contains(&def.key()) {
        return quote!();
    }
    let rt = &cx.paths.rt;
    let ident = format_ident!("{}", def.name);
    let body = match &def.shape {
        Shape::Struct => {
            let fields = def.fields.iter().filter(|f| hashed(&f.ty)).map(|f| {
                let name = crate::naming::ident(&f.rust);
                let cfg = cx.paths.k8s_cfg(&f.k8s_versions);
                quote!(#cfg #rt::ShareHash::share_hash(&self.#name, state);)
            });
            let unknown = def.unknown_fields.as_deref().map(|u| {
                let name = crate::naming::ident(u);
                quote!(#rt::ShareHash::share_hash(&self.#name, state);)
            });
            quote!(#(#fields)* #unknown)
        }
        Shape::StrEnum { other, .. } => {
            let other = format_ident!("{other}");
            quote! {
                match self {
                    Self::#other(s) => #rt::ShareHash::share_hash(s, state),
                    _ => #rt::Hash::hash(&#rt::mem::discriminant(self), state),
                }
            }
        }
    };
    let state = if body.is_empty() {
        quote!(_state)
    } else {
        quote!(state)
    };
    let share = cx.sharing.is_shared(&def.key()).then(|| {
        quote! {
            impl #rt::Share for #ident {
                fn pool() -> &'static #rt::Pool<Self> {
                    static POOL: #rt::LazyLock<#rt::Pool<#ident>> = #rt::LazyLock::new(#rt::Pool::new);
                    &POOL
                }
            }
        }
    });
    quote! {
        impl #rt::ShareHash for #ident {
            fn share_hash<H: #rt::Hasher>(&self, #state: &mut H) {
                #body
            }
        }
        #share
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::types::{FieldDef, Presence, TypeOrigin};

    fn def(name: &str, resource: bool, fields: Vec<(String, Ty)>) -> (String, TypeDef) {
        let def = TypeDef {
            k8s_versions: Default::default(),
            module: vec!["api".into()],
            name: name.into(),
            doc: String::new(),
            fields: fields
                .into_iter()
                .map(|(json, ty)| FieldDef {
                    k8s_versions: Default::default(),
                    rust: json.to_lowercase(),
                    json,
                    doc: String::new(),
                    presence: Presence::Optional,
                    ty,
                })
                .collect(),
            default: true,
            resource,
            shape: Shape::Struct,
            origin: TypeOrigin::K8sOpenApi,
            unknown_fields: None,
        };
        (def.key(), def)
    }

    fn f(json: &str, ty: Ty) -> (String, Ty) {
        (json.to_owned(), ty)
    }

    /// `n` string fields and then `rest`.
    fn strs(n: usize, rest: Vec<(String, Ty)>) -> Vec<(String, Ty)> {
        (0..n)
            .map(|i| (format!("f{i}"), Ty::Str))
            .chain(rest)
            .collect()
    }

    fn s(name: &str) -> Ty {
        Ty::Struct(format!("api::{name}"))
    }

    fn list(t: Ty) -> Ty {
        Ty::List(Box::new(t))
    }

    fn opt(t: Ty) -> Ty {
        Ty::Option(Box::new(t))
    }

    fn time() -> Ty {
        opt(Ty::Leaf("apimachinery::pkg::apis::meta::v1::Time".into()))
    }

    /// A Pod-like graph: which parts are shared follows from their place, size and shape.
    #[test]
    fn template_parts_are_shared_and_observations_are_not() {
        let graph: TypeGraph = [
            def(
                "Pod",
                true,
                vec![
                    f("metadata", s("ObjectMeta")),
                    f("spec", opt(s("PodSpec"))),
                    f("status", opt(s("PodStatus"))),
                ],
            ),
            def(
                "ObjectMeta",
                false,
                strs(
                    1,
                    vec![
                        f("creationTimestamp", time()),
                        f("ownerReferences", opt(list(s("OwnerReference")))),
                        f("managedFields", opt(list(s("ManagedFieldsEntry")))),
                    ],
                ),
            ),
            def("OwnerReference", false, strs(5, vec![])),
            def(
                "ManagedFieldsEntry",
                false,
                strs(5, vec![f("time", time())]),
            ),
            def(
                "PodSpec",
                false,
                vec![
                    f("nodeName", Ty::Str),
                    f("containers", list(s("Container"))),
                    f("imagePullSecrets", opt(list(s("LocalObjectReference")))),
                    f("schema", opt(s("Props"))),
                ],
            ),
            def(
                "Container",
                false,
                strs(8, vec![f("env", list(s("EnvVar")))]),
            ),
            def("EnvVar", false, strs(6, vec![])),
            def("LocalObjectReference", false, strs(1, vec![])),
            def(
                "Props",
                false,
                strs(6, vec![f("items", opt(Ty::Boxed(Box::new(s("Props")))))]),
            ),
            def(
                "PodStatus",
                false,
                vec![f("containerStatuses", list(s("ContainerStatus")))],
            ),
            def(
                "ContainerStatus",
                false,
                strs(6, vec![f("started", time())]),
            ),
        ]
        .into_iter()
        .collect();
        let sharing = Sharing::new(&graph);
        let shared: Vec<&str> = sharing.shared.iter().map(String::as_str).collect();
        // Container and OwnerReference: template parts. Not the Pod's own parts (PodSpec,
        // ObjectMeta, PodStatus), not below status only (ContainerStatus), not small
        // (LocalObjectReference), not with a timestamp (ManagedFieldsEntry), not recursive
        // (Props), not inside a shared part (EnvVar: shared through its container).
        assert_eq!(shared, ["api::Container", "api::OwnerReference"]);
        assert!(sharing.shared(&s("Container")) && !sharing.shared(&s("EnvVar")));
    }

    #[test]
    fn only_leaves_the_runtime_hashes_are_hashed() {
        assert!(hashed(&opt(list(time()))));
        let meta = Ty::Leaf("apimachinery::pkg::apis::meta::v1::ObjectMeta".into());
        assert!(!hashed(&opt(meta)));
        assert!(hashed(&Ty::Map(Box::new(s("Container")))));
    }
}
