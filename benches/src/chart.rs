//! The headline chart: scenario 1 (initial sync) as two bar panels, throughput and bytes per
//! cached Pod, one bar per implementation that ran, as a self-contained SVG.
//!
//! The orchestrator writes it beside the JSON results (`results.svg`); BENCHMARKS.md shows the
//! one from the latest full run (`benches/headline.svg`), above the tables.

use std::fmt::Write as _;

use crate::protocol::{Impl, MIB, Scenario};
use crate::report::Report;

/// The implementations the chart shows, in order, with their labels.
const BARS: [(Impl, &str); 10] = [
    (Impl::Ours, "informer-rs, k8s-openapi Pod"),
    (Impl::OursCompact, "informer-rs, compact Pod"),
    (Impl::OursProjection, "informer-rs, projection"),
    (Impl::OursProto, "informer-rs, k8s-openapi Pod, protobuf"),
    (Impl::OursCompactProto, "informer-rs, compact Pod, protobuf"),
    (
        Impl::OursProjectionProto,
        "informer-rs, projection, protobuf",
    ),
    (Impl::Kube, "kube-runtime"),
    (Impl::ClientGo, "client-go (default: protobuf)"),
    (Impl::ClientGoJson, "client-go, forced to JSON"),
    (Impl::OursStreaming, "informer-rs, streaming list"),
];

/// One panel's bars: (label, value, whether it is one of ours).
type Bars = Vec<(&'static str, f64, bool)>;

/// Objects per second of the initial sync.
fn throughput(report: &Report, imp: Impl) -> Option<f64> {
    report.sync_rate(imp)
}

/// Heap bytes per cached object after the sync (`heap_mib / objects` where not reported).
fn bytes_per_object(report: &Report, imp: Impl) -> Option<f64> {
    report
        .median(Scenario::Sync, imp, "heap_bytes_per_object")
        .or_else(|| {
            let objects = report.median(Scenario::Sync, imp, "objects")?;
            let heap = report.median(Scenario::Sync, imp, "heap_mib")?;
            (objects > 0.0).then(|| heap * MIB / objects)
        })
}

fn bars(report: &Report, metric: fn(&Report, Impl) -> Option<f64>) -> Bars {
    BARS.iter()
        .filter_map(|(imp, label)| {
            let ours = !matches!(imp, Impl::Kube | Impl::ClientGo | Impl::ClientGoJson);
            metric(report, *imp).map(|v| (*label, v, ours))
        })
        .collect()
}

/// Escapes text for SVG.
fn esc(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A number with thousands separators (a thin space), no decimals.
fn grouped(v: f64) -> String {
    let digits = format!("{:.0}", v.max(0.0));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push('\u{2009}');
        }
        out.push(c);
    }
    out
}

const WIDTH: f64 = 760.0;
const LABEL_W: f64 = 210.0;
const BAR_H: f64 = 22.0;
const GAP: f64 = 6.0;

/// Draws one panel at `y`; returns the y below it.
fn panel(svg: &mut String, y: f64, title: &str, bars: &Bars, unit: &str) -> f64 {
    let _ = writeln!(
        svg,
        r#"<text x="10" y="{:.0}" font-size="15" font-weight="bold">{}</text>"#,
        y + 16.0,
        esc(title)
    );
    let mut y = y + 28.0;
    let max = bars.iter().map(|b| b.1).fold(0.0_f64, f64::max);
    let span = WIDTH - LABEL_W - 150.0;
    for (label, value, ours) in bars {
        let w = if max > 0.0 { value / max * span } else { 0.0 };
        let fill = if *ours { "#2f6db5" } else { "#9a9a9a" };
        let _ = writeln!(
            svg,
            r#"<text x="{:.0}" y="{:.0}" font-size="13" text-anchor="end">{}</text>"#,
            LABEL_W - 8.0,
            y + 15.0,
            esc(label)
        );
        let _ = writeln!(
            svg,
            r#"<rect x="{LABEL_W:.0}" y="{y:.0}" width="{w:.1}" height="{BAR_H:.0}" fill="{fill}"/>"#
        );
        let _ = writeln!(
            svg,
            r#"<text x="{:.0}" y="{:.0}" font-size="13">{} {}</text>"#,
            LABEL_W + w + 6.0,
            y + 15.0,
            grouped(*value),
            esc(unit)
        );
        y += BAR_H + GAP;
    }
    y + 10.0
}

