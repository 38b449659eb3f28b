//! `cargo xtask template`: the README's "Use it in your crate" steps, run as a user would.
//!
//! `templates/operator/` is a user's crate, two crates in one workspace: the operator (a
//! controller owning ConfigMaps, tests on informer-testserver and on kube-apiserver through
//! informer-envtest) and `types/` (its Widget CRD and generated informers); both depend on the
//! informer-rs crates by version, as from crates.io. This copies it to a temporary directory
//! outside the workspace (so this repository's `.cargo/config.toml`, which sets
//! `K8S_OPENAPI_ENABLED_VERSION`, does not apply), points the `informer-*` dependencies at the
//! local crates by path, and runs `cargo build`, then `cargo test`, there with no informer-rs or
//! Cargo variables in the environment; `cargo test` must build none of the libraries
//! `cargo build` built again (decision record 20). It starts from the workspace's `Cargo.lock`
//! (the same dependency versions, already downloaded) and builds into `<target>/user-crates`
//! (shared with `cargo xtask install`, which builds in the same clean environment), kept between
//! runs with its copy, so a second run finds the build fresh.
//!
//! A second copy asks for another Kubernetes version in `informer-gen.toml` than its k8s-openapi
//! feature enables; its build must fail naming both. It also checks that every README block
//! marked `<!-- template: <file> -->` appears verbatim in that file of the template, so the
//! README shows exactly what is tested.

use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail, ensure};

use crate::project_root;

/// The template crate, relative to the workspace root.
pub(crate) const TEMPLATE: &str = "templates/operator";

/// The target directory, under the workspace's, of the crates built outside the workspace and
/// its configuration: the template's copies and `cargo xtask install`.
pub(crate) const USER_CRATES: &str = "user-crates";

/// Checks the README against the template, then builds and tests a copy of it.
pub(crate) fn run() -> anyhow::Result<()> {
    let root = project_root();
    let template = root.join(TEMPLATE);
    readme_matches(&root)?;
    let copy = std::env::temp_dir().join(format!(
        "informer-rs-template-{:016x}",
        BuildHasherDefault::<DefaultHasher>::default().hash_one(&root)
    ));
    // Kept between runs, and only changed files are written, so that Cargo finds the last
    // build fresh.
    sync_dir(&template, &copy)?;
    // Both crates of the template: the operator and its kinds (`types/`).
    for manifest in ["Cargo.toml", "types/Cargo.toml"] {
        let text = std::fs::read_to_string(template.join(manifest))?;
        write_if_changed(&copy.join(manifest), &local_paths(&text, &root)?)?;
    }
    std::fs::copy(root.join("Cargo.lock"), copy.join("Cargo.lock"))?;

    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), PathBuf::from)
        .join(USER_CRATES);
    eprintln!(
        "template: cargo build, cargo test in {} (target {})",
        copy.display(),
        target.display()
    );
    let start = Instant::now();
    let built = artifacts(&copy, &target, &["build"])?;
    let tested = artifacts(&copy, &target, &["test", "--no-run"])?;
    one_build(&built, &tested)?;
    let status = cargo(&copy, &target, &["test"])
        .status()
        .context("running cargo test on the template")?;
    eprintln!("template: took {:.0} s", start.elapsed().as_secs_f64());
    ensure!(status.success(), "the template crate failed: {status}");
    docs(&copy, &target)?;
    mismatch_is_refused(&copy, &target)
}

/// The crates whose documentation the README sends a user to, all built by the README's
/// `cargo doc` in their crate (informer-gen, a build-dependency, is read in a checkout of this
/// repository: README, "Use it in your crate").
const DOCUMENTED: &[&str] = &[
    "informer-runtime",
    "informer-k8s",
    "informer-controller",
    "informer-testserver",
    "informer-envtest",
];

/// The README's doc command for a user's crate, as it runs here: without `--open`.
const DOC_ARGS: &[&str] = &["doc", "--lib", "--examples"];

