//! The Go side of the table: `schema-gen/`, the program that reads one Kubernetes version's
//! protobuf schema from its Go types and generated.proto files, built and run once per version.
//!
//! The repository holds the program (`schema-gen/main.go`) and one Go module per version,
//! `schema-gen/k8s-1.MM/` (its `go.mod` and `go.sum` only, which pin that version's k8s.io/api,
//! apimachinery, apiextensions-apiserver and kube-aggregator). For each version this copies both
//! into `<target dir>/schema-gen/k8s-1.MM/`, writes a `groups.go` beside them that registers
//! every group and version the pinned k8s.io/api has (found by listing its directories; it
//! differs between versions) and names the modules' directories, and runs `go run .` there. Go's
//! caches make a run take a fraction of a second when warm.
//!
//! A version with no module yet (a new line of `xtask/k8s-versions.txt`), or whose module requires
//! other versions than its line pins, gets one: `go get` of each module at the exact version the
//! line names (from the Go module proxy; never a prefix such as `v0.MM`, which resolves to a
//! pre-release when no release exists), then `go mod tidy`; `cargo codegen` writes its `go.mod`
//! and `go.sum` into `schema-gen/`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

use crate::k8s_versions::{K8sVersion, MODULES};

/// Where each module's registered group versions live: every `<pattern>` directory with a
/// `register.go` that defines `AddToScheme` (`*` is one path segment, `v*` one starting with `v`).
const GROUPS: &[(&str, &str)] = &[
    ("k8s.io/api", "*/*"),
    (
        "k8s.io/apiextensions-apiserver",
        "pkg/apis/apiextensions/v*",
    ),
    ("k8s.io/kube-aggregator", "pkg/apis/apiregistration/v*"),
];

/// meta.k8s.io's types, registered by their own function.
const META: &[&str] = &[
    "k8s.io/apimachinery/pkg/apis/meta/v1",
    "k8s.io/apimachinery/pkg/apis/meta/v1beta1",
];

/// `schema-gen/` and where its per-version builds go.
pub(super) struct SchemaGen {
    go: PathBuf,
    /// `informer-proto/schema-gen`.
    source: PathBuf,
    /// `<target dir>/schema-gen`.
    build: PathBuf,
}

