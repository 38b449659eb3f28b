//! Where informer-envtest keeps what outlives one test process: the kube-apiserver it builds (one
//! per Kubernetes version, shared by every crate and checkout of this user) and the data of the
//! servers that run. Never this crate's own directory, which is read-only and shared when it
//! comes from crates.io.

use std::path::PathBuf;

/// Overrides the cache directory.
pub(crate) const CACHE_ENV: &str = "INFORMER_ENVTEST_CACHE";

/// The per-user cache directory: `$INFORMER_ENVTEST_CACHE`, else `$XDG_CACHE_HOME/informer-envtest`,
/// else `~/Library/Caches/informer-envtest` on macOS, `%LOCALAPPDATA%\informer-envtest` on
/// Windows and `~/.cache/informer-envtest` elsewhere; the system's temporary directory when there
/// is no home.
pub fn cache_dir() -> PathBuf {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(dir) = var(CACHE_ENV) {
        return dir;
    }
    if let Some(xdg) = var("XDG_CACHE_HOME").filter(|d| d.is_absolute()) {
        return xdg.join("informer-envtest");
    }
    if cfg!(windows)
        && let Some(local) = var("LOCALAPPDATA")
    {
        return local.join("informer-envtest");
    }
    match var("HOME") {
        Some(home) if cfg!(target_os = "macos") => home.join("Library/Caches/informer-envtest"),
        Some(home) => home.join(".cache/informer-envtest"),
        None => std::env::temp_dir().join("informer-envtest-cache"),
    }
}

/// Where running servers keep their data (one directory each, removed when they stop).
pub(crate) fn run_dir() -> PathBuf {
    cache_dir().join("run")
}
