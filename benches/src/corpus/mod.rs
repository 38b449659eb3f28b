//! The realistic corpus: Pods in owner groups the way a cluster's are, so that what
//! sibling Pods share (their template) can show in a cache's memory.
//!
//! A cluster's Pods are mostly ReplicaSet Pods, and the Pods of one ReplicaSet are copies of one
//! template: the same containers, init containers, volumes, tolerations, affinity, security
//! context, env and managedFields entries (but for their times). They differ in name, uid, node,
//! IPs, timestamps and status. The layout, drawn once from a seed ([`CORPUS_SEED`]):
//!
//! - **DaemonSets** (4 templates: node exporter, log collector, kube-proxy, CNI agent): one Pod per
//!   node, the cluster running [`PODS_PER_NODE`] Pods a node, so a tenth of the Pods.
//! - **Singletons** (bare Pods and Job Pods, each its own template): a tenth of the Pods.
//! - **ReplicaSets**: the rest, with sizes from a heavy-tailed distribution ([`RS_SIZE_BANDS`]):
//!   60% of ReplicaSets have 1-3 replicas, 27% 4-9, 10% 10-50 and 3% 51-300 (a mean of about 11.5;
//!   half the ReplicaSet Pods are in the few large ones). The last one is cut to fit.
//!
//! Templates differ in what they contain, drawn per group from its seed: an Istio sidecar (with
//! its init container and four volumes) in 60% of them, a log-shipping sidecar in 35%, a second
//! application container in 25%, 0-60 extra env vars, an extra projected volume in 40%. The mean
//! Pod is 14.9 KiB of JSON, about as large as the all-distinct corpus's 15.2 KiB (a test checks
//! it stays between 13 and 17.5 KiB).
//! Every Pod carries the label `shard = i % 10` (the benchmark's subset selector) and the
//! generation annotation, as the all-distinct Pods do.

use serde_json::{Value, json};

use crate::pods::{SUFFIX_ALPHABET, mix, uuid_of};
use crate::protocol::GENERATION_ANNOTATION;

pub mod exemplar;
mod template;

use template::{Template, node_name, owner_name, status, timestamp};

/// Which Pods the benchmark seeds.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Corpus {
    /// Every Pod different in every template part (the only corpus of the earliest runs): the
    /// worst case for structural sharing.
    #[default]
    Distinct,
    /// Owner groups sharing their template, as in a cluster (this module).
    Realistic,
    /// Every Pod a copy of upstream's exemplar Pod ([`exemplar`]), as Kubernetes' own
    /// benchmarks make theirs: rates beside upstream's published figures.
    Exemplar,
}

impl Corpus {
    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Corpus::Distinct => "distinct",
            Corpus::Realistic => "realistic",
            Corpus::Exemplar => "exemplar",
        }
    }
}

/// The seed of the benchmark's realistic corpus.
pub const CORPUS_SEED: u64 = 27;

/// Pods per node: the cluster has `n / PODS_PER_NODE` nodes (at least one).
pub const PODS_PER_NODE: usize = 40;

/// ReplicaSet sizes: (share of ReplicaSets in percent, smallest, largest), sizes uniform inside a
/// band.
pub const RS_SIZE_BANDS: [(u64, usize, usize); 4] =
    [(60, 1, 3), (27, 4, 9), (10, 10, 50), (3, 51, 300)];

/// The DaemonSets' names; each runs one Pod on every node.
const DAEMONSETS: [&str; 4] = ["node-exporter", "fluent-bit", "kube-proxy", "cilium"];

/// Who owns the Pods of a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// A ReplicaSet (of a Deployment).
    ReplicaSet,
    /// A DaemonSet: one Pod per node; the index names the template.
    DaemonSet(usize),
    /// A Job (one Pod).
    Job,
    /// Nobody: a bare Pod.
    Bare,
}

/// Pods `start..start + len` share one template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// The first Pod's index.
    pub start: usize,
    /// How many Pods.
    pub len: usize,
    /// Who owns them.
    pub owner: Owner,
    /// The template's seed: everything shared derives from it alone.
    pub seed: u64,
    /// The namespace number.
    pub namespace: usize,
}

/// The realistic corpus's groups, in Pod index order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    groups: Vec<Group>,
    nodes: usize,
}