/// The README's `cargo doc --open --lib --examples` ([`DOC_ARGS`]), in the copy: it must
/// succeed and document every crate of [`DOCUMENTED`]. Cargo reports each documented library as
/// an artifact, fresh or not, so a second run checks the same without rebuilding.
fn docs(copy: &Path, target: &Path) -> anyhow::Result<()> {
    let readme = std::fs::read_to_string(project_root().join("README.md"))?;
    let command = format!("`cargo {} --open {}`", DOC_ARGS[0], DOC_ARGS[1..].join(" "));
    ensure!(
        readme.contains(&command),
        "README.md no longer says {command}: run what it says here (DOC_ARGS)"
    );
    let start = Instant::now();
    let documented = artifacts(copy, target, DOC_ARGS)?;
    let missing: Vec<&str> = DOCUMENTED
        .iter()
        .copied()
        .filter(|name| {
            !documented.iter().any(|(package, files)| {
                package_name(package) == Some(*name)
                    && files.iter().any(|f| f.ends_with("index.html"))
            })
        })
        .collect();
    ensure!(
        missing.is_empty(),
        "`cargo {}` in the template did not document: {}",
        DOC_ARGS.join(" "),
        missing.join(", ")
    );
    eprintln!(
        "template: cargo doc documents {} in {:.0} s",
        DOCUMENTED.join(", "),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The package name in a Cargo package id: `path+file:///…/informer-k8s#0.1.0` (a path
/// dependency named as its directory) or `registry+…#serde@1.0.0`.
fn package_name(id: &str) -> Option<&str> {
    let (url, fragment) = id.rsplit_once('#')?;
    match fragment.split_once('@') {
        Some((name, _)) => Some(name),
        None => url.rsplit('/').next(),
    }
}

/// `cargo ARGS` in the copy, with a user's environment.
fn cargo(copy: &Path, target: &Path, args: &[&str]) -> Command {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(args).current_dir(copy);
    clean_env(&mut cmd, target);
    cmd
}

/// The library files each package's build wrote or found fresh: package id → file names.
type Artifacts = std::collections::BTreeMap<String, std::collections::BTreeSet<String>>;

/// Runs `cargo ARGS --message-format=json-render-diagnostics` in the copy (diagnostics still
/// reach the terminal) and collects the library artifacts of every package but the copy's own.
fn artifacts(copy: &Path, target: &Path, args: &[&str]) -> anyhow::Result<Artifacts> {
    let mut cmd = cargo(copy, target, args);
    cmd.arg("--message-format=json-render-diagnostics")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit());
    let out = cmd
        .output()
        .with_context(|| format!("running cargo {} on the template", args.join(" ")))?;
    ensure!(
        out.status.success(),
        "cargo {} of the template failed: {}",
        args.join(" "),
        out.status
    );
    let mut found = Artifacts::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if msg["reason"] != "compiler-artifact" {
            continue;
        }
        let package = msg["package_id"].as_str().unwrap_or_default();
        let is_lib = msg["target"]["kind"].as_array().is_some_and(|kinds| {
            kinds.iter().any(|k| {
                k.as_str()
                    .is_some_and(|k| k.ends_with("lib") || k == "proc-macro")
            })
        });
        // The template's own two crates are not dependencies.
        if !is_lib || package.contains("widget-operator") || package.contains("widget-types") {
            continue;
        }
        let files = msg["filenames"].as_array().into_iter().flatten();
        found
            .entry(package.to_owned())
            .or_default()
            .extend(files.filter_map(|f| f.as_str().map(str::to_owned)));
    }
    Ok(found)
}

/// No dependency of the user's crate is built again for its tests (decision record 20): every
/// library `cargo test` uses of a package that `cargo build` built is one of the files
/// `cargo build` wrote. A dev-dependency that turns on another feature of a shared crate gives
/// that crate, and everything above it, other file names.
fn one_build(built: &Artifacts, tested: &Artifacts) -> anyhow::Result<()> {
    let rebuilt: Vec<&str> = tested
        .iter()
        .filter(|(package, files)| built.get(*package).is_some_and(|was| !files.is_subset(was)))
        .map(|(package, _)| package.as_str())
        .collect();
    ensure!(
        rebuilt.is_empty(),
        "`cargo test` built these dependencies of the template again, with other features than \
         `cargo build` (decision record 20: no dev-dependency of ours may change a feature of a \
         shared crate):\n  {}",
        rebuilt.join("\n  ")
    );
    let shared = tested.keys().filter(|p| built.contains_key(*p)).count();
    eprintln!(
        "template: cargo test reuses all {shared} libraries cargo build built ({} of its own)",
        tested.len() - shared
    );
    Ok(())
}

/// A second copy whose `informer-gen.toml` asks for another Kubernetes version than the
/// `v1_37` feature: its build script must fail naming both. It shares the target directory, so
/// only the build script runs again.
fn mismatch_is_refused(copy: &Path, target: &Path) -> anyhow::Result<()> {
    let mismatch = copy.with_extension("mismatch");
    sync_dir(copy, &mismatch)?;
    let lock = std::fs::read_to_string(copy.join("Cargo.lock"))?;
    write_if_changed(&mismatch.join("Cargo.lock"), &lock)?;
    let config = std::fs::read_to_string(copy.join("types/informer-gen.toml"))?;
    // A built-in kind too: the template generates only its CRD's accessors (built-in kinds
    // come from informer-k8s), and informer-gen resolves the Kubernetes version only when it
    // generates built-in kinds.
    write_if_changed(
        &mismatch.join("types/informer-gen.toml"),
        &format!("{config}include-kinds = [\"/v1/Secret\"]\nk8s-version = \"1.36\"\n"),
    )?;
    let out = cargo(&mismatch, target, &["build", "--lib"])
        .output()
        .context("running cargo build on the mismatching copy")?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure!(
        !out.status.success()
            && stderr
                .contains("Kubernetes 1.36 was asked for by `k8s-version` in informer-gen.toml")
            && stderr.contains("built for Kubernetes 1.37 (the `v1_37` feature"),
        "a k8s-version that differs from the enabled feature must fail the build naming both:\n{stderr}"
    );
    eprintln!("template: k8s-version = \"1.36\" beside the v1_37 feature is refused");
    Ok(())
}

/// What a user's shell has: none of the variables this workspace or an outer cargo sets; the
/// build goes to `target`.
pub(crate) fn clean_env(cmd: &mut Command, target: &Path) {
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if (name.starts_with("CARGO_") && name != "CARGO_HOME")
            || name == "K8S_OPENAPI_ENABLED_VERSION"
            || name.starts_with("INFORMER_")
        {
            cmd.env_remove(name.as_ref());
        }
    }
    cmd.env("CARGO_TARGET_DIR", target)
        // Like the workspace's `[profile.dev.package."*"] debug = false`: smaller and faster.
        .env("CARGO_PROFILE_DEV_DEBUG", "false");
}

