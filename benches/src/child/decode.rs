//! Scenario 6, the limit: decode the same LIST pages with serde_json alone.
//!
//! The pages are fetched first (untimed) exactly as an informer asks for them (`limit` = the page
//! size, following `continue`), then decoded one after another into `ObjectList<Pod>` on one
//! thread, keeping every object, as an informer's first sync does. No informer can sync faster
//! than this on one core, so it bounds scenario 1.
//!
//! The decode goal (`pool_speedup`): informer-runtime's own LIST decode (`RawListPage::stream`,
//! then `StreamedList::decode_on`: the reflector's one LIST driver, T6) of the same protobuf
//! pages into the compact Pod, on a pool of `--decode-threads` threads (default two) against
//! inline on one.

use std::time::Instant;

use anyhow::Context;
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::core::{ObjectList, Request};

use informer_runtime::list_watch::{DecodePool, ListRequest, ListWatch, RawListPage};
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
    m.extend(skip_versus_decode(lw_client.clone(), spec).await?);
    m.extend(protobuf_ceiling(lw_client.clone(), spec).await?);
    m.extend(pool_speedup(lw_client, spec).await?);
    Ok(m)
}

/// Every LIST page of `lw` (`limit` = `page_size`, following `continue`), fetched and not
/// decoded.
async fn raw_pages<K>(lw: &ListWatch<K>, page_size: u32) -> anyhow::Result<Vec<RawListPage<K>>>
where
    K: serde::de::DeserializeOwned + Send + 'static,
{
    let mut pages = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let req = ListRequest {
            limit: Some(page_size),
            continue_token: token.take(),
            ..Default::default()
        };
        let page = lw.list_raw(&req).await.context("LIST page")?;
        token = page.continue_token.clone();
        pages.push(page);
        if token.is_none() {
            return Ok(pages);
        }
    }
}

/// Scenario 9's limit on client-side filtering: informer-rs's own decode of the same pages,
/// fully, against the same pages filtered by a shard that admits (almost) nothing, so every
/// object is read up to its metadata and skipped (KEP-5866 on a server without the feature).
async fn skip_versus_decode(client: kube::Client, spec: &ChildSpec) -> anyhow::Result<Metrics> {
    let lw = ListWatch::<Pod>::new(kube::Api::all(client)).prefer_protobuf(false);
    let pages = raw_pages(&lw, spec.page_size).await?;
    // Each pass decodes its own handle on the same bodies.
    let filtered = pages.clone();
    // Decoded inline, on this thread, each object dropped as soon as it is decoded.
    let inline = DecodePool::inline();
    let count = |_: Pod| Some(());
    let start = Instant::now();
    let mut decoded = 0usize;
    for page in pages {
        decoded += page
            .stream()
            .decode_on(&inline, count, |_, _| ())
            .await?
            .items
            .len();
    }
    let decode_s = start.elapsed().as_secs_f64().max(1e-9);
    // The hash range [0, 1): no Pod's UID hashes to 0.
    let none = Shard::range(ShardField::Uid, 0, 1)?;
    let start = Instant::now();
    let mut kept = 0usize;
    for page in filtered {
        let list = page.client_shard(Some(none.clone())).stream();
        kept += list.decode_on(&inline, count, |_, _| ()).await?.items.len();
    }
    let skip_s = start.elapsed().as_secs_f64();
    anyhow::ensure!(kept == 0 && decoded > 0, "kept {kept} of {decoded}");
    Ok(Metrics::from([
        ("ours_decode_s".to_string(), decode_s),
        ("skip_decode_s".to_string(), skip_s),
        ("skip_over_decode".to_string(), skip_s / decode_s),
    ]))
}

/// Passes of each kind [`pool_speedup`] times, alternating, after one untimed pass.
const POOL_PASSES: usize = 3;

