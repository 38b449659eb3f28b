//! The baseline: informer-rs's figures from an earlier run, which the memory and update-rate
//! goals must not fall behind ("no worse than before").
//!
//! `benches/baseline.json` holds one entry per (server, corpus, Pod count), each taken from a
//! results file with `informer-bench baseline --from RESULTS.json`: the heap bytes per cached
//! Pod after the sync (scenario 1), the update events per second (scenario 2) and the relist
//! peak over the steady heap (scenario 4) of every informer-rs column that ran. A run is
//! compared with the entry of its own server, corpus and size only; rates only when the entry
//! was measured on the same kind of host (CPU model and count), since they do not carry over.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context;

use crate::corpus::Corpus;
use crate::protocol::{Impl, Scenario};
use crate::report::{Report, RunConfig};

/// Every entry of a baseline file.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Baseline {
    /// One entry per (server, corpus, Pod count).
    pub entries: Vec<BaselineEntry>,
}

/// informer-rs's figures from one run.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BaselineEntry {
    /// The revision the figures were measured at.
    pub revision: String,
    /// How the run was made (quiet or loaded machine, repetitions), in words.
    pub note: String,
    /// The server (`informer-testserver`, `kube-apiserver v1.37.2`).
    pub server: String,
    /// The corpus.
    pub corpus: Corpus,
    /// Seeded Pods.
    pub pods: usize,
    /// The host's CPU model: rates compare only on the same.
    pub cpu_model: String,
    /// The host's logical CPUs.
    pub nproc: usize,
    /// The 1-minute load average when the run started.
    pub load_average_1m: f64,
    /// Scenario 1: heap bytes per cached object after the sync, by implementation.
    #[serde(default)]
    pub sync_bytes_per_object: BTreeMap<String, f64>,
    /// Scenario 2: update events per second, by implementation.
    #[serde(default)]
    pub updates_events_per_s: BTreeMap<String, f64>,
    /// Scenario 4: the relist's heap peak over the steady heap, by implementation.
    #[serde(default)]
    pub relist_peak_over_steady: BTreeMap<String, f64>,
}

/// The informer-rs columns (the forms the baseline keeps), in report order.
pub fn ours(scenario: Scenario) -> impl Iterator<Item = Impl> {
    scenario.impls().iter().copied().filter(|i| i.is_ours())
}

impl BaselineEntry {
    /// The entry of `report`'s informer-rs medians.
    pub fn from_report(report: &Report, note: String) -> Self {
        let medians = |scenario: Scenario, metric: &str| -> BTreeMap<String, f64> {
            ours(scenario)
                .filter_map(|imp| {
                    let v = report.median(scenario, imp, metric)?;
                    Some((imp.name().to_string(), v))
                })
                .collect()
        };
        BaselineEntry {
            revision: report.revision.clone(),
            note,
            server: report.config.server.clone(),
            corpus: report.config.corpus,
            pods: report.config.pods,
            cpu_model: report.host.cpu_model.clone(),
            nproc: report.host.nproc,
            load_average_1m: report.host.load_average_1m,
            sync_bytes_per_object: medians(Scenario::Sync, "heap_bytes_per_object"),
            updates_events_per_s: medians(Scenario::Updates, "events_per_s"),
            relist_peak_over_steady: medians(Scenario::Relist, "relist_peak_over_steady"),
        }
    }

    /// Whether this entry is for `config`'s server, corpus and size.
    pub fn matches(&self, config: &RunConfig) -> bool {
        self.server == config.server && self.corpus == config.corpus && self.pods == config.pods
    }

    /// One line naming where the figures come from.
    pub fn describe(&self) -> String {
        let revision: String = self.revision.chars().take(12).collect();
        format!("baseline {revision} ({})", self.note)
    }
}

impl Baseline {
    /// Reads `path`; `Ok(None)` when there is no such file, an error when it is not a baseline.
    pub fn read(path: &Path) -> anyhow::Result<Option<Self>> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        serde_json::from_str(&text)
            .map(Some)
            .with_context(|| format!("{} is not a baseline file", path.display()))
    }

    /// The entry for `config`'s server, corpus and size.
    pub fn entry_for(&self, config: &RunConfig) -> Option<&BaselineEntry> {
        self.entries.iter().find(|e| e.matches(config))
    }

    /// Adds `entry`, replacing the one for the same server, corpus and size.
    pub fn put(&mut self, entry: BaselineEntry) {
        self.entries.retain(|e| {
            (e.server.as_str(), e.corpus, e.pods)
                != (entry.server.as_str(), entry.corpus, entry.pods)
        });
        self.entries.push(entry);
        self.entries.sort_by(|a, b| {
            (a.server.as_str(), a.corpus.name(), a.pods).cmp(&(
                b.server.as_str(),
                b.corpus.name(),
                b.pods,
            ))
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::RunRecord;
    use crate::report::fixtures::host_and_config;

    #[test]
    fn an_entry_keeps_ours_only_and_replaces_its_own_key() {
        let (host, config) = host_and_config();
        let run = |scenario, imp, metric: &str, v: f64| RunRecord {
            scenario,
            imp,
            rep: 0,
            metrics: [(metric.to_string(), v)].into(),
            error: None,
        };
        let report = Report::new(
            "abc".into(),
            0,
            host,
            config.clone(),
            vec![
                run(
                    Scenario::Sync,
                    Impl::OursCompact,
                    "heap_bytes_per_object",
                    4_000.0,
                ),
                run(
                    Scenario::Sync,
                    Impl::ClientGo,
                    "heap_bytes_per_object",
                    30_000.0,
                ),
                run(Scenario::Updates, Impl::OursProto, "events_per_s", 9_000.0),
                run(Scenario::Relist, Impl::Ours, "relist_peak_over_steady", 1.2),
            ],
        );
        let entry = BaselineEntry::from_report(&report, "test".into());
        assert_eq!(
            entry.sync_bytes_per_object,
            [("ours-compact".to_string(), 4_000.0)].into()
        );
        assert_eq!(
            entry.updates_events_per_s,
            [("ours-proto".to_string(), 9_000.0)].into()
        );
        assert_eq!(
            entry.relist_peak_over_steady,
            [("ours".to_string(), 1.2)].into()
        );
        assert!(entry.matches(&config));
        let mut other = config.clone();
        other.pods = 10;
        assert!(!entry.matches(&other));

        let mut baseline = Baseline::default();
        baseline.put(entry.clone());
        let mut newer = entry.clone();
        newer.revision = "def".into();
        baseline.put(newer.clone());
        assert_eq!(baseline.entries, [newer]);
        let mut smaller = entry;
        smaller.pods = 10;
        baseline.put(smaller);
        assert_eq!(baseline.entries.len(), 2);
        assert_eq!(baseline.entry_for(&other).map(|e| e.pods), Some(10));
        assert_eq!(
            baseline.entry_for(&config).map(|e| e.revision.as_str()),
            Some("def")
        );
    }

    #[test]
    fn a_missing_file_is_no_baseline_and_a_broken_one_an_error() {
        let dir =
            std::env::temp_dir().join(format!("informer-bench-baseline-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary folder");
        assert!(matches!(Baseline::read(&dir.join("none.json")), Ok(None)));
        let broken = dir.join("broken.json");
        std::fs::write(&broken, "{\"entries\": 3}").expect("write");
        let err = Baseline::read(&broken).expect_err("not a baseline");
        assert!(format!("{err:#}").contains("broken.json"), "{err:#}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
