//! [`Kubectl`]: kubectl against a test server, with its own kubeconfig, cache and files.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};

use informer_testserver::TestServer;
use tokio::sync::mpsc;

/// kubectl pointed at one test server, in a directory of its own (removed on drop).
pub struct Kubectl {
    kubeconfig: PathBuf,
    cache: PathBuf,
    dir: PathBuf,
}

impl Kubectl {
    /// kubectl for `server`, or `None` (with a printed notice naming `scenario`) when kubectl is
    /// not on PATH, so the calling test can return early.
    pub fn for_server(server: &TestServer, scenario: &str) -> Option<Kubectl> {
        let available = Command::new("kubectl")
            .args(["version", "--client"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !available {
            println!("NOTICE: kubectl is not on PATH; skipping the {scenario} scenario");
            return None;
        }
        let dir = std::env::temp_dir().join(format!(
            "informer-kubectl-{}-{}",
            std::process::id(),
            server.addr().port()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let k = Kubectl {
            kubeconfig: dir.join("kubeconfig"),
            cache: dir.join("cache"),
            dir,
        };
        server.write_kubeconfig(&k.kubeconfig).unwrap();
        Some(k)
    }

    /// A kubectl command with this harness's kubeconfig and cache.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new("kubectl");
        c.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(&self.cache)
            .args(args);
        c
    }

    /// Runs kubectl off the async runtime and fails the test unless it succeeds.
    pub async fn run(&self, args: &[&str]) -> Output {
        let mut cmd = self.cmd(args);
        let out = tokio::task::spawn_blocking(move || cmd.output())
            .await
            .unwrap()
            .unwrap();
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// [`run`](Self::run)'s standard output.
    pub async fn stdout(&self, args: &[&str]) -> String {
        String::from_utf8_lossy(&self.run(args).await.stdout).into_owned()
    }

    /// Writes `text` to the file `name` in the harness's directory; returns its path.
    pub fn file(&self, name: &str, text: &str) -> String {
        let p = self.dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    }

    /// Starts a long-running kubectl (`get --watch`) whose output lines arrive on the channel;
    /// kill the child when done.
    pub fn lines(&self, args: &[&str]) -> (Child, mpsc::UnboundedReceiver<String>) {
        let mut child = self
            .cmd(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        (child, rx)
    }
}

impl Drop for Kubectl {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
