//! What the orchestrator and a measured child process say to each other.
//!
//! A child is started as `informer-bench child --scenario S --impl I --url U …`; the client-go
//! implementations run in a Go program (`benches/client-go/`) started with the same arguments. It
//! prints one JSON [`ChildMsg`] per line on stdout and reads one [`Command`] per line on stdin.
//! When its stdin closes (the orchestrator ended, however it ended) the child exits at once, so no
//! child outlives the run.

use std::collections::BTreeMap;
use std::fmt;

/// The metrics one child reports, by name (`sync_s`, `heap_peak_mib`, …).
pub type Metrics = BTreeMap<String, f64>;

/// A benchmark scenario (numbered as BENCHMARKS.md numbers them).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Scenario {
    /// (1) Initial sync of the seeded Pods, each side at its default initial list: the
    /// streaming list for informer-rs (`InformerConfig::default()`, V1) and client-go
    /// (`WatchListClient`, on by default since 1.35); kube-runtime's default is the paged LIST.
    Sync,
    /// (1b) Initial sync with every side pinned to the paged LIST (`limit` = page size):
    /// informer-rs's `InitialListStrategy::ListWatch`, client-go's `WatchListClient` off.
    SyncPaged,
    /// (2) Watch updates after the sync, delivered to one handler.
    Updates,
    /// (3) Four consumers of one kind: memory and watch connections.
    Four,
    /// (4) Relist after a forced 410: peak heap over the steady store.
    Relist,
    /// (5) Namespaced list queries.
    NsQuery,
    /// (6) The limit: decoding the same list pages with serde_json alone.
    Decode,
    /// (7a) Initial sync with a transform that strips managedFields.
    SyncStrip,
    /// (7b) Initial sync of metadata only.
    SyncMeta,
    /// (9) Sharded sync (KEP-5866): one replica of 1, 2 or 4, the server sharding or the
    /// client filtering.
    Shard,
    /// (10) The scale run: one sync of every Pod into the compact Pod, the server
    /// keeping its objects LZ4-compressed beside it. Not in [`Scenario::ALL`]: run it with
    /// `--scale` (1 000 000 Pods) or `--scenarios scale`.
    Scale,
    /// (11) The same operator in Go (controller-runtime) and in Rust (informer-controller), each
    /// at its defaults: Deployments owning ConfigMaps, a cluster-wide Pod informer; time to every
    /// ConfigMap written, peak RSS, heap and CPU seconds. Runs on a server of its own, seeded with
    /// [`Fleet`](crate::fleet::Fleet) (`orchestrate/operator.rs`).
    Operator,
    /// (12) Many clusters in one process: `--clusters` informer-testservers (20) of
    /// `--cluster-pods` distinct Pods each (2 000), synced by one informer-controller `Fleet`
    /// with a Pod informer in the default cached form (the compact Pod over protobuf, decision
    /// record 26) against one client-go `SharedInformerFactory` per cluster in one Go process,
    /// as multicluster-runtime builds them; time until every cluster is synced, heap after it.
    /// Runs on servers of its own (`orchestrate/clusters.rs`).
    Clusters,
}

impl Scenario {
    /// Every scenario, in report order.
    pub const ALL: [Scenario; 12] = [
        Scenario::Sync,
        Scenario::SyncPaged,
        Scenario::Updates,
        Scenario::Four,
        Scenario::Relist,
        Scenario::NsQuery,
        Scenario::Decode,
        Scenario::SyncStrip,
        Scenario::SyncMeta,
        Scenario::Shard,
        Scenario::Operator,
        Scenario::Clusters,
    ];

