//! The reflector as an explicit state machine (docs/behaviour.md R1-R4, R9-R20).
//!
//! [`Machine::step`] is pure: from the machine (its [`State`] and what it remembers across
//! cycles: the RV bookkeeping, whether streaming is off, the R14 window) and one [`Event`] (what
//! the previous [`Command`]'s I/O produced), it computes the next machine and the one next
//! [`Command`]. Every decision of the reflector is made here and in the error table
//! ([`on_error`]); the driver (`cycle.rs`) only performs actions: it sends requests, decodes,
//! writes the store, sleeps, logs and counts. kube-runtime's `watcher::step` has the same shape.
//!
//! ```text
//!            CycleDue                     Listed                      WatchEnded (R9, R13, R14)
//!   Idle ───────────────▶ Listing ─────────────────▶ Watching ◀──────────────┐
//!    ▲  │ (StreamingList)    ▲  │ ListFailed R4, R11    │  │ ──────────────────┘
//!    │  ▼                    │  └──▶ Listing            │  │ R10, R12, R15, R22
//!    │ Streaming ────────────┘ R19, R20 fallback        │  ▼
//!    │    │ StreamSynced ───────────────────────────────┘ Idle ── Backoff (R1) ──▶ CycleDue
//!    └────┴── R15: Idle                                     Cancelled / StoreClosed: Stopped
//! ```

use std::time::Duration;

use tokio::time::Instant;

use super::InitialListStrategy;
use super::policy::{
    ErrorAnswer, Facts, Phase, RetryWindow, RvState, VERY_SHORT_WATCH, list_limit, on_error,
};
use crate::list_watch::{self, ErrorClass};

/// Where the reflector is in its cycle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum State {
    /// Not started yet, or a cycle ended: the next cycle starts on [`Event::CycleDue`].
    Idle,
    /// A LIST at `rv` is running (R2-R4, R11).
    Listing {
        /// The RV the LIST asked for.
        rv: String,
    },
    /// A watch-list stream at `rv` is running, before its initial-events-end bookmark
    /// (R17-R20).
    Streaming {
        /// The RV the stream asked for.
        rv: String,
        /// The stream was already retried at `""` in this cycle (R19).
        retried_at_empty: bool,
    },
    /// A WATCH is starting or running (R5-R16, R22).
    Watching,
    /// Cancelled, or the store closed: nothing more happens.
    Stopped,
}

/// What an error tells the error table: its class, whether the connection broke, and the
/// server's `Retry-After`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Failure {
    pub(crate) class: ErrorClass,
    pub(crate) transport: bool,
    pub(crate) retry_after: Option<Duration>,
}

impl Failure {
    /// The failure a list-watch error is.
    pub(crate) fn of(e: &list_watch::Error) -> Self {
        Failure {
            class: e.class(),
            transport: matches!(e, list_watch::Error::Transport(_)),
            retry_after: e.retry_after(),
        }
    }

    /// A failure of no particular class (M15's endless list, a store refusal).
    pub(crate) fn other() -> Self {
        Failure {
            class: ErrorClass::Other,
            transport: false,
            retry_after: None,
        }
    }
}

/// How a WATCH connection ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WatchEnd {
    /// EOF, the server's timeout, or a dead connection (R7, R9).
    Closed,
    /// An error ended it (an `ERROR` event, a malformed or overlong line, a cut chunk, a broken
    /// connection).
    Failed(Failure),
    /// `store.resync()` failed while it ran (R22).
    ResyncFailed,
}

/// What the driver observed while performing the last [`Command`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    /// The reflector starts, or the backoff delay before the next cycle ended (R1).
    CycleDue,
    /// The LIST is complete and its items are in the store; the list's RV and whether the
    /// server paged it (R3).
    Listed { rv: String, paginated: bool },
    /// The LIST failed on page `page` (1-based).
    ListFailed { failure: Failure, page: u32 },
    /// The watch-list stream delivered its initial-events-end bookmark at `rv`, and its items
    /// are in the store (R17).
    StreamSynced { rv: String },
    /// The watch-list stream went idle (`idle`: no initial event for the idle timeout) or
    /// ended before its bookmark (R20).
    StreamIncomplete { idle: bool },
    /// The watch-list stream failed before its bookmark (R19, R20).
    StreamFailed(Failure),
    /// The LIST or watch-list stream would have taken the cache budget past its limit, and
    /// what it read was dropped (B2, `crate::budget`).
    OverBudget,
    /// A WATCH or watch-list request could not start.
    StartFailed(Failure),
    /// The WATCH ended after delivering `events` events in `elapsed`; `last_rv` is the newest
    /// RV it recorded (R5, R8), if any.
    WatchEnded {
        end: WatchEnd,
        events: u64,
        elapsed: Duration,
        last_rv: Option<String>,
    },
    /// The reflector was cancelled.
    Cancelled,
    /// The store closed.
    StoreClosed,
}