impl Layout {
    /// The groups of `n` Pods over `namespaces` namespaces, drawn from `seed`.
    pub fn new(n: usize, namespaces: usize, seed: u64) -> Self {
        let namespaces = namespaces.max(1);
        let nodes = (n / PODS_PER_NODE).max(1);
        let mut rng = seed;
        let mut next = move || {
            rng = mix(rng);
            rng
        };
        let mut groups = Vec::new();
        let mut start = 0;
        let mut push = |len: usize, owner: Owner, seed: u64| {
            groups.push(Group {
                start,
                len,
                owner,
                seed,
                namespace: (mix(seed ^ 0x6e73) % namespaces as u64) as usize,
            });
            start += len;
        };
        let singles = n / 10;
        let mut daemon_pods = (n / 10).min(DAEMONSETS.len() * nodes);
        let mut rs_pods = n - singles - daemon_pods;
        while rs_pods > 0 {
            let roll = next() % 100;
            let mut acc = 0;
            let (_, lo, hi) = RS_SIZE_BANDS
                .iter()
                .copied()
                .find(|(share, _, _)| {
                    acc += share;
                    roll < acc
                })
                .unwrap_or(RS_SIZE_BANDS[0]);
            let len = (lo + (next() % (hi - lo + 1) as u64) as usize).min(rs_pods);
            push(len, Owner::ReplicaSet, next());
            rs_pods -= len;
        }
        for _ in 0..singles {
            let owner = if next() % 2 == 0 {
                Owner::Job
            } else {
                Owner::Bare
            };
            push(1, owner, next());
        }
        for k in 0..DAEMONSETS.len() {
            let len = daemon_pods.min(nodes);
            if len > 0 {
                push(len, Owner::DaemonSet(k), mix(seed ^ k as u64 ^ 0xd5));
            }
            daemon_pods -= len;
        }
        Layout { groups, nodes }
    }

    /// Every group, in Pod index order.
    pub fn groups(&self) -> &[Group] {
        &self.groups
    }

    /// The cluster's node count.
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// The group of Pod `i` (the last group for an index past the end).
    pub fn group_of(&self, i: usize) -> &Group {
        let at = self.groups.partition_point(|g| g.start <= i);
        &self.groups[at
            .saturating_sub(1)
            .min(self.groups.len().saturating_sub(1))]
    }

    /// The name of Pod `i`.
    pub fn name_of(&self, i: usize) -> String {
        let g = self.group_of(i);
        match g.owner {
            Owner::Bare => owner_name(g),
            // Suffixes are distinct inside a group (see `ordinal_suffix`).
            _ => format!("{}-{}", owner_name(g), ordinal_suffix(i - g.start)),
        }
    }

    /// Pod `i` as JSON.
    pub fn pod_json(&self, i: usize) -> Value {
        let g = self.group_of(i);
        let t = Template::of(g);
        let ordinal = i - g.start;
        let name = self.name_of(i);
        // Everything per Pod derives from its index; everything shared from the group's seed.
        let h = mix(i as u64 ^ 0x0070_6f64);
        let node = match g.owner {
            Owner::DaemonSet(_) => ordinal % self.nodes,
            _ => (h % self.nodes as u64) as usize,
        };
        let host_ip = format!("10.0.{}.{}", node / 250 % 250, 2 + node % 250);
        let pod_ip = match g.owner {
            Owner::DaemonSet(_) => host_ip.clone(),
            _ => format!(
                "10.{}.{}.{}",
                64 + (h >> 8) % 64,
                (h >> 16) % 250,
                2 + (h >> 24) % 250
            ),
        };
        let created = timestamp(t.created_s + ordinal as u64 * 7 + (h >> 32) % 5);
        let started = timestamp(t.created_s + ordinal as u64 * 7 + 9 + (h >> 40) % 20);
        let ready = timestamp(t.created_s + ordinal as u64 * 7 + 31 + (h >> 44) % 40);
        let mut labels = t.labels.clone();
        labels["shard"] = json!(format!("{}", i % 10));
        let mut annotations = t.annotations.clone();
        annotations[GENERATION_ANNOTATION] = json!("0");
        let mut spec = t.spec.clone();
        spec["nodeName"] = json!(node_name(node));
        let mut managed = t.managed_fields.clone();
        managed[0]["time"] = json!(created);
        managed[1]["time"] = json!(started);
        let mut metadata = json!({
            "name": name,
            "namespace": crate::pods::namespace_name(g.namespace),
            "uid": uuid_of(h),
            "creationTimestamp": created,
            "labels": labels,
            "annotations": annotations,
            "managedFields": managed,
        });
        if g.owner != Owner::Bare {
            metadata["generateName"] = json!(format!("{}-", t.owner_name));
            metadata["ownerReferences"] = t.owner_refs.clone();
        }
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": metadata,
            "spec": spec,
            "status": status(&t.spec, h, &pod_ip, &host_ip, &started, &ready),
        })
    }
}