    /// The implementations measured in this scenario.
    pub fn impls(self) -> &'static [Impl] {
        match self {
            Scenario::Decode => &[Impl::SerdeJson],
            Scenario::Four => &[
                Impl::Ours,
                Impl::Kube,
                Impl::KubeShared,
                Impl::ClientGo,
                Impl::ClientGoJson,
            ],
            Scenario::Sync => &[
                Impl::Ours,
                Impl::Kube,
                Impl::OursCompact,
                Impl::OursProjection,
                Impl::OursProto,
                Impl::OursCompactProto,
                Impl::OursProjectionProto,
                Impl::ClientGo,
                Impl::ClientGoJson,
            ],
            Scenario::SyncPaged => &[
                Impl::Ours,
                Impl::Kube,
                Impl::OursProto,
                Impl::OursCompactProto,
                Impl::OursProjectionProto,
                Impl::ClientGo,
                Impl::ClientGoJson,
            ],
            Scenario::Updates => &[
                Impl::Ours,
                Impl::Kube,
                Impl::OursCompact,
                Impl::OursProjection,
                Impl::OursOrdered,
                Impl::OursProto,
                Impl::OursCompactProto,
                Impl::OursProjectionProto,
                Impl::ClientGo,
                Impl::ClientGoJson,
            ],
            Scenario::Relist => &[
                Impl::Ours,
                Impl::Kube,
                Impl::OursOrdered,
                Impl::OursCompactProto,
                Impl::ClientGo,
                Impl::ClientGoJson,
            ],
            Scenario::Scale => &[Impl::OursCompact, Impl::OursProjection],
            Scenario::Operator => &[Impl::Ours, Impl::ControllerRuntime],
            Scenario::Clusters => &[Impl::Ours, Impl::ClientGo],
            Scenario::Shard => &[
                Impl::Shard1Server,
                Impl::Shard2Server,
                Impl::Shard4Server,
                Impl::Shard1Client,
                Impl::Shard2Client,
                Impl::Shard4Client,
            ],
            Scenario::NsQuery | Scenario::SyncStrip | Scenario::SyncMeta => {
                &[Impl::Ours, Impl::Kube, Impl::ClientGo, Impl::ClientGoJson]
            }
        }
    }

    /// Whether every side lists in pages here instead of at its default initial list.
    /// Scenario 1b by definition. Scenarios 2 and 4 hold back or end the watch that follows
    /// the list (`hold_watches`, `force_relist`), which needs a LIST apart from the watch; what
    /// they time (update events, the relist's peak over the steady heap) comes after the
    /// initial list. Scenarios 9 and 10 keep the paged LIST their goals were set on.
    pub fn paged(self) -> bool {
        matches!(
            self,
            Scenario::SyncPaged
                | Scenario::Updates
                | Scenario::Relist
                | Scenario::Shard
                | Scenario::Scale
        )
    }

    /// Whether the scenario watches the subset of [`SUBSET_SELECTOR`](crate::pods::SUBSET_SELECTOR).
    pub fn uses_subset(self) -> bool {
        matches!(self, Scenario::Updates | Scenario::Four | Scenario::Relist)
    }

    /// Whether the orchestrator must act on the server during the scenario (hold the watch,
    /// force a 410, count watches), so that on kube-apiserver its children go through the
    /// orchestrator's proxy (`orchestrate/proxy.rs`).
    pub fn uses_server_hooks(self) -> bool {
        matches!(self, Scenario::Updates | Scenario::Four | Scenario::Relist)
    }

    /// Whether the scenario runs on servers of its own (scenario 11's, seeded with its
    /// Deployments; scenario 12's, one per cluster) rather than on the main server seeded with
    /// the Pod corpus.
    pub fn own_servers(self) -> bool {
        matches!(self, Scenario::Operator | Scenario::Clusters)
    }

    /// Why the scenario cannot run on kube-apiserver, if it cannot.
    pub fn not_on_kube_apiserver(self) -> Option<&'static str> {
        match self {
            Scenario::Shard => Some(
                "its client-filtering variants need a server without ShardedListAndWatch, and kube-apiserver's feature gates are fixed when it starts",
            ),
            Scenario::Scale => Some(
                "1 000 000 Pods in etcd and in kube-apiserver's watch cache, beside the informer, exceed the benchmark machine's memory, and seeding them over HTTP takes hours",
            ),
            Scenario::Clusters => Some(
                "it needs one server per cluster (20 by default), and the benchmark starts one kube-apiserver; it runs on informer-testservers",
            ),
            _ => None,
        }
    }

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Sync => "sync",
            Scenario::SyncPaged => "sync-paged",
            Scenario::Updates => "updates",
            Scenario::Four => "four",
            Scenario::Relist => "relist",
            Scenario::NsQuery => "ns-query",
            Scenario::Decode => "decode",
            Scenario::SyncStrip => "sync-strip",
            Scenario::SyncMeta => "sync-meta",
            Scenario::Shard => "shard",
            Scenario::Scale => "scale",
            Scenario::Operator => "operator",
            Scenario::Clusters => "clusters",
        }
    }

    /// A one-line description for the table.
    pub fn title(self) -> &'static str {
        match self {
            Scenario::Sync => "(1) initial sync, each side at its default initial list",
            Scenario::SyncPaged => "(1b) initial sync, every side pinned to the paged LIST",
            Scenario::Updates => "(2) watch updates to one handler",
            Scenario::Four => "(3) four consumers of one kind",
            Scenario::Relist => "(4) relist after a forced 410",
            Scenario::NsQuery => "(5) namespaced list query",
            Scenario::Decode => "(6) serde_json decode of the same pages",
            Scenario::SyncStrip => "(7a) sync, managedFields stripped",
            Scenario::SyncMeta => "(7b) sync, metadata only",
            Scenario::Shard => "(9) sharded sync: one replica of n, server-side vs client-side",
            Scenario::Scale => "(10) scale: one sync of every Pod, server beside the informer",
            Scenario::Operator => {
                "(11) the same operator: Deployments owning ConfigMaps, a Pod informer, each side at its defaults"
            }
            Scenario::Clusters => {
                "(12) clusters: one fleet of a Pod informer per cluster against a client-go factory per cluster, each side at its defaults"
            }
        }
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which implementation a child runs.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Impl {
    /// informer-rs: `SharedIndexInformer`, its indexer and listers.
    Ours,
    /// kube-runtime: `watcher` + `reflector` + `Store`, default config (one reflector per consumer).
    Kube,
    /// kube-runtime's shared-stream mode (`store_shared` + `subscribe`, feature `unstable-runtime`).
    KubeShared,
    /// serde_json alone, decoding the list pages (scenario 6).
    SerdeJson,
    /// informer-rs caching the controller projection [`PodView`](crate::projection::PodView)
    /// instead of the k8s-openapi `Pod` (P4): same informer, same endpoint.
    OursProjection,
    /// informer-rs caching the generated compact Pod ([`CompactPod`](crate::CompactPod), P1):
    /// every field, compact layout, same endpoint.
    OursCompact,
    /// informer-rs with the streaming initial list (watch-list, `sendInitialEvents`, R17, V1) in
    /// every scenario, the paged ones included: same informer, same objects. Scenario 1 runs
    /// every informer-rs column streaming (its default), so no scenario lists this column
    /// today; `--impls ours-streaming` still runs it.
    OursStreaming,
    /// informer-rs with the ordered delta FIFO (client-go's `RealFIFO`, D10) instead of the
    /// coalescing default: the FIFO-mode decision (decision record 08).
    OursOrdered,
    /// [`Impl::Ours`] over protobuf (T1, the runtime's default for built-in kinds; the other
    /// `ours` variants ask for JSON).
    OursProto,
    /// [`Impl::OursCompact`] over protobuf.
    OursCompactProto,
    /// [`Impl::OursProjection`] over protobuf.
    OursProjectionProto,
    /// informer-rs, shard 0 of 1 (KEP-5866), the server applying `shardSelector`.
    Shard1Server,
    /// informer-rs, shard 0 of 2, the server applying `shardSelector`.
    Shard2Server,
    /// informer-rs, shard 0 of 4, the server applying `shardSelector`.
    Shard4Server,
    /// informer-rs, shard 0 of 1, a server without the feature: filtered on the client.
    Shard1Client,
    /// informer-rs, shard 0 of 2, filtered on the client.
    Shard2Client,
    /// informer-rs, shard 0 of 4, filtered on the client.
    Shard4Client,
    /// client-go (`benches/client-go/`, a Go program) as its users run it: `SharedInformerFactory`,
    /// the Pod informer and its namespace index, `rest.Config` naming no content type, so the
    /// typed clients of built-in kinds read protobuf (`Accept: application/vnd.kubernetes.protobuf,
    /// application/json`, client-go v0.32 and later). Every headline ratio is against this column.
    ClientGo,
    /// client-go as [`Impl::ClientGo`], forced to JSON both ways (`ContentType` and
    /// `AcceptContentTypes` set to `application/json`): a secondary column, a setting client-go's
    /// users get only when they ask for it.
    ClientGoJson,
    /// The operator of scenario 11 on controller-runtime (`benches/controller-runtime/`, a Go
    /// program) at its defaults: the manager's cache (protobuf for built-in kinds, client-go's
    /// streaming initial list), one worker (`MaxConcurrentReconciles`' default).
    ControllerRuntime,
}

