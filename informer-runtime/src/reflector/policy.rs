//! Pure resourceVersion bookkeeping and retry policy of the reflector (R2, R3, R6, R8, R14), free of I/O.

use std::time::Duration;

use tokio::time::Instant;

use crate::list_watch::ErrorClass;

/// The shortest watch timeout the reflector asks for; a configured minimum below it is ignored (R6).
pub(crate) const MIN_WATCH_TIMEOUT_FLOOR: Duration = Duration::from_secs(300);

/// A watch that sends nothing for its timeout plus this long is dead (R7).
pub(crate) const DEAD_WATCH_GRACE: Duration = Duration::from_secs(5);

/// A watch shorter than this that delivered no event is an error (R10).
pub(crate) const VERY_SHORT_WATCH: Duration = Duration::from_secs(1);

/// The internal-error retry window resets after this long without errors (R14).
pub(crate) const RETRY_WINDOW_RESET: Duration = Duration::from_secs(60);

/// What the reflector knows about resource versions between cycles.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RvState {
    /// The last RV synced from a list, a watch event or a bookmark (R23).
    pub(crate) last_synced: Option<String>,
    /// Set by a 410 or "too large RV" on LIST (R11); cleared by the next successful list.
    pub(crate) unavailable: bool,
    /// The first `"0"` list came back paged (the server has no watch cache): keep paging (R3).
    pub(crate) paginated_result: bool,
}

impl RvState {
    /// The RV the next LIST asks for (R2): `""` after "unavailable", else the last synced RV, else the
    /// configured first-list RV (`"0"` by default).
    pub(crate) fn relist_rv(&self, initial_list_rv: &str) -> String {
        if self.unavailable {
            return String::new();
        }
        match &self.last_synced {
            Some(rv) if !rv.is_empty() => rv.clone(),
            _ => initial_list_rv.to_string(),
        }
    }

    /// The RV a watch-list stream starts from (R17): `""` first and after "unavailable", else the last RV.
    pub(crate) fn watch_list_rv(&self) -> String {
        if self.unavailable {
            return String::new();
        }
        self.last_synced.clone().unwrap_or_default()
    }

    /// Records a successful list that asked for `requested_rv` and returned `rv` (clears
    /// "unavailable", R11). Only a `"0"` list that came back paged says the server has no watch
    /// cache (R3, as client-go's `paginatedResult`); a paged list at `""` is a quorum read that
    /// is always paged, and must not make later relists at a concrete RV paged.
    pub(crate) fn listed(&mut self, requested_rv: &str, rv: String, paginated: bool) {
        self.unavailable = false;
        if requested_rv == "0" && paginated {
            self.paginated_result = true;
        }
        self.last_synced = Some(rv);
    }
}

/// The `limit` of a LIST at `rv` (R3): paged for `""`/`"0"` (or when the server paged a `"0"` list
/// before), unpaged for a concrete RV so the watch cache serves it.
pub(crate) fn list_limit(rv: &str, page_size: u32, paginated_result: bool) -> Option<u32> {
    if page_size == 0 {
        return None;
    }
    if rv.is_empty() || rv == "0" || paginated_result {
        Some(page_size)
    } else {
        None
    }
}

/// The watch's `timeoutSeconds` (R6): uniform in `[m, 2m)` where `m` is the configured minimum,
/// raised to 5 min. `unit` is the random draw in `[0, 1)`.
pub(crate) fn watch_timeout(min_watch_timeout: Duration, unit: f64) -> Duration {
    let min = min_watch_timeout.max(MIN_WATCH_TIMEOUT_FLOOR).as_secs();
    let extra = (min as f64 * unit.clamp(0.0, 0.999_999)).floor() as u64;
    Duration::from_secs(min + extra)
}

/// The minimum delay a server's `Retry-After` imposes (R1, R13): the value, capped at
/// the backoff maximum `cap`, so `Retry-After: 3600` cannot silence an informer for an hour.
pub(crate) fn retry_after_floor(retry_after: Option<Duration>, cap: Duration) -> Duration {
    let asked = retry_after.unwrap_or_default();
    if asked > cap {
        tracing::info!(
            retry_after = ?asked,
            ?cap,
            "server's Retry-After exceeds the backoff maximum; waiting the maximum"
        );
    }
    asked.min(cap)
}