/// The decode goal: the compact Pod's LIST pages over protobuf (the runtime's default wire for
/// built-in kinds, the headline form), fetched once (untimed), then decoded by the reflector's
/// own page decode on a pool of `threads` threads and inline, each decoded object kept until
/// the pass ends, as a cache keeps it. One untimed pass first, so every timed pass finds the
/// sharing pools and the recent-parts cache (P8) as warm as the others; then the two kinds of
/// pass alternate and each reports its median. `--decode-threads 1` has nothing to compare.
async fn pool_speedup(client: kube::Client, spec: &ChildSpec) -> anyhow::Result<Metrics> {
    let threads = spec.decode_threads.unwrap_or(2);
    if threads < 2 {
        return Ok(Metrics::new());
    }
    let lw = ListWatch::<crate::CompactPod>::of_source(kube::Api::<Pod>::all(client))
        .prefer_protobuf(true);
    let pages = raw_pages(&lw, spec.page_size).await?;
    let pool = DecodePool::new(threads).context("starting the decode pool")?;
    let inline = DecodePool::inline();
    // One pass: every page decoded in wire order on `on`; the objects and the seconds.
    async fn pass(
        pages: &[RawListPage<crate::CompactPod>],
        on: &DecodePool,
    ) -> anyhow::Result<(usize, f64)> {
        let start = Instant::now();
        let mut kept = Vec::with_capacity(pages.len());
        for page in pages {
            let list = page.clone().stream();
            kept.push(list.decode_on(on, Some, |_, _| ()).await?.items);
        }
        let seconds = start.elapsed().as_secs_f64().max(1e-9);
        Ok((kept.iter().map(Vec::len).sum(), seconds))
    }
    let (objects, _) = pass(&pages, &inline).await?;
    let (mut one, mut many) = (Vec::new(), Vec::new());
    for _ in 0..POOL_PASSES {
        let (n1, s1) = pass(&pages, &inline).await?;
        let (n2, s2) = pass(&pages, &pool).await?;
        anyhow::ensure!(
            n1 == objects && n2 == objects,
            "decoded {n1} inline and {n2} on the pool, {objects} at first"
        );
        one.push(s1);
        many.push(s2);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (one_s, many_s) = (median(&mut one), median(&mut many));
    Ok(Metrics::from([
        ("pool_threads".to_string(), pool.threads() as f64),
        ("pool_inline_decode_s".to_string(), one_s),
        (
            "pool_inline_objects_per_s".to_string(),
            objects as f64 / one_s,
        ),
        ("pool_decode_s".to_string(), many_s),
        ("pool_objects_per_s".to_string(), objects as f64 / many_s),
        ("pool_speedup".to_string(), one_s / many_s),
    ]))
}

/// The protobuf decode ceiling: the same Pods fetched as protobuf LIST pages (untimed), then
/// decoded on one thread by prost into k8s-pb's message types (what client-go's generated
/// `Unmarshal` does, in Rust) and by informer-proto's deserializer straight into each cached
/// form: the k8s-openapi Pod, the generated compact Pod and the controller projection.
async fn protobuf_ceiling(client: kube::Client, spec: &ChildSpec) -> anyhow::Result<Metrics> {
    use informer_proto::frame::{Envelope, List};
    use prost::Message as _;

    let mut bodies: Vec<Vec<u8>> = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut uri = format!("/api/v1/pods?limit={}", spec.page_size);
        if let Some(t) = token.take() {
            uri.push_str("&continue=");
            uri.push_str(&t);
        }
        let req = http::Request::get(uri)
            .header(http::header::ACCEPT, informer_proto::MEDIA_TYPE)
            .body(Vec::new())?;
        let res = client.send(req.map(Into::into)).await?;
        anyhow::ensure!(res.status().is_success(), "protobuf LIST: {}", res.status());
        let body = http_body_util::BodyExt::collect(res.into_body())
            .await?
            .to_bytes()
            .to_vec();
        let env = Envelope::read(&body)?;
        let list = List::read(env.raw)?;
        token = Some(list.meta.continue_token.to_string()).filter(|t| !t.is_empty());
        bodies.push(body);
        if token.is_none() {
            break;
        }
    }
    let pb_bytes: usize = bodies.iter().map(Vec::len).sum();
    let message = informer_proto::for_kind("v1", "Pod").context("the Pod message")?;

    let start = Instant::now();
    let mut prost_pods = 0usize;
    for body in &bodies {
        let env = Envelope::read(body)?;
        let list = k8s_pb::api::core::v1::PodList::decode(env.raw)?;
        prost_pods += list.items.len();
    }
    let prost_s = start.elapsed().as_secs_f64().max(1e-9);

    /// Decodes every item of every body into `T`; the count and the seconds. As an informer
    /// does: one interning scope per page, and every decoded object kept (a cache holds them),
    /// so interned strings and shared parts are found again, not freed and made again item by
    /// item. The objects are dropped after the clock stops.
    fn ours<T: serde::de::DeserializeOwned>(
        bodies: &[Vec<u8>],
        message: &'static informer_proto::Message,
    ) -> anyhow::Result<(usize, f64)> {
        let start = Instant::now();
        let mut kept: Vec<T> = Vec::new();
        for body in bodies {
            let _scope = informer_runtime::projection::InternScope::enter();
            for item in page_items(body)? {
                kept.push(informer_proto::from_slice(message, item?)?);
            }
        }
        let seconds = start.elapsed().as_secs_f64().max(1e-9);
        Ok((kept.len(), seconds))
    }
    let (typed_n, typed_s) = ours::<Pod>(&bodies, message)?;
    let (compact_n, compact_s) = ours::<crate::CompactPod>(&bodies, message)?;
    let (view_n, view_s) = ours::<crate::projection::PodView>(&bodies, message)?;
    let conversions = conversions(&bodies, message)?;
    anyhow::ensure!(
        typed_n == prost_pods && compact_n == prost_pods && view_n == prost_pods,
        "prost {prost_pods}, typed {typed_n}, compact {compact_n}, projection {view_n}"
    );
    let per_s = |s: f64| prost_pods as f64 / s;
    Ok(Metrics::from([
        ("pb_mib".to_string(), pb_bytes as f64 / MIB),
        ("prost_decode_s".to_string(), prost_s),
        ("prost_objects_per_s".to_string(), per_s(prost_s)),
        ("pb_typed_decode_s".to_string(), typed_s),
        ("pb_typed_objects_per_s".to_string(), per_s(typed_s)),
        ("pb_compact_decode_s".to_string(), compact_s),
        ("pb_compact_objects_per_s".to_string(), per_s(compact_s)),
        ("pb_projection_decode_s".to_string(), view_s),
        ("pb_projection_objects_per_s".to_string(), per_s(view_s)),
        ("pb_compact_over_prost".to_string(), compact_s / prost_s),
        (
            "to_full_ns_per_pod".to_string(),
            conversions.to_full_s * 1e9 / prost_pods.max(1) as f64,
        ),
        (
            "to_compact_ns_per_pod".to_string(),
            conversions.to_compact_s * 1e9 / prost_pods.max(1) as f64,
        ),
        ("to_full_differs".to_string(), conversions.differ as f64),
    ]))
}

