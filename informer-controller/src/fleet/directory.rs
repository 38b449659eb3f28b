//! [`DirectoryProvider`]: a directory of kubeconfig files, one cluster per file, polled.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use tokio_util::sync::CancellationToken;

use super::kubeconfig::{self, KubeconfigPolicy};
use super::provider::{ClusterName, ClusterSink, ClusterSpec, Provider, ProviderError};

/// The clusters of a directory of kubeconfig files: each `<name>.kubeconfig` file is cluster
/// `<name>`, engaged with the file's current context. A file added engages its cluster, a file
/// changed re-engages it (the old generation is disengaged first), a file removed disengages
/// it.
///
/// The directory is polled (every 2 s by default): a poll notices a file whose size or
/// modification time moved, and reads it once they have stayed the same for one more poll, so a
/// file being written is not read half-way. A file that is gone on two polls in a row is
/// removed, so the swap of a mounted Secret's `..data` link is not a removal. A file that does
/// not parse is reported in the log and leaves the cluster as it was: the last configuration
/// that worked keeps serving.
///
/// Kubeconfigs here are trusted as the operator's own `~/.kube/config` is
/// ([`KubeconfigPolicy::Trusted`]): `exec` plugins and file paths in them are used as they are.
/// Keep the directory writable by the operator's owner only, or refuse them with
/// [`policy`](Self::policy).
#[derive(Debug, Clone)]
pub struct DirectoryProvider {
    dir: PathBuf,
    interval: Duration,
    policy: KubeconfigPolicy,
}

impl DirectoryProvider {
    /// Clusters from the `*.kubeconfig` files of `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        DirectoryProvider {
            dir: dir.into(),
            interval: Duration::from_secs(2),
            policy: KubeconfigPolicy::Trusted,
        }
    }

    /// What the files may ask of this process; [`KubeconfigPolicy::Trusted`] by default.
    #[must_use]
    pub fn policy(mut self, policy: KubeconfigPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// How often the directory is read; 2 s by default.
    #[must_use]
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }
}

/// What a poll saw of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    len: u64,
    modified: Option<SystemTime>,
}

/// What the provider knows of one cluster's file.
#[derive(Debug, Default)]
struct Tracked {
    /// The file as the last poll saw it.
    seen: Option<Seen>,
    /// The file as it was when it was last read.
    read: Option<Seen>,
    /// The hash of the content last engaged.
    engaged: Option<u64>,
    /// Polls in a row that did not find the file.
    missing: u32,
}

impl Provider for DirectoryProvider {
    async fn run(self, sink: ClusterSink, cancel: CancellationToken) -> Result<(), ProviderError> {
        let mut tracked: BTreeMap<ClusterName, Tracked> = BTreeMap::new();
        loop {
            // The file system is read on the blocking pool: a slow mount holds no runtime worker.
            let dir = self.dir.clone();
            let scanned = tokio::task::spawn_blocking(move || scan(&dir))
                .await
                .map_err(std::io::Error::other)
                .and_then(|files| files);
            match scanned {
                Ok(files) => poll(&files, &mut tracked, &sink, self.policy).await,
                Err(e) => tracing::warn!(dir = %self.dir.display(), error = %e,
                    "fleet: reading the kubeconfig directory failed; clusters unchanged"),
            }
            tokio::select! {
                () = cancel.cancelled() => return Ok(()),
                () = tokio::time::sleep(self.interval) => {}
            }
        }
    }
}

/// The directory's `*.kubeconfig` files by cluster name, with their size and modification time
/// (following links).
fn scan(dir: &Path) -> std::io::Result<BTreeMap<ClusterName, (PathBuf, Seen)>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let Some(name) = cluster_name(&path) else {
            continue;
        };
        // A file removed between the listing and this call is seen as missing.
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let seen = Seen {
            len: meta.len(),
            modified: meta.modified().ok(),
        };
        out.insert(name, (path, seen));
    }
    Ok(out)
}

/// The cluster a file names: `<name>.kubeconfig`, not hidden.
fn cluster_name(path: &Path) -> Option<ClusterName> {
    let file = path.file_name()?.to_str()?;
    let name = file.strip_suffix(".kubeconfig")?;
    (!name.is_empty() && !name.starts_with('.')).then(|| name.into())
}

/// Applies one poll's files to what is tracked, reporting changes to `sink`.
async fn poll(
    files: &BTreeMap<ClusterName, (PathBuf, Seen)>,
    tracked: &mut BTreeMap<ClusterName, Tracked>,
    sink: &ClusterSink,
    policy: KubeconfigPolicy,
) {
    for (name, (path, seen)) in files {
        let t = tracked.entry(name.clone()).or_default();
        t.missing = 0;
        let steady = t.seen.as_ref() == Some(seen);
        t.seen = Some(seen.clone());
        if !steady || t.read.as_ref() == Some(seen) {
            continue;
        }
        t.read = Some(seen.clone());
        match load(path, policy).await {
            Ok((spec, hash)) if t.engaged != Some(hash) => {
                t.engaged = Some(hash);
                sink.engage(name.clone(), spec.revision(hash));
            }
            Ok(_) => {}
            Err(reason) => tracing::warn!(cluster = %name, file = %path.display(), %reason,
                "fleet: a kubeconfig file was not used; the cluster stays as it was"),
        }
    }
    tracked.retain(|name, t| {
        if files.contains_key(name) {
            return true;
        }
        t.missing += 1;
        if t.missing < 2 {
            return true;
        }
        if t.engaged.is_some() {
            sink.disengage(name.clone());
        }
        false
    });
}

/// A file's cluster spec and the hash of its content (its revision).
async fn load(path: &Path, policy: KubeconfigPolicy) -> Result<(ClusterSpec, u64), String> {
    let file = path.to_owned();
    let text = tokio::task::spawn_blocking(move || std::fs::read_to_string(file))
        .await
        .map_err(|e| format!("reading it: {e}"))?
        .map_err(|e| format!("reading it: {e}"))?;
    let hash = kubeconfig::revision_of(text.as_bytes());
    let config = kubeconfig::load(&text, policy).await.map_err(|e| {
        tracing::debug!(file = %path.display(), detail = e.detail(), "fleet: kubeconfig not used");
        e.reason()
    })?;
    Ok((ClusterSpec::new(config), hash))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_name_their_clusters() {
        let name = |p: &str| cluster_name(Path::new(p)).map(|n| n.to_string());
        assert_eq!(name("/d/east.kubeconfig").as_deref(), Some("east"));
        assert_eq!(name("/d/east.yaml"), None);
        assert_eq!(name("/d/.kubeconfig"), None);
        assert_eq!(name("/d/..data.kubeconfig"), None);
    }
}
