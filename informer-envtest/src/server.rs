//! A running kube-apiserver and etcd: [`Envtest`].

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::process::{self, Supervised};
use crate::{Binaries, Error, Options, cache, pki};

/// How long kube-apiserver may take to become ready (it bootstraps RBAC and priority classes).
const READY_TIMEOUT: Duration = Duration::from_secs(180);

/// How many times a start is tried when a server finds its port taken ([`process::port_taken`]).
const START_ATTEMPTS: u32 = 3;

/// Whether a start that failed with `error` in attempt `attempt` (from 1) is tried again.
fn try_again(attempt: u32, error: &Error) -> bool {
    attempt < START_ATTEMPTS && process::port_taken(error)
}

/// How long a stopping server may take before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(15);

static NEXT: AtomicU64 = AtomicU64::new(0);

/// A running kube-apiserver with its etcd, on loopback. Dropping it stops both and removes their
/// data; so does the end of the test process, however it ends.
pub struct Envtest {
    server: String,
    etcd: String,
    /// kube-apiserver's own serving certificate and its authority (`--cert-dir`).
    ca_file: PathBuf,
    token: String,
    options: Options,
    binaries: Binaries,
    /// The data directory: etcd's data, certificates, keys, token file, logs.
    dir: PathBuf,
    /// kube-apiserver's process id (with the launcher, etcd runs in it too).
    pid: u32,
    processes: Mutex<Vec<Supervised>>,
    /// A failed start keeps its directory, with the logs, for reading.
    keep_dir: AtomicBool,
}