impl Impl {
    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Impl::Ours => "ours",
            Impl::Kube => "kube",
            Impl::KubeShared => "kube-shared",
            Impl::SerdeJson => "serde-json",
            Impl::OursProjection => "ours-projection",
            Impl::OursCompact => "ours-compact",
            Impl::OursStreaming => "ours-streaming",
            Impl::OursOrdered => "ours-ordered",
            Impl::OursProto => "ours-proto",
            Impl::OursCompactProto => "ours-compact-proto",
            Impl::OursProjectionProto => "ours-projection-proto",
            Impl::Shard1Server => "shard1-server",
            Impl::Shard2Server => "shard2-server",
            Impl::Shard4Server => "shard4-server",
            Impl::Shard1Client => "shard1-client",
            Impl::Shard2Client => "shard2-client",
            Impl::Shard4Client => "shard4-client",
            Impl::ClientGo => "client-go",
            Impl::ClientGoJson => "client-go-json",
            Impl::ControllerRuntime => "controller-runtime",
        }
    }

    /// Whether the Go child (`benches/client-go/`) runs this implementation instead of
    /// `informer-bench child`.
    pub fn is_client_go(self) -> bool {
        matches!(self, Impl::ClientGo | Impl::ClientGoJson)
    }

    /// Whether the controller-runtime child (`benches/controller-runtime/`) runs this
    /// implementation.
    pub fn is_controller_runtime(self) -> bool {
        self == Impl::ControllerRuntime
    }

    /// Whether a Go program runs this implementation (no decode pool to size).
    pub fn is_go(self) -> bool {
        self.is_client_go() || self.is_controller_runtime()
    }

    /// Whether this is one of informer-rs's columns (`ours…` and the sharded variants).
    pub fn is_ours(self) -> bool {
        !matches!(
            self,
            Impl::Kube
                | Impl::KubeShared
                | Impl::SerdeJson
                | Impl::ClientGo
                | Impl::ClientGoJson
                | Impl::ControllerRuntime
        )
    }

    /// Whether this informer-rs variant reads protobuf (T1); every other one asks for JSON.
    pub fn protobuf(self) -> bool {
        matches!(
            self,
            Impl::OursProto | Impl::OursCompactProto | Impl::OursProjectionProto
        )
    }

    /// The wire format the server must answer this implementation's LISTs and WATCHes in, in
    /// `scenario`, where the implementation decides it: `Some(true)` protobuf, `Some(false)`
    /// JSON. `None` where the server decides or both are read: metadata-only lists (which
    /// informer-testserver answers in JSON whatever is asked) and the decode scenario (which
    /// fetches the pages in both formats). The orchestrator fails a run whose requests
    /// disagree, so that a column's name cannot claim a format it was not served.
    pub fn expected_protobuf(self, scenario: Scenario) -> Option<bool> {
        if matches!(scenario, Scenario::SyncMeta | Scenario::Decode) {
            return None;
        }
        if matches!(scenario, Scenario::Operator | Scenario::Clusters) {
            // Both operators (both fleets) at their defaults: protobuf for every built-in kind
            // they cache.
            return Some(true);
        }
        match self {
            Impl::SerdeJson => None,
            // client-go's default: protobuf for built-in kinds (see `Impl::ClientGo`).
            Impl::ClientGo => Some(true),
            _ => Some(self.protobuf()),
        }
    }

    /// For the sharded variants: (replicas, whether the server applies the selector).
    pub fn sharding(self) -> Option<(u32, bool)> {
        match self {
            Impl::Shard1Server => Some((1, true)),
            Impl::Shard2Server => Some((2, true)),
            Impl::Shard4Server => Some((4, true)),
            Impl::Shard1Client => Some((1, false)),
            Impl::Shard2Client => Some((2, false)),
            Impl::Shard4Client => Some((4, false)),
            _ => None,
        }
    }
}

