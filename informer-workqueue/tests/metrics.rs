//! Workqueue metrics (W7): exposed names are exactly client-go's and values follow the queue.
//!
//! Runs on paused tokio time (no sockets), so durations are exact.

use std::time::Duration;

use informer_workqueue::{RateLimitingQueue, WorkQueue, WorkQueueMetrics};
use prometheus_client::encoding::text::encode;
use prometheus_client::registry::Registry;

fn render(registry: &Registry) -> String {
    let mut text = String::new();
    encode(&mut text, registry).expect("writing to a String cannot fail");
    text
}

/// The value of the series `metric{labels}` in the text exposition, if present.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .map(|v| v.trim().parse().expect("metric values are numbers"))
}

#[tokio::test(start_paused = true)]
async fn w7_named_queue_exports_client_go_metrics_with_values() {
    let mut registry = Registry::default();
    let metrics = WorkQueueMetrics::new(&mut registry);
    let q: RateLimitingQueue<&str> = RateLimitingQueue::builder()
        .name("pods")
        .metrics(&metrics)
        .build();

    q.add("a");
    q.add("b");
    q.add("a"); // collapsed: not counted
    tokio::time::sleep(Duration::from_secs(1)).await;
    let a = tokio::time::timeout(Duration::from_secs(60), q.get())
        .await
        .unwrap()
        .unwrap(); // waited 1 s in the queue
    // Hold "a" in processing for 2.2 s: the 500 ms refresher last ran 2.0 s after the get.
    tokio::time::sleep(Duration::from_millis(2200)).await;
    let text = render(&registry);
    assert_eq!(value(&text, r#"workqueue_depth{name="pods"}"#), Some(1.0));
    assert_eq!(
        value(&text, r#"workqueue_adds_total{name="pods"}"#),
        Some(2.0)
    );
    assert_eq!(
        value(
            &text,
            r#"workqueue_queue_duration_seconds_count{name="pods"}"#
        ),
        Some(1.0)
    );
    assert_eq!(
        value(
            &text,
            r#"workqueue_queue_duration_seconds_sum{name="pods"}"#
        ),
        Some(1.0)
    );
    assert_eq!(
        value(&text, r#"workqueue_unfinished_work_seconds{name="pods"}"#),
        Some(2.0)
    );
    assert_eq!(
        value(
            &text,
            r#"workqueue_longest_running_processor_seconds{name="pods"}"#
        ),
        Some(2.0)
    );
    assert_eq!(
        value(
            &text,
            r#"workqueue_work_duration_seconds_count{name="pods"}"#
        ),
        Some(0.0)
    );

    q.add_rate_limited(a);
    q.done(&a);
    let text = render(&registry);
    assert_eq!(
        value(&text, r#"workqueue_retries_total{name="pods"}"#),
        Some(1.0)
    );
    assert_eq!(
        value(
            &text,
            r#"workqueue_work_duration_seconds_count{name="pods"}"#
        ),
        Some(1.0)
    );
    assert_eq!(
        value(&text, r#"workqueue_work_duration_seconds_sum{name="pods"}"#),
        Some(2.2)
    );
    // The 2.2 s run falls in the le=10 bucket but not le=1.
    assert!(text.contains(r#"workqueue_work_duration_seconds_bucket{le="1.0",name="pods"} 0"#));
    assert!(text.contains(r#"workqueue_work_duration_seconds_bucket{le="10.0",name="pods"} 1"#));

    // Nothing in flight any more: the gauges fall back to zero at the next refresh.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let text = render(&registry);
    assert_eq!(
        value(&text, r#"workqueue_unfinished_work_seconds{name="pods"}"#),
        Some(0.0)
    );
    assert_eq!(
        value(
            &text,
            r#"workqueue_longest_running_processor_seconds{name="pods"}"#
        ),
        Some(0.0)
    );
}

#[tokio::test(start_paused = true)]
async fn w7_exposed_names_are_exactly_client_go_names() {
    let mut registry = Registry::default();
    let metrics = WorkQueueMetrics::new(&mut registry);
    let _q: WorkQueue<u8> = WorkQueue::builder().name("q").metrics(&metrics).build();
    let text = render(&registry);
    let mut types: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .collect();
    types.sort_unstable();
    assert_eq!(
        types,
        [
            "workqueue_adds counter",
            "workqueue_depth gauge",
            "workqueue_longest_running_processor_seconds gauge",
            "workqueue_queue_duration_seconds histogram",
            "workqueue_retries counter",
            "workqueue_unfinished_work_seconds gauge",
            "workqueue_work_duration_seconds histogram",
        ]
    );
    // OpenMetrics names a counter family without `_total` and its sample with it.
    for sample in [
        r#"workqueue_adds_total{name="q"} 0"#,
        r#"workqueue_retries_total{name="q"} 0"#,
        r#"workqueue_depth{name="q"} 0"#,
        r#"workqueue_queue_duration_seconds_count{name="q"} 0"#,
        r#"workqueue_work_duration_seconds_count{name="q"} 0"#,
        r#"workqueue_unfinished_work_seconds{name="q"} 0.0"#,
        r#"workqueue_longest_running_processor_seconds{name="q"} 0.0"#,
    ] {
        assert!(text.contains(sample), "missing {sample} in\n{text}");
    }
}

#[tokio::test(start_paused = true)]
async fn w7_unnamed_queues_record_nothing_and_queues_share_one_registry() {
    let mut registry = Registry::default();
    let metrics = WorkQueueMetrics::new(&mut registry);
    let unnamed: WorkQueue<u8> = WorkQueue::builder().metrics(&metrics).build();
    let one: WorkQueue<u8> = WorkQueue::builder().name("one").metrics(&metrics).build();
    let two: WorkQueue<u8> = WorkQueue::builder().name("two").metrics(&metrics).build();
    unnamed.add(1);
    one.add(1);
    two.add(1);
    two.add(2);
    let text = render(&registry);
    assert_eq!(
        value(&text, r#"workqueue_adds_total{name="one"}"#),
        Some(1.0)
    );
    assert_eq!(
        value(&text, r#"workqueue_adds_total{name="two"}"#),
        Some(2.0)
    );
    assert_eq!(text.matches("workqueue_adds_total{").count(), 2);
    assert_eq!(text.matches("# TYPE workqueue_adds counter").count(), 1);
}

#[tokio::test(start_paused = true)]
async fn w7_refresher_task_ends_on_shutdown() {
    let rt = tokio::runtime::Handle::current();
    let before = rt.metrics().num_alive_tasks();
    let mut registry = Registry::default();
    let metrics = WorkQueueMetrics::new(&mut registry);
    let q: RateLimitingQueue<u8> = RateLimitingQueue::builder()
        .name("q")
        .metrics(&metrics)
        .build();
    // The delay timer and the metrics refresher.
    assert_eq!(rt.metrics().num_alive_tasks(), before + 2);
    q.shut_down();
    // Bounded by yields, not by time: a yield loop keeps a paused clock from advancing.
    let mut yields = 0;
    while rt.metrics().num_alive_tasks() != before && yields < 1_000 {
        tokio::task::yield_now().await;
        yields += 1;
    }
    assert_eq!(
        rt.metrics().num_alive_tasks(),
        before,
        "background tasks did not end after shutdown"
    );
}

/// The finite bucket bounds (`le`) of the histogram series `family_bucket{...<labels>...}`.
fn bucket_bounds(text: &str, family: &str, labels: &str) -> Vec<f64> {
    text.lines()
        .filter(|l| l.starts_with(&format!("{family}_bucket{{")) && l.contains(labels))
        .filter_map(|l| {
            let le = l.split("le=\"").nth(1)?.split('"').next()?;
            le.parse::<f64>().ok().filter(|v| v.is_finite())
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn w7_client_go_buckets_are_component_base_s() {
    let mut registry = Registry::default();
    let metrics = WorkQueueMetrics::new(&mut registry);
    let _q: WorkQueue<u8> = WorkQueue::builder().name("q").metrics(&metrics).build();
    let text = render(&registry);
    // component-base v0.37.2: ExponentialBuckets(10e-9, 10, 10), label `name` only.
    for family in [
        "workqueue_queue_duration_seconds",
        "workqueue_work_duration_seconds",
    ] {
        let bounds = bucket_bounds(&text, family, r#"name="q""#);
        assert_eq!(bounds.len(), 10, "{family}: {bounds:?}");
        assert!((bounds[0] - 1e-8).abs() < 1e-20 && (bounds[9] - 10.0).abs() < 1e-9);
    }
    assert!(!text.contains("controller="), "{text}");
}

#[tokio::test(start_paused = true)]
async fn w7_controller_runtime_flavour_has_its_labels_and_buckets() {
    let mut registry = Registry::default();
    let metrics = WorkQueueMetrics::controller_runtime(&mut registry);
    let q: RateLimitingQueue<&str> = RateLimitingQueue::builder()
        .name("foos")
        .metrics(&metrics)
        .build();
    q.add("a");
    q.add_after("b", Duration::from_secs(1));
    let text = render(&registry);
    // controller-runtime v0.25 (pkg/internal/metrics/workqueue.go): `name` and `controller`
    // (both the queue's name), `priority=""` on the depth, ExponentialBuckets(10e-9, 10, 12).
    for sample in [
        r#"workqueue_depth{name="foos",controller="foos",priority=""} 1"#,
        r#"workqueue_adds_total{name="foos",controller="foos"} 1"#,
        r#"workqueue_retries_total{name="foos",controller="foos"} 1"#,
        r#"workqueue_queue_duration_seconds_count{name="foos",controller="foos"} 0"#,
        r#"workqueue_work_duration_seconds_count{name="foos",controller="foos"} 0"#,
        r#"workqueue_unfinished_work_seconds{name="foos",controller="foos"} 0.0"#,
        r#"workqueue_longest_running_processor_seconds{name="foos",controller="foos"} 0.0"#,
    ] {
        assert!(text.contains(sample), "missing {sample} in\n{text}");
    }
    for family in [
        "workqueue_queue_duration_seconds",
        "workqueue_work_duration_seconds",
    ] {
        let bounds = bucket_bounds(&text, family, r#"controller="foos""#);
        assert_eq!(bounds.len(), 12, "{family}: {bounds:?}");
        assert!((bounds[0] - 1e-8).abs() < 1e-20 && (bounds[11] - 1000.0).abs() < 1e-9);
    }
}

/// W7 with W9: items added while the queue is paused count in `workqueue_depth` and
/// `workqueue_adds_total`, and their queue duration, observed when they are handed out after
/// `resume`, includes the pause.
#[tokio::test(start_paused = true)]
async fn w7_w9_depth_counts_items_queued_while_paused() {
    let mut registry = Registry::default();
    let metrics = WorkQueueMetrics::new(&mut registry);
    let q: WorkQueue<&str> = WorkQueue::builder()
        .name("paused")
        .metrics(&metrics)
        .build();
    q.pause();
    q.add("a");
    q.add("b");
    q.add("a"); // collapsed (W1)
    tokio::time::sleep(Duration::from_secs(3)).await;
    let text = render(&registry);
    assert_eq!(value(&text, r#"workqueue_depth{name="paused"}"#), Some(2.0));
    assert_eq!(
        value(&text, r#"workqueue_adds_total{name="paused"}"#),
        Some(2.0)
    );
    assert_eq!(
        value(
            &text,
            r#"workqueue_queue_duration_seconds_count{name="paused"}"#
        ),
        Some(0.0),
        "nothing was handed out while paused"
    );
    q.resume();
    let a = tokio::time::timeout(Duration::from_secs(60), q.get())
        .await
        .unwrap()
        .unwrap();
    let text = render(&registry);
    assert_eq!(value(&text, r#"workqueue_depth{name="paused"}"#), Some(1.0));
    assert_eq!(
        value(
            &text,
            r#"workqueue_queue_duration_seconds_sum{name="paused"}"#
        ),
        Some(3.0),
        "the queue duration includes the pause"
    );
    q.done(&a);
}