/// `informer-x = "0.1"` → `informer-x = { path = "<root>/informer-x" }`, and
/// `informer-x = { version = "0.1", … }` → `informer-x = { path = "<root>/informer-x", … }`.
pub(crate) fn local_paths(manifest: &str, root: &Path) -> anyhow::Result<String> {
    let mut out = String::new();
    for line in manifest.lines() {
        let rewritten = match line.split_once(" = ") {
            Some((name, value)) if name.starts_with("informer-") => {
                let dir = root.join(name);
                ensure!(
                    dir.join("Cargo.toml").is_file(),
                    "{name}: no crate at {}",
                    dir.display()
                );
                let path = format!("path = {:?}", dir.display().to_string());
                if value.starts_with('"') {
                    format!("{name} = {{ {path} }}")
                } else if let Some(start) = value.find("version = \"") {
                    let end = value[start + 11..]
                        .find('"')
                        .map(|e| start + 11 + e + 1)
                        .context("unterminated version")?;
                    format!("{name} = {}{path}{}", &value[..start], &value[end..])
                } else {
                    bail!("{name}: cannot rewrite `{value}`");
                }
            }
            _ => line.to_owned(),
        };
        out.push_str(&rewritten);
        out.push('\n');
    }
    Ok(out)
}

/// Makes `to` a copy of `from` (build output left out): writes the files whose contents differ
/// and removes what `from` no longer has.
pub(crate) fn sync_dir(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to)?;
    let skip = |name: &std::ffi::OsStr| name == "target" || name == "Cargo.lock";
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        if skip(&entry.file_name()) {
            continue;
        }
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if entry.file_type()?.is_dir() {
            sync_dir(&src, &dst)?;
        } else {
            let text = std::fs::read_to_string(&src)
                .with_context(|| format!("reading {}", src.display()))?;
            write_if_changed(&dst, &text)?;
        }
    }
    for entry in std::fs::read_dir(to)? {
        let entry = entry?;
        if skip(&entry.file_name()) || from.join(entry.file_name()).exists() {
            continue;
        }
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            std::fs::remove_dir_all(&path)?;
        } else {
            std::fs::remove_file(&path)?;
        }
    }
    Ok(())
}

