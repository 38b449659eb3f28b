//! Golden fixtures: `fixtures/<case>/input/informer-gen.toml` → `fixtures/<case>/expected/`, plus determinism.
//!
//! Bless changed output with `INFORMER_GEN_BLESS=1 cargo test -p informer-gen --test fixtures`
//! (or `cargo codegen`, which regenerates the same goldens). `tests/compile_goldens.rs` compiles
//! every case's `expected/` tree, so a blessed golden must also meet rustc.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use informer_gen::{Generated, K8sOpenApi, Layout, config};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn k8s() -> K8sOpenApi {
    static K8S: OnceLock<K8sOpenApi> = OnceLock::new();
    K8S.get_or_init(|| {
        K8sOpenApi::locate(Path::new(env!("CARGO_MANIFEST_DIR")), Some("1.37"))
            .expect("k8s-openapi sources are available through cargo metadata")
    })
    .clone()
}

fn generate(case: &str) -> Generated {
    let input = fixtures().join(case).join("input");
    // The goldens are what `cargo codegen` writes, with its name in the header.
    let builder = config::builder_for_dir(&input, Some(k8s()));
    match builder.and_then(|mut b| b.regenerate_command("cargo codegen").generate()) {
        Ok(g) => g,
        Err(e) => panic!("{case}: {e}"),
    }
}

fn check_case(case: &str) {
    let generated = generate(case);
    let expected = fixtures().join(case).join("expected");
    if std::env::var_os("INFORMER_GEN_BLESS").is_some() {
        generated.write_to(&expected).expect("write goldens");
        return;
    }
    for (name, contents) in generated.files() {
        let path = expected.join(name);
        let on_disk = std::fs::read_to_string(&path).unwrap_or_else(|_| {
            panic!("{case}: missing golden {name}; bless with INFORMER_GEN_BLESS=1")
        });
        assert!(
            on_disk == *contents,
            "{case}: {name} differs from the golden; bless with INFORMER_GEN_BLESS=1\n--- generated ---\n{contents}"
        );
    }
    let stale = generated.stale_files(&expected).expect("read goldens");
    assert!(
        stale.is_empty(),
        "{case}: goldens no longer generated: {stale:?}"
    );
}

#[test]
fn g2_keyword_kinds() {
    check_case("keyword_kinds");
    let generated = generate("keyword_kinds");
    let mod_rs = &generated.files()["async.rs"];
    assert!(mod_rs.contains("pub fn r#match(&self)"), "{mod_rs}");
    assert!(mod_rs.contains("pub fn crate_(&self)"), "{mod_rs}");
    // Accessors of CRDs alone name no k8s-openapi type, so they do not import the crate.
    for (name, text) in generated.files() {
        assert!(!text.contains("k8s_openapi"), "{name} imports k8s-openapi");
    }
}

#[test]
fn g1_kind_in_two_groups() {
    check_case("kind_in_two_groups");
    let files = generate("kind_in_two_groups");
    assert!(files.files()["core.rs"].contains("pub struct EventInformer"));
    assert!(files.files()["events.rs"].contains("pub struct EventInformer"));
}

#[test]
fn l4_cluster_vs_namespaced() {
    check_case("cluster_vs_namespaced");
    let generated = generate("cluster_vs_namespaced");
    let core = &generated.files()["core.rs"];
    assert!(core.contains("pub struct PodNamespaceLister"));
    assert!(!core.contains("pub struct NodeNamespaceLister"));
}

#[test]
fn several_versions() {
    check_case("several_versions");
    let generated = generate("several_versions");
    let example = &generated.files()["example.rs"];
    for v in ["v1", "v1alpha1", "v1beta1"] {
        assert!(example.contains(&format!("pub fn {v}(&self)")), "{v}");
    }
    assert!(!example.contains("v2alpha1"), "unserved version skipped");
}