/// How long to wait before a WATCH starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    /// At once (R9, R14).
    Now,
    /// One backoff delay, at least the server's `Retry-After` capped at the backoff maximum
    /// (R1, R13).
    Backoff { floor: Option<Duration> },
}

/// The one thing the driver does next: the machine's output, which the driver performs (I/O,
/// sleeping). Not the error table's [`ErrorAnswer`], which `step` turns into one of these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Command {
    /// Wait one backoff delay, at least `floor` capped at the backoff maximum (R1),
    /// then start a cycle ([`Event::CycleDue`]).
    Backoff { floor: Option<Duration> },
    /// LIST at `rv` (pages of `limit`, or unpaged) and replace the store with the result (R2).
    List { rv: String, limit: Option<u32> },
    /// Open a watch-list stream at `rv`, replace the store at its bookmark (R17).
    Stream { rv: String },
    /// Start a WATCH at `rv` after `wait` and consume it (R5-R16); `rewatch` when it restarts
    /// a watch within the cycle (R9, R13, R14) rather than following a list.
    Watch {
        rv: String,
        wait: Wait,
        rewatch: bool,
    },
    /// Go on consuming the watch-list connection for live events, from `rv` (R17).
    ConsumeStream { rv: String },
    /// Stop the reflector.
    Stop,
}

/// Something the driver reports, beside the action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Note {
    /// The watch-list stream was abandoned for a paged LIST (R19, R20); `disabled` when the
    /// informer stays on paged LIST from now on.
    FellBack { disabled: bool },
    /// The watch ended this soon without an event (R10).
    VeryShortWatch(Duration),
}

/// The settings `step` reads; fixed for the reflector's life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Settings {
    pub(crate) strategy: InitialListStrategy,
    /// The first LIST's RV (R2, M6).
    pub(crate) initial_list_rv: String,
    /// The LIST page size; 0 disables paging (R3).
    pub(crate) page_size: u32,
}

/// R20: this many watch-list streams broken in a row (none synced in between) keep a reflector
/// on paged LIST until it restarts; client-go retries the stream every cycle.
pub(crate) const BROKEN_STREAMS_LIMIT: u32 = 3;

/// The state machine: the [`State`] and what the reflector remembers across cycles.
#[derive(Debug, Clone)]
pub(crate) struct Machine {
    pub(crate) state: State,
    /// The RV bookkeeping (R2, R3, R8, R11, R23).
    pub(crate) rv: RvState,
    /// Set by R19 "unsupported", an R20 idle stream or [`BROKEN_STREAMS_LIMIT`] broken streams
    /// in a row: paged LIST until the reflector restarts.
    pub(crate) streaming_disabled: bool,
    /// Watch-list streams broken before their bookmark since the last one that synced (R20).
    pub(crate) broken_streams: u32,
    retry_window: RetryWindow,
    settings: Settings,
}

impl Machine {
    /// A machine that has not started; feed it [`Event::CycleDue`] first. `internal_retry` is
    /// R14's window.
    pub(crate) fn new(settings: Settings, internal_retry: Duration) -> Self {
        Machine {
            state: State::Idle,
            rv: RvState::default(),
            streaming_disabled: false,
            broken_streams: 0,
            retry_window: RetryWindow::new(internal_retry),
            settings,
        }
    }