/// Tracks which watch event RVs may be recorded (R8): a watch started at `""` or `"0"` delivers
/// synthetic ADDED events out of RV order, so nothing is recorded before the first non-ADDED event.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EventRvGate {
    open: bool,
}

impl EventRvGate {
    /// A gate for a watch started at `start_rv`.
    pub(crate) fn new(start_rv: &str) -> Self {
        EventRvGate {
            open: !(start_rv.is_empty() || start_rv == "0"),
        }
    }

    /// Whether the RV of this event may be recorded.
    pub(crate) fn admit(&mut self, is_added: bool) -> bool {
        if !is_added {
            self.open = true;
        }
        self.open
    }
}

/// R14: retry internal errors immediately within `window` of the first error; the window resets
/// after a minute without errors. A zero window never retries.
#[derive(Debug, Clone)]
pub(crate) struct RetryWindow {
    window: Duration,
    first: Option<Instant>,
    last: Option<Instant>,
}

impl RetryWindow {
    pub(crate) fn new(window: Duration) -> Self {
        RetryWindow {
            window,
            first: None,
            last: None,
        }
    }

    /// Records an internal error at `now`; true if it may be retried at once.
    pub(crate) fn should_retry(&mut self, now: Instant) -> bool {
        if self.window.is_zero() {
            return false;
        }
        if self
            .last
            .is_none_or(|l| now.saturating_duration_since(l) > RETRY_WINDOW_RESET)
        {
            self.first = Some(now);
        }
        self.last = Some(now);
        self.first
            .is_some_and(|f| now.saturating_duration_since(f) < self.window)
    }
}

/// Where in a cycle an error arrived: the rows of the error table ([`on_error`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// A LIST, or its first page (R2, R3, R11, R15).
    List,
    /// A LIST page after the first (R4, then as [`Phase::List`]).
    ListContinue,
    /// Starting a plain WATCH (R12-R15).
    WatchStart,
    /// A running plain WATCH (R9, R12, R14-R16).
    Watch,
    /// Starting a watch-list stream (R19).
    StreamStart,
    /// A watch-list stream before its initial-events-end bookmark (R16, R19, R20).
    Stream,
}

/// What the reflector does about an error: the cells of the error table ([`on_error`]). The
/// state machine turns an answer into its next `Command` (`state.rs`), which the driver performs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorAnswer {
    /// Drop this event, report it, keep the stream (R16).
    DropEvent,
    /// The stream ended: handle it as a close of that phase: on a WATCH re-watch at the last
    /// RV, or a new cycle if it was very short (R9, R10); on a watch-list stream abandon it for
    /// a paged LIST and stay on paged LIST (R20).
    TreatAsClose,
    /// Mark the RV unavailable and list again at once, at `""` (R11).
    RelistAtEmpty,
    /// The continue token expired: list once more at the same RV, unpaged, at once (R4).
    ListUnpaged,
    /// Mark the RV unavailable and start the stream again at once, at `""` (R19).
    RetryStreamAtEmpty,
    /// Start the WATCH again at the same RV, after a backoff delay when `backoff` (R13), at
    /// once otherwise (R14 inside its window).
    Rewatch {
        /// Whether one backoff delay (R1) comes first.
        backoff: bool,
    },
    /// Abandon the stream for a paged LIST in the same cycle (R19); `disable_streaming` keeps
    /// this informer on paged LIST until it is restarted (the server does not support it).
    FallBackToList {
        /// Stay on paged LIST from now on.
        disable_streaming: bool,
    },
    /// End the cycle; the next one starts after one backoff delay and lists at the last RV
    /// (R12, R15; never at `""` after a watch 410).
    NewCycle,
}

/// What the error table needs to know besides the phase and the class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Facts {
    /// The error is a transport failure (the connection broke), not an answer of the server.
    pub(crate) transport: bool,
    /// The RV is already marked unavailable (R11 retried once at `""`).
    pub(crate) rv_unavailable: bool,
    /// The watch-list stream was already retried at `""` in this cycle (R19).
    pub(crate) retried_at_empty: bool,
    /// The R14 window allows one more immediate retry of an internal error.
    pub(crate) internal_retry_allowed: bool,
}

