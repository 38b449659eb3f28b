//! Scenario 11's goals: the same operator on informer-rs against controller-runtime, each at
//! its defaults, on each server: at most 0.3x controller-runtime's peak RSS, 0.5x its CPU
//! seconds and 0.8x its time to every ConfigMap written. Each is judged on the server it names
//! and is n/a (saying why) on the other.

use crate::protocol::{Impl, Scenario};
use crate::report::{Goal, Report, fmt_num};

/// One goal per (server, figure): informer-testserver's three, then kube-apiserver's.
pub(super) fn goals(r: &Report) -> Vec<Goal> {
    let on_kube = super::on_kube_apiserver(r);
    let figures: [(&str, &str, &str, f64); 3] = [
        ("peak RSS", "rss_peak_mib", "<= 0.3x", 0.3),
        ("CPU seconds", "cpu_s", "<= 0.5x", 0.5),
        ("time to every ConfigMap", "reconciled_s", "<= 0.8x", 0.8),
    ];
    let mut goals = Vec::new();
    for (server, kube) in [("informer-testserver", false), ("kube-apiserver", true)] {
        for (what, metric, target, most) in figures {
            let value = if kube != on_kube {
                Err(format!("evaluated on {server}"))
            } else {
                against_controller_runtime(r, metric)
            };
            goals.push(Goal::new(
                &format!("operator {what} / controller-runtime, {server}"),
                target,
                |v| v <= most,
                value,
            ));
        }
    }
    goals
}

/// informer-rs's median of `metric` in scenario 11 over controller-runtime's, with both figures.
fn against_controller_runtime(r: &Report, metric: &str) -> Result<(f64, String), String> {
    let ours = super::median(r, Scenario::Operator, Impl::Ours, metric)?;
    let theirs = super::median(r, Scenario::Operator, Impl::ControllerRuntime, metric)?;
    let unit = match metric {
        "rss_peak_mib" => " MiB",
        _ => " s",
    };
    Ok((
        super::ratio(ours, theirs)?,
        format!(
            "{}{unit} against controller-runtime's {}{unit}; {}",
            fmt_num(ours),
            fmt_num(theirs),
            r.operator_modes()
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::{host_and_config, run};

    fn report(server: &str) -> Report {
        let (host, mut config) = host_and_config();
        config.server = server.into();
        let side = |imp, rss, cpu, secs| {
            run(
                Scenario::Operator,
                imp,
                &[
                    ("rss_peak_mib", rss),
                    ("cpu_s", cpu),
                    ("reconciled_s", secs),
                    ("watch_list", 1.0),
                    ("protobuf", 1.0),
                ],
            )
        };
        let runs = vec![
            side(Impl::Ours, 60.0, 4.0, 9.0),
            side(Impl::ControllerRuntime, 300.0, 10.0, 10.0),
        ];
        let mut r = Report::new("rev".into(), 0, host, config, runs);
        crate::goals::judge(&mut r, None);
        r
    }

    fn goal<'a>(r: &'a Report, name: &str) -> &'a Goal {
        r.goals
            .iter()
            .find(|g| g.name == name)
            .unwrap_or_else(|| panic!("no goal {name}"))
    }

    #[test]
    fn each_figure_is_judged_on_its_server_against_controller_runtime() {
        let r = report("kube-apiserver v1.37.2");
        let rss = goal(&r, "operator peak RSS / controller-runtime, kube-apiserver");
        assert_eq!((rss.value, rss.met), (Some(0.2), Some(true)));
        assert!(
            rss.why
                .contains("60.00 MiB against controller-runtime's 300.0 MiB"),
            "{}",
            rss.why
        );
        assert!(
            rss.why
                .contains("streaming initial list (watch-list), protobuf"),
            "{}",
            rss.why
        );
        let cpu = goal(
            &r,
            "operator CPU seconds / controller-runtime, kube-apiserver",
        );
        assert_eq!((cpu.value, cpu.met), (Some(0.4), Some(true)));
        let time = goal(
            &r,
            "operator time to every ConfigMap / controller-runtime, kube-apiserver",
        );
        assert_eq!((time.value, time.met), (Some(0.9), Some(false)));
        let other = goal(
            &r,
            "operator peak RSS / controller-runtime, informer-testserver",
        );
        assert_eq!((other.value, other.met), (None, None));
        assert!(other.why.contains("evaluated on informer-testserver"));
        let r = report("informer-testserver");
        let rss = goal(
            &r,
            "operator peak RSS / controller-runtime, informer-testserver",
        );
        assert_eq!(rss.met, Some(true));
        assert_eq!(
            goal(
                &r,
                "operator CPU seconds / controller-runtime, kube-apiserver"
            )
            .met,
            None
        );
    }
}
