//! controller-runtime's envtest for Rust: a real kube-apiserver with etcd on loopback, for tests.
//!
//! [`Envtest::start`] builds (once, then cached under the workspace's `target/envtest/`) a small Go
//! launcher from `launcher/` in this crate: kube-apiserver from the `k8s.io/kubernetes` module
//! ([`KUBERNETES_VERSION`]) and an embedded etcd in one process. It starts it on 127.0.0.1 with TLS
//! (a certificate authority of its own, verified by the client) and a bearer token for one
//! `system:masters` user, waits for `/readyz`, and hands out [`kube::Client`]s and a kubeconfig.
//! Dropping the [`Envtest`] stops both servers and removes their data; so does the end of the test
//! process, however it ends (the launcher exits when its standard input closes).
//!
//! There are no nodes, controllers or garbage collector, exactly as with controller-runtime's
//! envtest: objects stay as the API server stores them.
//!
//! ```no_run
//! # async fn demo() -> Result<(), informer_envtest::Error> {
//! use informer_envtest::{Envtest, Options};
//! use k8s_openapi::api::core::v1::Namespace;
//!
//! let env = Envtest::start(Options::default()).await?;
//! let client = env.client().await?;
//! let namespaces: kube::Api<Namespace> = kube::Api::all(client);
//! assert!(namespaces.get_opt("default").await?.is_some());
//! # Ok(()) }
//! ```
//!
//! Tests that need a real API server call [`shared`] (one server per test binary and
//! [`Options`], started on first use) or [`Envtest::start`], and pass the result through
//! [`skip_unless_available`]: where Go or the build is unavailable the test is skipped with a
//! loud message, except when `CI=true`, where that fails the test.

mod launcher;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use kube::config::{KubeConfigOptions, Kubeconfig};
use tokio::sync::{OnceCell, mpsc};

pub use launcher::{KUBERNETES_VERSION, launcher_path};

/// Builds the launcher now if it is missing or stale (what [`Envtest::start`] does first) and
/// returns its path. Blocks; the first build downloads the Go modules and takes minutes.
pub fn build_launcher() -> Result<PathBuf, Error> {
    launcher::ensure_built()
}

/// What can go wrong starting or using an envtest API server.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Go is not installed, or the launcher could not be built: tests that need the real API
    /// server cannot run here (see [`skip_unless_available`]).
    #[error("the envtest API server is unavailable: {0}")]
    Unavailable(String),
    /// Starting the launcher process failed.
    #[error("starting {path}: {source}")]
    Spawn {
        /// The launcher binary.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The launcher exited or stopped answering before the API server was ready.
    #[error("kube-apiserver did not start: {reason}; its log ends with:\n{log_tail}")]
    Start {
        /// What was seen.
        reason: String,
        /// The last lines of the launcher's log.
        log_tail: String,
    },
    /// A command to the launcher failed.
    #[error("envtest command {command:?} failed: {reason}")]
    Command {
        /// The command sent.
        command: String,
        /// What it answered, or why it did not.
        reason: String,
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

/// How to run the API server. The default is what the conformance suite uses: `WatchList` and
/// `ShardedListAndWatch` (KEP-5866, alpha) on, the watch cache on, compaction every 5 minutes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Options {
    /// `--feature-gates`, by name.
    pub feature_gates: BTreeMap<String, bool>,
    /// `--etcd-compaction-interval` (kube-apiserver's own compaction; [`Envtest::compact`]
    /// compacts at once).
    pub compaction_interval: Duration,
    /// `--watch-cache`: with it off, a watch from a compacted resourceVersion reaches etcd and
    /// answers 410 Gone, as a relist test needs.
    pub watch_cache: bool,
    /// More kube-apiserver arguments, as `--name=value`.
    pub extra_args: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            feature_gates: BTreeMap::from([
                ("WatchList".to_string(), true),
                ("ShardedListAndWatch".to_string(), true),
            ]),
            compaction_interval: Duration::from_secs(300),
            watch_cache: true,
            extra_args: Vec::new(),
        }
    }
}

