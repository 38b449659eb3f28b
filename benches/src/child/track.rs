//! What the "one handler" of each scenario does: count updates, spot a sentinel, time queries.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use tokio::sync::Notify;

use super::{ChildIo, ChildSpec, PHASE_TIMEOUT_S, memory_metrics, within};
use crate::pods::namespace_name;
use crate::protocol::{ChildMsg, GENERATION_ANNOTATION, Metrics};

/// Scenario 2's handler state: counts update notifications and knows when every Pod has reached
/// the final generation. Completion is by final state, not by count, so an implementation that
/// coalesces updates (H10) still finishes; `events` then shows how many calls it made.
#[derive(Debug)]
pub(crate) struct UpdateTracker {
    final_generation: u64,
    expected: usize,
    inner: Mutex<TrackerInner>,
    done: Notify,
}

#[derive(Debug, Default)]
struct TrackerInner {
    events: u64,
    at_final: usize,
    first: Option<Instant>,
    last: Option<Instant>,
}

impl UpdateTracker {
    /// A tracker waiting for `expected` Pods to reach `final_generation`.
    pub(crate) fn new(expected: usize, final_generation: u64) -> Self {
        UpdateTracker {
            final_generation,
            expected,
            inner: Mutex::default(),
            done: Notify::new(),
        }
    }

    /// The handler body: one update notification for `pod`.
    pub(crate) fn on_update(&self, pod: &Pod) {
        let generation = pod
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(GENERATION_ANNOTATION));
        self.on_generation(generation.map(String::as_str));
    }

    /// The handler body for a Pod whose generation annotation is `generation`.
    pub(crate) fn on_generation(&self, generation: Option<&str>) {
        let generation = generation.and_then(|g| g.parse::<u64>().ok()).unwrap_or(0);
        let now = Instant::now();
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.events += 1;
        inner.first.get_or_insert(now);
        if generation == self.final_generation {
            inner.at_final += 1;
            if inner.at_final == self.expected {
                inner.last = Some(now);
                self.done.notify_one();
            }
        }
    }

    /// Waits until every Pod reached the final generation, then reports the delivery rate.
    pub(crate) async fn finished(&self, updates: u64) -> Metrics {
        loop {
            let notified = self.done.notified();
            {
                let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
                if let (Some(first), Some(last)) = (inner.first, inner.last) {
                    let secs = last.duration_since(first).as_secs_f64().max(1e-9);
                    return Metrics::from([
                        ("handler_calls".to_string(), inner.events as f64),
                        ("deliver_s".to_string(), secs),
                        ("events_per_s".to_string(), updates as f64 / secs),
                    ]);
                }
            }
            notified.await;
        }
    }
}

/// Scenario 4's handler state: has the sentinel Pod arrived?
#[derive(Debug)]
pub(crate) struct Sentinel {
    name: String,
    seen: Notify,
}

impl Sentinel {
    /// Watches for a Pod named `name`.
    pub(crate) fn new(name: &str) -> Self {
        Sentinel {
            name: name.to_string(),
            seen: Notify::new(),
        }
    }

    /// The handler body: an added or updated Pod.
    pub(crate) fn on_pod(&self, pod: &Pod) {
        self.on_name(pod.metadata.name.as_deref());
    }

    /// [`on_pod`](Self::on_pod) for any cached form of the Pod, by its name.
    pub(crate) fn on_name(&self, name: Option<&str>) {
        if name == Some(self.name.as_str()) {
            // `notify_one` stores a permit, so a sentinel that arrives before anyone waits is not lost.
            self.seen.notify_one();
        }
    }

    /// Waits for the sentinel.
    pub(crate) async fn seen(&self) {
        self.seen.notified().await;
    }
}

/// Scenario 5: runs `query` over every namespace, round after round, until `min` has passed, and
/// reports the mean time per query and the objects each returned.
pub(crate) fn time_queries(
    namespaces: usize,
    min: Duration,
    mut query: impl FnMut(&str) -> usize,
) -> Metrics {
    let names: Vec<String> = (0..namespaces.max(1)).map(namespace_name).collect();
    let start = Instant::now();
    let (mut queries, mut results) = (0u64, 0u64);
    loop {
        for ns in &names {
            results += query(ns) as u64;
            queries += 1;
        }
        if start.elapsed() >= min {
            break;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    Metrics::from([
        ("queries".to_string(), queries as f64),
        ("query_us".to_string(), secs * 1e6 / queries as f64),
        (
            "results_per_query".to_string(),
            results as f64 / queries as f64,
        ),
    ])
}

/// Scenario 2 after the sync: records the steady heap, resets the peaks (so `heap_peak_mib` is the
/// peak of the update phase), tells the orchestrator to produce the updates, and waits until the
/// handler saw every Pod reach the final generation.
pub(crate) async fn update_phase(
    mut m: Metrics,
    tracker: &UpdateTracker,
    spec: &ChildSpec,
    io: &mut ChildIo,
) -> anyhow::Result<Metrics> {
    m.insert(
        "steady_heap_mib".into(),
        m.get("heap_mib").copied().unwrap_or(0.0),
    );
    crate::alloc::reset_peak();
    crate::sys::reset_peak_rss();
    io.send(&ChildMsg::Synced { metrics: m.clone() });
    let updates = spec.update_rounds * spec.objects as u64;
    m.extend(within(PHASE_TIMEOUT_S, "the updates", tracker.finished(updates)).await?);
    m.extend(memory_metrics());
    Ok(m)
}

/// Scenario 4 after the sync: mark the steady state, wait for the sentinel that follows the
/// relist, and report the peak between the two.
pub(crate) async fn relist_phase(
    io: &mut ChildIo,
    sentinel: Arc<Sentinel>,
    len: impl Fn() -> usize,
) -> anyhow::Result<Metrics> {
    let steady = io.mark().await?;
    let t = Instant::now();
    within(PHASE_TIMEOUT_S, "the relist sentinel", sentinel.seen()).await?;
    let after = memory_metrics();
    let get = |m: &Metrics, k: &str| m.get(k).copied().unwrap_or(0.0);
    Ok(Metrics::from([
        ("steady_heap_mib".to_string(), get(&steady, "heap_mib")),
        (
            "relist_heap_peak_mib".to_string(),
            get(&after, "heap_peak_mib"),
        ),
        (
            "relist_peak_over_steady".to_string(),
            get(&after, "heap_peak_mib") / get(&steady, "heap_mib").max(1e-9),
        ),
        ("heap_after_mib".to_string(), get(&after, "heap_mib")),
        ("steady_rss_mib".to_string(), get(&steady, "rss_mib")),
        (
            "relist_rss_peak_mib".to_string(),
            get(&after, "rss_peak_mib"),
        ),
        ("relist_s".to_string(), t.elapsed().as_secs_f64()),
        ("objects".to_string(), len() as f64),
    ]))
}
