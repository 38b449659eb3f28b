//! Resync bookkeeping: the informer's check period, each handler's period and its due mark (Y1-Y5, H4).

use std::time::{Duration, Instant};

/// The smallest resync period a handler can have (Y3).
pub const MIN_RESYNC_PERIOD: Duration = Duration::from_secs(1);

/// One handler's resync state.
#[derive(Debug, Clone)]
pub(crate) struct HandlerResync {
    /// The period the handler asked for (after the minimum and after-start adjustments).
    requested: Duration,
    /// The period in force, derived from `requested` and the check period (Y3).
    period: Duration,
    /// When this handler is next due.
    next: Instant,
    /// Marked on the last tick (Y4): sync notifications go to this handler.
    due: bool,
}

impl HandlerResync {
    /// A handler that asked for `requested` under the given check period.
    pub(crate) fn new(requested: Duration, check_period: Duration, now: Instant) -> Self {
        let period = determine_period(requested, check_period);
        HandlerResync {
            requested,
            period,
            next: now + period,
            due: false,
        }
    }

    /// The period in force (0 = no resync).
    pub(crate) fn period(&self) -> Duration {
        self.period
    }

    /// Whether the last tick marked this handler (H4, Y4).
    pub(crate) fn is_due(&self) -> bool {
        self.due
    }

    /// Recomputes the period after the check period changed (Y3).
    pub(crate) fn check_period_changed(&mut self, check_period: Duration, now: Instant) {
        self.period = determine_period(self.requested, check_period);
        self.next = now + self.period;
    }

    /// One tick (Y4): marks the handler if its next resync time has passed and advances it.
    pub(crate) fn tick(&mut self, now: Instant) -> bool {
        self.due = !self.period.is_zero() && now >= self.next;
        if self.due {
            self.next = now + self.period;
        }
        self.due
    }
}

/// The informer-wide resync clock: the check period the reflector ticks at (Y3).
#[derive(Debug, Clone)]
pub(crate) struct ResyncClock {
    check_period: Duration,
    started: bool,
}

/// What admitting a handler's requested period decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Admitted {
    /// The requested period to record for the handler.
    pub(crate) requested: Duration,
    /// Whether the check period was lowered (every handler must be recomputed).
    pub(crate) check_period_changed: bool,
}

impl ResyncClock {
    /// A clock with the informer's default period (Y5: 0 means no resync); raised to the
    /// minimum when positive.
    pub(crate) fn new(default_period: Duration) -> Self {
        ResyncClock {
            check_period: clamp_min(default_period, "informer"),
            started: false,
        }
    }

    /// The check period in force.
    pub(crate) fn check_period(&self) -> Duration {
        self.check_period
    }

    /// Freezes the check period: later handlers can no longer lower it (Y3).
    pub(crate) fn start(&mut self) {
        self.started = true;
    }

    /// Applies Y3 to a handler's requested period.
    pub(crate) fn admit(&mut self, requested: Duration, handler: &str) -> Admitted {
        let mut requested = clamp_min(requested, handler);
        let mut changed = false;
        if !requested.is_zero() && requested < self.check_period {
            if self.started {
                tracing::warn!(
                    handler,
                    ?requested,
                    check_period = ?self.check_period,
                    "resync period is smaller than the informer's check period and the informer \
                     already started; using the check period (Y3)"
                );
                requested = self.check_period;
            } else {
                self.check_period = requested;
                changed = true;
            }
        }
        if !requested.is_zero() && self.check_period.is_zero() {
            tracing::warn!(
                handler,
                ?requested,
                "the informer's resync check period is 0, so per-handler resync is off (Y3)"
            );
        }
        Admitted {
            requested,
            check_period_changed: changed,
        }
    }
}

/// Raises a positive period below the minimum to the minimum, with a warning (Y3).
fn clamp_min(period: Duration, who: &str) -> Duration {
    if !period.is_zero() && period < MIN_RESYNC_PERIOD {
        tracing::warn!(who, ?period, minimum = ?MIN_RESYNC_PERIOD, "resync period raised to the minimum (Y3)");
        MIN_RESYNC_PERIOD
    } else {
        period
    }
}

/// The period in force for a handler (client-go's `determineResyncPeriod`, Y3).
fn determine_period(requested: Duration, check_period: Duration) -> Duration {
    if requested.is_zero() || check_period.is_zero() {
        Duration::ZERO
    } else {
        requested.max(check_period)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn y5_default_zero_means_no_resync_and_y3_handlers_get_zero() {
        let mut clock = ResyncClock::new(Duration::ZERO);
        let a = clock.admit(5 * S, "h");
        assert_eq!(clock.check_period(), Duration::ZERO);
        let mut h = HandlerResync::new(a.requested, clock.check_period(), Instant::now());
        assert_eq!(h.period(), Duration::ZERO);
        assert!(!h.tick(Instant::now() + 100 * S));
    }

    #[test]
    fn y3_minimum_is_one_second() {
        let mut clock = ResyncClock::new(Duration::from_millis(10));
        assert_eq!(clock.check_period(), S);
        assert_eq!(clock.admit(Duration::from_millis(200), "h").requested, S);
    }

    #[test]
    fn y3_smaller_handler_before_start_lowers_the_check_period() {
        let mut clock = ResyncClock::new(10 * S);
        let now = Instant::now();
        let mut slow = HandlerResync::new(
            clock.admit(30 * S, "slow").requested,
            clock.check_period(),
            now,
        );
        let a = clock.admit(2 * S, "fast");
        assert!(a.check_period_changed);
        assert_eq!(clock.check_period(), 2 * S);
        slow.check_period_changed(clock.check_period(), now);
        assert_eq!(slow.period(), 30 * S);
        let fast = HandlerResync::new(a.requested, clock.check_period(), now);
        assert_eq!(fast.period(), 2 * S);
    }

    #[test]
    fn y3_smaller_handler_after_start_is_raised_to_the_check_period() {
        let mut clock = ResyncClock::new(10 * S);
        clock.start();
        let a = clock.admit(2 * S, "late");
        assert_eq!(
            a,
            Admitted {
                requested: 10 * S,
                check_period_changed: false
            }
        );
        assert_eq!(clock.check_period(), 10 * S);
    }

    #[test]
    fn y4_tick_marks_due_handlers_and_advances_them() {
        let now = Instant::now();
        let mut h = HandlerResync::new(3 * S, S, now);
        assert!(!h.tick(now + S));
        assert!(!h.is_due());
        assert!(h.tick(now + 3 * S));
        assert!(h.is_due());
        assert!(!h.tick(now + 4 * S));
        assert!(!h.is_due(), "the mark is recomputed on every tick");
        assert!(h.tick(now + 6 * S));
        let mut off = HandlerResync::new(Duration::ZERO, S, now);
        assert!(!off.tick(now + 1000 * S));
    }
}
