//! Finding or building the Go launcher (kube-apiserver and etcd in one binary).
//!
//! The sources are `launcher/` beside this crate's `Cargo.toml`; the binary goes to
//! `target/envtest/informer-envtest-launcher` with a stamp of what it was built from (the Go
//! files and `go version`), so a changed source or toolchain rebuilds it and anything else reuses
//! it. Go's own build cache makes a rebuild after a small change take seconds.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::Error;

/// The Kubernetes release the launcher builds (`k8s.io/kubernetes` in `launcher/go.mod`); its
/// `/version` reports it, so `kubectl` picks the matching behaviour.
pub const KUBERNETES_VERSION: &str = "v1.37.2";

/// Overrides the launcher binary (a prebuilt one); nothing is built then.
const LAUNCHER_ENV: &str = "INFORMER_ENVTEST_LAUNCHER";

/// The launcher's Go sources.
fn source_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("launcher")
}

/// Where builds and server data go: `$CARGO_TARGET_DIR/envtest`, else the workspace's
/// `target/envtest`.
pub(crate) fn work_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .or_else(|| option_env!("CARGO_TARGET_DIR").map(PathBuf::from))
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .parent()
                .unwrap_or_else(|| Path::new("."))
                .join("target")
        });
    target.join("envtest")
}

/// Where the launcher binary is (or will be) built.
pub fn launcher_path() -> PathBuf {
    std::env::var_os(LAUNCHER_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| work_dir().join("informer-envtest-launcher"))
}

/// The `go` command: `$GO`, else `go` on the PATH, else Go's default install location.
fn go_command() -> Option<PathBuf> {
    if let Some(go) = std::env::var_os("GO") {
        return Some(PathBuf::from(go));
    }
    let on_path = Command::new("go")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    if on_path {
        return Some(PathBuf::from("go"));
    }
    let default = PathBuf::from("/usr/local/go/bin/go");
    default.exists().then_some(default)
}

/// 64-bit FNV-1a, for the build stamp.
fn fnv1a(hash: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(hash, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// What the launcher is built from: its Go files and the Go toolchain's version.
fn stamp(go: &Path) -> Result<String, Error> {
    let dir = source_dir();
    let mut hash = 0xcbf2_9ce4_8422_2325_u64;
    for name in ["go.mod", "go.sum", "main.go"] {
        let path = dir.join(name);
        let bytes = std::fs::read(&path).map_err(|e| {
            Error::Unavailable(format!(
                "reading the launcher source {}: {e}",
                path.display()
            ))
        })?;
        hash = fnv1a(hash, name.as_bytes());
        hash = fnv1a(hash, &bytes);
    }
    let version = Command::new(go)
        .arg("version")
        .output()
        .map_err(|e| Error::Unavailable(format!("running `{} version`: {e}", go.display())))?;
    hash = fnv1a(hash, &version.stdout);
    Ok(format!("{hash:016x} {KUBERNETES_VERSION}"))
}

/// The launcher binary, built first when it is missing or stale. Builds from concurrent test
/// processes wait for each other on a lock file.
pub(crate) fn ensure_built() -> Result<PathBuf, Error> {
    if let Some(path) = std::env::var_os(LAUNCHER_ENV) {
        let path = PathBuf::from(path);
        return if path.exists() {
            Ok(path)
        } else {
            Err(Error::Unavailable(format!(
                "{LAUNCHER_ENV}={} does not exist",
                path.display()
            )))
        };
    }
    let Some(go) = go_command() else {
        return Err(Error::Unavailable(
            "Go is not installed (no `go` on the PATH, no /usr/local/go/bin/go)".into(),
        ));
    };
    let dir = work_dir();
    std::fs::create_dir_all(&dir)
        .map_err(|e| Error::Unavailable(format!("creating {}: {e}", dir.display())))?;
    let lock_path = dir.join("build.lock");
    let lock = std::fs::File::create(&lock_path)
        .map_err(|e| Error::Unavailable(format!("creating {}: {e}", lock_path.display())))?;
    lock.lock()
        .map_err(|e| Error::Unavailable(format!("locking {}: {e}", lock_path.display())))?;
    let binary = launcher_path();
    let stamp_path = dir.join("informer-envtest-launcher.stamp");
    let want = stamp(&go)?;
    let have = std::fs::read_to_string(&stamp_path).unwrap_or_default();
    if binary.exists() && have.trim() == want {
        return Ok(binary);
    }
    build(&go, &binary)?;
    let mut file = std::fs::File::create(&stamp_path)
        .map_err(|e| Error::Unavailable(format!("writing {}: {e}", stamp_path.display())))?;
    writeln!(file, "{want}")
        .map_err(|e| Error::Unavailable(format!("writing {}: {e}", stamp_path.display())))?;
    Ok(binary)
}

/// `go build` of the launcher into `binary` (through a temporary name, renamed when done).
fn build(go: &Path, binary: &Path) -> Result<(), Error> {
    eprintln!(
        "informer-envtest: building kube-apiserver {KUBERNETES_VERSION} and etcd from source \
         into {} (the first build downloads the Go modules and takes several minutes)",
        binary.display()
    );
    let version_pkg = "k8s.io/component-base/version";
    let minor = KUBERNETES_VERSION.split('.').nth(1).unwrap_or_default();
    let ldflags = format!(
        "-X {version_pkg}.gitVersion={KUBERNETES_VERSION} -X {version_pkg}.gitMajor=1 \
         -X {version_pkg}.gitMinor={minor} -X {version_pkg}.gitTreeState=clean"
    );
    let partial = binary.with_extension("partial");
    let started = std::time::Instant::now();
    let output = Command::new(go)
        .args([
            "build",
            "-trimpath",
            "-mod=readonly",
            "-ldflags",
            &ldflags,
            "-o",
        ])
        .arg(&partial)
        .arg(".")
        .current_dir(source_dir())
        .output()
        .map_err(|e| Error::Unavailable(format!("running `{} build`: {e}", go.display())))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let lines: Vec<&str> = stderr.lines().collect();
        return Err(Error::Unavailable(format!(
            "`go build` of the launcher failed ({}):\n{}",
            output.status,
            lines[lines.len().saturating_sub(30)..].join("\n")
        )));
    }
    std::fs::rename(&partial, binary)
        .map_err(|e| Error::Unavailable(format!("moving the launcher into place: {e}")))?;
    eprintln!(
        "informer-envtest: built {} in {:.0} s",
        binary.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