impl Options {
    /// Sets one feature gate.
    pub fn feature_gate(mut self, name: &str, on: bool) -> Self {
        self.feature_gates.insert(name.to_string(), on);
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

    fn args(&self) -> Vec<String> {
        let gates: Vec<String> = self
            .feature_gates
            .iter()
            .map(|(name, on)| format!("{name}={on}"))
            .collect();
        let mut args = vec![
            format!(
                "--etcd-compaction-interval={}ms",
                self.compaction_interval.as_millis()
            ),
            format!("--watch-cache={}", self.watch_cache),
        ];
        if !gates.is_empty() {
            args.push(format!("--feature-gates={}", gates.join(",")));
        }
        args.extend(
            self.extra_args
                .iter()
                .map(|a| format!("--apiserver-arg={a}")),
        );
        args
    }
}

/// Where the launcher said its servers listen (its first line on stdout).
#[derive(Debug, Clone, serde::Deserialize)]
struct Ready {
    server: String,
    ca_file: PathBuf,
    token: String,
    etcd: String,
}

/// A running kube-apiserver and etcd. Dropping it stops both and removes their data.
pub struct Envtest {
    ready: Ready,
    options: Options,
    /// The data directory (the launcher removes it on exit; so does drop).
    dir: PathBuf,
    /// The launcher's stderr.
    log: PathBuf,
    child: Mutex<Child>,
    /// The launcher's stdin: its lifeline and command channel.
    stdin: Mutex<Option<ChildStdin>>,
    /// Lines the launcher printed after the ready line (answers to commands).
    answers: tokio::sync::Mutex<mpsc::UnboundedReceiver<String>>,
    /// A failed start keeps its log for reading.
    keep_log: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for Envtest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Envtest")
            .field("server", &self.ready.server)
            .field("etcd", &self.ready.etcd)
            .field("options", &self.options)
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

/// How long kube-apiserver may take to become ready (it bootstraps RBAC and priority classes).
const READY_TIMEOUT: Duration = Duration::from_secs(180);

impl Envtest {
    /// Builds the launcher if needed, starts etcd and kube-apiserver, and waits for `/readyz`.
    pub async fn start(options: Options) -> Result<Envtest, Error> {
        let launcher = tokio::task::spawn_blocking(launcher::ensure_built)
            .await
            .map_err(|e| Error::Unavailable(format!("the build task failed: {e}")))??;
        let base = launcher::work_dir().join("run");
        std::fs::create_dir_all(&base)
            .map_err(Error::io(format!("creating {}", base.display())))?;
        let unique = format!(
            "{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        // The log lives in the data directory: gone with it when the launcher stops cleanly
        // (also for a shared server, which is never dropped), kept when a start fails.
        let dir = base.join(&unique);
        std::fs::create_dir_all(&dir).map_err(Error::io(format!("creating {}", dir.display())))?;
        let log = dir.join("launcher.log");
        let log_file = std::fs::File::create(&log)
            .map_err(Error::io(format!("creating {}", log.display())))?;
        let mut child = Command::new(&launcher)
            .arg(format!("--dir={}", dir.display()))
            .args(options.args())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log_file))
            .spawn()
            .map_err(|source| Error::Spawn {
                path: launcher.clone(),
                source,
            })?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let (lines_tx, mut lines) = mpsc::unbounded_channel();
        if let Some(stdout) = stdout {
            // A plain thread: the launcher outlives any one test's runtime when shared.
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    if lines_tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        let mut env_child = Some(child);
        let started = Instant::now();
        let ready = loop {
            let next = tokio::time::timeout(READY_TIMEOUT, lines.recv()).await;
            match next {
                Ok(Some(line)) => {
                    if let Ok(ready) = serde_json::from_str::<Ready>(&line) {
                        break ready;
                    }
                    // Anything else on stdout is a dependency's print; skip it.
                }
                Ok(None) => {
                    let status = env_child.as_mut().and_then(|c| c.wait().ok());
                    return Err(Error::Start {
                        reason: format!("the launcher exited ({status:?})"),
                        log_tail: tail(&log),
                    });
                }
                Err(_) => {
                    if let Some(mut c) = env_child.take() {
                        let _ = c.kill();
                        let _ = c.wait();
                    }
                    return Err(Error::Start {
                        reason: format!("no ready line in {} s", READY_TIMEOUT.as_secs()),
                        log_tail: tail(&log),
                    });
                }
            }
        };
        let Some(child) = env_child else {
            return Err(Error::Start {
                reason: "the launcher is gone".into(),
                log_tail: tail(&log),
            });
        };
        let env = Envtest {
            ready,
            options,
            dir,
            log,
            child: Mutex::new(child),
            stdin: Mutex::new(stdin),
            answers: tokio::sync::Mutex::new(lines),
            keep_log: std::sync::atomic::AtomicBool::new(false),
        };
        if let Err(e) = env.wait_ready(started).await {
            env.keep_log
                .store(true, std::sync::atomic::Ordering::Relaxed);
            return Err(e);
        }
        tracing::info!(
            server = %env.ready.server,
            elapsed_s = started.elapsed().as_secs_f64(),
            "envtest kube-apiserver ready"
        );
        Ok(env)
    }

