//! A fleet operator over three embedded API servers (decision record 29).
//!
//! Three informer-testservers play the member clusters `east`, `west` and `north`, each with a
//! Namespace `team-a` labelled `fleet.example/policy=on` and a Namespace `team-b` without it.
//! The fleet engages east and west, and the operator (`informer_examples::fleet`) writes the
//! policy ConfigMap into each `team-a`. Then north is engaged while the operator runs, west is
//! removed (its informers stop: its server serves no watch any more), and the demo reads each
//! policy back from the servers themselves before it exits 0.
//!
//! ```sh
//! cargo run -p informer-examples --example fleet
//! ```
//!
//! Against real clusters, a `DirectoryProvider` (kubeconfig files) or a `SecretProvider`
//! (kubeconfig Secrets in a management cluster) takes the place of the `StaticProvider` here.

#![allow(clippy::print_stdout)]

use std::time::Duration;

use anyhow::{Context as _, bail};
use informer_controller::fleet::{ClusterSpec, StaticProvider};
use informer_examples::fleet::{self, CONFIG_MAP, Policy, pairs};
use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use tokio_util::sync::CancellationToken;

/// A member cluster: a server with `team-a` (labelled) and `team-b` (not).
async fn member() -> anyhow::Result<TestServer> {
    let server = TestServer::start().await?;
    fleet::create_namespaces(&server.client())
        .await
        .context("creating the Namespaces")?;
    Ok(server)
}

/// Waits up to 30 s for `cond`, checking every 20 ms.
async fn wait_for(what: &str, mut cond: impl FnMut() -> bool) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !cond() {
        if tokio::time::Instant::now() > deadline {
            bail!("timed out waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // The fleet logs each cluster engaged and disengaged at info.
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
                tracing_subscriber::EnvFilter::new("informer_controller=info,warn")
            }),
        )
        .with_target(false)
        .init();
    let (east, west, north) = (member().await?, member().await?, member().await?);
    let provider = StaticProvider::new([
        ("east", ClusterSpec::new(east.kube_config())),
        ("west", ClusterSpec::new(west.kube_config())),
    ]);
    let clusters = provider.handle();
    let fleet = fleet::fleet();
    let cancel = CancellationToken::new();
    let policy = Policy {
        text: "no-privileged-pods".to_owned(),
    };
    let running = fleet::spawn(&fleet, provider, policy, &cancel);

    wait_for("the policy in east and west", || {
        fleet::policies(&fleet) == pairs(&[("east", "team-a"), ("west", "team-a")])
    })
    .await?;
    println!("policy written: {:?}", fleet::policies(&fleet));

    println!("engaging north while the operator runs");
    clusters.insert("north", ClusterSpec::new(north.kube_config()));
    wait_for("the policy in north", || {
        fleet::policies(&fleet).contains(&("north".to_owned(), "team-a".to_owned()))
    })
    .await?;

    println!("removing west");
    clusters.remove("west");
    wait_for("west to leave", || {
        fleet::policies(&fleet) == pairs(&[("east", "team-a"), ("north", "team-a")])
    })
    .await?;
    if !west
        .wait_for_active_watches(0, Duration::from_secs(10))
        .await
    {
        bail!(
            "west's server still serves {} watches",
            west.active_watches()
        );
    }
    println!("west left: its server serves no watch");

    for (name, server) in [("east", &east), ("north", &north)] {
        let written = Api::<ConfigMap>::namespaced(server.client(), "team-a")
            .get(CONFIG_MAP)
            .await
            .with_context(|| format!("reading {name}'s policy"))?;
        let data = written.data.unwrap_or_default();
        println!(
            "{name}: team-a/{CONFIG_MAP} = {:?} (cluster {:?})",
            data.get("policy"),
            data.get("cluster")
        );
    }
    for status in fleet.clusters() {
        println!("cluster {}: {:?}", status.name, status.state);
    }

    cancel.cancel();
    running.controller.await??;
    running.fleet.await??;
    Ok(())
}