/// The headline chart of `report`, or `None` when scenario 1 has no results.
pub fn headline_svg(report: &Report) -> Option<String> {
    let speed = bars(report, throughput);
    let memory = bars(report, bytes_per_object);
    if speed.is_empty() && memory.is_empty() {
        return None;
    }
    let rows = (speed.len() + memory.len()) as f64;
    let height = 56.0 + 2.0 * 38.0 + rows * (BAR_H + GAP) + 14.0;
    let c = &report.config;
    let revision: String = report.revision.chars().take(12).collect();
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH:.0}" height="{height:.0}" viewBox="0 0 {WIDTH:.0} {height:.0}" font-family="sans-serif">"#
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        svg,
        r#"<text x="10" y="24" font-size="17" font-weight="bold">Initial sync of {} Pods of the {} corpus ({:.1} KiB of JSON each), one process each</text>"#,
        grouped(c.pods as f64),
        c.corpus.name(),
        c.pod_json_bytes / 1024.0
    );
    let _ = writeln!(
        svg,
        r##"<text x="10" y="44" font-size="12" fill="#555">informer-bench at {}, median of {} runs, page size {}; blue: informer-rs, grey: kube-runtime and client-go</text>"##,
        esc(&revision),
        c.reps,
        c.page_size
    );
    let mut y = 56.0;
    if !speed.is_empty() {
        y = panel(
            &mut svg,
            y,
            "Objects per second (higher is better)",
            &speed,
            "/s",
        );
    }
    if !memory.is_empty() {
        panel(
            &mut svg,
            y,
            "Heap bytes per cached Pod (lower is better)",
            &memory,
            "B",
        );
    }
    svg.push_str("</svg>\n");
    Some(svg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::RunRecord;
    use crate::report::fixtures::host_and_config;

    fn run(imp: Impl, metrics: &[(&str, f64)]) -> RunRecord {
        RunRecord {
            scenario: Scenario::Sync,
            imp,
            rep: 0,
            metrics: metrics.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            error: None,
        }
    }

    #[test]
    fn bars_follow_the_medians_and_skip_what_did_not_run() {
        let (host, config) = host_and_config();
        let report = Report::new(
            "abc".into(),
            0,
            host.clone(),
            config.clone(),
            vec![
                run(
                    Impl::Ours,
                    &[
                        ("objects_per_s", 4000.0),
                        ("heap_bytes_per_object", 100_000.0),
                    ],
                ),
                run(
                    Impl::ClientGo,
                    &[
                        ("objects", 50_000.0),
                        ("sync_s", 25.0),
                        ("heap_bytes_per_object", 33_000.0),
                    ],
                ),
            ],
        );
        let svg = headline_svg(&report).expect("a chart");
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(
            svg.contains(&format!(
                "50\u{2009}000 Pods of the {} corpus",
                report.config.corpus.name()
            )),
            "{svg}"
        );
        // client-go's rate comes from objects / sync_s: 2 000/s, half of ours.
        assert!(svg.contains(">2\u{2009}000 /s<"), "{svg}");
        assert!(svg.contains(">4\u{2009}000 /s<"), "{svg}");
        assert!(!svg.contains("kube-runtime<"), "kube-runtime did not run");
        // The longest bar of a panel spans the panel; the other is to scale.
        let widths: Vec<f64> = svg
            .lines()
            .filter(|l| l.starts_with("<rect x="))
            .filter_map(|l| l.split("width=\"").nth(1)?.split('"').next()?.parse().ok())
            .collect();
        assert_eq!(widths.len(), 4, "{svg}");
        assert!((widths[0] - 2.0 * widths[1]).abs() < 0.5, "{widths:?}");
        assert!(widths[2] > widths[3], "{widths:?}");
        let empty = Report::new("abc".into(), 0, host, config, Vec::new());
        assert!(headline_svg(&empty).is_none());
    }
}