/// The one error table of the reflector: what each error class means in each
/// phase of a cycle (docs/behaviour.md R9-R16, R19, R20). The LIST, WATCH and watch-list paths all ask
/// it, so they cannot disagree; for example a connection that breaks mid-stream is a close in
/// every phase that streams (R9 for a WATCH, R20 for a watch-list stream).
pub(crate) fn on_error(phase: Phase, class: ErrorClass, f: Facts) -> ErrorAnswer {
    use ErrorAnswer::*;
    use ErrorClass as C;
    use Phase as P;
    let broken = f.transport || class == C::CutChunk;
    match (phase, class) {
        // R4: a continue token expired: the whole list once, unpaged, at the same RV.
        (P::ListContinue, C::Expired) => ListUnpaged,
        // Any other error on a later page is an error of the LIST.
        (P::ListContinue, _) => on_error(P::List, class, f),
        // R16: an event of another kind or a Table is dropped; the stream goes on.
        (P::Watch | P::Stream, C::UnexpectedObject) => DropEvent,
        // R9 / R20: a stream that breaks has ended; nothing after its last complete event was
        // recorded, so nothing is lost.
        (P::Watch | P::Stream, _) if broken => TreatAsClose,
        // R11: LIST expired or too large: once at "", at once; again: R15.
        (P::List, C::Expired | C::TooLargeResourceVersion) if !f.rv_unavailable => RelistAtEmpty,
        // R19: the stream's RV expired or is too large: once at "", at once.
        (P::StreamStart | P::Stream, C::Expired | C::TooLargeResourceVersion)
            if !f.retried_at_empty =>
        {
            RetryStreamAtEmpty
        }
        // R12: a WATCH 410 ends the cycle; the relist is at the last RV, never "".
        (P::WatchStart | P::Watch, C::Expired) => NewCycle,
        // R13: 429 or connection refused on a WATCH: re-watch at the same RV after backoff.
        (P::WatchStart | P::Watch, C::TooManyRequests | C::ConnectionRefused) => {
            Rewatch { backoff: true }
        }
        // R14: an internal error on a WATCH is retried at once inside its window, else R15.
        (P::WatchStart | P::Watch, C::InternalError) if f.internal_retry_allowed => {
            Rewatch { backoff: false }
        }
        // R19: a server that rejects the watch-list request does not support it.
        (P::StreamStart, C::Invalid) => FallBackToList {
            disable_streaming: true,
        },
        // R19: other non-retriable answers fall back to a paged LIST in this cycle.
        (P::StreamStart, C::Other | C::CutChunk | C::UnexpectedObject) if !f.transport => {
            FallBackToList {
                disable_streaming: false,
            }
        }
        (P::Stream, C::Invalid | C::Other) => FallBackToList {
            disable_streaming: false,
        },
        // R15: everything else ends the cycle.
        _ => NewCycle,
    }
}

