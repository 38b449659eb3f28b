//! Every golden fixture meets rustc (decision record 14): each case's `expected/` tree is compiled
//! here as a module of this test crate, beside the types its configuration names, so generated code
//! is checked by the compiler (raw identifiers such as `r#async`, paths, docs) and not only as
//! text.
//!
//! A case's configuration names its types under `crate::<case>::…`; this file provides them
//! (kube `CustomResource` types for `crds` manifests, the case's own `types.rs` for derive
//! sources). After blessing goldens (`INFORMER_GEN_BLESS=1 cargo test -p informer-gen --test
//! fixtures`, or `cargo codegen`), run `cargo test -p informer-gen --test compile_goldens`; a new
//! fixture case gets a module here too.

use informer_runtime::SharedInformerFactory;

/// A kube `CustomResource` type `$kind` of `$group/$version` (namespaced with `namespaced`),
/// standing in for the user's type that a `crds` configuration names.
macro_rules! custom_resource {
    ($spec:ident, $group:literal, $version:literal, $kind:literal $(, $scope:ident)?) => {
        /// The spec of the stand-in type.
        #[derive(
            kube::CustomResource,
            Clone,
            Debug,
            Default,
            serde::Serialize,
            serde::Deserialize,
            schemars::JsonSchema,
        )]
        #[kube(group = $group, version = $version, kind = $kind $(, $scope)?)]
        pub struct $spec {}
    };
}

/// `keyword_kinds`: keyword groups, plurals and kinds (`r#async`, `r#match`, `crate_`).
#[path = "fixtures/keyword_kinds"]
pub mod keyword_kinds {
    /// The types the configuration names.
    pub mod crds {
        /// Version `v1`.
        pub mod v1 {
            custom_resource!(MatchSpec, "async.example.com", "v1", "Match", namespaced);
            custom_resource!(CrateSpec, "async.example.com", "v1", "Crate");
            custom_resource!(TypeSpec, "type.example.com", "v1", "Type", namespaced);
        }
    }

    /// The golden output.
    #[rustfmt::skip]
    #[path = "expected/mod.rs"]
    pub mod generated;
}

/// `kind_in_two_groups`: `Event` in two built-in groups, `Widget` in two CRD groups.
#[path = "fixtures/kind_in_two_groups"]
pub mod kind_in_two_groups {
    /// The types the configuration names.
    pub mod widgets {
        /// Version `v1`: both groups' `Widget` are this one type.
        pub mod v1 {
            custom_resource!(WidgetSpec, "alpha.example.com", "v1", "Widget", namespaced);
        }
    }

    /// The golden output.
    #[rustfmt::skip]
    #[path = "expected/mod.rs"]
    pub mod generated;
}

/// `cluster_vs_namespaced`: built-in and derived kinds of both scopes.
#[path = "fixtures/cluster_vs_namespaced"]
pub mod cluster_vs_namespaced {
    /// The derive source the configuration scans.
    #[path = "input/types.rs"]
    pub mod types;

    /// The golden output.
    #[rustfmt::skip]
    #[path = "expected/mod.rs"]
    pub mod generated;
}

/// `several_versions`: one CRD served in three versions.
#[path = "fixtures/several_versions"]
pub mod several_versions {
    /// The types the configuration names.
    pub mod gadgets {
        /// Version `v1alpha1`.
        pub mod v1alpha1 {
            custom_resource!(GadgetSpec, "example.com", "v1alpha1", "Gadget", namespaced);
        }
        /// Version `v1beta1`.
        pub mod v1beta1 {
            custom_resource!(GadgetSpec, "example.com", "v1beta1", "Gadget", namespaced);
        }
        /// Version `v1`.
        pub mod v1 {
            custom_resource!(GadgetSpec, "example.com", "v1", "Gadget", namespaced);
        }
    }

    /// The golden output.
    #[rustfmt::skip]
    #[path = "expected/mod.rs"]
    pub mod generated;
}

/// `group_accessor_override`: two groups sharing a first DNS label, an irregular plural.
#[path = "fixtures/group_accessor_override"]
pub mod group_accessor_override {
    /// The types the configuration names.
    pub mod crds {
        /// Version `v1`.
        pub mod v1 {
            custom_resource!(FootSpec, "networking.example.com", "v1", "Foot");
        }
    }

    /// The golden output.
    #[rustfmt::skip]
    #[path = "expected/mod.rs"]
    pub mod generated;
}

/// `crd_types`: types generated from CRD schemas, and accessors typed on them.
#[path = "fixtures/crd_types"]
pub mod crd_types {
    /// The golden output.
    #[rustfmt::skip]
    #[path = "expected/mod.rs"]
    pub mod generated;
}

/// `crd_types_beside_compact`: a CRD kind whose compact form holds the root's compact `ObjectMeta`.
#[path = "fixtures/crd_types_beside_compact"]
pub mod crd_types_beside_compact {
    /// The golden output.
    #[rustfmt::skip]
    #[path = "expected/mod.rs"]
    pub mod generated;
}

/// The accessors of every case resolve to the informers of the types they name; nothing runs.
#[test]
fn goldens_compile_and_name_their_types() {
    /// Both arguments have one type.
    fn same<T>(_: &T, _: &T) {}
    fn check(f: &SharedInformerFactory) {
        {
            use keyword_kinds::generated::InformerFactoryExt as _;
            same(
                &f.informer_for::<keyword_kinds::crds::v1::Match>(),
                &f.r#async().v1().r#match().informer(),
            );
            same(
                &f.informer_for::<keyword_kinds::crds::v1::Crate>(),
                &f.r#async().v1().crate_().informer(),
            );
        }
        {
            use cluster_vs_namespaced::generated::InformerFactoryExt as _;
            same(
                &f.informer_for::<cluster_vs_namespaced::types::Foo>(),
                &f.example().v1().foos().informer(),
            );
            same(
                &f.informer_for::<k8s_openapi::api::core::v1::Pod>(),
                &f.core().v1().pods().informer(),
            );
        }
        {
            use several_versions::generated::InformerFactoryExt as _;
            let gadgets = f.example().v1beta1().gadgets();
            same(
                &f.informer_for::<several_versions::gadgets::v1beta1::Gadget>(),
                &gadgets.informer(),
            );
        }
        {
            use crd_types::generated::InformerFactoryExt as _;
            let matches = f.r#async().v1().matches();
            same(
                &f.informer_for::<crd_types::generated::types::v1::Match>(),
                &matches.informer(),
            );
            same(
                &f.informer_for::<crd_types::generated::types::v1::full::Match>(),
                &matches.full().informer(),
            );
        }
        {
            use crd_types_beside_compact::generated::InformerFactoryExt as _;
            let notes = f.example().v1().notes();
            same(
                &f.informer_for::<crd_types_beside_compact::generated::types::v1::Note>(),
                &notes.informer(),
            );
            same(
                &f.informer_for::<crd_types_beside_compact::generated::types::v1::full::Note>(),
                &notes.full().informer(),
            );
        }
    }
    let _ = check;
}

/// Every case under `tests/fixtures/` is one of this file's modules, so no golden escapes rustc.
#[test]
fn every_fixture_case_is_compiled_here() {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let this = include_str!("compile_goldens.rs");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&fixtures).expect("tests/fixtures") {
        let case = entry.expect("fixture entry").file_name();
        let case = case.to_string_lossy();
        if !this.contains(&format!("#[path = \"fixtures/{case}\"]")) {
            missing.push(case.into_owned());
        }
    }
    assert!(
        missing.is_empty(),
        "fixture cases without a module in tests/compile_goldens.rs: {missing:?}"
    );
}
