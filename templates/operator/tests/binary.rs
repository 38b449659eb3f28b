//! The operator binary itself, as `cargo run` starts it: KUBECONFIG names informer-testserver,
//! `RUST_LOG` is unset (so `info`), and the binary logs its start and reconciles a Widget.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube::CustomResourceExt;
use widget_operator::widget::{Widget, WidgetSpec};

const WAIT: Duration = Duration::from_secs(30);

/// Kills the binary when the test ends, passed or not.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits for a line of `lines` that contains `needle`; every line read is kept in `seen`.
fn wait_line(lines: &mpsc::Receiver<String>, needle: &str, seen: &mut Vec<String>) -> bool {
    let deadline = Instant::now() + WAIT;
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match lines.recv_timeout(left) {
            Ok(line) => {
                let found = line.contains(needle);
                seen.push(line);
                if found {
                    return true;
                }
            }
            Err(_) => return false,
        }
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_logs_and_reconciles() -> Result<(), Box<dyn std::error::Error>> {
    let server = TestServer::start().await?;
    server.create(&Widget::crd())?;
    let kubeconfig = std::env::temp_dir()
        .join(format!("widget-operator-{}.kubeconfig", std::process::id()));
    server.write_kubeconfig(&kubeconfig)?;

    let mut child = Command::new(env!("CARGO_BIN_EXE_widget-operator"))
        .env("KUBECONFIG", &kubeconfig)
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .spawn()?;
    let stdout = child.stdout.take().ok_or("stdout is piped")?;
    let _running = Running(child);
    let (send, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if send.send(line).is_err() {
                break;
            }
        }
    });

    let mut seen = Vec::new();
    assert!(wait_line(&lines, "caches synced", &mut seen), "no start logged: {seen:#?}");
    assert!(seen.iter().any(|l| l.contains("INFO")), "info level by default: {seen:#?}");

    let widgets: Api<Widget> = Api::namespaced(server.client(), "default");
    let widget = Widget::new("from-binary", WidgetSpec { message: "hi".into() });
    widgets.create(&PostParams::default(), &widget).await?;
    let cm = server
        .wait_until::<ConfigMap>(Some("default"), "from-binary", WAIT, |cm| cm.is_some())
        .await?;
    assert!(cm.is_some(), "the binary reconciled the Widget");
    let _ = std::fs::remove_file(&kubeconfig);
    Ok(())
}
