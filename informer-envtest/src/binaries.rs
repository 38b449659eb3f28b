//! Which kube-apiserver and etcd to run: existing binaries where the environment or the
//! [`Options`] name them, as controller-runtime's envtest finds them, else informer-envtest's own
//! launcher, built from source.

use std::path::{Path, PathBuf};

use crate::{Error, Options};

/// controller-runtime's directory of test binaries (`setup-envtest use -p path` prints one).
pub const KUBEBUILDER_ASSETS: &str = "KUBEBUILDER_ASSETS";

/// Where the servers come from.
///
/// Looked up as controller-runtime's envtest does, for each of `kube-apiserver` and `etcd`,
/// first match wins:
///
/// 1. `TEST_ASSET_KUBE_APISERVER`, `TEST_ASSET_ETCD`: that binary;
/// 2. `KUBEBUILDER_ASSETS`: the binary of that name in this directory (what `setup-envtest`
///    installs: `KUBEBUILDER_ASSETS="$(setup-envtest use 1.37.x -p path)"`);
/// 3. [`Options::binary_assets_directory`]: the binary of that name there.
///
/// When none of them is set, informer-envtest builds its own [launcher](Binaries::Launcher)
/// from source with Go (kube-apiserver [`KUBERNETES_VERSION`](crate::KUBERNETES_VERSION) and
/// etcd in one binary, cached per user: see [`cache_dir`](crate::cache_dir));
/// `INFORMER_ENVTEST_LAUNCHER` names a launcher built before. A binary that is named but does not
/// exist is an [`Error::Binaries`], never a skip. Whichever runs, the servers get the same flags,
/// certificates and token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Binaries {
    /// informer-envtest's launcher: kube-apiserver and etcd built from source, run as one
    /// process.
    Launcher(PathBuf),
    /// Existing `kube-apiserver` and `etcd` binaries, run as two processes.
    External {
        /// The kube-apiserver binary.
        kube_apiserver: PathBuf,
        /// The etcd binary.
        etcd: PathBuf,
    },
}

impl Binaries {
    /// The binaries `options` and the environment name (see [`Binaries`]), or
    /// `None` when none are named and the launcher is to be used.
    pub fn named(options: &Options) -> Result<Option<Binaries>, Error> {
        Binaries::resolve(options, |name| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
    }

    /// [`named`](Self::named) with the environment read through `env`.
    fn resolve(
        options: &Options,
        env: impl Fn(&str) -> Option<PathBuf>,
    ) -> Result<Option<Binaries>, Error> {
        let (assets, by) = match env(KUBEBUILDER_ASSETS) {
            Some(dir) => (Some(dir), KUBEBUILDER_ASSETS),
            None => (
                options.binary_assets_directory.clone(),
                "Options::binary_assets_directory",
            ),
        };
        let find = |name: &str, var: &'static str| -> Option<(PathBuf, &'static str)> {
            match env(var) {
                Some(path) => Some((path, var)),
                None => Some((assets.as_ref()?.join(name), by)),
            }
        };
        let apiserver = find("kube-apiserver", "TEST_ASSET_KUBE_APISERVER");
        let etcd = find("etcd", "TEST_ASSET_ETCD");
        match (apiserver, etcd) {
            (None, None) => Ok(None),
            (Some((kube_apiserver, a)), Some((etcd, e))) => {
                executable(&kube_apiserver, a)?;
                executable(&etcd, e)?;
                Ok(Some(Binaries::External {
                    kube_apiserver,
                    etcd,
                }))
            }
            (Some((path, by)), None) | (None, Some((path, by))) => Err(Error::Binaries(format!(
                "{by} names {} but nothing names its partner: set KUBEBUILDER_ASSETS to a \
                 directory with both kube-apiserver and etcd, or both TEST_ASSET_KUBE_APISERVER \
                 and TEST_ASSET_ETCD",
                path.display()
            ))),
        }
    }

    /// The binaries to run for `options`: the named ones, else the launcher (built first when
    /// needed; blocks, and the first build takes minutes).
    pub fn find(options: &Options) -> Result<Binaries, Error> {
        match Binaries::named(options)? {
            Some(named) => Ok(named),
            None => crate::launcher::ensure_built().map(Binaries::Launcher),
        }
    }
}

fn executable(path: &Path, by: &str) -> Result<(), Error> {
    if path.is_file() {
        Ok(())
    } else {
        Err(Error::Binaries(format!(
            "{} (from {by}) is not a file",
            path.display()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir_with(names: &[&str]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "informer-envtest-binaries-{}-{}",
            std::process::id(),
            names.join("-")
        ));
        std::fs::create_dir_all(&dir).expect("dir");
        for name in names {
            std::fs::write(dir.join(name), "").expect("file");
        }
        dir
    }

    #[test]
    fn found_as_controller_runtime_finds_them() {
        let assets = dir_with(&["kube-apiserver", "etcd"]);
        let other = dir_with(&["kube-apiserver", "etcd", "other"]);
        let none = |_: &str| None;
        // Nothing named: the launcher.
        assert_eq!(
            Binaries::resolve(&Options::default(), none).ok(),
            Some(None)
        );
        // The options' directory.
        let options = Options::default().binary_assets_directory(&other);
        let external = |a: &Path, e: &Path| {
            Some(Some(Binaries::External {
                kube_apiserver: a.join("kube-apiserver"),
                etcd: e.join("etcd"),
            }))
        };
        assert_eq!(
            Binaries::resolve(&options, none).ok(),
            external(&other, &other)
        );
        // KUBEBUILDER_ASSETS wins over the options.
        let kubebuilder = |name: &str| (name == KUBEBUILDER_ASSETS).then(|| assets.clone());
        assert_eq!(
            Binaries::resolve(&options, kubebuilder).ok(),
            external(&assets, &assets)
        );
        // TEST_ASSET_* wins over both, binary by binary.
        let one = |name: &str| match name {
            KUBEBUILDER_ASSETS => Some(assets.clone()),
            "TEST_ASSET_ETCD" => Some(other.join("etcd")),
            _ => None,
        };
        assert_eq!(
            Binaries::resolve(&options, one).ok(),
            external(&assets, &other)
        );
    }

    #[test]
    fn named_but_missing_is_an_error_not_a_skip() {
        let half = dir_with(&["kube-apiserver"]);
        let options = Options::default().binary_assets_directory(&half);
        let err = Binaries::resolve(&options, |_| None).expect_err("no etcd");
        assert!(matches!(err, Error::Binaries(_)), "{err}");
        assert!(
            err.to_string()
                .contains("etcd (from Options::binary_assets_directory) is not a file"),
            "{err}"
        );
        let alone = |name: &str| (name == "TEST_ASSET_ETCD").then(|| half.join("kube-apiserver"));
        let err = Binaries::resolve(&Options::default(), alone).expect_err("no partner");
        assert!(err.to_string().contains("TEST_ASSET_ETCD names"), "{err}");
    }
}