    /// Polls `/readyz` until it answers 200, failing when the launcher exits or time runs out.
    async fn wait_ready(&self, started: Instant) -> Result<(), Error> {
        let client = self.client().await?;
        let mut last = String::from("no answer yet");
        while started.elapsed() < READY_TIMEOUT {
            if let Some(status) = self.exited() {
                return Err(Error::Start {
                    reason: format!("the launcher exited ({status})"),
                    log_tail: tail(&self.log),
                });
            }
            let req = http::Request::get("/readyz")
                .body(Vec::new())
                .map_err(|e| Error::Unavailable(format!("building /readyz: {e}")))?;
            match client.request_text(req).await {
                Ok(body) if body.trim() == "ok" => return Ok(()),
                Ok(body) => last = body,
                Err(e) => last = e.to_string(),
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        Err(Error::Start {
            reason: format!(
                "/readyz not ok after {} s (last answer: {last})",
                READY_TIMEOUT.as_secs()
            ),
            log_tail: tail(&self.log),
        })
    }

    fn exited(&self) -> Option<std::process::ExitStatus> {
        let mut child = self.child.lock().unwrap_or_else(|e| e.into_inner());
        child.try_wait().ok().flatten()
    }

    /// A new client for this server. Make one per tokio runtime (one per test): a client's
    /// connections belong to the runtime it was first used on.
    pub async fn client(&self) -> Result<kube::Client, Error> {
        let mut config =
            kube::Config::from_custom_kubeconfig(self.kubeconfig()?, &KubeConfigOptions::default())
                .await?;
        // Watches may stay open for up to ten minutes; never cut them on the client side.
        config.read_timeout = None;
        Ok(kube::Client::try_from(config)?)
    }

    /// The kubeconfig for this server (`certificate-authority` and `token`; TLS is verified).
    pub fn kubeconfig(&self) -> Result<Kubeconfig, Error> {
        Ok(Kubeconfig::from_yaml(&self.kubeconfig_text())?)
    }

    /// The kubeconfig as a file's text (JSON, which kubectl reads as YAML).
    pub fn kubeconfig_text(&self) -> String {
        serde_json::json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{
                "name": "envtest",
                "cluster": {
                    "server": self.ready.server,
                    "certificate-authority": self.ready.ca_file,
                },
            }],
            "users": [{ "name": "envtest-admin", "user": { "token": self.ready.token } }],
            "contexts": [{
                "name": "envtest",
                "context": { "cluster": "envtest", "user": "envtest-admin" },
            }],
            "current-context": "envtest",
        })
        .to_string()
    }

