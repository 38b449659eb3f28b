//! Scenario 6, the limit: decode the same LIST pages with serde_json alone.
//!
//! The pages are fetched first (untimed) exactly as an informer asks for them (`limit` = the page
//! size, following `continue`), then decoded one after another into `ObjectList<Pod>` on one
//! thread, keeping every object, as an informer's first sync does. No informer can sync faster
//! than this on one core, so it bounds scenario 1.

use std::time::Instant;

use anyhow::Context;
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::core::{ObjectList, Request};

use informer_runtime::list_watch::{ListRequest, ListWatch};
use informer_runtime::shard::{Shard, ShardField};

use super::{ChildSpec, client, memory_metrics};
use crate::alloc::heap_stats;
use crate::protocol::{MIB, Metrics};

/// Fetches the pages, decodes them, and reports the decode throughput.
pub(crate) async fn run(spec: &ChildSpec) -> anyhow::Result<Metrics> {
    let client = client(&spec.url, spec.kubeconfig.as_deref()).await?;
    let request = Request::new("/api/v1/pods");
    let lw_client = client.clone();
    let mut pages: Vec<Vec<u8>> = Vec::new();
    let mut continue_token: Option<String> = None;
    loop {
        let mut lp = ListParams::default().limit(spec.page_size);
        if let Some(token) = continue_token.take() {
            lp = lp.continue_token(&token);
        }
        let text = client
            .request_text(request.list(&lp)?)
            .await
            .context("LIST page")?;
        let page: ObjectList<Pod> =
            serde_json::from_str(&text).context("decoding a page to find `continue`")?;
        pages.push(text.into_bytes());
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => continue_token = Some(token),
            _ => break,
        }
    }
    let bytes: usize = pages.iter().map(Vec::len).sum();
    let before = heap_stats().current;
    let start = Instant::now();
    let mut decoded: Vec<ObjectList<Pod>> = Vec::with_capacity(pages.len());
    for page in &pages {
        decoded.push(serde_json::from_slice(page).context("decoding a page")?);
    }
    let secs = start.elapsed().as_secs_f64().max(1e-9);
    let objects: usize = decoded.iter().map(|l| l.items.len()).sum();
    let typed_heap = heap_stats().current.saturating_sub(before);
    let mut m = Metrics::from([
        ("decode_s".to_string(), secs),
        ("objects".to_string(), objects as f64),
        ("pages".to_string(), pages.len() as f64),
        ("objects_per_s".to_string(), objects as f64 / secs),
        ("json_mib".to_string(), bytes as f64 / MIB),
        ("mib_per_s".to_string(), bytes as f64 / MIB / secs),
        (
            "json_bytes_per_object".to_string(),
            bytes as f64 / objects.max(1) as f64,
        ),
        ("typed_heap_mib".to_string(), typed_heap as f64 / MIB),
        (
            "typed_heap_bytes_per_object".to_string(),
            typed_heap as f64 / objects.max(1) as f64,
        ),
    ]);
    m.extend(memory_metrics());
    drop(decoded);
    m.extend(skip_versus_decode(lw_client, spec).await?);
    Ok(m)
}

/// Scenario 9's limit on client-side filtering: informer-rs's own decode of the same pages,
/// fully, against the same pages filtered by a shard that admits (almost) nothing, so every
/// object is read up to its metadata and skipped (KEP-5866 on a server without the feature).
async fn skip_versus_decode(client: kube::Client, spec: &ChildSpec) -> anyhow::Result<Metrics> {
    let lw = ListWatch::<Pod>::new(kube::Api::all(client)).prefer_protobuf(false);
    let mut pages = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let req = ListRequest {
            limit: Some(spec.page_size),
            continue_token: token.take(),
            ..Default::default()
        };
        let page = lw.list_raw(&req).await.context("LIST page")?;
        token = page.continue_token.clone();
        pages.push(page);
        if token.is_none() {
            break;
        }
    }
    // Each pass decodes its own handle on the same bodies.
    let filtered = pages.clone();
    let start = Instant::now();
    let mut decoded = 0usize;
    for page in pages {
        page.decode_each(|_pod| decoded += 1)?;
    }
    let decode_s = start.elapsed().as_secs_f64().max(1e-9);
    // The hash range [0, 1): no Pod's UID hashes to 0.
    let none = Shard::range(ShardField::Uid, 0, 1)?;
    let start = Instant::now();
    let mut kept = 0usize;
    for page in filtered {
        page.client_shard(Some(none.clone()))
            .decode_each(|_pod| kept += 1)?;
    }
    let skip_s = start.elapsed().as_secs_f64();
    anyhow::ensure!(kept == 0 && decoded > 0, "kept {kept} of {decoded}");
    Ok(Metrics::from([
        ("ours_decode_s".to_string(), decode_s),
        ("skip_decode_s".to_string(), skip_s),
        ("skip_over_decode".to_string(), skip_s / decode_s),
    ]))
}
