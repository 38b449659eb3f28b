//! controller-runtime's envtest for Rust: a real kube-apiserver with etcd on loopback, for tests.
//!
//! [`Envtest::start`] runs kube-apiserver and etcd on free loopback ports, with TLS (kube-apiserver's
//! own certificate authority, which the client verifies) and a bearer token for one
//! `system:masters` user, waits for `/readyz`, and hands out [`kube::Client`]s and a kubeconfig.
//! Dropping the [`Envtest`] stops both servers and removes their data; so does the end of the test
//! process, however it ends.
//!
//! The servers are existing binaries where `KUBEBUILDER_ASSETS` (or `TEST_ASSET_KUBE_APISERVER`
//! and `TEST_ASSET_ETCD`) name them, as controller-runtime's envtest finds them (see
//! [`Binaries`]); otherwise informer-envtest builds kube-apiserver [`KUBERNETES_VERSION`] and etcd
//! from source with Go, once per user and Kubernetes version, into [`cache_dir`] (the first build
//! takes minutes; `informer-envtest build`, from `cargo install informer-envtest --features cli`,
//! does it ahead of the tests). Its server data lives there too, never in this crate's directory.
//!
//! There are no nodes, controllers or garbage collector, exactly as with controller-runtime's
//! envtest: objects stay as the API server stores them.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use informer_envtest::{Envtest, Options};
//! use k8s_openapi::api::core::v1::Namespace;
//!
//! let env = Envtest::start(Options::default()).await?;
//! let client = env.client().await?;
//! let namespaces: kube::Api<Namespace> = kube::Api::all(client);
//! assert!(namespaces.get_opt("default").await?.is_some());
//! // CRDs from a manifest, served once this returns (Established and in discovery):
//! env.install_crds_from_yaml(&std::fs::read_to_string("crds/widgets.yaml")?).await?;
//! // A condition on an object, re-checked at every change the server reports:
//! env.wait_until::<Namespace>(None, "default", Duration::from_secs(10), |ns| ns.is_some())
//!     .await?;
//! # Ok(()) }
//! ```
//!
//! Tests that need a real API server call [`shared`] (one server per test binary and
//! [`Options`], started on first use) or [`Envtest::start`], and pass the result through
//! [`skip_unless_available`]: where neither binaries nor Go are available the test is skipped
//! with a loud message, except when `CI=true`, where that fails the test.

mod binaries;
mod cache;
mod crds;
mod launcher;
mod options;
mod pki;
mod process;
mod server;
mod wait;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::OnceCell;

pub use binaries::{Binaries, KUBEBUILDER_ASSETS};
pub use cache::cache_dir;
pub use crds::{CRD_TIMEOUT, crds_from_path, crds_from_yaml, install_crds, wait_for_crds};
pub use launcher::{KUBERNETES_VERSION, launcher_path};
pub use options::Options;
pub use server::Envtest;
pub use wait::wait_until;

/// Builds the launcher now if it is missing or stale (what [`Envtest::start`] does first when no
/// binaries are named) and returns its path. Blocks; the first build downloads the Go modules
/// and takes minutes.
pub fn build_launcher() -> Result<PathBuf, Error> {
    launcher::ensure_built()
}

/// What can go wrong starting or using an envtest API server.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Go is not installed, or the launcher could not be built, and no binaries are named: tests
    /// that need the real API server cannot run here (see [`skip_unless_available`]).
    #[error("the envtest API server is unavailable: {0}")]
    Unavailable(String),
    /// Binaries are named (`KUBEBUILDER_ASSETS`, `TEST_ASSET_*`, `INFORMER_ENVTEST_LAUNCHER`,
    /// [`Options::binary_assets_directory`]) but are not there: a configuration error, never a
    /// skip.
    #[error("envtest binaries: {0}")]
    Binaries(String),
    /// Starting a server process failed.
    #[error("starting {path}: {source}")]
    Spawn {
        /// The binary.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A server exited or stopped answering before the API server was ready.
    #[error("kube-apiserver did not start: {reason}; its log ends with:\n{log_tail}")]
    Start {
        /// What was seen.
        reason: String,
        /// The last lines of the server's log.
        log_tail: String,
    },
    /// An operation on the servers failed.
    #[error("envtest command {command:?} failed: {reason}")]
    Command {
        /// The operation.
        command: String,
        /// What it answered, or why it did not.
        reason: String,
    },
    /// A manifest could not be read as CustomResourceDefinitions.
    #[error("CRD manifest: {0}")]
    Manifest(String),
    /// A wait ran out of time.
    #[error("timed out waiting for {what}")]
    Timeout {
        /// What was awaited.
        what: String,
    },
    /// The kubeconfig could not be turned into a client.
    #[error("kubeconfig: {0}")]
    Kubeconfig(#[from] kube::config::KubeconfigError),
    /// A client error.
    #[error("kube client: {0}")]
    Kube(#[from] kube::Error),
    /// A local I/O error (data and log files).
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The operating system's error.
        source: std::io::Error,
    },
}

impl Error {
    fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
        let what = what.into();
        move |source| Error::Io { what, source }
    }
}

/// A shared server's start, as every later caller sees it (an [`Error`] is not `Clone`).
type SharedStart = Result<&'static Envtest, (bool, String)>;
type SharedCell = Arc<OnceCell<SharedStart>>;

/// The server for `options` shared by every test of this test binary, started on first use and
/// stopped when the process exits. Tests sharing it work in namespaces of their own.
pub async fn shared(options: Options) -> Result<&'static Envtest, Error> {
    static CELLS: OnceLock<Mutex<BTreeMap<String, SharedCell>>> = OnceLock::new();
    let cell = {
        let cells = CELLS.get_or_init(|| Mutex::new(BTreeMap::new()));
        let mut cells = cells.lock().unwrap_or_else(|e| e.into_inner());
        cells.entry(format!("{options:?}")).or_default().clone()
    };
    let started = cell
        .get_or_init(|| async move {
            // The server lives as long as the process; its watchdogs stop it when the process ends.
            match Envtest::start(options).await {
                Ok(env) => Ok(&*Box::leak(Box::new(env))),
                Err(Error::Unavailable(why)) => Err((true, why)),
                Err(other) => Err((false, other.to_string())),
            }
        })
        .await;
    match started {
        Ok(env) => Ok(*env),
        Err((true, why)) => Err(Error::Unavailable(why.clone())),
        Err((false, why)) => Err(Error::Start {
            reason: format!("the shared server failed to start: {why}"),
            log_tail: String::new(),
        }),
    }
}

/// Whether this run must not skip: `CI=true`.
pub fn required() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// Passes a started server through, and turns [`Error::Unavailable`] into a skip: `None` and a
/// loud message on stderr, unless [`required`] (`CI=true`), where it panics like any other error.
///
/// # Panics
/// On every error other than `Unavailable`, and on `Unavailable` under `CI=true`: a test that
/// needs the real API server fails when it cannot have one.
pub fn skip_unless_available<T>(test: &str, result: Result<T, Error>) -> Option<T> {
    match result {
        Ok(value) => Some(value),
        Err(Error::Unavailable(why)) if !required() => {
            eprintln!(
                "\n==========\nSKIPPED {test}: the real kube-apiserver is unavailable: {why}\n\
                 (install Go, or point KUBEBUILDER_ASSETS at a directory with kube-apiserver and \
                 etcd; set CI=true to make this a failure)\n==========\n"
            );
            None
        }
        Err(e) => panic!("{test}: envtest: {e}"),
    }
}
