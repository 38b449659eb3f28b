//! The generator's one model: what the inputs define, lowered and validated, as plain sorted data
//! (no tokens). Both emitters read it: the accessors from [`Model::groups`], the types from
//! [`Model::compact`] and [`Model::type_modules`].

pub(crate) mod merge;
pub(crate) mod types;

use std::collections::{BTreeMap, BTreeSet};

use self::types::TypeGraph;

/// Everything to generate. BTreeMap order makes the output deterministic.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Model {
    /// Groups by API group name (`""` for core), sorted by group, version and kind.
    pub(crate) groups: BTreeMap<String, Group>,
    /// The compact types (P1-P3) of the kinds configured with `compact-kind`, keyed by their path
    /// in k8s-openapi (`api::core::v1::Pod`); empty when none is. When informer-gen reads several
    /// Kubernetes versions (`K8sOpenApi::every_version`), one graph of all of them: each type
    /// and field records the versions it exists in (`merge::merge_versions`).
    pub(crate) compact: TypeGraph,
    /// The cargo feature that gates the compact types and accessors (`Builder::compact_feature`).
    pub(crate) compact_feature: Option<String>,
    /// One module of types per `crd-types` manifest, in configuration order.
    pub(crate) type_modules: Vec<TypeModule>,
    /// The inputs as the header names them (`k8s-openapi 0.29.0 (v1_37), crds/a.yaml`).
    pub(crate) inputs: String,
}

/// One API group.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Group {
    /// The API group name (`""` for core).
    pub(crate) name: String,
    /// The accessor and module name (G1), before keyword sanitising.
    pub(crate) accessor: String,
    /// Versions by name.
    pub(crate) versions: BTreeMap<String, Version>,
}

impl Group {
    /// The Kubernetes versions the group exists in: every version of any of its versions; empty
    /// (ungated) when one of them exists in every version read.
    pub(crate) fn k8s_versions(&self) -> BTreeSet<String> {
        union(self.versions.values().map(Version::k8s_versions))
    }
}

/// The union of gates, where an empty gate (exists everywhere) absorbs every other.
fn union(gates: impl Iterator<Item = BTreeSet<String>>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for gate in gates {
        if gate.is_empty() {
            return BTreeSet::new();
        }
        out.extend(gate);
    }
    out
}

/// One version of a group.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Version {
    /// `v1`, `v1beta1`, …
    pub(crate) name: String,
    /// Kinds by kind name.
    pub(crate) kinds: BTreeMap<String, Kind>,
}

impl Version {
    /// The Kubernetes versions the API version exists in: every version of any of its kinds;
    /// empty (ungated) when one of them exists in every version read.
    pub(crate) fn k8s_versions(&self) -> BTreeSet<String> {
        union(self.kinds.values().map(|k| k.k8s_versions.clone()))
    }
}

/// One resource kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Kind {
    /// The API group (`""` for core).
    pub(crate) group: String,
    /// The API version.
    pub(crate) version: String,
    /// The kind (`Deployment`).
    pub(crate) kind: String,
    /// The API plural (`deployments`).
    pub(crate) plural: String,
    /// Namespaced or cluster-scoped.
    pub(crate) namespaced: bool,
    /// The accessor name (G2), before keyword sanitising.
    pub(crate) accessor: String,
    /// The Rust type of the resource.
    pub(crate) rust_type: TypeRef,
    /// Where the kind came from.
    pub(crate) origin: Origin,
    /// A human description of the input that defined it, for errors and docs.
    pub(crate) input: String,
    /// The compact type, in the generated `compact` module (`compact::api::core::v1::Pod`), when
    /// the configuration asks for one (`compact-kind`); its handle then has a `compact()` accessor.
    pub(crate) compact: Option<TypeRef>,
    /// The Kubernetes versions (`1.36`) the kind exists in, when informer-gen read several
    /// (`K8sOpenApi::every_version`) and some lack it: the kind is generated behind a `cfg` on
    /// these. Empty for a kind of every version read, and for every kind not from k8s-openapi.
    pub(crate) k8s_versions: BTreeSet<String>,
}

/// A Rust type the generated code names; the emitter spells it in the one path style.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TypeRef {
    /// A k8s-openapi type, by path from that crate's root (`api::core::v1::Pod`): `k8s::…`.
    K8s(String),
    /// A type of the user's, by its Rust path (`crate::crd::Foo`), as configured.
    User(String),
    /// A type of the generated tree, by path from its root (`gizmos::v1::Gizmo`,
    /// `compact::api::core::v1::Pod`).
    Generated(String),
}

/// Where a kind came from, which decides who emits its typed handles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Origin {
    /// A k8s-openapi built-in: informer-gen emits `XInformer`/`XLister`.
    Builtin,
    /// A CRD manifest: informer-gen emits `XInformer`/`XLister` for the configured or generated type.
    Crd,
    /// A `#[derive(Informer)]` type: the derive already emitted `XInformer`/`XLister` in `module`.
    Derive {
        /// Rust module path of the handles (`crate::crd`).
        module: String,
        /// The resource type's identifier (`Foo`), prefix of `FooInformer`.
        ident: String,
    },
}

/// The types generated from one `crd-types` manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TypeModule {
    /// The module name beside the group modules (`gizmos`).
    pub(crate) module: String,
    /// The manifest, as configured (relative to the root).
    pub(crate) source: String,
    /// The types, keyed `<version>::<Type>`.
    pub(crate) graph: TypeGraph,
}