/// Every error class, for the tests of the table and of `step`.
#[cfg(test)]
pub(crate) const CLASSES: [ErrorClass; 9] = [
    ErrorClass::Expired,
    ErrorClass::TooLargeResourceVersion,
    ErrorClass::TooManyRequests,
    ErrorClass::ConnectionRefused,
    ErrorClass::InternalError,
    ErrorClass::Invalid,
    ErrorClass::UnexpectedObject,
    ErrorClass::CutChunk,
    ErrorClass::Other,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn r2_relist_rv() {
        let mut st = RvState::default();
        assert_eq!(st.relist_rv("0"), "0", "first list at \"0\"");
        assert_eq!(st.relist_rv(""), "", "first-list RV is configurable (M6)");
        st.listed("0", "42".into(), false);
        assert_eq!(st.relist_rv("0"), "42", "relist at the last synced RV");
        st.unavailable = true;
        assert_eq!(st.relist_rv("0"), "", "R11: quorum read after unavailable");
        st.listed("", "50".into(), false);
        assert!(!st.unavailable, "cleared by the next successful list");
        assert_eq!(st.relist_rv("0"), "50");
    }

    #[test]
    fn r17_watch_list_rv() {
        let mut st = RvState::default();
        assert_eq!(st.watch_list_rv(), "");
        st.listed("", "7".into(), false);
        assert_eq!(st.watch_list_rv(), "7");
        st.unavailable = true;
        assert_eq!(st.watch_list_rv(), "");
    }

    #[test]
    fn r3_only_a_paged_list_at_0_makes_relists_paged() {
        let mut st = RvState::default();
        st.listed("", "10".into(), true);
        assert!(!st.paginated_result, "a quorum list is always paged");
        st.listed("10", "11".into(), true);
        assert!(!st.paginated_result);
        st.listed("0", "12".into(), false);
        assert!(!st.paginated_result, "the watch cache served \"0\" whole");
        st.listed("0", "13".into(), true);
        assert!(st.paginated_result, "R3: no watch cache: keep paging");
    }

    #[test]
    fn r3_limits() {
        assert_eq!(list_limit("0", 500, false), Some(500));
        assert_eq!(list_limit("", 500, false), Some(500));
        assert_eq!(
            list_limit("123", 500, false),
            None,
            "concrete RV: unpaged, served by cache"
        );
        assert_eq!(
            list_limit("123", 500, true),
            Some(500),
            "server paged the \"0\" list"
        );
        assert_eq!(
            list_limit("0", 0, false),
            None,
            "page size 0 disables paging"
        );
    }

    #[test]
    fn r6_timeout_in_5_to_10_minutes() {
        for unit in [0.0, 0.25, 0.5, 0.999_999_9, 1.0] {
            let t = watch_timeout(Duration::from_secs(1), unit).as_secs();
            assert!((300..600).contains(&t), "{unit} -> {t}");
        }
        assert_eq!(watch_timeout(Duration::from_secs(400), 0.0).as_secs(), 400);
        assert!(watch_timeout(Duration::from_secs(400), 0.9999).as_secs() < 800);
    }

    #[test]
    fn r1_retry_after_is_capped_by_the_backoff_maximum() {
        let cap = Duration::from_secs(30);
        assert_eq!(retry_after_floor(None, cap), Duration::ZERO);
        assert_eq!(
            retry_after_floor(Some(Duration::from_secs(7)), cap),
            Duration::from_secs(7)
        );
        assert_eq!(retry_after_floor(Some(Duration::from_secs(3600)), cap), cap);
    }

    #[test]
    fn r8_no_rv_until_first_non_added() {
        let mut gate = EventRvGate::new("0");
        assert!(!gate.admit(true));
        assert!(!gate.admit(true));
        assert!(gate.admit(false));
        assert!(gate.admit(true), "stays open");
        let mut gate = EventRvGate::new("15");
        assert!(
            gate.admit(true),
            "a concrete start RV records from the first event"
        );
        assert!(!EventRvGate::new("").admit(true));
    }

    #[tokio::test(start_paused = true)]
    async fn r14_window() {
        let mut never = RetryWindow::new(Duration::ZERO);
        assert!(!never.should_retry(Instant::now()));
        let mut w = RetryWindow::new(Duration::from_secs(10));
        assert!(w.should_retry(Instant::now()));
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(w.should_retry(Instant::now()));
        tokio::time::sleep(Duration::from_secs(6)).await;
        assert!(
            !w.should_retry(Instant::now()),
            "11 s after the first error: outside the window"
        );
        tokio::time::sleep(Duration::from_secs(61)).await;
        assert!(
            w.should_retry(Instant::now()),
            "a minute without errors resets the window"
        );
    }

    const PHASES: [Phase; 6] = [
        Phase::List,
        Phase::ListContinue,
        Phase::WatchStart,
        Phase::Watch,
        Phase::StreamStart,
        Phase::Stream,
    ];
    use super::CLASSES;

    fn facts() -> impl proptest::strategy::Strategy<Value = Facts> {
        use proptest::prelude::*;
        (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>()).prop_map(|(a, b, c, d)| {
            Facts {
                transport: a,
                rv_unavailable: b,
                retried_at_empty: c,
                internal_retry_allowed: d,
            }
        })
    }

    proptest::proptest! {
        /// The table's rules hold for every (phase, class, facts).
        #[test]
        fn r9_r16_error_table_rules(p in 0..6usize, c in 0..9usize, f in facts()) {
            let (phase, class) = (PHASES[p], CLASSES[c]);
            let action = on_error(phase, class, f);
            let streaming = matches!(phase, Phase::Watch | Phase::Stream);
            let watching = matches!(phase, Phase::WatchStart | Phase::Watch);
            let stream_phase = matches!(phase, Phase::StreamStart | Phase::Stream);
            // R16: only a running stream drops events, and it drops exactly the unexpected ones.
            proptest::prop_assert_eq!(
                action == ErrorAnswer::DropEvent,
                streaming && class == ErrorClass::UnexpectedObject
            );
            // R9/R20: a broken connection is a close wherever a stream runs.
            if streaming && class != ErrorClass::UnexpectedObject
                && (f.transport || class == ErrorClass::CutChunk)
            {
                proptest::prop_assert_eq!(action, ErrorAnswer::TreatAsClose);
            }
            // R12: a WATCH 410 never relists at "" (kubernetes#86483): it ends the cycle, whose
            // relist is at the last RV (or it is a close when the connection broke).
            if watching && class == ErrorClass::Expired {
                proptest::prop_assert!(matches!(action, ErrorAnswer::NewCycle | ErrorAnswer::TreatAsClose));
            }
            // R11: only a LIST relists at "", and only once.
            if action == ErrorAnswer::RelistAtEmpty {
                proptest::prop_assert!(
                    matches!(phase, Phase::List | Phase::ListContinue) && !f.rv_unavailable
                );
            }
            if phase == Phase::List {
                proptest::prop_assert!(matches!(action, ErrorAnswer::RelistAtEmpty | ErrorAnswer::NewCycle));
            }
            // R4: only an expired continue token lists unpaged; a later page's other errors
            // are the LIST's.
            proptest::prop_assert_eq!(
                action == ErrorAnswer::ListUnpaged,
                phase == Phase::ListContinue && class == ErrorClass::Expired
            );
            if phase == Phase::ListContinue && class != ErrorClass::Expired {
                proptest::prop_assert_eq!(action, on_error(Phase::List, class, f));
            }
            // R19: only a watch-list stream retries at "", once; only it falls back to LIST.
            if action == ErrorAnswer::RetryStreamAtEmpty {
                proptest::prop_assert!(stream_phase && !f.retried_at_empty);
            }
            if matches!(action, ErrorAnswer::FallBackToList { .. }) {
                proptest::prop_assert!(stream_phase);
            }
            // R13/R14: only a WATCH re-watches; with backoff exactly for 429 and refused
            // connections (R1), at once exactly for an internal error inside the window.
            if let ErrorAnswer::Rewatch { backoff } = action {
                proptest::prop_assert!(watching);
                proptest::prop_assert_eq!(
                    backoff,
                    matches!(class, ErrorClass::TooManyRequests | ErrorClass::ConnectionRefused)
                );
                if !backoff {
                    proptest::prop_assert!(
                        class == ErrorClass::InternalError && f.internal_retry_allowed
                    );
                }
            }
        }
    }

    #[test]
    fn r9_r16_error_table_cells() {
        let none = Facts::default();
        let transport = Facts {
            transport: true,
            ..none
        };
        // The disagreement the table removed: a broken connection mid-stream.
        assert_eq!(
            on_error(Phase::Watch, ErrorClass::Other, transport),
            ErrorAnswer::TreatAsClose
        );
        assert_eq!(
            on_error(Phase::Stream, ErrorClass::Other, transport),
            ErrorAnswer::TreatAsClose
        );
        assert_eq!(
            on_error(Phase::Stream, ErrorClass::CutChunk, none),
            ErrorAnswer::TreatAsClose
        );
        assert_eq!(
            on_error(Phase::List, ErrorClass::Expired, none),
            ErrorAnswer::RelistAtEmpty
        );
        assert_eq!(
            on_error(
                Phase::List,
                ErrorClass::Expired,
                Facts {
                    rv_unavailable: true,
                    ..none
                }
            ),
            ErrorAnswer::NewCycle
        );
        assert_eq!(
            on_error(Phase::Watch, ErrorClass::Expired, none),
            ErrorAnswer::NewCycle
        );
        assert_eq!(
            on_error(Phase::WatchStart, ErrorClass::TooManyRequests, none),
            ErrorAnswer::Rewatch { backoff: true }
        );
        assert_eq!(
            on_error(Phase::StreamStart, ErrorClass::Invalid, none),
            ErrorAnswer::FallBackToList {
                disable_streaming: true
            }
        );
        assert_eq!(
            on_error(Phase::StreamStart, ErrorClass::Other, transport),
            ErrorAnswer::NewCycle,
            "a stream that cannot connect is retried by the next cycle"
        );
        assert_eq!(
            on_error(Phase::Stream, ErrorClass::TooLargeResourceVersion, none),
            ErrorAnswer::RetryStreamAtEmpty
        );
        assert_eq!(
            on_error(Phase::Stream, ErrorClass::InternalError, none),
            ErrorAnswer::NewCycle
        );
    }
}
