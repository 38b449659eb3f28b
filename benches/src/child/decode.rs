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

use super::{ChildSpec, client, memory_metrics};
use crate::alloc::heap_stats;
use crate::protocol::{MIB, Metrics};

/// Fetches the pages, decodes them, and reports the decode throughput.
pub(crate) async fn run(spec: &ChildSpec) -> anyhow::Result<Metrics> {
    let client = client(&spec.url)?;
    let request = Request::new("/api/v1/pods");
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
    Ok(m)
}
