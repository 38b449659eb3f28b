//! Pure resourceVersion bookkeeping and retry policy of the reflector (R2, R3, R6, R8, R14), free of I/O.

use std::time::Duration;

use tokio::time::Instant;

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
    /// is always paged, and must not make later relists at a concrete RV paged (item 3).
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

/// The minimum delay a server's `Retry-After` imposes (R1, R13, item 7): the value, capped at
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

    /// Records an internal error now; true if it may be retried at once.
    pub(crate) fn should_retry(&mut self) -> bool {
        if self.window.is_zero() {
            return false;
        }
        let now = Instant::now();
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
    fn item3_only_a_paged_list_at_0_makes_relists_paged() {
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
    fn item7_retry_after_is_capped_by_the_backoff_maximum() {
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
        assert!(!never.should_retry());
        let mut w = RetryWindow::new(Duration::from_secs(10));
        assert!(w.should_retry());
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(w.should_retry());
        tokio::time::sleep(Duration::from_secs(6)).await;
        assert!(
            !w.should_retry(),
            "11 s after the first error: outside the window"
        );
        tokio::time::sleep(Duration::from_secs(61)).await;
        assert!(
            w.should_retry(),
            "a minute without errors resets the window"
        );
    }
}
