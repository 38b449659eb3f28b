//! `K8sOpenApi::every_version`: the kinds of several Kubernetes versions merged into one output,
//! a kind that some version lacks behind a `cfg` on the versions it exists in (informer-k8s).

use std::path::{Path, PathBuf};

use informer_gen::{Builder, Error, K8sOpenApi, Layout};

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "informer-gen-every-version-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// A listable kind `demo.example.com/<version>` in `src/v1_<minor>/api/demo/<version>/`.
fn kind(src: &Path, minor: u32, version: &str, kind: &str, plural: &str, namespaced: bool) {
    let dir = src.join(format!("v1_{minor}/api/demo/{version}"));
    std::fs::create_dir_all(&dir).expect("fake tree");
    let scope = if namespaced {
        "NamespaceResourceScope"
    } else {
        "ClusterResourceScope"
    };
    let text = format!(
        r#"pub struct {kind} {{}}
impl crate::Resource for {kind} {{
    const API_VERSION: &'static str = "demo.example.com/{version}";
    const GROUP: &'static str = "demo.example.com";
    const KIND: &'static str = "{kind}";
    const VERSION: &'static str = "{version}";
    const URL_PATH_SEGMENT: &'static str = "{plural}";
    type Scope = crate::{scope};
}}
impl crate::ListableResource for {kind} {{
    const LIST_KIND: &'static str = "{kind}List";
}}
"#
    );
    std::fs::write(dir.join(format!("{plural}.rs")), text).expect("write kind");
}

/// `text` without whitespace or trailing commas, so that prettyplease's line breaks do not matter.
fn squeeze(text: &str) -> String {
    let bare: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    bare.replace(",)", ")")
}

fn generate(k8s: K8sOpenApi) -> Result<String, informer_gen::Errors> {
    let generated = Builder::new()
        .k8s_openapi(k8s)
        .include_group("demo.example.com")
        .layout(Layout::SingleFile("all.rs".into()))
        .generate()?;
    Ok(generated.files()["all.rs"].clone())
}

