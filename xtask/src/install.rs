//! `cargo xtask install`: `cargo install` of informer-testserver's standalone server, as a user
//! would run it, then the installed binary started and asked for `/version`.
//!
//! The install runs outside the workspace (so this repository's `.cargo/config.toml`, which sets
//! `K8S_OPENAPI_ENABLED_VERSION`, does not apply: the `cli` feature alone must pick the
//! Kubernetes version), with the workspace's lock file, offline once the workspace's locked
//! packages are fetched (a download only where they are missing), with the dev profile
//! (`--debug`: a release build of the server would take minutes) into `<target>/user-crates`,
//! the target directory `cargo xtask template` builds the user's crate in (the same clean
//! environment, so the kube stack they share is built once), kept between runs, so a second run
//! only copies the binary. The install root (`<target>/testserver-install`) is made anew each
//! time, so the binary is always installed.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};

use crate::project_root;
use crate::template::{USER_CRATES, clean_env};

/// `cargo fetch --locked --target <host>` in the workspace: every package of its `Cargo.lock`
/// that this host can build, downloaded unless it already is.
fn fetch_locked(root: &std::path::Path) -> anyhow::Result<()> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let version = Command::new(rustc)
        .arg("-vV")
        .output()
        .context("running rustc -vV")?;
    ensure!(
        version.status.success(),
        "rustc -vV failed: {}",
        version.status
    );
    let text = String::from_utf8_lossy(&version.stdout);
    let Some(host) = text.lines().find_map(|l| l.strip_prefix("host: ")) else {
        bail!("rustc -vV names no host:\n{text}");
    };
    let status = crate::cargo_command()
        .args(["fetch", "--locked", "--target", host.trim()])
        .current_dir(root)
        .status()
        .context("running cargo fetch")?;
    ensure!(status.success(), "cargo fetch --locked failed: {status}");
    Ok(())
}

/// Installs the `cli` binary and checks that it serves `/version`.
pub(crate) fn run() -> anyhow::Result<()> {
    let root = project_root();
    let outer =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let target = outer.join(USER_CRATES);
    let install_root = outer.join("testserver-install");
    if install_root.exists() {
        std::fs::remove_dir_all(&install_root)
            .with_context(|| format!("removing {}", install_root.display()))?;
    }
    // `--offline` reads only packages already downloaded, and on a machine that has not built
    // the workspace yet (a fresh CI runner, a clean clone) the `cli` feature's are not: fetch
    // the workspace's locked packages for this host first (no network when they are present).
    // `--locked` then installs exactly those versions, as `cargo install --locked` installs a
    // published binary with the lock file packaged beside it.
    fetch_locked(&root)?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.arg("install")
        .arg("--path")
        .arg(root.join("informer-testserver"))
        .args([
            "--features",
            "cli",
            "--locked",
            "--offline",
            "--debug",
            "--root",
        ])
        .arg(&install_root)
        .current_dir(std::env::temp_dir());
    clean_env(&mut cmd, &target);
    eprintln!(
        "install: cargo install --path informer-testserver --features cli --locked --offline --debug --root {}",
        install_root.display()
    );
    let start = Instant::now();
    let status = cmd.status().context("running cargo install")?;
    eprintln!("install: took {:.0} s", start.elapsed().as_secs_f64());
    ensure!(
        status.success(),
        "cargo install of informer-testserver failed: {status}"
    );

    let binary = install_root.join("bin").join(format!(
        "informer-testserver{}",
        std::env::consts::EXE_SUFFIX
    ));
    let mut child = Command::new(&binary)
        .args(["--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("starting {}", binary.display()))?;
    let answer = ask_version(&mut child);
    // Our own child: stop it whatever the answer was.
    let _ = child.kill();
    let _ = child.wait();
    let version = answer?;
    eprintln!("install: the installed informer-testserver answers /version: {version}");
    Ok(())
}

/// Reads the `url:` line the server prints once it accepts connections, then GETs `/version`.
fn ask_version(child: &mut Child) -> anyhow::Result<String> {
    let stdout = child.stdout.take().context("the server's stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let url = loop {
        let line = lines
            .next()
            .context("the server exited without printing `url: …`")??;
        if let Some(url) = line.strip_prefix("url: ") {
            break url.to_owned();
        }
    };
    let body = http_get(&url, "/version")?;
    ensure!(
        body.contains("\"gitVersion\""),
        "/version did not answer a version: {body}"
    );
    Ok(body.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// The body of a plain HTTP/1.0 GET of `path` on `url` (`http://host:port`), which must be 200.
fn http_get(url: &str, path: &str) -> anyhow::Result<String> {
    let Some(authority) = url.strip_prefix("http://") else {
        bail!("the server printed {url:?}, not an http:// URL");
    };
    let authority = authority.trim_end_matches('/');
    let mut stream =
        TcpStream::connect(authority).with_context(|| format!("connecting to {authority}"))?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(
        stream,
        "GET {path} HTTP/1.0\r\nHost: {authority}\r\nAccept: application/json\r\n\r\n"
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let (head, body) = response
        .split_once("\r\n\r\n")
        .context("no end of the HTTP head")?;
    ensure!(
        head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
        "GET {path}: {}",
        head.lines().next().unwrap_or_default()
    );
    Ok(body.to_owned())
}

#[cfg(test)]
mod tests {
    /// `cargo install --features cli` of informer-testserver gives a binary that serves the
    /// API.
    #[test]
    fn the_installed_testserver_answers_version() {
        if let Err(e) = super::run() {
            panic!("{e:#}");
        }
    }
}
