//! Facts from the operating system: peak RSS of this process, host description and git revision.

use std::process::Command;

/// Resident set size figures of this process, in KiB, from `/proc/self/status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Rss {
    /// `VmRSS`: resident now.
    pub current_kib: u64,
    /// `VmHWM`: the high-water mark since start or the last [`reset_peak_rss`].
    pub peak_kib: u64,
}

/// Reads `VmRSS` and `VmHWM`; zeros where `/proc` is unavailable.
pub fn rss() -> Rss {
    rss_from("/proc/self/status")
}

/// [`rss`] of another process (the kube-apiserver launcher); zeros where it cannot be read.
pub fn rss_of(pid: u32) -> Rss {
    rss_from(&format!("/proc/{pid}/status"))
}

fn rss_from(path: &str) -> Rss {
    let status = std::fs::read_to_string(path).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    Rss {
        current_kib: field("VmRSS:"),
        peak_kib: field("VmHWM:"),
    }
}

/// CPU seconds this process has used so far, user plus system, all threads (`utime` and
/// `stime` of `/proc/self/stat`); `None` where `/proc` is unavailable.
pub fn cpu_seconds() -> Option<f64> {
    cpu_from_stat(&std::fs::read_to_string("/proc/self/stat").ok()?)
}

/// [`cpu_seconds`] of another process (a benchmark child); `None` where it cannot be read.
pub fn cpu_seconds_of(pid: u32) -> Option<f64> {
    cpu_from_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// The machine's CPU time so far, in clock ticks of every CPU together: (busy, total), from the
/// first line of `/proc/stat` (busy is all but `idle` and `iowait`); `None` where `/proc` is
/// unavailable. Two readings give the share of the machine in use between them
/// ([`busy_share`]): a child that syncs with the machine near 1.0 is paced by CPU (its own or
/// the server's), one well below it by something else (the network, the server's pacing).
pub fn host_cpu_ticks() -> Option<(u64, u64)> {
    host_ticks_from(&std::fs::read_to_string("/proc/stat").ok()?)
}

fn host_ticks_from(stat: &str) -> Option<(u64, u64)> {
    let line = stat.lines().next()?.strip_prefix("cpu ")?;
    let ticks: Vec<u64> = line
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    // user nice system idle iowait irq softirq steal (guest time is counted in user).
    let total: u64 = ticks.iter().take(8).sum();
    let idle = ticks.get(3)? + ticks.get(4).copied().unwrap_or(0);
    Some((total - idle, total))
}

/// The share of the machine's CPU in use between two [`host_cpu_ticks`] readings.
pub fn busy_share(before: (u64, u64), after: (u64, u64)) -> Option<f64> {
    let total = after.1.checked_sub(before.1).filter(|t| *t > 0)?;
    Some(after.0.saturating_sub(before.0) as f64 / total as f64)
}

/// `utime + stime` of a `/proc/PID/stat` line, in seconds. The kernel reports both in clock
/// ticks of `USER_HZ`, which is 100 on Linux whatever the kernel's own tick.
fn cpu_from_stat(stat: &str) -> Option<f64> {
    // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state (field 3) is fields[0], so utime (14) is [11] and stime (15) [12].
    let ticks = |i: usize| fields.get(i)?.parse::<u64>().ok();
    Some((ticks(11)? + ticks(12)?) as f64 / USER_HZ)
}

/// Clock ticks per second in `/proc`'s CPU times.
const USER_HZ: f64 = 100.0;

/// Bytes received on the loopback interface so far (`/proc/net/dev`). The benchmark's server
/// and its one running child talk over loopback and nothing else does during a run, so the
/// difference over a child's sync is what it received (its requests, a few KiB, included).
/// `None` where `/proc` is unavailable.
pub fn loopback_received() -> Option<u64> {
    std::fs::read_to_string("/proc/net/dev")
        .ok()?
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("lo:"))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
}

/// Resets `VmHWM` to the current RSS (writing `5` to `/proc/self/clear_refs`), so the next
/// [`rss`] reports the peak of the phase that follows. Returns false where the kernel refuses.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// What the benchmark ran on; written next to the results.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HostFacts {
    /// Logical CPUs available to this process.
    pub nproc: usize,
    /// Total memory in MiB (`MemTotal`).
    pub memory_mib: u64,
    /// The CPU model string.
    pub cpu_model: String,
    /// The kernel release.
    pub kernel: String,
    /// The rustc version that built the benchmark, if `rustc` is on the path.
    pub rustc: String,
    /// The 1-minute load average when the run started (other work on the machine skews timings).
    pub load_average_1m: f64,
}

/// Collects [`HostFacts`] from `/proc` and `rustc -V`.
pub fn host_facts() -> HostFacts {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let cpu_model = read("/proc/cpuinfo")
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .map(|r| r.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    let memory_mib = read("/proc/meminfo")
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|r| r.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kib| kib / 1024);
    let load_average_1m = read("/proc/loadavg")
        .split_whitespace()
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.0);
    HostFacts {
        nproc: std::thread::available_parallelism().map_or(1, |n| n.get()),
        memory_mib,
        cpu_model,
        kernel: read("/proc/sys/kernel/osrelease").trim().to_string(),
        rustc: command_output("rustc", &["-V"]).unwrap_or_else(|| "unknown".into()),
        load_average_1m,
    }
}

/// The git revision of the working tree (`HEAD`, plus `-dirty` when there are local changes).
pub fn git_revision() -> String {
    let Some(head) = command_output("git", &["rev-parse", "HEAD"]) else {
        return "unknown".into();
    };
    let dirty = command_output("git", &["status", "--porcelain", "--untracked-files=no"])
        .is_some_and(|s| !s.is_empty());
    if dirty { format!("{head}-dirty") } else { head }
}

fn command_output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_is_user_plus_system_after_the_command_name() {
        let stat = "4242 (a (b) c) S 1 4242 4242 0 -1 4194304 500 0 0 0 250 75 0 0 20 0 9 0 1000";
        assert_eq!(cpu_from_stat(stat), Some(3.25));
        assert_eq!(cpu_from_stat("4242 (x) S 1"), None);
        assert!(cpu_seconds().is_some_and(|s| s >= 0.0));
        assert!(cpu_seconds_of(std::process::id()).is_some_and(|s| s >= 0.0));
    }

    #[test]
    fn the_busy_share_leaves_out_idle_and_iowait() {
        let at = |busy: u64, idle: u64| format!("cpu  {busy} 0 0 {idle} 0 0 0 0 0 0\ncpu0 1 2 3\n");
        let before = host_ticks_from(&at(100, 300)).unwrap();
        let after = host_ticks_from(&at(175, 325)).unwrap();
        assert_eq!(before, (100, 400));
        assert_eq!(busy_share(before, after), Some(0.75));
        // No time passed: no share.
        assert_eq!(busy_share(after, after), None);
        assert_eq!(host_ticks_from("cpu0 1 2 3"), None);
        assert!(host_cpu_ticks().is_some());
    }
}
