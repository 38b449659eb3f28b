//! Server processes that never outlive the test process.
//!
//! Each server program runs under a small `sh` watchdog whose standard input is a pipe from this
//! process. When the pipe closes (the [`Envtest`](crate::Envtest) was dropped, or the test process
//! ended in any way, a shared server's included), the watchdog stops the program (TERM, then KILL
//! after a second: the data is thrown away, so a graceful shutdown would only cost time) and
//! removes the server's data directory. When the program exits by itself (a failed start), the
//! watchdog exits with its status and leaves the directory, with the log, for reading.

use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use crate::Error;

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

/// An unused loopback port (asked of the kernel, then released for the server to take, as
/// controller-runtime's envtest does).
pub(crate) fn free_port() -> Result<u16, Error> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(Error::io("asking for a free loopback port"))?;
    let port = listener
        .local_addr()
        .map_err(Error::io("reading a free loopback port"))?
        .port();
    Ok(port)
}