#[test]
fn a_kind_some_version_lacks_is_gated_on_the_versions_it_exists_in() {
    let src = tmp("gated").join("src");
    for minor in [35, 36, 37] {
        kind(&src, minor, "v1", "Widget", "widgets", true);
    }
    for minor in [36, 37] {
        kind(&src, minor, "v1", "Gadget", "gadgets", false);
    }
    kind(&src, 37, "v1beta1", "Gizmo", "gizmos", true);
    let k8s = K8sOpenApi::at(&src, "0.0.0", "1.37")
        .every_version()
        .expect("three versions");
    assert_eq!(k8s.gated_versions, ["1.35", "1.36", "1.37"]);
    assert_eq!(k8s.groups().expect("groups"), ["demo.example.com"]);
    let out = generate(k8s).expect("generates");
    let squeezed = squeeze(&out);
    let has = |expected: &str| squeezed.contains(&squeeze(expected));
    assert!(out.contains("(v1_35 to v1_37)"), "{out}");
    // Widget exists everywhere: no cfg. Gadget from 1.36 (a run of versions up to the newest:
    // `k8s_since`), Gizmo (and its whole version) in 1.37 only.
    assert!(has(r#"#[cfg(k8s_since = "1.36")] pub fn gadgets"#), "{out}");
    assert!(
        has(r#"#[cfg(k8s_openapi_enabled_version = "1.37")] pub fn v1beta1"#),
        "{out}"
    );
    assert!(
        has(r#"#[cfg(k8s_openapi_enabled_version = "1.37")] pub mod v1beta1"#),
        "{out}"
    );
    assert!(
        has(
            r#"#[cfg(k8s_openapi_enabled_version = "1.37")] ("demo.example.com", "v1beta1", "gizmos")"#
        ),
        "{out}"
    );
    assert!(!has(r#")] pub fn widgets"#), "{out}");
    // Inside the gated v1beta1 module, Gizmo's items need no cfg of their own.
    assert_eq!(
        out.matches("k8s_openapi_enabled_version = \"1.35\"")
            .count(),
        0
    );
}

#[test]
fn a_kind_whose_resource_differs_between_versions_is_an_error() {
    let src = tmp("differs").join("src");
    kind(&src, 36, "v1", "Widget", "widgets", true);
    kind(&src, 37, "v1", "Widget", "widgets", false);
    let k8s = K8sOpenApi::at(&src, "0.0.0", "1.37")
        .every_version()
        .expect("two versions");
    let errs = generate(k8s).expect_err("scope changed");
    assert!(
        errs.0
            .iter()
            .any(|e| matches!(e, Error::K8sOpenApi { reason }
            if reason.contains("demo.example.com/v1/Widget") && reason.contains("differs"))),
        "{errs}"
    );
}

/// Compact types follow a kind's fields, which differ between Kubernetes versions: with every
/// version read, one module holds the compact types of all of them, a type or field that some
/// versions lack behind a `cfg` on the versions it exists in (decision record 19), and
/// `compact_feature` gates them and the accessors on a cargo feature (the informer-k8s `compact`
/// feature).
#[test]
fn compact_kinds_are_generated_once_with_version_gates_with_every_version() {
    let k8s = K8sOpenApi::locate(Path::new(env!("CARGO_MANIFEST_DIR")), Some("1.37"))
        .expect("k8s-openapi sources")
        .every_version()
        .expect("every version");
    assert_eq!(k8s.gated_versions, ["1.33", "1.34", "1.35", "1.36", "1.37"]);
    let generated = Builder::new()
        .k8s_openapi(k8s)
        .include_kind("", "v1", "Pod")
        .compact_kind("", "v1", "Pod")
        .compact_feature("compact")
        .layout(Layout::SingleFile("all.rs".into()))
        .generate()
        .unwrap_or_else(|e| panic!("{e}"));
    let text = squeeze(&generated.files()["all.rs"]);
    // The module's doc comes between its `cfg` and `pub mod compact {`.
    let module = text.find("pubmodcompact{").expect("a compact module");
    let gate = squeeze("#[cfg(feature = \"compact\")]");
    let at = text[..module]
        .rfind(&gate)
        .expect("the compact module is behind the feature");
    assert!(
        !text[at..module].contains(['}', ';']),
        "the feature gate belongs to the compact module"
    );
    assert!(
        text.contains(&squeeze(
            "#[cfg(feature = \"compact\")] #[inline] pub fn compact("
        )),
        "the accessor is behind the feature"
    );
    // One Pod and one PodSpec for every version, no module per version.
    assert_eq!(text.matches("pubstructPod{").count(), 1);
    assert_eq!(text.matches("pubstructPodSpec{").count(), 1);
    assert!(!text.contains("modv1_37"), "no module per version");
    // In k8s-openapi 0.29: `hostnameOverride` from 1.34 on, `workloadRef` (and its
    // WorkloadReference) in 1.35 only, `containers` everywhere. The field's gate sits on its
    // declaration and on both conversions.
    let field = |cfg: &str, decl: &str| {
        let (cfg, decl) = (squeeze(cfg), squeeze(decl));
        text.match_indices(&cfg)
            .any(|(i, _)| text[i + cfg.len()..].starts_with(&decl))
    };
    assert!(
        field(
            r#"#[cfg(k8s_since = "1.34")]"#,
            r#"#[serde(rename = "hostnameOverride""#
        ),
        "hostnameOverride is gated on 1.34 and later"
    );
    assert!(field(
        r#"#[cfg(k8s_since = "1.34")]"#,
        "hostname_override: rt::FromFull::from_full(&full.hostname_override)"
    ));
    assert!(field(
        r#"#[cfg(k8s_since = "1.34")]"#,
        r#"("hostname_override", "hostnameOverride")"#
    ));
    assert!(field(
        r#"#[cfg(k8s_openapi_enabled_version = "1.35")]"#,
        "/// Compact form of `k8s_openapi::api::core::v1::WorkloadReference`"
    ));
    assert!(!field("#[cfg(", r#"#[serde(rename = "containers""#));
}

#[test]
fn every_version_needs_a_version_module() {
    let src = tmp("none").join("src");
    std::fs::create_dir_all(&src).expect("empty tree");
    let err = K8sOpenApi::at(&src, "0.0.0", "1.37")
        .every_version()
        .expect_err("no v1_* module");
    assert!(
        err.to_string().contains("no Kubernetes version module"),
        "{err}"
    );
}