    /// Writes [`kubeconfig_text`](Self::kubeconfig_text) to `path`.
    pub fn write_kubeconfig(&self, path: &Path) -> Result<(), Error> {
        std::fs::write(path, self.kubeconfig_text())
            .map_err(Error::io(format!("writing {}", path.display())))
    }

    /// The API server's URL (`https://127.0.0.1:PORT`).
    pub fn server_url(&self) -> &str {
        &self.ready.server
    }

    /// The data directory (etcd's data, the certificates, the token file); removed on drop.
    pub fn data_dir(&self) -> &Path {
        &self.dir
    }

    /// The launcher's process id: the one process that holds both etcd and kube-apiserver
    /// (a benchmark reads its resident set from `/proc/PID/status`).
    pub fn pid(&self) -> u32 {
        self.child.lock().unwrap_or_else(|e| e.into_inner()).id()
    }

    /// The options this server runs with.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Compacts etcd at its current revision, so that any earlier resourceVersion is gone:
    /// a watch or consistent read from before it answers 410 Gone (where the watch cache does
    /// not answer it first). Returns the compacted revision.
    pub async fn compact(&self) -> Result<i64, Error> {
        #[derive(serde::Deserialize)]
        struct Answer {
            compacted: Option<i64>,
            error: Option<String>,
        }
        let mut answers = self.answers.lock().await;
        self.send("compact")?;
        let fail = |reason: String| Error::Command {
            command: "compact".into(),
            reason,
        };
        loop {
            let line = tokio::time::timeout(Duration::from_secs(60), answers.recv())
                .await
                .map_err(|_| fail("no answer in 60 s".into()))?
                .ok_or_else(|| fail("the launcher exited".into()))?;
            let Ok(answer) = serde_json::from_str::<Answer>(&line) else {
                continue;
            };
            return match (answer.compacted, answer.error) {
                (Some(rev), _) => Ok(rev),
                (None, Some(e)) => Err(fail(e)),
                (None, None) => Err(fail(line)),
            };
        }
    }

    fn send(&self, command: &str) -> Result<(), Error> {
        let mut stdin = self.stdin.lock().unwrap_or_else(|e| e.into_inner());
        let Some(pipe) = stdin.as_mut() else {
            return Err(Error::Command {
                command: command.into(),
                reason: "the launcher was stopped".into(),
            });
        };
        writeln!(pipe, "{command}")
            .and_then(|()| pipe.flush())
            .map_err(|e| Error::Command {
                command: command.into(),
                reason: e.to_string(),
            })
    }
}

impl Drop for Envtest {
    fn drop(&mut self) {
        // Closing stdin makes the launcher remove its data and exit; kill it if it has not.
        self.stdin.lock().unwrap_or_else(|e| e.into_inner()).take();
        let mut child = self.child.lock().unwrap_or_else(|e| e.into_inner());
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match child.try_wait() {
                Ok(Some(_)) | Err(_) => break,
                Ok(None) if Instant::now() >= deadline => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
        if !self.keep_log.load(std::sync::atomic::Ordering::Relaxed) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// What a failed start's log says: its error lines (klog's `E` and `F` severities) and its last
/// lines; the whole log stays at `path` for reading.
fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let is_error = |line: &&str| {
        let mut chars = line.chars();
        matches!(chars.next(), Some('E' | 'F')) && chars.next().is_some_and(|c| c.is_ascii_digit())
    };
    let errors: Vec<&str> = text.lines().filter(is_error).collect();
    let lines: Vec<&str> = text.lines().collect();
    format!(
        "(whole log: {})\nerrors:\n{}\nlast lines:\n{}",
        path.display(),
        errors[errors.len().saturating_sub(15)..].join("\n"),
        lines[lines.len().saturating_sub(10)..].join("\n")
    )
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
            // The server lives as long as the process; its launcher exits with it.
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
                 (set CI=true to make this a failure; `cargo xtask envtest` builds it)\n==========\n"
            );
            None
        }
        Err(e) => panic!("{test}: envtest: {e}"),
    }
}
