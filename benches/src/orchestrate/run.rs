//! One child run: start the process, drive its scenario, collect its metrics, make sure it ends.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, bail};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command as Process};

use super::Plan;
use super::server::{BenchServer, RequestCounts};
use crate::pods::SUBSET_SELECTOR;
use crate::protocol::{ChildMsg, Command, Impl, Metrics, Scenario};
use crate::report::RunRecord;

/// Runs children one after another against one server.
pub(crate) struct Runner<'a> {
    exe: PathBuf,
    server: &'a BenchServer,
    plan: &'a Plan,
    /// The generation the Pods carry after the last scenario-2 run (each run raises it).
    generation: u64,
    /// The longest sync seen per implementation (sizes the watch hold of scenario 2).
    sync_s: HashMap<Impl, f64>,
}

/// A running child and its pipes.
pub(super) struct Running {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    timeout: Duration,
}

impl Running {
    /// Starts `process` (from [`command`]) with piped stdin and stdout; it is killed if dropped.
    pub(super) fn start(
        mut process: Process,
        exe: &std::path::Path,
        timeout: Duration,
    ) -> anyhow::Result<Self> {
        let mut child = process
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {}", exe.display()))?;
        let stdin = child.stdin.take().context("child stdin")?;
        let stdout = child.stdout.take().context("child stdout")?;
        Ok(Running {
            child,
            stdin,
            lines: BufReader::new(stdout).lines(),
            timeout,
        })
    }

    /// The child's next protocol message (failing after the timeout or when it exits).
    pub(super) async fn next(&mut self) -> anyhow::Result<ChildMsg> {
        loop {
            let line = tokio::time::timeout(self.timeout, self.lines.next_line())
                .await
                .with_context(|| format!("child said nothing for {} s", self.timeout.as_secs()))?
                .context("reading the child's stdout")?;
            let Some(line) = line else {
                let status = self.child.wait().await.ok();
                bail!("child exited without a result ({status:?})");
            };
            // Anything that is not a protocol line (a stray print from a dependency) is skipped.
            if let Ok(msg) = serde_json::from_str::<ChildMsg>(&line) {
                return Ok(msg);
            }
        }
    }

    /// The child's CPU seconds so far (user plus system, every thread).
    fn cpu_seconds(&self) -> Option<f64> {
        crate::sys::cpu_seconds_of(self.child.id()?)
    }

    /// Writes `cmd` to the child's stdin.
    pub(super) async fn send(&mut self, cmd: Command) -> anyhow::Result<()> {
        let mut line = serde_json::to_string(&cmd)?;
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .await
            .context("writing to the child")?;
        self.stdin.flush().await.context("writing to the child")?;
        Ok(())
    }

