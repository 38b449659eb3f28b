//! The generator's IR: groups, versions and kinds as plain sorted data, no tokens.

use std::collections::BTreeMap;

/// Every kind to generate, sorted by group, version and kind (BTreeMap order makes output deterministic).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Model {
    /// Groups by API group name (`""` for core).
    pub groups: BTreeMap<String, Group>,
}

/// One API group.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Group {
    /// The API group name (`""` for core).
    pub name: String,
    /// The accessor and module name (G1), before keyword sanitising.
    pub accessor: String,
    /// Versions by name.
    pub versions: BTreeMap<String, Version>,
}

/// One version of a group.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Version {
    /// `v1`, `v1beta1`, …
    pub name: String,
    /// Kinds by kind name.
    pub kinds: BTreeMap<String, Kind>,
}

/// One resource kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kind {
    /// The API group (`""` for core).
    pub group: String,
    /// The API version.
    pub version: String,
    /// The kind (`Deployment`).
    pub kind: String,
    /// The API plural (`deployments`).
    pub plural: String,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// The accessor name (G2), before keyword sanitising.
    pub accessor: String,
    /// Absolute Rust path of the resource type (`::k8s_openapi::api::apps::v1::Deployment`).
    pub rust_type: String,
    /// Where the kind came from.
    pub origin: Origin,
    /// A human description of the input that defined it, for errors and docs.
    pub input: String,
    /// The compact type's path from the generated root (`compact::api::core::v1::Pod`) when the
    /// configuration asks for one (`compact-kind`); its handle then has a `compact()` accessor.
    pub compact: Option<String>,
}

/// Where a kind came from, which decides who emits its typed handles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A k8s-openapi built-in: informer-gen emits `XInformer`/`XLister`.
    Builtin,
    /// A CRD manifest: informer-gen emits `XInformer`/`XLister` for the configured Rust type.
    Crd,
    /// A `#[derive(Informer)]` type: the derive already emitted `XInformer`/`XLister` in `module`.
    Derive {
        /// Rust module path of the handles (`crate::crd`).
        module: String,
        /// The resource type's identifier (`Foo`), prefix of `FooInformer`.
        ident: String,
    },
}