    /// The transition: the next machine, the action to perform and what to report. `now` is
    /// the time of the event (R14's window); nothing else outside the arguments is read.
    pub(crate) fn step(mut self, event: Event, now: Instant) -> (Machine, Command, Option<Note>) {
        let state = std::mem::replace(&mut self.state, State::Stopped);
        let (action, note) = match (state, event) {
            (_, Event::Cancelled | Event::StoreClosed) | (State::Stopped, _) => {
                (Command::Stop, None)
            }
            // R1: a cycle starts with the initial state (R21's strategy).
            (_, Event::CycleDue) => (self.begin_cycle(), None),
            (
                State::Listing { rv },
                Event::Listed {
                    rv: listed,
                    paginated,
                },
            ) => {
                self.rv.listed(&rv, listed, paginated);
                (self.watch(Wait::Now, false), None)
            }
            (State::Listing { rv }, Event::ListFailed { failure, page }) => {
                let phase = if page > 1 {
                    Phase::ListContinue
                } else {
                    Phase::List
                };
                let facts = Facts {
                    transport: failure.transport,
                    rv_unavailable: self.rv.unavailable,
                    ..Facts::default()
                };
                match on_error(phase, failure.class, facts) {
                    // R4: the same RV once more, in one response.
                    ErrorAnswer::ListUnpaged => {
                        self.state = State::Listing { rv: rv.clone() };
                        (Command::List { rv, limit: None }, None)
                    }
                    // R11: the RV is gone or too new: at once, at "".
                    ErrorAnswer::RelistAtEmpty => {
                        self.rv.unavailable = true;
                        (self.list(), None)
                    }
                    // R15.
                    _ => (self.end_cycle(failure.retry_after), None),
                }
            }
            // B2 (decision record 30): a new cycle after backoff, with the same strategy: the budget may have room
            // by then (another informer shrank, or the collection did).
            (State::Listing { .. } | State::Streaming { .. }, Event::OverBudget) => {
                (self.end_cycle(None), None)
            }
            (State::Streaming { rv, .. }, Event::StreamSynced { rv: synced }) => {
                self.broken_streams = 0;
                self.rv.listed(&rv, synced.clone(), false);
                self.state = State::Watching;
                (Command::ConsumeStream { rv: synced }, None)
            }
            // R20: a stream that idles before its bookmark: the server does not stream.
            (State::Streaming { .. }, Event::StreamIncomplete { idle: true }) => {
                self.fall_back(true)
            }
            // R20: one that ends before its bookmark broke like a connection.
            (State::Streaming { .. }, Event::StreamIncomplete { idle: false }) => {
                self.stream_broke()
            }
            (
                State::Streaming {
                    retried_at_empty, ..
                },
                Event::StartFailed(failure),
            ) => self.stream_failed(Phase::StreamStart, failure, retried_at_empty),
            (
                State::Streaming {
                    retried_at_empty, ..
                },
                Event::StreamFailed(failure),
            ) => self.stream_failed(Phase::Stream, failure, retried_at_empty),
            (State::Watching, Event::StartFailed(failure)) => {
                (self.watch_failed(Phase::WatchStart, failure, now), None)
            }
            (
                State::Watching,
                Event::WatchEnded {
                    end,
                    events,
                    elapsed,
                    last_rv,
                },
            ) => {
                if let Some(rv) = last_rv {
                    self.rv.last_synced = Some(rv);
                }
                match end {
                    WatchEnd::Closed => self.closed(events, elapsed),
                    // R22: a failed resync ends the watch and the cycle.
                    WatchEnd::ResyncFailed => (self.end_cycle(None), None),
                    WatchEnd::Failed(failure) => {
                        let facts = Facts {
                            transport: failure.transport,
                            ..Facts::default()
                        };
                        match on_error(Phase::Watch, failure.class, facts) {
                            // R9: a broken stream is a close.
                            ErrorAnswer::TreatAsClose => self.closed(events, elapsed),
                            _ => (self.watch_failed(Phase::Watch, failure, now), None),
                        }
                    }
                }
            }
            // An event that does not belong to the state (the driver never sends one): the
            // cycle is in an unknown state, so it ends; the next one lists again (R15).
            (_, _) => (self.end_cycle(None), None),
        };
        (self, action, note)
    }

    /// R21: a watch-list stream unless it is off or disabled, else a paged LIST.
    fn begin_cycle(&mut self) -> Command {
        if self.settings.strategy == InitialListStrategy::StreamingList && !self.streaming_disabled
        {
            let rv = self.rv.watch_list_rv();
            self.state = State::Streaming {
                rv: rv.clone(),
                retried_at_empty: false,
            };
            Command::Stream { rv }
        } else {
            self.list()
        }
    }