    /// Ends the child: closing stdin makes it exit; kill it if it has not after a grace period.
    pub(super) async fn finish(mut self) {
        drop(self.stdin);
        if tokio::time::timeout(Duration::from_secs(10), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}

impl<'a> Runner<'a> {
    pub(crate) fn new(exe: PathBuf, server: &'a BenchServer, plan: &'a Plan) -> Self {
        Runner {
            exe,
            server,
            plan,
            generation: 0,
            sync_s: HashMap::new(),
        }
    }

    /// Runs (`scenario`, `imp`) once; failures are recorded, never propagated.
    pub(crate) async fn run(&mut self, scenario: Scenario, imp: Impl, rep: usize) -> RunRecord {
        let result = self.run_inner(scenario, imp, rep).await;
        if let Some(s) = result.as_ref().ok().and_then(|m| m.get("sync_s")) {
            let longest = self.sync_s.entry(imp).or_insert(0.0);
            *longest = longest.max(*s);
        }
        RunRecord::of(scenario, imp, rep, result)
    }

    fn spawn(&self, scenario: Scenario, imp: Impl, sentinel: &str) -> anyhow::Result<Running> {
        let plan = self.plan;
        // Scenarios 2, 3 and 4 can hold several copies of the store at once; they watch a subset.
        let subset = scenario.uses_subset().then_some(());
        let objects = if subset.is_some() {
            plan.pods.subset_len()
        } else {
            plan.pods.n
        };
        // client-go runs in the Go child, which takes the same arguments (benches/client-go).
        let exe = match &plan.client_go {
            Some(go) if imp.is_client_go() => go,
            _ => &self.exe,
        };
        let mut process = command(exe);
        process
            .arg("child")
            .args([
                "--scenario",
                scenario.name(),
                "--impl",
                imp.name(),
                "--url",
                &self.server.url(scenario),
            ])
            .args([
                "--pods",
                &plan.pods.n.to_string(),
                "--namespaces",
                &plan.pods.namespaces.to_string(),
            ])
            .args(
                subset
                    .iter()
                    .flat_map(|_| ["--label-selector", SUBSET_SELECTOR]),
            )
            .args(["--objects", &objects.to_string()])
            .args(["--update-rounds", &plan.update_rounds.to_string()])
            .args([
                "--final-generation",
                &(self.generation + plan.update_rounds).to_string(),
            ])
            .args([
                "--sentinel",
                sentinel,
                "--query-ms",
                &plan.query_ms.to_string(),
            ])
            .args(["--page-size", &plan.page_size.to_string()])
            // Both children: the paged LIST where the scenario pins it, else the side's default.
            .args(scenario.paged().then_some("--paged"))
            .args(plan.gzip.then_some("--gzip"))
            .args(decode_thread_args(plan, imp))
            .args(
                self.server
                    .kubeconfig(scenario)
                    .iter()
                    .flat_map(|k| [std::ffi::OsStr::new("--kubeconfig"), k.as_os_str()]),
            );
        Running::start(process, exe, plan.child_timeout)
    }

    async fn run_inner(
        &mut self,
        scenario: Scenario,
        imp: Impl,
        rep: usize,
    ) -> anyhow::Result<Metrics> {
        let sentinel = format!("relist-sentinel-{}-{rep}", imp.name());
        // Every child meets the server just collected (kube-apiserver's Go heap), so its
        // collections do not fall on one side's repetitions by the order they run in.
        self.server.settle().await?;
        self.server.clear_requests();
        let mut hold = None;
        if scenario == Scenario::Updates {
            // The bound of the hold behind kube-apiserver's proxy counts the sync in (see
            // `hold_for`): until the first sync_s is known, assume about 5 ms per Pod (generous).
            let share = self.plan.pods.subset_len() as f64 / self.plan.pods.n.max(1) as f64;
            let sync_s = self
                .sync_s
                .get(&imp)
                .map_or(self.plan.pods.subset_len() as f64 * 0.005, |s| s * share);
            let d = self.server.hold_for(
                self.plan.update_rounds * self.plan.pods.subset_len() as u64,
                sync_s,
            );
            self.server.hold_watches(Some(d));
            hold = Some(d);
        }
        // Scenario 9: a server with or without the sharding feature.
        self.server
            .set_sharded_list_and_watch(imp.sharding().is_none_or(|(_, server)| server));
        // Bytes received (T3): loopback traffic from the child's start to its sync, where
        // loopback carries nothing else (informer-testserver; kube-apiserver also talks to etcd
        // over it). Scenario 9 children measure their own, from the informer's start.
        let received_from = (!self.server.is_kube_apiserver() && scenario != Scenario::Shard)
            .then(crate::sys::loopback_received)
            .flatten();
        // The scale run reports the server's memory while it serves (this process hosts it):
        // the peak from the child's start on, not the seeding's.
        if scenario == Scenario::Scale && !crate::sys::reset_peak_rss() {
            tracing::debug!(
                "the kernel refused to reset VmHWM; server_rss_peak_mib includes seeding"
            );
        }
        let spawned = self.spawn(scenario, imp, &sentinel);
        let res = match spawned {
            Ok(mut child) => {
                let res = self
                    .drive(&mut child, scenario, imp, &sentinel, hold, received_from)
                    .await;
                child.finish().await;
                res
            }
            Err(e) => Err(e),
        };
        self.server.hold_watches(None);
        self.server.set_sharded_list_and_watch(true);
        if scenario == Scenario::Relist {
            self.server.delete_sentinel(&sentinel).await;
        }
        let mut metrics = res?;
        if scenario == Scenario::Scale && !self.server.is_kube_apiserver() {
            let rss = crate::sys::rss();
            metrics.insert("server_rss_mib".into(), rss.current_kib as f64 / 1024.0);
            metrics.insert("server_rss_peak_mib".into(), rss.peak_kib as f64 / 1024.0);
        }
        if let Some(counts) = self.server.request_counts(scenario) {
            metrics.insert("list_requests".into(), counts.lists as f64);
            metrics.insert("watch_requests".into(), counts.watches as f64);
            check_wire_format(scenario, imp, counts, &mut metrics)?;
            check_initial_list(scenario, imp, counts)?;
        }
        Ok(metrics)
    }

    /// Follows the child's messages and does the orchestrator's part of `scenario`.
    async fn drive(
        &mut self,
        child: &mut Running,
        scenario: Scenario,
        imp: Impl,
        sentinel: &str,
        hold: Option<Duration>,
        received_from: Option<u64>,
    ) -> anyhow::Result<Metrics> {
        let mut extra = Metrics::new();
        // At the first of `synced` and `done` (a sync-only child sends just `done`).
        let mut received_from = received_from;
        // What the sync cost in CPU: the child's own seconds (its start included), and the
        // share of the whole machine in use meanwhile, the server's work included: near 1.0,
        // the sync is paced by CPU; well below, by something else.
        let mut host_from = crate::sys::host_cpu_ticks();
        let mut received = |child: &Running, extra: &mut Metrics| {
            if let Some((before, after)) = received_from.take().zip(crate::sys::loopback_received())
            {
                extra.insert(
                    "received_mib".into(),
                    after.saturating_sub(before) as f64 / crate::protocol::MIB,
                );
            }
            if let Some(before) = host_from.take() {
                if let Some(share) = crate::sys::host_cpu_ticks()
                    .and_then(|after| crate::sys::busy_share(before, after))
                {
                    extra.insert("host_busy_share".into(), share);
                }
                if let Some(cpu) = child.cpu_seconds() {
                    extra.insert("child_cpu_s".into(), cpu);
                }
            }
        };
        loop {
            match child.next().await? {
                ChildMsg::Synced { .. } => {
                    received(child, &mut extra);
                    self.after_sync(child, scenario, imp, sentinel, hold, &mut extra)
                        .await?;
                }
                ChildMsg::Marked { .. } => bail!("unexpected `marked`"),
                ChildMsg::Done { mut metrics } => {
                    received(child, &mut extra);
                    metrics.extend(extra);
                    return Ok(metrics);
                }
                ChildMsg::Failed { error } => bail!("{error}"),
            }
        }
    }

    /// The orchestrator's part of `scenario` once the child has synced.
    async fn after_sync(
        &mut self,
        child: &mut Running,
        scenario: Scenario,
        imp: Impl,
        sentinel: &str,
        hold: Option<Duration>,
        extra: &mut Metrics,
    ) -> anyhow::Result<()> {
        match scenario {
            Scenario::Updates => {
                // The child's watch is held by the server (see `hold_watches`) while the
                // updates go in, so they reach the child as one backlog at full speed; the
                // hold ends when they are in (`release_held_watches`), or at its bound.
                let t = Instant::now();
                let first = self.generation + 1;
                self.generation += self.plan.update_rounds;
                self.server
                    .update_subset(&self.plan.pods, first..=self.generation)
                    .await?;
                extra.insert("producer_s".into(), t.elapsed().as_secs_f64());
                self.server.release_held_watches();
                // If the hold reached its bound (`hold_for`) before the last update went in,
                // part of the run was paced by the producer; report by how much (zero when the
                // release ended the hold).
                let released = self.server.first_watch_at().zip(hold).map(|(at, d)| at + d);
                let overrun = released
                    .and_then(|r| SystemTime::now().duration_since(r).ok())
                    .map_or(0.0, |d| d.as_secs_f64());
                extra.insert("hold_overrun_s".into(), overrun);
            }
            Scenario::Four => {
                let want = if imp == Impl::Kube { 4 } else { 1 };
                extra.insert(
                    "watches".into(),
                    self.server.settled_watches(want).await? as f64,
                );
                child.send(Command::Proceed).await?;
            }
            Scenario::Relist => {
                child.send(Command::Mark).await?;
                match child.next().await? {
                    ChildMsg::Marked { .. } => {}
                    other => bail!("expected `marked`, got {other:?}"),
                }
                self.server.force_relist().await?;
                self.server.create_sentinel(sentinel).await?;
            }
            _ => {}
        }
        Ok(())
    }
}

/// Says how one run went, on stderr, as it ends.
pub(super) fn say(record: &RunRecord, took: Duration) {
    let (scenario, imp, rep) = (record.scenario, record.imp, record.rep);
    match &record.error {
        None => eprintln!(
            "informer-bench: {scenario} / {imp} rep {rep}: ok in {:.1} s",
            took.as_secs_f64()
        ),
        Some(e) => eprintln!("informer-bench: {scenario} / {imp} rep {rep}: FAILED: {e}"),
    }
}

/// `--decode-threads N` when the plan sizes the decode pool and `imp` is one of
/// informer-bench's children: the Go children have no decode pool to size.
pub(super) fn decode_thread_args(plan: &Plan, imp: Impl) -> Vec<String> {
    plan.decode_threads
        .filter(|_| !imp.is_go())
        .iter()
        .flat_map(|n| ["--decode-threads".to_string(), n.to_string()])
        .collect()
}

/// The command that runs `exe`, under `INFORMER_BENCH_WRAP` when set:
/// `INFORMER_BENCH_WRAP="heaptrack -o /tmp/ht"` (for example) runs every child under a
/// profiler; the wrapper must exec the command it is given and pass stdin/stdout through.
pub(super) fn command(exe: &std::path::Path) -> Process {
    let wrap: Vec<String> = std::env::var("INFORMER_BENCH_WRAP")
        .map(|w| w.split_whitespace().map(String::from).collect())
        .unwrap_or_default();
    match wrap.split_first() {
        Some((program, args)) => {
            let mut p = Process::new(program);
            p.args(args).arg(exe);
            p
        }
        None => Process::new(exe),
    }
}

/// Records which share of the child's LISTs and WATCHes the server answered in protobuf, and
/// fails the run when that contradicts the column (`Impl::expected_protobuf`): the `client-go`
/// column must be client-go's default, which reads Pods as protobuf, and a `-proto` column must
/// really read protobuf, or every ratio against them would compare other settings.
pub(super) fn check_wire_format(
    scenario: Scenario,
    imp: Impl,
    counts: RequestCounts,
    metrics: &mut Metrics,
) -> anyhow::Result<()> {
    let total = counts.lists + counts.watches;
    if total == 0 {
        return Ok(());
    }
    metrics.insert(
        "protobuf_share".into(),
        counts.protobuf as f64 / total as f64,
    );
    match imp.expected_protobuf(scenario) {
        Some(true) if counts.protobuf < total => bail!(
            "{imp} was answered in JSON for {} of its {total} LISTs and WATCHes; this column must read protobuf",
            total - counts.protobuf
        ),
        Some(false) if counts.protobuf > 0 => bail!(
            "{imp} was answered in protobuf for {} of its {total} LISTs and WATCHes; this column must read JSON",
            counts.protobuf
        ),
        _ => Ok(()),
    }
}

/// Fails the run when an initial sync (scenarios 1, 1b and 12) did not list as its column must:
/// in scenario 1b every side lists in pages; in scenarios 1 and 12 informer-rs and client-go
/// stream (both defaults: no LIST request at all) and kube-runtime, whose default is the paged
/// LIST, lists. A client that quietly fell back to the other mode would otherwise be compared with a
/// side it does not match.
pub(super) fn check_initial_list(
    scenario: Scenario,
    imp: Impl,
    counts: RequestCounts,
) -> anyhow::Result<()> {
    let streams = match scenario {
        Scenario::SyncPaged => false,
        Scenario::Sync => !matches!(imp, Impl::Kube | Impl::KubeShared),
        // Both fleets at their defaults stream every cluster's initial list.
        Scenario::Clusters => true,
        _ => return Ok(()),
    };
    match (streams, counts.lists) {
        (true, 0) | (false, 1..) => Ok(()),
        (true, n) => bail!(
            "{imp} sent {n} LIST requests in scenario {scenario}; at its default it streams the initial list"
        ),
        (false, 0) => bail!(
            "{imp} sent no LIST request in scenario {scenario}; this scenario pins the paged LIST"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_column_that_lists_in_the_other_mode_fails_its_run() {
        let (streamed, paged) = (counts(0, 1, 1), counts(100, 1, 101));
        check_initial_list(Scenario::Sync, Impl::ClientGo, streamed).expect("streams");
        check_initial_list(Scenario::Sync, Impl::OursCompactProto, streamed).expect("streams");
        check_initial_list(Scenario::Sync, Impl::Kube, paged).expect("kube-runtime pages");
        check_initial_list(Scenario::SyncPaged, Impl::ClientGo, paged).expect("pages");
        let err = check_initial_list(Scenario::Sync, Impl::ClientGo, paged).expect_err("fell back");
        assert!(err.to_string().contains("100 LIST requests"), "{err}");
        assert!(check_initial_list(Scenario::Sync, Impl::Kube, streamed).is_err());
        assert!(check_initial_list(Scenario::SyncPaged, Impl::OursProto, streamed).is_err());
        check_initial_list(Scenario::Updates, Impl::Ours, streamed).expect("not checked");
    }

    fn counts(lists: usize, watches: usize, protobuf: usize) -> RequestCounts {
        RequestCounts {
            lists,
            watches,
            protobuf,
        }
    }

    #[test]
    fn a_column_served_in_the_other_format_fails_its_run() {
        let mut m = Metrics::new();
        // client-go's default reads Pods as protobuf.
        check_wire_format(Scenario::Sync, Impl::ClientGo, counts(3, 1, 4), &mut m)
            .expect("all protobuf");
        assert_eq!(m["protobuf_share"], 1.0);
        let err = check_wire_format(Scenario::Sync, Impl::ClientGo, counts(3, 1, 3), &mut m)
            .expect_err("one JSON response");
        assert!(err.to_string().contains("1 of its 4"), "{err}");
        // The forced-JSON column, and ours over JSON, read JSON only.
        check_wire_format(
            Scenario::Updates,
            Impl::ClientGoJson,
            counts(2, 1, 0),
            &mut m,
        )
        .expect("all JSON");
        assert_eq!(m["protobuf_share"], 0.0);
        assert!(check_wire_format(Scenario::Sync, Impl::Ours, counts(2, 1, 1), &mut m).is_err());
        assert!(
            check_wire_format(
                Scenario::Sync,
                Impl::OursCompactProto,
                counts(2, 1, 2),
                &mut m
            )
            .is_err()
        );
        // Metadata-only lists: the server decides.
        check_wire_format(Scenario::SyncMeta, Impl::ClientGo, counts(2, 1, 0), &mut m)
            .expect("not checked");
    }
}
