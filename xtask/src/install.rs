//! `cargo xtask install`: `cargo install` of the three binaries the README has users install,
//! each run as the README runs it: informer-testserver's standalone server, started and asked
//! for `/version`; informer-gen, generating a crate's code and checking it with `--check`;
//! informer-envtest, building (or finding) kube-apiserver and etcd.
//!
//! The install runs outside the workspace (so this repository's `.cargo/config.toml`, which sets
//! `K8S_OPENAPI_ENABLED_VERSION`, does not apply: the `cli` feature alone must pick the
//! Kubernetes version), with the workspace's lock file, offline once the workspace's locked
//! packages are fetched (a download only where they are missing), with the dev profile
//! (`--debug`: a release build of the server would take minutes) into `<target>/user-crates`,
//! the target directory `cargo xtask template` builds the user's crate in (the same clean
//! environment, so the kube stack they share is built once), kept between runs, so a second run
//! only copies the binary. Each install root (`<target>/<crate>-install`) is made anew each
//! time, so the binary is always installed.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};

use crate::project_root;
use crate::template::{self, USER_CRATES, clean_env};

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

/// Installs the three binaries the README has users install, each checked as the README uses
/// it: informer-testserver serves `/version`; informer-gen generates a crate's code and
/// `--check` finds it fresh; informer-envtest builds kube-apiserver and etcd (found in its cache
/// when the workspace's tests or CI's build step built them).
pub(crate) fn run() -> anyhow::Result<()> {
    let root = project_root();
    let outer =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let target = outer.join(USER_CRATES);
    // `--offline` reads only packages already downloaded, and on a machine that has not built
    // the workspace yet (a fresh CI runner, a clean clone) the `cli` features' are not: fetch
    // the workspace's locked packages for this host first (no network when they are present).
    // `--locked` then installs exactly those versions, as `cargo install --locked` installs a
    // published binary with the lock file packaged beside it.
    fetch_locked(&root)?;
    let server = install(&root, &outer, &target, "informer-testserver", &["cli"])?;
    let mut child = Command::new(&server)
        .args(["--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("starting {}", server.display()))?;
    let answer = ask_version(&mut child);
    // Our own child: stop it whatever the answer was.
    let _ = child.kill();
    let _ = child.wait();
    let version = answer?;
    eprintln!("install: the installed informer-testserver answers /version: {version}");

    let generator = install(&root, &outer, &target, "informer-gen", &[])?;
    generated_in_a_crate(&root, &target, &generator)?;

    let envtest = install(&root, &outer, &target, "informer-envtest", &["cli"])?;
    let mut cmd = Command::new(&envtest);
    cmd.arg("build");
    clean_env(&mut cmd, &target);
    let status = cmd.status().context("running informer-envtest build")?;
    ensure!(status.success(), "informer-envtest build failed: {status}");
    eprintln!("install: the installed informer-envtest built (or found) kube-apiserver and etcd");
    Ok(())
}

/// `cargo install --path <crate> --features …` outside the workspace, as a user installs it,
/// with the dev profile into `target` and a fresh install root: the installed binary's path.
fn install(
    root: &Path,
    outer: &Path,
    target: &Path,
    krate: &str,
    features: &[&str],
) -> anyhow::Result<PathBuf> {
    let install_root = outer.join(format!("{krate}-install"));
    if install_root.exists() {
        std::fs::remove_dir_all(&install_root)
            .with_context(|| format!("removing {}", install_root.display()))?;
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.arg("install").arg("--path").arg(root.join(krate));
    if !features.is_empty() {
        cmd.args(["--features", &features.join(",")]);
    }
    cmd.args(["--locked", "--offline", "--debug", "--root"])
        .arg(&install_root)
        .current_dir(std::env::temp_dir());
    clean_env(&mut cmd, target);
    eprintln!(
        "install: cargo install --path {krate} {}--locked --offline --debug --root {}",
        features
            .iter()
            .map(|f| format!("--features {f} "))
            .collect::<String>(),
        install_root.display()
    );
    let start = Instant::now();
    let status = cmd.status().context("running cargo install")?;
    eprintln!(
        "install: {krate} took {:.0} s",
        start.elapsed().as_secs_f64()
    );
    ensure!(
        status.success(),
        "cargo install of {krate} failed: {status}"
    );
    Ok(install_root
        .join("bin")
        .join(format!("{krate}{}", std::env::consts::EXE_SUFFIX)))
}

/// The README's route for checked-in generated code: the template's `types/` crate with
/// `out-dir = "src/generated"` in its `informer-gen.toml`, outside the workspace; the installed
/// `informer-gen` writes the code there, then `informer-gen --check` finds it fresh, and fails
/// once an input changed.
fn generated_in_a_crate(root: &Path, target: &Path, generator: &Path) -> anyhow::Result<()> {
    let types = root.join(template::TEMPLATE).join("types");
    let copy = std::env::temp_dir().join("informer-rs-generated-in-a-crate");
    if copy.exists() {
        std::fs::remove_dir_all(&copy).with_context(|| format!("removing {}", copy.display()))?;
    }
    template::sync_dir(&types, &copy)?;
    let manifest = std::fs::read_to_string(types.join("Cargo.toml"))?;
    template::write_if_changed(
        &copy.join("Cargo.toml"),
        &template::local_paths(&manifest, root)?,
    )?;
    std::fs::copy(root.join("Cargo.lock"), copy.join("Cargo.lock"))?;
    let config = std::fs::read_to_string(types.join("informer-gen.toml"))?;
    template::write_if_changed(
        &copy.join("informer-gen.toml"),
        &format!("out-dir = \"src/generated\"\n{config}"),
    )?;
    let run = |args: &[&str]| -> anyhow::Result<std::process::Output> {
        let mut cmd = Command::new(generator);
        cmd.args(args).current_dir(&copy);
        clean_env(&mut cmd, target);
        // `cargo metadata`, which informer-gen runs, needs no network with the lock file here.
        cmd.env("CARGO_NET_OFFLINE", "true");
        cmd.output().context("running informer-gen")
    };
    let generate = run(&[])?;
    ensure!(
        generate.status.success(),
        "informer-gen in a crate failed: {}",
        String::from_utf8_lossy(&generate.stderr)
    );
    let written = copy.join("src/generated");
    ensure!(
        written.is_dir() && std::fs::read_dir(&written)?.next().is_some(),
        "informer-gen wrote nothing to {}",
        written.display()
    );
    let fresh = run(&["--check"])?;
    ensure!(
        fresh.status.success(),
        "informer-gen --check right after informer-gen failed: {}",
        String::from_utf8_lossy(&fresh.stderr)
    );
    // An input changed: the code checked in is stale.
    let source = copy.join("src/widget.rs");
    let text = std::fs::read_to_string(&source)?;
    std::fs::write(
        &source,
        text.replace("kind = \"Widget\"", "kind = \"Gadget\""),
    )?;
    let stale = run(&["--check"])?;
    ensure!(
        !stale.status.success(),
        "informer-gen --check passed after an input changed"
    );
    eprintln!(
        "install: the installed informer-gen generates a crate's code, and --check finds it fresh, then stale"
    );
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
    /// The installed binaries work as the README uses them: informer-testserver serves the API,
    /// informer-gen generates and checks a crate's code, informer-envtest builds its servers.
    #[test]
    fn the_installed_binaries_work() {
        if let Err(e) = super::run() {
            panic!("{e:#}");
        }
    }
}