    /// A LIST at the relist RV (R2) with R3's limit.
    fn list(&mut self) -> Command {
        let rv = self.rv.relist_rv(&self.settings.initial_list_rv);
        let limit = list_limit(&rv, self.settings.page_size, self.rv.paginated_result);
        self.state = State::Listing { rv: rv.clone() };
        Command::List { rv, limit }
    }

    /// A WATCH from the last synced RV (R18: never with initial events).
    fn watch(&mut self, wait: Wait, rewatch: bool) -> Command {
        self.state = State::Watching;
        Command::Watch {
            rv: self.rv.last_synced.clone().unwrap_or_default(),
            wait,
            rewatch,
        }
    }

    /// The cycle ends; the next starts after one backoff delay (R1), at least `floor`.
    fn end_cycle(&mut self, floor: Option<Duration>) -> Command {
        self.state = State::Idle;
        Command::Backoff { floor }
    }

    /// R19/R20: a paged LIST in this cycle; `disable` keeps the informer on paged LIST.
    fn fall_back(&mut self, disable: bool) -> (Command, Option<Note>) {
        self.streaming_disabled |= disable;
        (self.list(), Some(Note::FellBack { disabled: disable }))
    }

    /// R20: a stream broke before its bookmark: a paged LIST in this cycle, and the next cycle
    /// streams again unless this was the [`BROKEN_STREAMS_LIMIT`]th broken stream in a row.
    fn stream_broke(&mut self) -> (Command, Option<Note>) {
        self.broken_streams = self.broken_streams.saturating_add(1);
        self.fall_back(self.broken_streams >= BROKEN_STREAMS_LIMIT)
    }

    /// A watch-list stream failed to start (`StreamStart`) or before its bookmark (`Stream`).
    fn stream_failed(
        &mut self,
        phase: Phase,
        failure: Failure,
        retried_at_empty: bool,
    ) -> (Command, Option<Note>) {
        let facts = Facts {
            transport: failure.transport,
            retried_at_empty,
            ..Facts::default()
        };
        match on_error(phase, failure.class, facts) {
            // R19: once more at "", at once.
            ErrorAnswer::RetryStreamAtEmpty => {
                self.rv.unavailable = true;
                let rv = self.rv.watch_list_rv();
                self.state = State::Streaming {
                    rv: rv.clone(),
                    retried_at_empty: true,
                };
                (Command::Stream { rv }, None)
            }
            ErrorAnswer::FallBackToList { disable_streaming } => self.fall_back(disable_streaming),
            // R20: the connection broke before the bookmark.
            ErrorAnswer::TreatAsClose => self.stream_broke(),
            // R15.
            _ => (self.end_cycle(failure.retry_after), None),
        }
    }

    /// The WATCH ended normally (R9) or like a close; R10 if it was very short and empty.
    fn closed(&mut self, events: u64, elapsed: Duration) -> (Command, Option<Note>) {
        if events == 0 && elapsed < VERY_SHORT_WATCH {
            (self.end_cycle(None), Some(Note::VeryShortWatch(elapsed)))
        } else {
            (self.watch(Wait::Now, true), None)
        }
    }

    /// A WATCH failed to start or while it ran (R12-R15).
    fn watch_failed(&mut self, phase: Phase, failure: Failure, now: Instant) -> Command {
        // R14's window counts only the internal errors it is asked about.
        let internal_retry_allowed =
            failure.class == ErrorClass::InternalError && self.retry_window.should_retry(now);
        let facts = Facts {
            transport: failure.transport,
            internal_retry_allowed,
            ..Facts::default()
        };
        match on_error(phase, failure.class, facts) {
            // R13: the same RV after backoff; Retry-After is the minimum delay.
            ErrorAnswer::Rewatch { backoff: true } => self.watch(
                Wait::Backoff {
                    floor: failure.retry_after,
                },
                true,
            ),
            // R14 inside its window.
            ErrorAnswer::Rewatch { backoff: false }
            | ErrorAnswer::TreatAsClose
            | ErrorAnswer::DropEvent => self.watch(Wait::Now, true),
            // R12 (the relist is at the last RV, never ""), R15.
            _ => self.end_cycle(failure.retry_after),
        }
    }
}

#[cfg(test)]
mod tests;