pub(crate) fn write_if_changed(path: &Path, text: &str) -> anyhow::Result<()> {
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// Every fenced block after `<!-- template: <file> -->` in README.md appears verbatim in that
/// file of the template.
fn readme_matches(root: &Path) -> anyhow::Result<()> {
    let readme = std::fs::read_to_string(root.join("README.md"))?;
    let blocks = marked_blocks(&readme)?;
    ensure!(!blocks.is_empty(), "README.md marks no template blocks");
    let mut wrong = Vec::new();
    for (file, block) in &blocks {
        let path = root.join(TEMPLATE).join(file);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("README.md names {}", path.display()))?;
        if !text.contains(block.as_str()) {
            wrong.push(format!("{TEMPLATE}/{file}"));
        }
    }
    ensure!(
        wrong.is_empty(),
        "README.md shows blocks that are not in the template: {}",
        wrong.join(", ")
    );
    Ok(())
}

/// `(file, block)` for every `<!-- template: file -->` followed by a fenced block.
fn marked_blocks(readme: &str) -> anyhow::Result<Vec<(String, String)>> {
    let mut blocks = Vec::new();
    let mut lines = readme.lines();
    while let Some(line) = lines.next() {
        let Some(file) = line
            .trim()
            .strip_prefix("<!-- template: ")
            .and_then(|l| l.strip_suffix(" -->"))
        else {
            continue;
        };
        let fence = lines.next().unwrap_or_default();
        ensure!(
            fence.starts_with("```"),
            "<!-- template: {file} --> is not followed by a fenced block"
        );
        let mut block = String::new();
        for l in lines.by_ref().take_while(|l| !l.starts_with("```")) {
            block.push_str(l);
            block.push('\n');
        }
        blocks.push((file.to_owned(), block));
    }
    Ok(blocks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dependencies_are_pointed_at_the_local_crates() {
        let root = project_root();
        let manifest = "[dependencies]\ninformer-runtime = { version = \"0.1\", features = [\"derive\"] }\n\
                        informer-controller = \"0.1\"\nkube = \"5\"\n";
        let out = local_paths(manifest, &root).unwrap_or_else(|e| panic!("{e:#}"));
        let runtime = root.join("informer-runtime").display().to_string();
        assert!(
            out.contains(&format!(
                "informer-runtime = {{ path = {runtime:?}, features = [\"derive\"] }}"
            )),
            "{out}"
        );
        assert!(out.contains("informer-controller = { path = "), "{out}");
        assert!(out.contains("kube = \"5\""), "{out}");
    }

    #[test]
    fn a_library_built_again_for_the_tests_is_reported() {
        let set = |files: &[&str]| files.iter().map(|f| (*f).to_owned()).collect();
        let built = Artifacts::from([
            ("serde_json 1".to_owned(), set(&["libserde_json-aaa.rlib"])),
            ("kube 5".to_owned(), set(&["libkube-bbb.rlib"])),
        ]);
        let same = Artifacts::from([
            ("serde_json 1".to_owned(), set(&["libserde_json-aaa.rlib"])),
            ("axum 0.8".to_owned(), set(&["libaxum-ccc.rlib"])),
        ]);
        assert!(one_build(&built, &same).is_ok());
        let again = Artifacts::from([
            ("serde_json 1".to_owned(), set(&["libserde_json-ddd.rlib"])),
            ("kube 5".to_owned(), set(&["libkube-bbb.rlib"])),
        ]);
        let err = one_build(&built, &again).expect_err("serde_json built again");
        assert!(err.to_string().contains("serde_json 1"), "{err}");
        assert!(!err.to_string().contains("kube 5"), "{err}");
    }

    #[test]
    fn package_names_are_read_from_ids() {
        assert_eq!(
            package_name("path+file:///w/informer-k8s#0.1.0"),
            Some("informer-k8s")
        );
        assert_eq!(
            package_name("path+file:///w/templates/operator/types#widget-types@0.1.0"),
            Some("widget-types")
        );
        assert_eq!(
            package_name("registry+https://github.com/rust-lang/crates.io-index#serde@1.0.0"),
            Some("serde")
        );
        assert_eq!(package_name("no fragment"), None);
    }

    #[test]
    fn marked_blocks_are_found() {
        let readme = "x\n<!-- template: build.rs -->\n```rust\nfn main() {}\n```\nafter\n";
        let blocks = marked_blocks(readme).unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!(
            blocks,
            vec![("build.rs".to_owned(), "fn main() {}\n".to_owned())]
        );
        assert!(marked_blocks("<!-- template: a -->\ntext\n").is_err());
    }

    /// The README's "Use it in your crate" steps build and pass their test outside the workspace.
    #[test]
    fn the_template_crate_builds_and_passes_outside_the_workspace() {
        if let Err(e) = run() {
            panic!("{e:#}");
        }
    }
}
