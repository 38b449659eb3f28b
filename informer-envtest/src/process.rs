//! Server processes that never outlive the test process.
//!
//! Each server program runs under a small `sh` watchdog whose standard input is a pipe from this
//! process. When the pipe closes (the [`Envtest`](crate::Envtest) was dropped, or the test process
//! ended in any way, a shared server's included), the watchdog stops the program (TERM, then KILL
//! after a second: the data is thrown away, so a graceful shutdown would only cost time) and
//! removes the server's data directory. When the program exits by itself (a failed start), the
//! watchdog exits with its status and leaves the directory, with the log, for reading.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::{Error, pki};

/// `sh -c WATCHDOG sh DIR PIDFILE PROGRAM ARGS...`.
const WATCHDOG: &str = r#"
dir=$1
pidfile=$2
shift 2
exec 3<&0
"$@" </dev/null 3<&- &
pid=$!
echo "$pid" > "$pidfile"
(
  while read -r _; do :; done
  : > "$dir/.stopped"
  kill -TERM "$pid" 2>/dev/null
  i=0
  while kill -0 "$pid" 2>/dev/null && [ "$i" -lt 10 ]; do sleep 0.1; i=$((i + 1)); done
  kill -KILL "$pid" 2>/dev/null
) <&3 &
watcher=$!
exec 3<&-
wait "$pid"
status=$?
kill "$watcher" 2>/dev/null
if [ -e "$dir/.stopped" ]; then rm -rf "$dir"; fi
exit "$status"
"#;

/// One server program under its watchdog.
#[derive(Debug)]
pub(crate) struct Supervised {
    /// What runs (for messages).
    pub(crate) name: &'static str,
    child: Child,
    /// The watchdog's lifeline: closing it stops the program.
    lifeline: Option<ChildStdin>,
}

impl Supervised {
    /// Starts `program args` under a watchdog that removes `dir` when stopped through
    /// [`release`](Self::release) or the end of this process; its output goes to
    /// `dir/NAME.log`, its process id to `dir/NAME.pid`.
    pub(crate) fn spawn(
        name: &'static str,
        dir: &Path,
        program: &Path,
        args: &[String],
    ) -> Result<Supervised, Error> {
        let log = dir.join(format!("{name}.log"));
        let log = log.as_path();
        let out =
            std::fs::File::create(log).map_err(Error::io(format!("creating {}", log.display())))?;
        let err = out
            .try_clone()
            .map_err(Error::io(format!("opening {}", log.display())))?;
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(WATCHDOG)
            .arg("sh")
            .arg(dir)
            .arg(dir.join(format!("{name}.pid")))
            .arg(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .spawn()
            .map_err(|source| Error::Spawn {
                path: program.to_path_buf(),
                source,
            })?;
        let lifeline = child.stdin.take();
        Ok(Supervised {
            name,
            child,
            lifeline,
        })
    }

    /// The program's process id (the watchdog's child), once the watchdog has written it.
    pub(crate) fn program_id(&self, dir: &Path) -> Option<u32> {
        let text = std::fs::read_to_string(dir.join(format!("{}.pid", self.name))).ok()?;
        text.trim().parse().ok()
    }

    /// The program's log.
    pub(crate) fn log(&self, dir: &Path) -> std::path::PathBuf {
        dir.join(format!("{}.log", self.name))
    }

    /// The exit status, if the program has ended.
    pub(crate) fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Closes the lifeline: the watchdog stops the program (and removes the data directory).
    pub(crate) fn release(&mut self) {
        self.lifeline.take();
    }

    /// Waits up to `deadline` for the watchdog to finish after [`release`](Self::release), then
    /// kills it.
    pub(crate) fn reap(&mut self, deadline: Instant) {
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) | Err(_) => return,
                Ok(None) if Instant::now() >= deadline => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }
}

/// Ports this process has handed out: two servers started at once in one process never get the
/// same port, and a server's ports are never handed out again.
static HANDED_OUT: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

/// `N` distinct loopback ports, each free when asked (bound, and all held until every one is
/// found), then released for the servers to take.
///
/// Between the release and the server's own bind, any outgoing connection on the machine may take
/// a port from the kernel's ephemeral range (Linux's `ip_local_port_range`), and a test binary
/// opens many. So the ports come from below that range, where no connection's local port is ever
/// chosen, whenever the range leaves room there; where it does not, from the kernel
/// (`127.0.0.1:0`, as controller-runtime's envtest asks). A port another program binds first is
/// still possible: [`Envtest::start`](crate::Envtest::start) then starts again on new ports.
pub(crate) fn loopback_ports<const N: usize>() -> Result<[u16; N], Error> {
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
    pick(below_ephemeral(), pki::random_u32()?, &mut handed_out)
}