impl SchemaGen {
    /// Go as `cargo xtask bench` finds it (`$GO`, `go` on the path, /usr/local/go), or why not.
    pub(super) fn new(source: PathBuf) -> Result<Self, String> {
        let go = crate::bench::go_tool()
            .ok_or("no Go toolchain found (`go`, `$GO`, /usr/local/go/bin/go)")?;
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| crate::project_root().join("target"));
        Ok(SchemaGen {
            go,
            source,
            build: target.join("schema-gen"),
        })
    }

    /// `schema-gen/k8s-1.MM/`, the Go module of Kubernetes `version` (`1.MM`).
    pub(super) fn module_dir(source: &Path, version: &str) -> PathBuf {
        source.join(format!("k8s-{version}"))
    }

    /// schema-gen's output for Kubernetes `version`, from its module in `schema-gen/`.
    pub(super) fn run(&self, version: &str) -> anyhow::Result<String> {
        let module = Self::module_dir(&self.source, version);
        let dir = self.build.join(format!("k8s-{version}"));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        for file in ["go.mod", "go.sum"] {
            let text = std::fs::read_to_string(module.join(file))
                .with_context(|| format!("reading {}", module.join(file).display()))?;
            write_if_changed(&dir.join(file), &text)?;
        }
        self.prepare(&dir)?;
        self.go(&dir, &["run", "."])
    }

    /// Makes the Go module of one Kubernetes version: each module at the version `line` pins,
    /// fetched through the Go module proxy. Returns its `go.mod` and `go.sum`.
    pub(super) fn create(&self, line: &K8sVersion) -> anyhow::Result<(String, String)> {
        let version = &line.version;
        let dir = self.build.join(format!("new-k8s-{version}"));
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        std::fs::create_dir_all(&dir)?;
        let path =
            format!("github.com/informer-rs/informer-rs/informer-proto/schema-gen/k8s-{version}");
        self.go(&dir, &["mod", "init", &path])?;
        // The oldest `go` line the modules allow (`go get` raises it to what they need), so
        // that any Go toolchain new enough for k8s.io/api builds it.
        self.go(&dir, &["mod", "edit", "-go=1.22"])?;
        let mut get = vec!["get".to_owned()];
        get.extend(line.modules.iter().map(|(m, v)| format!("{m}@{v}")));
        let get: Vec<&str> = get.iter().map(String::as_str).collect();
        self.go(&dir, &get)?;
        self.prepare(&dir)?;
        self.go(&dir, &["mod", "tidy"])?;
        let read = |f: &str| {
            std::fs::read_to_string(dir.join(f))
                .with_context(|| format!("reading {}", dir.join(f).display()))
        };
        Ok((read("go.mod")?, read("go.sum")?))
    }

    /// Writes `main.go` and this module's `groups.go` into build directory `dir`, which holds a
    /// `go.mod` and `go.sum`.
    fn prepare(&self, dir: &Path) -> anyhow::Result<()> {
        let main = std::fs::read_to_string(self.source.join("main.go"))
            .with_context(|| format!("reading {}", self.source.join("main.go").display()))?;
        write_if_changed(&dir.join("main.go"), &main)?;
        let mut args = vec!["mod", "download", "-json"];
        args.extend(MODULES);
        let listing = self.go(dir, &args)?;
        let mut dirs = BTreeMap::new();
        for module in serde_json::Deserializer::from_str(&listing).into_iter::<serde_json::Value>()
        {
            let module = module.context("reading `go mod download -json`")?;
            if let Some(error) = module["Error"].as_str() {
                bail!("go mod download {}: {error}", module["Path"]);
            }
            let (Some(path), Some(module_dir)) = (module["Path"].as_str(), module["Dir"].as_str())
            else {
                bail!("`go mod download -json` printed {module}");
            };
            dirs.insert(path.to_owned(), PathBuf::from(module_dir));
        }
        write_if_changed(&dir.join("groups.go"), &groups_go(&dirs)?)
    }

    /// `go <args>` in `dir`; its standard output.
    fn go(&self, dir: &Path, args: &[&str]) -> anyhow::Result<String> {
        let out = Command::new(&self.go)
            .args(args)
            .current_dir(dir)
            .output()
            .with_context(|| format!("running {}", self.go.display()))?;
        if !out.status.success() {
            bail!(
                "`go {}` in {} failed:\n{}",
                args.join(" "),
                dir.display(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        String::from_utf8(out.stdout).context("Go printed no UTF-8")
    }
}

/// The `groups.go` of one build: an import and an `AddToScheme` per registered group version
/// found in the modules at `dirs` (module path -> directory), and the directories themselves.
fn groups_go(dirs: &BTreeMap<String, PathBuf>) -> anyhow::Result<String> {
    let mut packages = Vec::new();
    for (module, pattern) in GROUPS {
        let root = dirs
            .get(*module)
            .with_context(|| format!("`go mod download` listed no {module}"))?;
        let mut found = Vec::new();
        matching_dirs(root, pattern, &mut found)?;
        found.sort();
        for dir in found {
            let register = std::fs::read_to_string(dir.join("register.go")).unwrap_or_default();
            if register.contains("AddToScheme") {
                let rel = dir.strip_prefix(root)?.to_string_lossy().replace('\\', "/");
                packages.push(format!("{module}/{rel}"));
            }
        }
    }
    if packages.is_empty() {
        bail!("no registered group version found in {dirs:?}");
    }
    let mut out = String::from(
        "// Code generated by cargo codegen (xtask/src/proto_schema/go.rs) for this build of\n\
         // schema-gen; not kept in the repository.\n\npackage main\n\nimport (\n\
         \t\"k8s.io/apimachinery/pkg/runtime\"\n",
    );
    let all: Vec<&str> = packages
        .iter()
        .map(String::as_str)
        .chain(META.iter().copied())
        .collect();
    for (i, package) in all.iter().enumerate() {
        writeln!(out, "\tg{i} \"{package}\"")?;
    }
    out.push_str(")\n\n// addToScheme registers every group version of these modules.\nvar addToScheme = []func(*runtime.Scheme) error{\n");
    for (i, package) in all.iter().enumerate() {
        let add = if META.contains(package) {
            "AddMetaToScheme"
        } else {
            "AddToScheme"
        };
        writeln!(out, "\tg{i}.{add},")?;
    }
    out.push_str("}\n\n// moduleDirs are the modules' directories, where their generated.proto files are.\nvar moduleDirs = map[string]string{\n");
    for (module, dir) in dirs {
        writeln!(out, "\t{module:?}: {:?},", dir.to_string_lossy())?;
    }
    out.push_str("}\n");
    Ok(out)
}

/// The directories under `root` matching `pattern` (segments: `*` any, `v*` starting with `v`).
fn matching_dirs(root: &Path, pattern: &str, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let (first, rest) = pattern.split_once('/').unwrap_or((pattern, ""));
    let candidates: Vec<PathBuf> = match first {
        "*" | "v*" => std::fs::read_dir(root)
            .with_context(|| format!("listing {}", root.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .filter(|p| {
                first == "*"
                    || p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with('v'))
            })
            .collect(),
        name => vec![root.join(name)]
            .into_iter()
            .filter(|p| p.is_dir())
            .collect(),
    };
    for dir in candidates {
        if rest.is_empty() {
            out.push(dir);
        } else {
            matching_dirs(&dir, rest, out)?;
        }
    }
    Ok(())
}

/// Writes `text` to `path` unless it holds it already.
fn write_if_changed(path: &Path, text: &str) -> anyhow::Result<()> {
    if std::fs::read_to_string(path).is_ok_and(|t| t == text) {
        return Ok(());
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}