impl fmt::Display for Impl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One line from a child on stdout.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "msg", rename_all = "kebab-case")]
pub enum ChildMsg {
    /// The initial sync finished; the child now waits for the orchestrator where the scenario
    /// needs it (updates to produce, a 410 to inject, watches to count).
    Synced {
        /// Metrics of the sync phase.
        metrics: Metrics,
    },
    /// The answer to [`Command::Mark`]: the peak counters were reset.
    Marked {
        /// Metrics at the mark (the steady store).
        metrics: Metrics,
    },
    /// The scenario finished; these are its final metrics. The child exits after this line.
    Done {
        /// Every metric of the run.
        metrics: Metrics,
    },
    /// The scenario failed; the child exits non-zero after this line.
    Failed {
        /// What went wrong.
        error: String,
    },
}

/// One line from the orchestrator on a child's stdin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Command {
    /// Reset the peak heap and peak RSS counters and answer [`ChildMsg::Marked`].
    Mark,
    /// Go on to the next phase of the scenario (report and exit, for most scenarios).
    Proceed,
}

/// The annotation whose value is the update generation of a Pod (scenario 2).
pub const GENERATION_ANNOTATION: &str = "bench.informer-rs.io/generation";

/// Bytes in a MiB, for metrics reported in MiB.
pub const MIB: f64 = 1024.0 * 1024.0;
