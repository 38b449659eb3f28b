//! Throughput measurements (ignored by default; run in release):
//! `cargo test -p informer-testserver --release --test throughput -- --ignored --nocapture --test-threads 1`
//! The figures go into the crate README.
// Test helpers outside #[test] fns may unwrap too (clippy's test allowance covers only #[test]).
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use futures::StreamExt;
use http_body_util::BodyExt;
use informer_testserver::TestServer;
use serde_json::{Value, json};

/// A Pod of realistic size (about 2 KB of JSON).
fn bench_pod(i: usize) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": format!("pod-{i:06}"), "namespace": format!("ns-{}", i % 10),
            "labels": {"app": format!("app-{}", i % 50), "tier": "backend", "pod-template-hash": "5d8f7c9b6d"},
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z", "prometheus.io/scrape": "true"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "app-5d8f7c9b6d", "uid": "0f8e6c8a-3c1b-4d7e-9f5a-2b1c0d9e8f7a", "controller": true, "blockOwnerDeletion": true}]
        },
        "spec": {
            "nodeName": format!("node-{}", i % 100),
            "containers": [{
                "name": "app", "image": "registry.example.com/team/app:1.2.3",
                "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                "env": [{"name": "MODE", "value": "production"}, {"name": "LOG_LEVEL", "value": "info"}],
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "500m", "memory": "512Mi"}},
                "volumeMounts": [{"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}]
            }],
            "volumes": [{"name": "kube-api-access", "projected": {"sources": [{"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}}]}}],
            "restartPolicy": "Always", "schedulerName": "default-scheduler", "serviceAccountName": "default"
        },
        "status": {
            "phase": "Running", "podIP": format!("10.0.{}.{}", i / 250 % 250, i % 250), "hostIP": "192.168.1.10",
            "conditions": [
                {"type": "Initialized", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:05Z"},
                {"type": "ContainersReady", "status": "True", "lastTransitionTime": "2026-01-01T00:00:05Z"},
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}
            ],
            "containerStatuses": [{"name": "app", "ready": true, "restartCount": 0, "image": "registry.example.com/team/app:1.2.3",
                "imageID": "registry.example.com/team/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                "containerID": "containerd://0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                "state": {"running": {"startedAt": "2026-01-01T00:00:03Z"}}}]
        }
    })
}

async fn get_bytes(server: &TestServer, path: &str) -> bytes::Bytes {
    let req = http::Request::get(path)
        .body(kube::client::Body::from(Vec::new()))
        .unwrap();
    let resp = server.client().send(req).await.unwrap();
    assert_eq!(resp.status(), 200);
    resp.into_body().collect().await.unwrap().to_bytes()
}

fn mbps(bytes: usize, d: Duration) -> f64 {
    bytes as f64 / d.as_secs_f64() / 1e6
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "measurement; run in release"]
async fn list_50k_pods_in_pages_of_500() {
    let server = TestServer::start().await.unwrap();
    let t = Instant::now();
    for i in 0..50_000 {
        server.create_json(bench_pod(i)).unwrap();
    }
    let seed = t.elapsed();
    println!(
        "seed: 50000 pods through the store in {seed:?} ({:.0} writes/s)",
        50_000.0 / seed.as_secs_f64()
    );
    for round in 0..3 {
        let t = Instant::now();
        let (mut bytes, mut items, mut pages) = (0, 0, 0);
        let mut cont = String::new();
        loop {
            let body = get_bytes(&server, &format!("/api/v1/pods?limit=500&continue={cont}")).await;
            bytes += body.len();
            pages += 1;
            let v: Value = serde_json::from_slice(&body).unwrap();
            items += v["items"].as_array().unwrap().len();
            match v["metadata"]["continue"].as_str() {
                Some(c) => cont = c.to_owned(),
                None => break,
            }
        }
        let d = t.elapsed();
        assert_eq!(items, 50_000);
        println!(
            "list round {round}: {pages} pages, {items} pods, {:.1} MB in {d:?} = {:.0} MB/s, {:.0} pods/s (client parses every page with serde_json::Value)",
            bytes as f64 / 1e6,
            mbps(bytes, d),
            items as f64 / d.as_secs_f64()
        );
    }
    let t = Instant::now();
    let mut bytes = 0;
    let mut cont = String::new();
    loop {
        let body = get_bytes(&server, &format!("/api/v1/pods?limit=500&continue={cont}")).await;
        bytes += body.len();
        // Find the continue token without a full parse: it sits in the list metadata at the front.
        let head = std::str::from_utf8(&body[..body.len().min(600)]).unwrap();
        match head
            .split("\"continue\":\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
        {
            Some(c) => cont = c.to_owned(),
            None => break,
        }
    }
    let d = t.elapsed();
    println!(
        "list, raw bytes only: {:.1} MB in {d:?} = {:.0} MB/s",
        bytes as f64 / 1e6,
        mbps(bytes, d)
    );
}

async fn count_events(server: &TestServer, path: String, want: usize) -> (usize, usize) {
    let req = http::Request::get(path)
        .body(kube::client::Body::from(Vec::new()))
        .unwrap();
    let resp = server.client().send(req).await.unwrap();
    let mut body = resp.into_body().into_data_stream();
    let (mut lines, mut bytes) = (0, 0);
    while lines < want {
        let chunk = body.next().await.expect("stream ended").unwrap();
        bytes += chunk.len();
        lines += chunk.iter().filter(|b| **b == b'\n').count();
    }
    (lines, bytes)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "measurement; run in release"]
async fn watch_100k_events_to_several_watchers() {
    const N: usize = 100_000;
    const WATCHERS: usize = 4;
    let server = TestServer::builder()
        .history_size(2 * N)
        .watch_buffer(2 * N)
        .start()
        .await
        .unwrap();
    let start_rv = server.current_resource_version();

    // Live fan-out: watchers are connected before the writes.
    let server = std::sync::Arc::new(server);
    let handles: Vec<_> = (0..WATCHERS)
        .map(|_| {
            let server = server.clone();
            let path = format!("/api/v1/pods?watch=true&resourceVersion={start_rv}");
            tokio::spawn(async move { count_events(&server, path, N).await })
        })
        .collect();
    let ok = tokio::time::timeout(Duration::from_secs(10), async {
        while server.active_watches() < WATCHERS {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    assert!(ok.is_ok());
    let t = Instant::now();
    for i in 0..N {
        server.create_json(bench_pod(i)).unwrap();
    }
    let write = t.elapsed();
    let mut total = 0;
    for h in handles {
        let (lines, bytes) = h.await.unwrap();
        assert!(lines >= N);
        total += bytes;
    }
    let d = t.elapsed();
    println!(
        "live: {N} writes in {write:?} ({:.0} writes/s); {WATCHERS} watchers received {:.1} MB in {d:?} = {:.0} MB/s total",
        N as f64 / write.as_secs_f64(),
        total as f64 / 1e6,
        mbps(total, d)
    );

    // Replay from history: the same 100k events, served from memory as fast as the sockets go.
    let t = Instant::now();
    let handles: Vec<_> = (0..WATCHERS)
        .map(|_| {
            let server = server.clone();
            let path = format!("/api/v1/pods?watch=true&resourceVersion={start_rv}");
            tokio::spawn(async move { count_events(&server, path, N).await })
        })
        .collect();
    let mut total = 0;
    for h in handles {
        total += h.await.unwrap().1;
    }
    let d = t.elapsed();
    println!(
        "replay: {WATCHERS} watchers x {N} events, {:.1} MB in {d:?} = {:.0} MB/s total, {:.0} events/s per watcher",
        total as f64 / 1e6,
        mbps(total, d),
        N as f64 / d.as_secs_f64()
    );
}
