//! How to run the API server: [`Options`].

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// How to run the API server: kube-apiserver's own defaults unless a method here changes them.
///
/// ```
/// use std::time::Duration;
/// use informer_envtest::Options;
///
/// let options = Options::default()
///     // --feature-gates=ConsistentListFromCacheSkipTimeoutFallback=true
///     .feature_gate("ConsistentListFromCacheSkipTimeoutFallback", true)
///     // any other kube-apiserver flag, as --name=value
///     .apiserver_flag("watch-cache-sizes", "configmaps#1000")
///     .compaction_interval(Duration::from_secs(60));
/// assert!(options.apiserver_args().contains(
///     &"--feature-gates=ConsistentListFromCacheSkipTimeoutFallback=true".to_owned()
/// ));
/// assert!(options.apiserver_args().contains(&"--watch-cache-sizes=configmaps#1000".to_owned()));
/// ```
///
/// Each option set is its own server for [`shared`](crate::shared): tests that need a feature
/// gate get a server with it, the others share the plain one.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Options {
    /// `--feature-gates`, by name (see [`feature_gate`](Self::feature_gate)).
    pub feature_gates: BTreeMap<String, bool>,
    /// `--etcd-compaction-interval` (kube-apiserver's own compaction; [`Envtest::compact`]
    /// compacts at once). Five minutes, as kube-apiserver's default.
    ///
    /// [`Envtest::compact`]: crate::Envtest::compact
    pub compaction_interval: Duration,
    /// `--watch-cache`: with it off, a watch from a compacted resourceVersion reaches etcd and
    /// answers 410 Gone, as a relist test needs.
    pub watch_cache: bool,
    /// More kube-apiserver arguments, each as `--name=value` (see
    /// [`apiserver_flag`](Self::apiserver_flag)); they come last, so they win over the defaults.
    pub extra_args: Vec<String>,
    /// Where to look for existing `kube-apiserver` and `etcd` binaries when neither
    /// `TEST_ASSET_*` nor `KUBEBUILDER_ASSETS` names them (see [`Binaries`](crate::Binaries));
    /// controller-runtime's `BinaryAssetsDirectory`.
    pub binary_assets_directory: Option<PathBuf>,
    /// Run kube-controller-manager's garbage collector beside the server (see
    /// [`garbage_collector`](Self::garbage_collector)). Off, as in controller-runtime's envtest.
    pub garbage_collector: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            feature_gates: BTreeMap::new(),
            compaction_interval: Duration::from_secs(300),
            watch_cache: true,
            extra_args: Vec::new(),
            binary_assets_directory: None,
            garbage_collector: false,
        }
    }
}

impl Options {
    /// Sets one feature gate: `--feature-gates=NAME=true|false` (all gates set are joined into
    /// one flag). An unknown gate stops kube-apiserver, and [`Envtest::start`] fails with its
    /// message.
    ///
    /// [`Envtest::start`]: crate::Envtest::start
    pub fn feature_gate(mut self, name: &str, on: bool) -> Self {
        self.feature_gates.insert(name.to_string(), on);
        self
    }

    /// Adds the kube-apiserver flag `--name=value` (`name` with or without its leading `--`),
    /// after the flags informer-envtest sets, so it overrides any of them. Repeat it for a flag
    /// that takes several values.
    pub fn apiserver_flag(mut self, name: &str, value: impl std::fmt::Display) -> Self {
        let name = name.trim_start_matches('-');
        self.extra_args.push(format!("--{name}={value}"));
        self
    }

    /// Turns the watch cache on or off.
    pub fn watch_cache(mut self, on: bool) -> Self {
        self.watch_cache = on;
        self
    }

    /// Sets `--etcd-compaction-interval`.
    pub fn compaction_interval(mut self, every: Duration) -> Self {
        self.compaction_interval = every;
        self
    }

    /// Runs kube-controller-manager's garbage collector against the server once it is ready, so
    /// owner references cascade as in a cluster: background, foreground (`blockOwnerDeletion`)
    /// and orphan deletes. It is the collector's own code
    /// (`k8s.io/kubernetes/pkg/controller/garbagecollector`) in informer-envtest's launcher,
    /// set up as kube-controller-manager sets it up; the launcher is built for it even where
    /// existing `kube-apiserver` and `etcd` binaries are named.
    ///
    /// ```
    /// let options = informer_envtest::Options::default().garbage_collector(true);
    /// assert!(options.garbage_collector);
    /// ```
    pub fn garbage_collector(mut self, on: bool) -> Self {
        self.garbage_collector = on;
        self
    }

    /// Looks for `kube-apiserver` and `etcd` in `dir` (a directory `setup-envtest` filled), unless
    /// the environment names binaries (see [`Binaries`](crate::Binaries)).
    pub fn binary_assets_directory(mut self, dir: impl Into<PathBuf>) -> Self {
        self.binary_assets_directory = Some(dir.into());
        self
    }

    /// The kube-apiserver flags these options make (the ones informer-envtest always sets, for
    /// its certificates, token and etcd, come first and are not included).
    pub fn apiserver_args(&self) -> Vec<String> {
        let mut args = vec![
            format!(
                "--etcd-compaction-interval={}ms",
                self.compaction_interval.as_millis()
            ),
            format!("--watch-cache={}", self.watch_cache),
        ];
        if !self.feature_gates.is_empty() {
            let gates: Vec<String> = self
                .feature_gates
                .iter()
                .map(|(name, on)| format!("{name}={on}"))
                .collect();
            args.push(format!("--feature-gates={}", gates.join(",")));
        }
        args.extend(self.extra_args.iter().cloned());
        args
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_in_order_gates_joined_extra_last() {
        let options = Options::default()
            .feature_gate("WatchList", true)
            .feature_gate("ShardedListAndWatch", false)
            .apiserver_flag("--v", 2)
            .apiserver_flag("watch-cache", false)
            .compaction_interval(Duration::from_secs(1));
        assert_eq!(
            options.apiserver_args(),
            [
                "--etcd-compaction-interval=1000ms",
                "--watch-cache=true",
                "--feature-gates=ShardedListAndWatch=false,WatchList=true",
                "--v=2",
                "--watch-cache=false",
            ]
        );
        assert!(
            !Options::default()
                .apiserver_args()
                .iter()
                .any(|a| a.starts_with("--feature-gates")),
            "no gates by default: kube-apiserver's own"
        );
    }
}