/// The items of one protobuf LIST body, as byte slices of it.
fn page_items(body: &[u8]) -> anyhow::Result<impl Iterator<Item = anyhow::Result<&[u8]>>> {
    use informer_proto::frame::{Envelope, List};
    let env = Envelope::read(body)?;
    let list = List::read(env.raw)?;
    Ok(list
        .items()
        .map(move |range| env.raw.get(range?).context("an item inside its list")))
}

/// What the conversions a write takes cost (P2, decision record 26).
struct Conversions {
    /// Seconds converting every cached compact Pod to k8s-openapi's (for `kube::Api`).
    to_full_s: f64,
    /// Seconds converting every k8s-openapi Pod to the compact one.
    to_compact_s: f64,
    /// Converted Pods that differ from the same Pod decoded as k8s-openapi's: reported, not
    /// asserted (the tests hold the conversions to P1, informer-k8s/tests/compact.rs).
    differ: usize,
}

/// Times both conversions page by page, after the timed decodes: each page is decoded into both
/// forms untimed, converted both ways under the clock, compared and dropped, so the scenario
/// holds one page of each form at a time and the decodes above run as before.
fn conversions(
    bodies: &[Vec<u8>],
    message: &'static informer_proto::Message,
) -> anyhow::Result<Conversions> {
    let mut c = Conversions {
        to_full_s: 0.0,
        to_compact_s: 0.0,
        differ: 0,
    };
    for body in bodies {
        let _scope = informer_runtime::projection::InternScope::enter();
        let mut full: Vec<Pod> = Vec::new();
        let mut compact: Vec<crate::CompactPod> = Vec::new();
        for item in page_items(body)? {
            let item = item?;
            full.push(informer_proto::from_slice(message, item)?);
            compact.push(informer_proto::from_slice(message, item)?);
        }
        let start = Instant::now();
        let to_full: Vec<Pod> = compact.iter().map(Pod::from).collect();
        c.to_full_s += start.elapsed().as_secs_f64();
        let start = Instant::now();
        let to_compact: Vec<crate::CompactPod> = full.iter().map(crate::CompactPod::from).collect();
        c.to_compact_s += start.elapsed().as_secs_f64();
        c.differ += to_full.iter().zip(&full).filter(|(a, b)| a != b).count();
        drop((to_full, to_compact));
    }
    Ok(c)
}