impl std::fmt::Debug for Envtest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Envtest")
            .field("server", &self.server)
            .field("etcd", &self.etcd)
            .field("binaries", &self.binaries)
            .field("options", &self.options)
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl Envtest {
    /// Finds or builds the binaries ([`Binaries`]), starts etcd and kube-apiserver on free
    /// loopback ports and waits until `/readyz` answers `ok` (up to three minutes). A start that
    /// fails because another program bound one of the ports first is tried again on new ports,
    /// in up to three attempts; with the launcher, a failed attempt's directory keeps its log.
    pub async fn start(options: Options) -> Result<Envtest, Error> {
        let find = options.clone();
        let binaries = tokio::task::spawn_blocking(move || Binaries::find(&find))
            .await
            .map_err(|e| Error::Unavailable(format!("the build task failed: {e}")))??;
        let mut attempt = 1;
        loop {
            match Envtest::launch(&options, &binaries).await {
                Err(e) if try_again(attempt, &e) => {
                    tracing::warn!(
                        attempt,
                        error = %e,
                        "envtest: another program bound a port before its server did; starting again on new ports"
                    );
                    attempt += 1;
                }
                result => return result,
            }
        }
    }

    /// One start on new ports and in a new data directory.
    async fn launch(options: &Options, binaries: &Binaries) -> Result<Envtest, Error> {
        let (options, binaries) = (options.clone(), binaries.clone());
        let run = cache::run_dir();
        std::fs::create_dir_all(&run).map_err(Error::io(format!("creating {}", run.display())))?;
        sweep_orphans(&run);
        let dir = run.join(format!(
            "{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let pki_dir = dir.join("pki");
        std::fs::create_dir_all(&pki_dir)
            .map_err(Error::io(format!("creating {}", pki_dir.display())))?;
        let token = pki::token()?;
        pki::write_token_file(&dir, &token)?;
        pki::write_service_account_keys(&pki_dir)?;

        let [etcd_port, peer_port, port] = process::loopback_ports()?;
        let etcd = format!("http://127.0.0.1:{etcd_port}");
        let server = format!("https://127.0.0.1:{port}");
        let etcd_args = etcd_args(&dir, &etcd, &format!("http://127.0.0.1:{peer_port}"));
        let mut apiserver_args = vec![
            "--bind-address=127.0.0.1".to_owned(),
            "--advertise-address=127.0.0.1".to_owned(),
            // No kubernetes Service endpoints: a loopback address may not be advertised in them.
            "--endpoint-reconciler-type=none".to_owned(),
            format!("--secure-port={port}"),
            format!("--etcd-servers={etcd}"),
            format!("--cert-dir={}", pki_dir.display()),
            format!("--token-auth-file={}", dir.join("tokens.csv").display()),
            "--authorization-mode=RBAC".to_owned(),
            "--service-cluster-ip-range=10.0.0.0/24".to_owned(),
            format!("--service-account-issuer={server}"),
            format!(
                "--service-account-key-file={}",
                pki_dir.join("sa.pub").display()
            ),
            format!(
                "--service-account-signing-key-file={}",
                pki_dir.join("sa.key").display()
            ),
            // No controller makes the default ServiceAccount, so Pods could not be created.
            "--disable-admission-plugins=ServiceAccount".to_owned(),
            "--allow-privileged=true".to_owned(),
            "--enable-priority-and-fairness=false".to_owned(),
        ];
        apiserver_args.extend(options.apiserver_args());

        let processes = match &binaries {
            Binaries::Launcher(launcher) => {
                let mut args = vec!["both".to_owned()];
                args.extend(etcd_args);
                args.push("--".to_owned());
                args.extend(apiserver_args);
                vec![Supervised::spawn("kube-apiserver", &dir, launcher, &args)?]
            }
            Binaries::External {
                kube_apiserver,
                etcd: etcd_binary,
            } => {
                let etcd = Supervised::spawn("etcd", &dir, etcd_binary, &etcd_args)?;
                let apiserver =
                    Supervised::spawn("kube-apiserver", &dir, kube_apiserver, &apiserver_args)?;
                vec![apiserver, etcd]
            }
        };
        let mut env = Envtest {
            server,
            etcd,
            ca_file: pki_dir.join("apiserver.crt"),
            token,
            options,
            binaries,
            dir,
            pid: 0,
            processes: Mutex::new(processes),
            keep_dir: AtomicBool::new(false),
        };
        let started = Instant::now();
        if let Err(e) = env.wait_ready(started).await {
            env.keep_dir.store(true, Ordering::Relaxed);
            return Err(e);
        }
        if env.options.garbage_collector
            && let Err(e) = env.start_garbage_collector().await
        {
            env.keep_dir.store(true, Ordering::Relaxed);
            return Err(e);
        }
        let pid = env
            .lock_processes()
            .first()
            .and_then(|p| p.program_id(&env.dir))
            .unwrap_or_default();
        env.pid = pid;
        tracing::info!(
            server = %env.server,
            elapsed_s = started.elapsed().as_secs_f64(),
            binaries = ?env.binaries,
            "envtest kube-apiserver ready"
        );
        Ok(env)
    }

    /// Starts kube-controller-manager's garbage collector (the launcher's `garbage-collector`
    /// mode) against this server, with a kubeconfig file of its own in the data directory.
    async fn start_garbage_collector(&self) -> Result<(), Error> {
        let launcher = match &self.binaries {
            Binaries::Launcher(launcher) => launcher.clone(),
            Binaries::External { .. } => tokio::task::spawn_blocking(crate::launcher::ensure_built)
                .await
                .map_err(|e| Error::Unavailable(format!("the build task failed: {e}")))??,
        };
        let kubeconfig = self.dir.join("garbage-collector.kubeconfig");
        self.write_kubeconfig(&kubeconfig)?;
        let args = [
            "garbage-collector".to_owned(),
            "--kubeconfig".to_owned(),
            kubeconfig.display().to_string(),
        ];
        let gc = Supervised::spawn("garbage-collector", &self.dir, &launcher, &args)?;
        self.lock_processes().push(gc);
        Ok(())
    }

    fn lock_processes(&self) -> std::sync::MutexGuard<'_, Vec<Supervised>> {
        self.processes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The first process that exited, as an error carrying its log.
    fn exited(&self) -> Option<Error> {
        let mut processes = self.lock_processes();
        let dir = self.dir.clone();
        processes.iter_mut().find_map(|p| {
            let status = p.exited()?;
            Some(Error::Start {
                reason: format!("{} exited ({status})", p.name),
                log_tail: tail(&p.log(&dir)),
            })
        })
    }

    fn apiserver_log(&self) -> PathBuf {
        self.dir.join("kube-apiserver.log")
    }

    /// Polls until kube-apiserver has written its certificate and `/readyz` answers `ok`,
    /// failing when a process exits or time runs out.
    async fn wait_ready(&self, started: Instant) -> Result<(), Error> {
        let mut client = None;
        let mut last = String::from("no answer yet");
        while started.elapsed() < READY_TIMEOUT {
            if let Some(e) = self.exited() {
                return Err(e);
            }
            if client.is_none() && self.ca_file.exists() {
                // A certificate file still being written does not parse yet: try again.
                match self.client().await {
                    Ok(c) => client = Some(c),
                    Err(e) => last = e.to_string(),
                }
            }
            if let Some(client) = &client {
                let req = http::Request::get("/readyz")
                    .body(Vec::new())
                    .map_err(|e| Error::Unavailable(format!("building /readyz: {e}")))?;
                match client.request_text(req).await {
                    Ok(body) if body.trim() == "ok" => return Ok(()),
                    Ok(body) => last = body,
                    Err(e) => last = e.to_string(),
                }
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        Err(Error::Start {
            reason: format!(
                "/readyz not ok after {} s (last answer: {last})",
                READY_TIMEOUT.as_secs()
            ),
            log_tail: tail(&self.apiserver_log()),
        })
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
                    "server": self.server,
                    "certificate-authority": self.ca_file,
                },
            }],
            "users": [{ "name": "envtest-admin", "user": { "token": self.token } }],
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
        &self.server
    }

    /// etcd's client URL (`http://127.0.0.1:PORT`).
    pub fn etcd_url(&self) -> &str {
        &self.etcd
    }

    /// The data directory (etcd's data, the certificates, the token file, the logs); removed
    /// when the server stops.
    pub fn data_dir(&self) -> &Path {
        &self.dir
    }

    /// kube-apiserver's process id. With the launcher, etcd runs in the same process, so its
    /// resident set is both servers' (a benchmark reads it from `/proc/PID/status`).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The binaries this server runs.
    pub fn binaries(&self) -> &Binaries {
        &self.binaries
    }

    /// The options this server runs with.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Compacts etcd at its current revision, so that any earlier resourceVersion is gone:
    /// a watch or consistent read from before it answers 410 Gone (where the watch cache does
    /// not answer it first). Returns the compacted revision. Goes through etcd's JSON gateway
    /// (`/v3/kv/range`, `/v3/kv/compaction`), so it works with any etcd binary.
    pub async fn compact(&self) -> Result<i64, Error> {
        let fail = |reason: String| Error::Command {
            command: "compact".into(),
            reason,
        };
        let url = self
            .etcd
            .parse()
            .map_err(|e| fail(format!("etcd's URL {}: {e}", self.etcd)))?;
        let etcd = kube::Client::try_from(kube::Config::new(url))?;
        let post = |path: &str, body: serde_json::Value| {
            http::Request::post(path)
                .header(http::header::CONTENT_TYPE, "application/json")
                .body(body.to_string().into_bytes())
                .map_err(|e| fail(format!("building {path}: {e}")))
        };
        // Any range answers with the current revision in its header (int64s are strings).
        let range = etcd
            .request_text(post("/v3/kv/range", serde_json::json!({ "key": "AA==" }))?)
            .await
            .map_err(|e| fail(format!("reading etcd's revision: {e}")))?;
        let range: serde_json::Value =
            serde_json::from_str(&range).map_err(|e| fail(format!("{e}: {range}")))?;
        let revision = range
            .pointer("/header/revision")
            .and_then(|r| {
                r.as_str()
                    .map(str::to_owned)
                    .or_else(|| r.as_i64().map(|n| n.to_string()))
            })
            .and_then(|r| r.parse::<i64>().ok())
            .ok_or_else(|| fail(format!("no revision in {range}")))?;
        let body = serde_json::json!({ "revision": revision.to_string(), "physical": true });
        etcd.request_text(post("/v3/kv/compaction", body)?)
            .await
            .map_err(|e| fail(format!("compacting at {revision}: {e}")))?;
        Ok(revision)
    }
}

impl Drop for Envtest {
    fn drop(&mut self) {
        let mut processes = self.lock_processes();
        for p in processes.iter_mut() {
            p.release();
        }
        let deadline = Instant::now() + STOP_TIMEOUT;
        for p in processes.iter_mut() {
            p.reap(deadline);
        }
        drop(processes);
        if !self.keep_dir.load(Ordering::Relaxed) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// etcd's flags: loopback only, data thrown away with the server.
fn etcd_args(dir: &Path, client: &str, peer: &str) -> Vec<String> {
    vec![
        format!("--data-dir={}", dir.join("etcd").display()),
        format!("--listen-client-urls={client}"),
        format!("--advertise-client-urls={client}"),
        format!("--listen-peer-urls={peer}"),
        format!("--initial-advertise-peer-urls={peer}"),
        format!("--initial-cluster=default={peer}"),
        // Unsafe but fast: the data is thrown away with the server.
        "--unsafe-no-fsync=true".to_owned(),
        // Room for benchmarks that seed tens of thousands of realistic Pods (etcd's default quota
        // is 2 GiB, and its database keeps every revision until compaction).
        format!("--quota-backend-bytes={}", 8u64 << 30),
        "--log-level=error".to_owned(),
    ]
}

/// Removes the data directories of servers whose test process is gone without stopping them
/// (killed by a signal that reached the whole process group, such as Ctrl-C): their names start
/// with the process id. Linux only (it asks `/proc`); elsewhere they stay.
fn sweep_orphans(run: &Path) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(run) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.split('-').next()) else {
            continue;
        };
        if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// What a failed start's log says: its error lines (klog's `E` and `F` severities, etcd's
/// `error` and `fatal` levels) and its last lines; the whole log stays at `path` for reading.
pub(crate) fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let errors: Vec<&str> = text.lines().filter(|line| is_error(line)).collect();
    let lines: Vec<&str> = text.lines().collect();
    format!(
        "(whole log: {})\nerrors:\n{}\nlast lines:\n{}",
        path.display(),
        errors[errors.len().saturating_sub(15)..].join("\n"),
        lines[lines.len().saturating_sub(10)..].join("\n")
    )
}

/// Whether a log line is an error: klog's `E` and `F` severities (`E1201 ...`), or etcd's
/// `"level":"error"` and `"level":"fatal"` (its JSON lines).
fn is_error(line: &str) -> bool {
    let mut chars = line.chars();
    let klog =
        matches!(chars.next(), Some('E' | 'F')) && chars.next().is_some_and(|c| c.is_ascii_digit());
    klog || line.starts_with(r#"{"level":"error""#) || line.starts_with(r#"{"level":"fatal""#)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// etcd's line from a start whose peer port another program had bound first.
    const ETCD_PORT_TAKEN: &str = r#"{"level":"fatal","ts":"2026-12-01T05:31:10.963071Z","caller":"etcdmain/etcd.go:157","msg":"discovery failed","error":"listen tcp 127.0.0.1:38733: bind: address already in use"}"#;

    #[test]
    fn error_lines_of_both_logs() {
        assert!(is_error(ETCD_PORT_TAKEN));
        assert!(is_error(
            "E1201 05:31:10.963071   42 run.go:72] \"command failed\" err=\"boom\""
        ));
        assert!(is_error(r#"{"level":"error","msg":"x"}"#));
        assert!(!is_error(r#"{"level":"info","msg":"x"}"#));
        assert!(!is_error("I1201 05:31:10.963071   42 server.go:1] started"));
        assert!(!is_error("Error budget: none"));
    }

    #[test]
    fn a_taken_port_is_tried_again_in_three_attempts_and_nothing_else_is() {
        let dir = std::env::temp_dir().join(format!("envtest-tail-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("kube-apiserver.log");
        std::fs::write(&log, format!("{ETCD_PORT_TAKEN}\n")).unwrap();
        let taken = Error::Start {
            reason: "kube-apiserver exited (exit status: 1)".into(),
            log_tail: tail(&log),
        };
        assert!(process::port_taken(&taken), "{taken}");
        assert!(try_again(1, &taken) && try_again(2, &taken));
        assert!(!try_again(START_ATTEMPTS, &taken), "three attempts in all");
        assert!(taken.to_string().contains("errors:\n{\"level\":\"fatal\""));
        std::fs::write(&log, "F1201 05:31:10.9 1 x.go:1] etcd: no such file\n").unwrap();
        let other = Error::Start {
            reason: "kube-apiserver exited (exit status: 1)".into(),
            log_tail: tail(&log),
        };
        assert!(!process::port_taken(&other));
        assert!(!try_again(1, &other));
        assert!(!process::port_taken(&Error::Unavailable(
            "address already in use".into()
        )));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
