//! Building the Go launcher: kube-apiserver and etcd from the `k8s.io/kubernetes` and etcd
//! modules, in one binary.
//!
//! The sources (`launcher/` in this crate) are compiled into this library, so nothing reads this
//! crate's directory at run time. The first build writes them to
//! `<cache>/<Kubernetes version>/<stamp>/src/` and builds `informer-envtest-launcher` beside them
//! (see [`cache_dir`](crate::cache_dir)); the stamp is a hash of the sources and of `go version`,
//! so a changed source or toolchain builds anew and anything else reuses the binary: every crate
//! and checkout of the user, and CI's earlier `informer-envtest build` step, share one build. Go's
//! own caches make a rebuild after a small change take seconds.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::Error;
use crate::cache::cache_dir;

/// The Kubernetes release the launcher builds (`k8s.io/kubernetes` in `launcher/go.mod`); its
/// `/version` reports it, so `kubectl` picks the matching behaviour.
pub const KUBERNETES_VERSION: &str = "v1.37.2";

/// Overrides the launcher binary (a prebuilt one); nothing is built then.
pub(crate) const LAUNCHER_ENV: &str = "INFORMER_ENVTEST_LAUNCHER";

/// The launcher's Go sources, by file name.
const SOURCES: [(&str, &str); 3] = [
    ("go.mod", include_str!("../launcher/go.mod")),
    ("go.sum", include_str!("../launcher/go.sum")),
    ("main.go", include_str!("../launcher/main.go")),
];

/// The launcher's binary name.
const BINARY: &str = "informer-envtest-launcher";

/// `<cache>/<Kubernetes version>`: the builds of this version.
fn version_dir() -> PathBuf {
    cache_dir().join(KUBERNETES_VERSION)
}

/// Where the launcher is, or will be once built: `$INFORMER_ENVTEST_LAUNCHER`, else the build of
/// these sources with the `go` found now in the cache. `None` without Go.
pub fn launcher_path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(LAUNCHER_ENV) {
        return Some(PathBuf::from(path));
    }
    let go = go_command()?;
    let stamp = stamp(&go).ok()?;
    Some(version_dir().join(stamp).join(BINARY))
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
    let mut hash = 0xcbf2_9ce4_8422_2325_u64;
    for (name, text) in SOURCES {
        hash = fnv1a(hash, name.as_bytes());
        hash = fnv1a(hash, text.as_bytes());
    }
    let version = Command::new(go)
        .arg("version")
        .output()
        .map_err(|e| Error::Unavailable(format!("running `{} version`: {e}", go.display())))?;
    hash = fnv1a(hash, &version.stdout);
    Ok(format!("{hash:016x}"))
}

/// The launcher binary, built first when it is missing or stale. Builds from concurrent test
/// processes wait for each other on a lock file.
pub(crate) fn ensure_built() -> Result<PathBuf, Error> {
    if let Some(path) = std::env::var_os(LAUNCHER_ENV) {
        let path = PathBuf::from(path);
        return if path.exists() {
            Ok(path)
        } else {
            Err(Error::Binaries(format!(
                "{LAUNCHER_ENV}={} does not exist",
                path.display()
            )))
        };
    }
    let Some(go) = go_command() else {
        return Err(Error::Unavailable(
            "Go is not installed (no `go` on the PATH, no /usr/local/go/bin/go), and neither \
             KUBEBUILDER_ASSETS nor TEST_ASSET_KUBE_APISERVER and TEST_ASSET_ETCD name existing \
             binaries"
                .into(),
        ));
    };
    let unavailable =
        |what: String| move |e: std::io::Error| Error::Unavailable(format!("{what}: {e}"));
    let versions = version_dir();
    std::fs::create_dir_all(&versions)
        .map_err(unavailable(format!("creating {}", versions.display())))?;
    let lock_path = versions.join("build.lock");
    let _lock = lock_build(&lock_path, |holder| {
        eprintln!(
            "informer-envtest: waiting for {holder}, which is building kube-apiserver \
             {KUBERNETES_VERSION} into {} (lock {})",
            versions.display(),
            lock_path.display()
        );
    })
    .map_err(unavailable(format!("locking {}", lock_path.display())))?;
    let stamp = stamp(&go)?;
    let dir = versions.join(&stamp);
    let binary = dir.join(BINARY);
    if binary.exists() {
        return Ok(binary);
    }
    let src = dir.join("src");
    std::fs::create_dir_all(&src).map_err(unavailable(format!("creating {}", src.display())))?;
    for (name, text) in SOURCES {
        let path = src.join(name);
        std::fs::write(&path, text).map_err(unavailable(format!("writing {}", path.display())))?;
    }
    build(&go, &src, &binary)?;
    // Older builds of this version are of no more use: other sources or another Go.
    if let Ok(entries) = std::fs::read_dir(&versions) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() && entry.file_name() != stamp.as_str() {
                let _ = std::fs::remove_dir_all(&path);
            }
        }
    }
    Ok(binary)
}

/// Takes the build lock at `path`, and names this process in it for whoever waits next. When
/// another process holds it, `waiting` is told who (the holder's note: its process ID and
/// command) before this one blocks until it is free.
fn lock_build(path: &Path, waiting: impl FnOnce(&str)) -> std::io::Result<std::fs::File> {
    // Not truncated on open: the holder's note must survive until it is read.
    let mut lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(path)?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let note = std::fs::read_to_string(path).unwrap_or_default();
            let holder = if note.trim().is_empty() {
                "another process".to_owned()
            } else {
                note.trim().to_owned()
            };
            waiting(&holder);
            lock.lock()?;
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(e),
    }
    let me = std::env::args().next().unwrap_or_default();
    lock.set_len(0)?;
    write!(lock, "process {} ({me})", std::process::id())?;
    lock.flush()?;
    Ok(lock)
}

/// `go build` of the launcher from `src` into `binary` (through a temporary name, renamed when
/// done, so a binary that exists is complete).
fn build(go: &Path, src: &Path, binary: &Path) -> Result<(), Error> {
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
            "-buildvcs=false",
            "-ldflags",
            &ldflags,
            "-o",
        ])
        .arg(&partial)
        .arg(".")
        .current_dir(src)
        .output()
        .map_err(|e| Error::Unavailable(format!("running `{} build`: {e}", go.display())))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let lines: Vec<&str> = stderr.lines().collect();
        return Err(Error::Unavailable(format!(
            "`go build` of the launcher in {} failed ({}):\n{}",
            src.display(),
            output.status,
            lines[lines.len().saturating_sub(30)..].join("\n")
        )));
    }
    std::fs::rename(&partial, binary)
        .map_err(|e| Error::Unavailable(format!("moving the launcher into place: {e}")))?;
    let _ = writeln!(
        std::io::stderr(),
        "informer-envtest: built {} in {:.0} s",
        binary.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A build waiting on another process's lock says whose it is, then gets it once freed.
    #[test]
    fn a_waiting_build_names_the_holder() {
        let dir = std::env::temp_dir().join(format!("envtest-lock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temp dir");
        let path = dir.join("build.lock");
        let held = lock_build(&path, |_| panic!("free at first")).expect("locked");
        let (told, heard) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn({
            let path = path.clone();
            move || {
                lock_build(&path, |holder| told.send(holder.to_owned()).expect("heard")).map(|_| ())
            }
        });
        let holder = heard
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("the waiter says whom it waits for");
        assert!(
            holder.starts_with(&format!("process {} (", std::process::id())),
            "{holder}"
        );
        drop(held);
        waiter.join().expect("no panic").expect("locked once freed");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