/// Pod `ordinal`'s five-letter suffix inside its group: a bijection of `0..27^5` (multiplying by
/// a number prime to 3), so siblings get distinct suffixes that do not look sequential.
fn ordinal_suffix(ordinal: usize) -> String {
    const M: u64 = 27u64.pow(5);
    let mut v = (ordinal as u64).wrapping_mul(7_919).wrapping_add(1_234) % M;
    (0..5)
        .map(|_| {
            let c = SUFFIX_ALPHABET[(v % 27) as usize] as char;
            v /= 27;
            c
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use k8s_openapi::api::core::v1::Pod;
    use proptest::prelude::*;

    use super::*;

    /// What siblings must share byte for byte: the template parts, and the managedFields entries
    /// without their times.
    fn shared_parts(pod: &Value) -> Vec<Vec<u8>> {
        let mut spec = pod["spec"].clone();
        spec["nodeName"] = Value::Null;
        let mut labels = pod["metadata"]["labels"].clone();
        labels["shard"] = Value::Null;
        let mut managed = pod["metadata"]["managedFields"].clone();
        for entry in managed.as_array_mut().into_iter().flatten() {
            entry["time"] = Value::Null;
        }
        [
            spec,
            pod["spec"]["containers"].clone(),
            pod["spec"]["initContainers"].clone(),
            pod["spec"]["volumes"].clone(),
            pod["spec"]["tolerations"].clone(),
            pod["spec"]["affinity"].clone(),
            pod["spec"]["securityContext"].clone(),
            labels,
            pod["metadata"]["ownerReferences"].clone(),
            managed,
        ]
        .iter()
        .map(|v| serde_json::to_vec(v).expect("serialize"))
        .collect()
    }

    /// What siblings must not share.
    fn identity(pod: &Value) -> [String; 4] {
        let status = &pod["status"];
        [
            pod["metadata"]["name"].to_string(),
            pod["metadata"]["uid"].to_string(),
            status["containerStatuses"][0]["containerID"].to_string(),
            format!(
                "{}{}",
                status["podIP"], pod["metadata"]["creationTimestamp"]
            ),
        ]
    }

    #[test]
    fn the_layout_has_the_documented_shape() {
        let n = 50_000;
        let layout = Layout::new(n, 500, CORPUS_SEED);
        let groups = layout.groups();
        assert_eq!(groups.iter().map(|g| g.len).sum::<usize>(), n);
        for pair in groups.windows(2) {
            assert_eq!(
                pair[0].start + pair[0].len,
                pair[1].start,
                "groups are contiguous"
            );
        }
        assert_eq!(layout.nodes(), n / PODS_PER_NODE);
        let daemons: Vec<&Group> = groups
            .iter()
            .filter(|g| matches!(g.owner, Owner::DaemonSet(_)))
            .collect();
        assert_eq!(daemons.len(), DAEMONSETS.len());
        assert!(
            daemons.iter().all(|g| g.len == layout.nodes()),
            "one Pod per node"
        );
        let singles = groups
            .iter()
            .filter(|g| matches!(g.owner, Owner::Job | Owner::Bare))
            .inspect(|g| assert_eq!(g.len, 1))
            .count();
        assert_eq!(singles, n / 10);
        let rs: Vec<usize> = groups
            .iter()
            .filter(|g| g.owner == Owner::ReplicaSet)
            .map(|g| g.len)
            .collect();
        // Every size inside a band, and the bands' shares within 3 points of the documented ones
        // (the last ReplicaSet may be cut short).
        for (share, lo, hi) in RS_SIZE_BANDS {
            let in_band = rs.iter().filter(|l| (lo..=hi).contains(l)).count();
            let pct = in_band as f64 * 100.0 / rs.len() as f64;
            assert!(
                (pct - share as f64).abs() < 3.0,
                "band {lo}-{hi}: {pct:.1}% of ReplicaSets, want {share}%"
            );
        }
        assert!(rs.iter().all(|l| (1..=300).contains(l)));
        assert!(rs.iter().any(|l| *l > 100), "a few hundreds");
        let mean = rs.iter().sum::<usize>() as f64 / rs.len() as f64;
        assert!((8.0..16.0).contains(&mean), "mean ReplicaSet size {mean}");
    }

    #[test]
    fn siblings_share_their_template_byte_for_byte_and_differ_in_identity() {
        let layout = Layout::new(5_000, 50, CORPUS_SEED);
        let mut checked = 0;
        for g in layout.groups().iter().filter(|g| g.len >= 2).take(40) {
            let pods: Vec<Value> = (g.start..g.start + g.len)
                .map(|i| layout.pod_json(i))
                .collect();
            let first = shared_parts(&pods[0]);
            let mut ids = HashSet::new();
            for pod in &pods {
                assert_eq!(
                    shared_parts(pod),
                    first,
                    "group at {} ({:?})",
                    g.start,
                    g.owner
                );
                for part in identity(pod) {
                    assert!(
                        ids.insert(part.clone()),
                        "{part} repeats in the group at {}",
                        g.start
                    );
                }
            }
            checked += 1;
        }
        assert_eq!(checked, 40);
        // DaemonSet Pods: one per node.
        let ds = layout
            .groups()
            .iter()
            .find(|g| matches!(g.owner, Owner::DaemonSet(_)))
            .expect("a DaemonSet");
        let nodes: HashSet<String> = (ds.start..ds.start + ds.len)
            .map(|i| layout.pod_json(i)["spec"]["nodeName"].to_string())
            .collect();
        assert_eq!(nodes.len(), ds.len);
    }

    #[test]
    fn templates_vary_and_the_mean_pod_is_as_large_as_the_distinct_corpus() {
        let layout = Layout::new(20_000, 200, CORPUS_SEED);
        let mut shapes = HashSet::new();
        let (mut bytes, mut pods) = (0, 0);
        for g in layout.groups() {
            let pod = layout.pod_json(g.start);
            let spec = &pod["spec"];
            let count = |k: &str| spec[k].as_array().map_or(0, Vec::len);
            let env = spec["containers"][0]["env"].as_array().map_or(0, Vec::len);
            shapes.insert((
                count("containers"),
                count("initContainers"),
                count("volumes"),
                env,
            ));
            // Weighted by the group's Pods, as the corpus is.
            bytes += serde_json::to_vec(&pod).expect("serialize").len() * g.len;
            pods += g.len;
        }
        assert!(shapes.len() > 100, "only {} template shapes", shapes.len());
        let mean = bytes as f64 / pods as f64;
        assert!(
            (13.0 * 1024.0..17.5 * 1024.0).contains(&mean),
            "mean Pod {mean:.0} bytes"
        );
    }

    #[test]
    fn every_pod_is_a_real_pod_with_a_unique_name() {
        let layout = Layout::new(3_000, 7, CORPUS_SEED);
        let mut names = HashSet::new();
        for i in 0..3_000 {
            let v = layout.pod_json(i);
            let ns = v["metadata"]["namespace"]
                .as_str()
                .expect("namespace")
                .to_owned();
            let name = v["metadata"]["name"].as_str().expect("name").to_owned();
            assert_eq!(name, layout.name_of(i));
            assert_eq!(v["metadata"]["labels"]["shard"], format!("{}", i % 10));
            assert!(names.insert((ns, name)), "Pod {i}'s name repeats");
            if i % 37 == 0 {
                let pod: Pod = serde_json::from_value(v.clone()).expect("typed Pod");
                // Every field is a real Pod field: nothing is lost through the typed struct.
                assert_eq!(serde_json::to_value(&pod).expect("to_value"), v, "Pod {i}");
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// For any size and seed: the groups tile the Pods, the layout and every Pod are the same
        /// when drawn again, and a sibling shares its group's template.
        #[test]
        fn deterministic_for_a_seed_and_tiling(n in 1usize..1_500, namespaces in 1usize..20, seed: u64) {
            let layout = Layout::new(n, namespaces, seed);
            prop_assert_eq!(&layout, &Layout::new(n, namespaces, seed));
            prop_assert_eq!(layout.groups().iter().map(|g| g.len).sum::<usize>(), n);
            prop_assert!(layout.groups().iter().all(|g| g.len > 0 && g.namespace < namespaces));
            let i = (seed % n as u64) as usize;
            prop_assert_eq!(layout.pod_json(i), Layout::new(n, namespaces, seed).pod_json(i));
            let g = layout.group_of(i);
            prop_assert!(g.start <= i && i < g.start + g.len);
            prop_assert_eq!(shared_parts(&layout.pod_json(i)), shared_parts(&layout.pod_json(g.start)));
            if n >= 200 {
                prop_assert_ne!(&layout, &Layout::new(n, namespaces, seed ^ 1));
            }
        }
    }
}
