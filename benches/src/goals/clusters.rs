//! Scenario 12's goals: a fleet of 20 clusters of 2 000 Pods in one process, informer-rs's
//! `Fleet` with the Pod informer's default cached form against one client-go factory per
//! cluster in one Go process, the same run: at most 0.3x client-go's heap once every cluster
//! has synced, and every cluster synced at least as fast (at most 1.0x its time). Judged on
//! informer-testserver at those sizes; n/a, saying why, on any other run.

use crate::protocol::{Impl, Scenario};
use crate::report::{Goal, Report, fmt_num};

/// The clusters the goals are set for.
const GOAL_CLUSTERS: usize = 20;
/// The Pods on each of them.
const GOAL_CLUSTER_PODS: usize = 2_000;

/// The heap goal, then the time goal.
pub(super) fn goals(r: &Report) -> Vec<Goal> {
    let figures: [(&str, &str, &str, f64); 2] = [
        ("heap after sync", "heap_mib", "<= 0.3x", 0.3),
        ("time to every cluster synced", "sync_s", "<= 1.0x", 1.0),
    ];
    figures
        .into_iter()
        .map(|(what, metric, target, most)| {
            Goal::new(
                &format!("clusters {what} / client-go, {GOAL_CLUSTERS} x {GOAL_CLUSTER_PODS} Pods"),
                target,
                |v| v <= most,
                judged(r).and_then(|()| against_client_go(r, metric)),
            )
        })
        .collect()
}

/// Why this run does not judge the goals, if it does not.
fn judged(r: &Report) -> Result<(), String> {
    if super::on_kube_apiserver(r) {
        return Err("scenario 12 runs on informer-testservers only".into());
    }
    match &r.config.clusters {
        None => Err("scenario clusters did not run".into()),
        Some(c) if c.clusters != GOAL_CLUSTERS || c.pods_each != GOAL_CLUSTER_PODS => Err(format!(
            "set for {GOAL_CLUSTERS} clusters of {GOAL_CLUSTER_PODS} Pods; this run had {} of {}",
            c.clusters, c.pods_each
        )),
        Some(_) => Ok(()),
    }
}

/// informer-rs's median of `metric` in scenario 12 over client-go's, with both figures.
fn against_client_go(r: &Report, metric: &str) -> Result<(f64, String), String> {
    let ours = super::median(r, Scenario::Clusters, Impl::Ours, metric)?;
    let theirs = super::median(r, Scenario::Clusters, Impl::ClientGo, metric)?;
    let unit = if metric == "heap_mib" { " MiB" } else { " s" };
    Ok((
        super::ratio(ours, theirs)?,
        format!(
            "{}{unit} against client-go's {}{unit}",
            fmt_num(ours),
            fmt_num(theirs)
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::ClustersFacts;
    use crate::report::fixtures::{host_and_config, run};

    fn report(server: &str, clusters: usize) -> Report {
        let (host, mut config) = host_and_config();
        config.server = server.into();
        config.clusters = Some(ClustersFacts {
            clusters,
            pods_each: GOAL_CLUSTER_PODS,
            namespaces: 20,
            seed_s: 1.0,
            server_rss_mib: 1.0,
            server: "informer-testserver".into(),
        });
        let side = |imp, heap, secs| {
            run(
                Scenario::Clusters,
                imp,
                &[("heap_mib", heap), ("sync_s", secs)],
            )
        };
        let runs = vec![
            side(Impl::Ours, 50.0, 2.2),
            side(Impl::ClientGo, 200.0, 2.0),
        ];
        let mut r = Report::new("rev".into(), 0, host, config, runs);
        crate::goals::judge(&mut r, None);
        r
    }

    fn goal<'a>(r: &'a Report, start: &str) -> &'a Goal {
        r.goals
            .iter()
            .find(|g| g.name.starts_with(start))
            .unwrap_or_else(|| panic!("no goal {start}"))
    }

    #[test]
    fn the_fleet_is_judged_against_client_go_at_the_goals_sizes_only() {
        let r = report("informer-testserver", GOAL_CLUSTERS);
        let heap = goal(&r, "clusters heap after sync / client-go");
        assert_eq!((heap.value, heap.met), (Some(0.25), Some(true)));
        assert!(
            heap.why.contains("50.00 MiB against client-go's 200.0 MiB"),
            "{}",
            heap.why
        );
        let time = goal(&r, "clusters time to every cluster synced / client-go");
        assert_eq!(time.met, Some(false));
        assert!((time.value.unwrap_or_default() - 1.1).abs() < 1e-9);
        let small = report("informer-testserver", 3);
        let heap = goal(&small, "clusters heap after sync");
        assert_eq!((heap.value, heap.met), (None, None));
        assert!(heap.why.contains("this run had 3 of 2000"), "{}", heap.why);
        let kube = report("kube-apiserver v1.37.2", GOAL_CLUSTERS);
        assert_eq!(goal(&kube, "clusters time").met, None);
    }
}