/// [`loopback_ports`] from `candidates` (tried in order from `offset`, wrapping), then from the
/// kernel; none of `handed_out`, which gains the ports returned.
fn pick<const N: usize>(
    candidates: Option<std::ops::Range<u16>>,
    offset: u32,
    handed_out: &mut BTreeSet<u16>,
) -> Result<[u16; N], Error> {
    let mut held = Vec::with_capacity(N);
    let candidates = candidates.unwrap_or(0..0);
    let span = candidates.len();
    // Every candidate once, from `offset` round to just before it.
    let from_offset = candidates
        .clone()
        .chain(candidates)
        .skip(offset as usize % span.max(1));
    for port in from_offset.take(span) {
        if held.len() == N {
            break;
        }
        if handed_out.contains(&port) {
            continue;
        }
        if let Ok(listener) = std::net::TcpListener::bind(("127.0.0.1", port)) {
            held.push((port, listener));
        }
    }
    // The kernel's choice, for what the candidates did not give: `N x N` tries at most, as a
    // port already handed out may come back.
    for _ in 0..N * N {
        if held.len() == N {
            break;
        }
        let listener = std::net::TcpListener::bind("127.0.0.1:0")
            .map_err(Error::io("asking for a free loopback port"))?;
        let port = listener
            .local_addr()
            .map_err(Error::io("reading a free loopback port"))?
            .port();
        if !handed_out.contains(&port) && held.iter().all(|(p, _)| *p != port) {
            held.push((port, listener));
        }
    }
    let ports: Vec<u16> = held.iter().map(|(port, _)| *port).collect();
    let ports: [u16; N] = ports.try_into().map_err(|found: Vec<u16>| Error::Io {
        what: format!("finding {N} free loopback ports"),
        source: std::io::Error::new(
            std::io::ErrorKind::AddrInUse,
            format!("found {}", found.len()),
        ),
    })?;
    handed_out.extend(ports);
    Ok(ports)
}

/// The ports below the kernel's ephemeral range that servers may take, `max(low / 2, 1024) ..
/// low`, if that range is known and this leaves at least 4 096 ports (`low` at least 8 192).
/// Starting at half of `low` keeps clear of most of the ports other servers are configured on
/// (6443, 10250, ...); any port already listening is passed over when probed.
fn below_ephemeral() -> Option<std::ops::Range<u16>> {
    let low = ephemeral_low()?;
    let start = (low / 2).max(1024);
    (low.saturating_sub(start) >= 4096).then_some(start..low)
}

/// The first port of the kernel's ephemeral range (Linux's `ip_local_port_range`), if known.
fn ephemeral_low() -> Option<u16> {
    let text = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// Whether a failed start failed because a server could not bind its port.
pub(crate) fn port_taken(error: &Error) -> bool {
    matches!(error, Error::Start { reason, log_tail }
        if reason.contains("address already in use") || log_tail.contains("address already in use"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_distinct_bindable_and_below_the_ephemeral_range() {
        let [a, b, c] = loopback_ports().unwrap();
        let [d, e, f] = loopback_ports().unwrap();
        let all = BTreeSet::from([a, b, c, d, e, f]);
        assert_eq!(all.len(), 6, "{all:?}");
        for port in all {
            std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
            if let Some(low) = ephemeral_low().filter(|low| *low >= 8192) {
                assert!(port < low, "{port} is in the ephemeral range from {low}");
                assert!(port >= 1024, "{port} is privileged");
            }
        }
    }

    #[test]
    fn a_port_handed_out_is_not_handed_out_again() {
        let Some(range) = below_ephemeral() else {
            return;
        };
        // The same offset twice: without the set, the second call would probe the same ports
        // first, find them free again (they are released) and return them.
        let mut handed_out = BTreeSet::new();
        let first: [u16; 3] = pick(Some(range.clone()), 11, &mut handed_out).unwrap();
        let second: [u16; 3] = pick(Some(range), 11, &mut handed_out).unwrap();
        assert!(
            first.iter().all(|p| !second.contains(p)),
            "{first:?} {second:?}"
        );
        assert_eq!(handed_out.len(), 6);
    }

    #[test]
    fn a_candidate_bound_elsewhere_or_handed_out_is_passed_over() {
        let [port] = loopback_ports().unwrap();
        let Some(end) = port.checked_add(1) else {
            return;
        };
        let only = Some(port..end);
        // Free and not handed out (an empty set): the one candidate is the answer.
        assert_eq!(pick(only.clone(), 7, &mut BTreeSet::new()).unwrap(), [port]);
        // Handed out: the kernel's choice instead.
        let mut handed_out = BTreeSet::from([port]);
        let [other] = pick(only.clone(), 0, &mut handed_out).unwrap();
        assert_ne!(other, port);
        assert!(handed_out.contains(&other));
        // Bound by another listener: passed over too.
        let _listener = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
        let [other] = pick(only, 0, &mut BTreeSet::new()).unwrap();
        assert_ne!(other, port);
    }
}