#[test]
fn crd_types_from_schemas() {
    check_case("crd_types");
    let generated = generate("crd_types");
    let types = &generated.files()["types.rs"];
    for item in [
        "pub struct Match {",
        "pub r#type: MatchSpecType,",
        "Other(rt::IStr),",
        "impl rt::HasStatus for Match",
        "pub mod v1beta1 {",
    ] {
        assert!(types.contains(item), "missing `{item}`:\n{types}");
    }
    let names = &generated.files()["names.rs"];
    for item in [
        "pub struct LabelSpecRef {",
        "pub self_: rt::Option<rt::Option<rt::IStr>>,",
        "pub foo_bar_2: rt::Option<i64>,",
        "audit,",
        "Audit,",
    ] {
        assert!(names.contains(item), "missing `{item}`:\n{names}");
    }
    let crates = &generated.files()["crate_types.rs"];
    assert!(
        crates.contains("type Scope = rt::ClusterResourceScope;"),
        "{crates}"
    );
    let r#async = &generated.files()["async.rs"];
    assert!(r#async.contains("super::super::types::v1::Match"), "{async}", async = r#async);
}

/// A `crd-types` kind's compact form holds the compact `ObjectMeta` (decision record 27): the
/// generated root's own when the configuration has compact kinds, informer-k8s's otherwise.
///
/// The first case's compact module is a directory, a file per top-level module of k8s-openapi's
/// (`compact/api.rs`, `compact/apimachinery.rs`), each small enough to be a golden.
#[test]
fn crd_kinds_hold_the_compact_object_meta() {
    check_case("crd_types_beside_compact");
    let local = generate("crd_types_beside_compact");
    let compact: Vec<&str> = local
        .files()
        .keys()
        .filter(|name| name.starts_with("compact"))
        .map(String::as_str)
        .collect();
    assert_eq!(
        compact,
        [
            "compact/api.rs",
            "compact/apimachinery.rs",
            "compact/mod.rs"
        ]
    );
    let meta = "ObjectMeta";
    let types = &local.files()["types.rs"];
    assert!(
        types.contains(&format!(
            "pub metadata: super::super::compact::apimachinery::pkg::apis::meta::v1::{meta},"
        )),
        "{types}"
    );
    assert!(types.contains("pub mod full {"), "{types}");
    let alone = generate("crd_types");
    let alone = &alone.files()["types.rs"];
    assert!(
        alone.contains(&format!(
            "pub metadata: ::informer_k8s::compact::apimachinery::pkg::apis::meta::v1::{meta},"
        )),
        "{alone}"
    );
}

/// G8: writing over an older layout replaces it: the one-file `compact.rs` and a module directory
/// no longer generated go (the directories they leave empty with them), a file without the
/// generated header stays.
#[test]
fn g8_writing_replaces_an_older_compact_layout() {
    let generated = generate("crd_types_beside_compact");
    let dir = std::env::temp_dir().join(format!("informer-gen-layout-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let old_module = dir.join("compact/api/core");
    std::fs::create_dir_all(&old_module).expect("create the old layout");
    let header = "// @generated by informer-gen 0.0.1 from an older run; do not edit\n";
    for old in [dir.join("compact.rs"), old_module.join("v1.rs")] {
        std::fs::write(old, header).expect("write the old layout");
    }
    std::fs::write(dir.join("hand.rs"), "// written by hand\n").expect("write hand.rs");
    generated.write_to(&dir).expect("write");
    assert!(!dir.join("compact.rs").exists(), "the one-file layout goes");
    assert!(!dir.join("compact/api").exists(), "emptied directories go");
    assert!(
        dir.join("hand.rs").exists(),
        "a file without the header stays"
    );
    for name in generated.files().keys() {
        assert!(dir.join(name).is_file(), "{name} written");
    }
    assert_eq!(
        generated.stale_files(&dir).expect("read"),
        Vec::<PathBuf>::new()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn g1_group_accessor_override() {
    check_case("group_accessor_override");
    let generated = generate("group_accessor_override");
    let mod_rs = &generated.files()["mod.rs"];
    assert!(mod_rs.contains("fn example_networking(&self)"));
    assert!(mod_rs.contains("fn networking(&self)"));
}

#[test]
fn g8_output_is_deterministic_and_has_the_header() {
    for case in ["cluster_vs_namespaced", "kind_in_two_groups"] {
        let (a, b) = (generate(case), generate(case));
        assert_eq!(a, b, "{case}");
        for (name, text) in a.files() {
            let first = text.lines().next().unwrap_or_default();
            assert!(
                first.starts_with("// @generated by informer-gen "),
                "{name}: {first}"
            );
            assert!(
                first.ends_with("; do not edit, run cargo codegen"),
                "{name}: {first}"
            );
            assert!(
                !text.contains(env!("CARGO_MANIFEST_DIR")),
                "{name} embeds an absolute path"
            );
        }
    }
}

#[test]
fn single_file_layout_inlines_every_group() {
    let input = fixtures().join("kind_in_two_groups/input");
    let mut b = config::builder_for_dir(&input, Some(k8s())).expect("config");
    let g = b
        .layout(Layout::SingleFile("informers.rs".into()))
        .generate()
        .expect("generate");
    let text = &g.files()["informers.rs"];
    assert_eq!(g.files().len(), 1);
    assert!(text.contains("pub mod core {") && text.contains("pub mod events {"));
    assert!(
        !text.contains("//!"),
        "include!-able output has no inner doc comments"
    );
}
