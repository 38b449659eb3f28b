//! What a user's crate drives: `informer-gen.toml` read by `Builder::from_dir` and by the CLI,
//! the Kubernetes version taken from k8s-openapi's enabled feature and checked against an
//! explicit one, `write`/`check` into an output directory, and the header naming a command that
//! exists for the user. (A whole crate outside the workspace, with build.rs, is
//! `templates/operator/`, tested by `cargo xtask template`.)

use std::path::{Path, PathBuf};
use std::process::Command;

use informer_gen::{Builder, Error};

/// A fresh directory holding `informer-gen.toml` with `config` and a CRD manifest.
fn crate_dir(name: &str, config: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "informer-gen-user-crate-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let widgets = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/kind_in_two_groups/input/widgets.yaml");
    std::fs::copy(widgets, dir.join("widgets.yaml")).expect("copy the CRD");
    std::fs::write(dir.join("informer-gen.toml"), config).expect("write the config");
    dir
}

/// The directory the tests' `cargo metadata` runs in: this package, whose k8s-openapi has `v1_37`.
fn manifest_dir() -> &'static str {
    env!("CARGO_MANIFEST_DIR")
}

#[test]
fn the_toml_chooses_the_output_directory_and_check_sees_edits() {
    let dir = crate_dir(
        "out-dir",
        "out-dir = \"src/generated\"\ncrds = [{ path = \"widgets.yaml\", module = \"crate::w\" }]\n",
    );
    let builder = Builder::from_dir(&dir).expect("config");
    let written = builder.write().expect("write");
    let out = dir.join("src/generated");
    assert!(written.contains(&out.join("mod.rs")), "{written:?}");
    assert!(builder.check().expect("check").is_empty());
    let mod_rs = std::fs::read_to_string(out.join("mod.rs")).expect("mod.rs");
    // Outside a build script and without a command, the header names the generator itself.
    assert!(
        mod_rs
            .lines()
            .next()
            .is_some_and(|l| l.ends_with("do not edit, regenerate it with informer-gen")),
        "{mod_rs}"
    );
    std::fs::write(out.join("mod.rs"), "// edited\n").expect("edit");
    assert_eq!(builder.check().expect("check"), vec![out.join("mod.rs")]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_an_output_directory_outside_a_build_script_write_says_what_to_set() {
    let dir = crate_dir(
        "no-out",
        "crds = [{ path = \"widgets.yaml\", module = \"crate::w\" }]\n",
    );
    let err = Builder::from_dir(&dir)
        .expect("config")
        .write()
        .unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(
            err.0[0],
            Error::Environment {
                variable: "OUT_DIR",
                ..
            }
        ),
        "{text}"
    );
    assert!(text.contains("out-dir"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_version_comes_from_the_enabled_feature_and_an_explicit_one_must_match() {
    // No version anywhere in the configuration: the `v1_37` feature of this package's
    // k8s-openapi dev-dependency decides, found through `cargo metadata`.
    let mut b = Builder::new();
    b.root(manifest_dir()).include_kind("", "v1", "ConfigMap");
    let generated = b.generate().expect("generate");
    assert!(
        generated.files()["mod.rs"].contains("from k8s-openapi 0.29.0 (v1_37)"),
        "{}",
        generated.files()["mod.rs"]
    );
    // The same version, explicitly: fine.
    b.k8s_version("1.37");
    b.generate()
        .expect("generate with the same explicit version");
    // Another one: an error naming both and where each came from.
    b.k8s_version("1.36");
    let text = b.generate().unwrap_err().to_string();
    assert!(
        text.contains("1.36") && text.contains("Builder::k8s_version"),
        "{text}"
    );
    assert!(text.contains("1.37") && text.contains("v1_37"), "{text}");
}

#[test]
fn k8s_version_in_the_toml_is_checked_and_names_its_line() {
    let dir = crate_dir(
        "version",
        "# pinned\nk8s-version = \"1.36\"\ninclude-kinds = [\"/v1/ConfigMap\"]\n",
    );
    let mut b = Builder::from_dir(&dir).expect("config");
    b.root(manifest_dir()); // where `cargo metadata` finds k8s-openapi
    let text = b.generate().unwrap_err().to_string();
    assert!(text.contains("informer-gen.toml:2"), "{text}");
    assert!(text.contains("1.36") && text.contains("1.37"), "{text}");

    let bad = crate_dir("bad-version", "k8s-version = \"v1_37\"\n");
    let text = Builder::from_dir(&bad).unwrap_err().to_string();
    assert!(text.contains("informer-gen.toml:1:15"), "{text}");
    assert!(text.contains("like `1.37`"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&bad);
}

#[test]
fn the_cli_reads_the_same_toml_and_names_itself_in_the_header() {
    let dir = crate_dir(
        "cli",
        "out-dir = \"gen\"\ncrds = [{ path = \"widgets.yaml\", module = \"crate::w\" }]\n",
    );
    let config = dir.join("informer-gen.toml");
    let cli = || {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_informer-gen"));
        cmd.arg("--config").arg(&config);
        cmd
    };
    let out = cli().output().expect("run informer-gen");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mod_rs = std::fs::read_to_string(dir.join("gen/mod.rs")).expect("gen/mod.rs");
    let header = mod_rs.lines().next().unwrap_or_default();
    assert!(
        header.ends_with(&format!(
            "do not edit, run informer-gen --config {}",
            config.display()
        )),
        "{header}"
    );
    // `--check` compares against what that command wrote.
    let check = cli()
        .arg("--check")
        .output()
        .expect("run informer-gen --check");
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    std::fs::remove_file(dir.join("gen/mod.rs")).expect("remove");
    let check = cli()
        .arg("--check")
        .output()
        .expect("run informer-gen --check");
    assert!(!check.status.success());
    assert!(String::from_utf8_lossy(&check.stderr).contains("stale"));
    let _ = std::fs::remove_dir_all(&dir);
}
