//! Tests of the pure `step`: unit tests of the rules one by one, and property
//! tests from arbitrary machines and events, and over arbitrary event sequences.

use super::*;
use proptest::prelude::*;

use super::super::policy::CLASSES;

fn settings(strategy: InitialListStrategy) -> Settings {
    Settings {
        strategy,
        initial_list_rv: "0".into(),
        page_size: 500,
    }
}

fn machine(strategy: InitialListStrategy) -> Machine {
    Machine::new(settings(strategy), Duration::ZERO)
}

fn fail(class: ErrorClass) -> Failure {
    Failure {
        class,
        transport: false,
        retry_after: None,
    }
}

/// Steps `m` through `events`, returning the machine and the last action.
fn run(mut m: Machine, events: Vec<Event>) -> (Machine, Command, Option<Note>) {
    let mut last = (Command::Stop, None);
    for ev in events {
        let (next, action, note) = m.step(ev, Instant::now());
        m = next;
        last = (action, note);
    }
    (m, last.0, last.1)
}

fn listed(rv: &str) -> Event {
    Event::Listed {
        rv: rv.into(),
        paginated: false,
    }
}

fn ended(end: WatchEnd, last_rv: Option<&str>) -> Event {
    Event::WatchEnded {
        end,
        events: 3,
        elapsed: Duration::from_secs(30),
        last_rv: last_rv.map(str::to_owned),
    }
}

#[test]
fn r2_r3_first_cycle_lists_at_0_paged_then_watches_from_the_list_rv() {
    let (m, action, _) = run(
        machine(InitialListStrategy::ListWatch),
        vec![Event::CycleDue],
    );
    assert_eq!(
        action,
        Command::List {
            rv: "0".into(),
            limit: Some(500)
        }
    );
    let (m, action, _) = run(m, vec![listed("10")]);
    assert_eq!(
        action,
        Command::Watch {
            rv: "10".into(),
            wait: Wait::Now,
            rewatch: false
        }
    );
    assert_eq!(m.state, State::Watching);
}

#[test]
fn r9_a_closed_watch_rewatches_at_once_from_its_last_rv() {
    let m = machine(InitialListStrategy::ListWatch);
    let (m, action, note) = run(
        m,
        vec![
            Event::CycleDue,
            listed("10"),
            ended(WatchEnd::Closed, Some("15")),
        ],
    );
    assert_eq!(note, None);
    assert_eq!(
        action,
        Command::Watch {
            rv: "15".into(),
            wait: Wait::Now,
            rewatch: true
        }
    );
    assert_eq!(m.rv.last_synced.as_deref(), Some("15"));
}

#[test]
fn r10_a_very_short_empty_watch_ends_the_cycle() {
    let m = machine(InitialListStrategy::ListWatch);
    let short = Event::WatchEnded {
        end: WatchEnd::Closed,
        events: 0,
        elapsed: Duration::from_millis(200),
        last_rv: None,
    };
    let (m, action, note) = run(m, vec![Event::CycleDue, listed("10"), short]);
    assert_eq!(action, Command::Backoff { floor: None });
    assert_eq!(note, Some(Note::VeryShortWatch(Duration::from_millis(200))));
    // R12's rule holds here too: the next cycle lists at the last RV.
    let (_, action, _) = run(m, vec![Event::CycleDue]);
    assert_eq!(
        action,
        Command::List {
            rv: "10".into(),
            limit: None
        }
    );
}

#[test]
fn r4_an_expired_continue_token_lists_once_unpaged_at_the_same_rv() {
    let m = machine(InitialListStrategy::ListWatch);
    let (m, action, _) = run(
        m,
        vec![
            Event::CycleDue,
            Event::ListFailed {
                failure: fail(ErrorClass::Expired),
                page: 3,
            },
        ],
    );
    assert_eq!(
        action,
        Command::List {
            rv: "0".into(),
            limit: None
        }
    );
    assert!(!m.rv.unavailable);
    // A 410 of that unpaged list is R11's: at "" at once.
    let (m, action, _) = run(
        m,
        vec![Event::ListFailed {
            failure: fail(ErrorClass::Expired),
            page: 1,
        }],
    );
    assert_eq!(
        action,
        Command::List {
            rv: String::new(),
            limit: Some(500)
        }
    );
    assert!(m.rv.unavailable);
}

#[test]
fn r11_r15_list_410_relists_at_empty_once_then_backs_off() {
    let m = machine(InitialListStrategy::ListWatch);
    let gone = Event::ListFailed {
        failure: fail(ErrorClass::Expired),
        page: 1,
    };
    let (m, action, _) = run(m, vec![Event::CycleDue, listed("10")]);
    assert!(matches!(action, Command::Watch { .. }));
    let (m, _, _) = run(
        m,
        vec![ended(WatchEnd::Failed(fail(ErrorClass::Expired)), None)],
    );
    let (m, action, _) = run(m, vec![Event::CycleDue]);
    assert_eq!(
        action,
        Command::List {
            rv: "10".into(),
            limit: None
        },
        "R12: the relist after a watch 410 is at the last RV, not \"\""
    );
    let (m, action, _) = run(m, vec![gone.clone()]);
    assert_eq!(
        action,
        Command::List {
            rv: String::new(),
            limit: Some(500)
        }
    );
    let (m, action, _) = run(m, vec![gone]);
    assert_eq!(action, Command::Backoff { floor: None });
    assert_eq!(m.state, State::Idle);
    // The next successful list clears "unavailable".
    let (m, _, _) = run(m, vec![Event::CycleDue, listed("30")]);
    assert!(!m.rv.unavailable);
}

#[test]
fn r13_r14_r15_watch_errors() {
    let watching = || {
        run(
            machine(InitialListStrategy::ListWatch),
            vec![Event::CycleDue, listed("10")],
        )
        .0
    };
    let after = |class, retry_after| {
        let failure = Failure {
            class,
            transport: false,
            retry_after,
        };
        run(watching(), vec![ended(WatchEnd::Failed(failure), None)]).1
    };
    assert_eq!(
        after(ErrorClass::TooManyRequests, Some(Duration::from_secs(7))),
        Command::Watch {
            rv: "10".into(),
            wait: Wait::Backoff {
                floor: Some(Duration::from_secs(7))
            },
            rewatch: true
        }
    );
    assert!(matches!(
        after(ErrorClass::ConnectionRefused, None),
        Command::Watch {
            wait: Wait::Backoff { floor: None },
            ..
        }
    ));
    assert_eq!(
        after(ErrorClass::InternalError, None),
        Command::Backoff { floor: None },
        "R14 window 0: R15"
    );
    assert!(matches!(
        after(ErrorClass::CutChunk, None),
        Command::Watch {
            wait: Wait::Now,
            rewatch: true,
            ..
        }
    ));
    assert_eq!(
        after(ErrorClass::Other, Some(Duration::from_secs(3))),
        Command::Backoff {
            floor: Some(Duration::from_secs(3))
        }
    );
    // R14 with a window: retried at once inside it, R15 outside.
    let m = Machine::new(
        settings(InitialListStrategy::ListWatch),
        Duration::from_secs(5),
    );
    let (m, _, _) = run(m, vec![Event::CycleDue, listed("10")]);
    let t0 = Instant::now();
    let internal = ended(WatchEnd::Failed(fail(ErrorClass::InternalError)), None);
    let (m, action, _) = m.step(internal.clone(), t0);
    assert!(matches!(
        action,
        Command::Watch {
            wait: Wait::Now,
            ..
        }
    ));
    let (_, action, _) = m.step(internal, t0 + Duration::from_secs(6));
    assert_eq!(action, Command::Backoff { floor: None });
}

#[test]
fn r22_a_failed_resync_ends_the_cycle() {
    let (_, action, _) = run(
        machine(InitialListStrategy::ListWatch),
        vec![
            Event::CycleDue,
            listed("10"),
            ended(WatchEnd::ResyncFailed, None),
        ],
    );
    assert_eq!(action, Command::Backoff { floor: None });
}

#[test]
fn r17_r19_r20_watch_list() {
    let m = machine(InitialListStrategy::StreamingList);
    let (m, action, _) = run(m, vec![Event::CycleDue]);
    assert_eq!(action, Command::Stream { rv: String::new() });
    // R17: synced at the bookmark; live events on the same connection.
    let (m, action, _) = run(m, vec![Event::StreamSynced { rv: "20".into() }]);
    assert_eq!(action, Command::ConsumeStream { rv: "20".into() });
    assert_eq!(m.rv.last_synced.as_deref(), Some("20"));
    // A watch 410 ends the cycle; the next cycle streams from the last RV.
    let (m, _, _) = run(
        m,
        vec![ended(
            WatchEnd::Failed(fail(ErrorClass::Expired)),
            Some("25"),
        )],
    );
    let (m, action, _) = run(m, vec![Event::CycleDue]);
    assert_eq!(action, Command::Stream { rv: "25".into() });
    // R19: expired at that RV: once at "", at once; again: R15.
    let (m, action, _) = run(m, vec![Event::StartFailed(fail(ErrorClass::Expired))]);
    assert_eq!(action, Command::Stream { rv: String::new() });
    let (m, action, _) = run(m, vec![Event::StreamFailed(fail(ErrorClass::Expired))]);
    assert_eq!(action, Command::Backoff { floor: None });
    // R20: a stream that idles before its bookmark falls back to a paged LIST in this cycle,
    // and the informer stays on paged LIST.
    let (m, _, _) = run(m, vec![Event::CycleDue]);
    let (m, action, note) = run(m, vec![Event::StreamIncomplete { idle: true }]);
    assert!(matches!(action, Command::List { .. }));
    assert_eq!(note, Some(Note::FellBack { disabled: true }));
    assert!(m.streaming_disabled);
    let (m, _, _) = run(
        m,
        vec![
            listed("40"),
            ended(WatchEnd::Failed(fail(ErrorClass::Other)), None),
        ],
    );
    let (_, action, _) = run(m, vec![Event::CycleDue]);
    assert!(matches!(action, Command::List { .. }), "{action:?}");
}

#[test]
fn r20_broken_streams_fall_back_once_and_only_three_in_a_row_disable_streaming() {
    let broke = || {
        let mut f = fail(ErrorClass::Other);
        f.transport = true;
        Event::StreamFailed(f)
    };
    // The fallback LIST completes, its watch ends, and the next cycle starts.
    let next_cycle = |m: Machine| {
        run(
            m,
            vec![
                listed("5"),
                ended(WatchEnd::ResyncFailed, None),
                Event::CycleDue,
            ],
        )
    };
    let m = machine(InitialListStrategy::StreamingList);
    // A connection broken before the bookmark, then a stream that ends before it: each a
    // paged LIST in its cycle, and the next cycle streams again.
    let (m, action, note) = run(m, vec![Event::CycleDue, broke()]);
    assert!(matches!(action, Command::List { .. }), "{action:?}");
    assert_eq!(note, Some(Note::FellBack { disabled: false }));
    let (m, action, _) = next_cycle(m);
    assert!(matches!(action, Command::Stream { .. }), "{action:?}");
    let (m, _, note) = run(m, vec![Event::StreamIncomplete { idle: false }]);
    assert_eq!(note, Some(Note::FellBack { disabled: false }));
    // A stream that syncs resets the count.
    let (m, _, _) = next_cycle(m);
    let (m, _, _) = run(m, vec![Event::StreamSynced { rv: "7".into() }]);
    assert_eq!(m.broken_streams, 0);
    // Three broken streams in a row keep it on paged LIST.
    let (mut m, mut action, _) = run(
        m,
        vec![ended(WatchEnd::ResyncFailed, None), Event::CycleDue],
    );
    for n in 1..=BROKEN_STREAMS_LIMIT {
        assert!(
            matches!(action, Command::Stream { .. }),
            "cycle {n}: {action:?}"
        );
        let (next, _, note) = run(m, vec![broke()]);
        let disabled = n == BROKEN_STREAMS_LIMIT;
        assert_eq!(note, Some(Note::FellBack { disabled }));
        (m, action, _) = next_cycle(next);
    }
    assert!(m.streaming_disabled);
    assert!(matches!(action, Command::List { .. }), "{action:?}");
}

#[test]
fn r19_unsupported_disables_streaming_other_answers_fall_back_once() {
    let m = machine(InitialListStrategy::StreamingList);
    let (m, action, note) = run(
        m,
        vec![Event::CycleDue, Event::StartFailed(fail(ErrorClass::Other))],
    );
    assert!(matches!(action, Command::List { .. }));
    assert_eq!(note, Some(Note::FellBack { disabled: false }));
    let (m, action, _) = run(
        m,
        vec![
            listed("5"),
            ended(WatchEnd::ResyncFailed, None),
            Event::CycleDue,
        ],
    );
    assert!(matches!(action, Command::Stream { .. }), "still streaming");
    let (m, _, note) = run(m, vec![Event::StartFailed(fail(ErrorClass::Invalid))]);
    assert_eq!(note, Some(Note::FellBack { disabled: true }));
    assert!(m.streaming_disabled);
}

// ---- property tests ----

#[test]
fn b2_a_list_or_stream_over_budget_ends_the_cycle_and_the_next_one_keeps_its_strategy() {
    for strategy in [
        InitialListStrategy::ListWatch,
        InitialListStrategy::StreamingList,
    ] {
        let (m, action, note) = run(machine(strategy), vec![Event::CycleDue, Event::OverBudget]);
        assert_eq!(action, Command::Backoff { floor: None });
        assert_eq!(note, None);
        let (_, action, _) = run(m, vec![Event::CycleDue]);
        match strategy {
            InitialListStrategy::ListWatch => assert!(matches!(action, Command::List { .. })),
            InitialListStrategy::StreamingList => {
                assert!(
                    matches!(action, Command::Stream { .. }),
                    "no fallback: {action:?}"
                )
            }
        }
    }
}

fn class() -> impl Strategy<Value = ErrorClass> {
    (0..CLASSES.len()).prop_map(|i| CLASSES[i])
}

fn failure() -> impl Strategy<Value = Failure> {
    (class(), any::<bool>(), proptest::option::of(0u64..100)).prop_map(
        |(class, transport, secs)| Failure {
            class,
            transport,
            retry_after: secs.map(Duration::from_secs),
        },
    )
}

fn rv() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("0".to_string()),
        (1u32..1000).prop_map(|n| n.to_string())
    ]
}

fn watch_end() -> impl Strategy<Value = WatchEnd> {
    prop_oneof![
        Just(WatchEnd::Closed),
        Just(WatchEnd::ResyncFailed),
        failure().prop_map(WatchEnd::Failed),
    ]
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        Just(Event::CycleDue),
        (rv(), any::<bool>()).prop_map(|(rv, paginated)| Event::Listed { rv, paginated }),
        (failure(), 1u32..4).prop_map(|(failure, page)| Event::ListFailed { failure, page }),
        rv().prop_map(|rv| Event::StreamSynced { rv }),
        any::<bool>().prop_map(|idle| Event::StreamIncomplete { idle }),
        failure().prop_map(Event::StreamFailed),
        failure().prop_map(Event::StartFailed),
        Just(Event::OverBudget),
        (watch_end(), 0u64..3, 0u64..3000, proptest::option::of(rv())).prop_map(
            |(end, events, ms, last_rv)| Event::WatchEnded {
                end,
                events,
                elapsed: Duration::from_millis(ms),
                last_rv,
            }
        ),
        Just(Event::Cancelled),
        Just(Event::StoreClosed),
    ]
}

fn state() -> impl Strategy<Value = State> {
    prop_oneof![
        Just(State::Idle),
        rv().prop_map(|rv| State::Listing { rv }),
        (rv(), any::<bool>()).prop_map(|(rv, retried_at_empty)| State::Streaming {
            rv,
            retried_at_empty
        }),
        Just(State::Watching),
        Just(State::Stopped),
    ]
}

fn any_machine() -> impl Strategy<Value = Machine> {
    (
        state(),
        proptest::option::of(rv()),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        prop_oneof![Just(0u32), Just(500u32)],
        prop_oneof![Just(String::new()), Just("0".to_string())],
    )
        .prop_map(
            |(state, last, unavailable, paginated, disabled, streaming, page_size, first)| {
                let strategy = if streaming {
                    InitialListStrategy::StreamingList
                } else {
                    InitialListStrategy::ListWatch
                };
                let mut m = Machine::new(
                    Settings {
                        strategy,
                        initial_list_rv: first,
                        page_size,
                    },
                    Duration::ZERO,
                );
                m.state = state;
                m.rv = RvState {
                    last_synced: last,
                    unavailable,
                    paginated_result: paginated,
                };
                m.streaming_disabled = disabled;
                m
            },
        )
}

/// The state an action leaves the machine in: every action has exactly one.
fn consistent(state: &State, action: &Command) -> bool {
    match action {
        Command::Backoff { .. } => *state == State::Idle,
        Command::List { rv, .. } => *state == State::Listing { rv: rv.clone() },
        Command::Stream { rv } => matches!(state, State::Streaming { rv: s, .. } if s == rv),
        Command::Watch { .. } | Command::ConsumeStream { .. } => *state == State::Watching,
        Command::Stop => *state == State::Stopped,
    }
}

/// The action the error table's answer means, for a failure of `phase` (what `step` must do).
fn expected(m: &Machine, answer: ErrorAnswer, failure: Failure) -> Command {
    let last = m.rv.last_synced.clone().unwrap_or_default();
    match answer {
        ErrorAnswer::Rewatch { backoff: true } => Command::Watch {
            rv: last,
            wait: Wait::Backoff {
                floor: failure.retry_after,
            },
            rewatch: true,
        },
        ErrorAnswer::Rewatch { backoff: false }
        | ErrorAnswer::TreatAsClose
        | ErrorAnswer::DropEvent => Command::Watch {
            rv: last,
            wait: Wait::Now,
            rewatch: true,
        },
        ErrorAnswer::NewCycle => Command::Backoff {
            floor: failure.retry_after,
        },
        _ => unreachable!("not an answer for a WATCH"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// From any machine and any event: the action and the new state agree; `Stopped` is final;
    /// cancellation and a closed store stop it from anywhere.
    #[test]
    fn step_is_total_and_consistent(m in any_machine(), ev in event()) {
        let was_stopped = m.state == State::Stopped;
        let stops = matches!(ev, Event::Cancelled | Event::StoreClosed);
        let (next, action, _) = m.step(ev, Instant::now());
        prop_assert!(consistent(&next.state, &action), "{:?} after {:?}", next.state, action);
        if was_stopped || stops {
            prop_assert_eq!(action, Command::Stop);
        } else {
            prop_assert_ne!(action, Command::Stop);
        }
    }

    /// From any machine watching, each error class does what the error table says for a WATCH
    /// (R9, R12-R15), and a relist after it is never at "" unless the RV was already unavailable
    /// (R12, kubernetes#86483).
    #[test]
    fn watch_errors_follow_the_table(
        mut m in any_machine(),
        start in any::<bool>(),
        f in failure(),
        events in 1u64..3,
    ) {
        m.state = State::Watching;
        m.rv.last_synced = Some("77".into());
        let unavailable = m.rv.unavailable;
        let facts = Facts { transport: f.transport, ..Facts::default() };
        let (phase, ev) = if start {
            (Phase::WatchStart, Event::StartFailed(f))
        } else {
            let ev = Event::WatchEnded {
                end: WatchEnd::Failed(f),
                events,
                elapsed: Duration::from_secs(10),
                last_rv: None,
            };
            (Phase::Watch, ev)
        };
        let answer = on_error(phase, f.class, facts);
        let want = expected(&m, answer, f);
        let (m, action, _) = m.step(ev, Instant::now());
        prop_assert_eq!(&action, &want);
        if let Command::Watch { rv, .. } = &action {
            prop_assert_eq!(rv.as_str(), "77", "R9/R13: the same RV");
        }
        if action == (Command::Backoff { floor: f.retry_after }) {
            let (_, next, _) = m.step(Event::CycleDue, Instant::now());
            match next {
                Command::List { rv, .. } if !unavailable => prop_assert_eq!(rv.as_str(), "77"),
                Command::Stream { rv } if !unavailable => prop_assert_eq!(rv.as_str(), "77"),
                Command::List { .. } | Command::Stream { .. } => {}
                other => prop_assert!(false, "a cycle starts with a list: {:?}", other),
            }
        }
    }

    /// A failing LIST: R4 on later pages, R11 once at "", otherwise R15 (a backoff, never a
    /// request at once).
    #[test]
    fn list_errors_follow_the_table(mut m in any_machine(), rv in rv(), f in failure(), page in 1u32..4) {
        m.state = State::Listing { rv: rv.clone() };
        let unavailable = m.rv.unavailable;
        let phase = if page > 1 { Phase::ListContinue } else { Phase::List };
        let facts = Facts { transport: f.transport, rv_unavailable: unavailable, ..Facts::default() };
        let answer = on_error(phase, f.class, facts);
        let (m, action, _) = m.step(Event::ListFailed { failure: f, page }, Instant::now());
        match answer {
            ErrorAnswer::ListUnpaged => prop_assert_eq!(action, Command::List { rv, limit: None }),
            ErrorAnswer::RelistAtEmpty => {
                prop_assert!(m.rv.unavailable);
                prop_assert!(matches!(&action, Command::List { rv, .. } if rv.is_empty()), "{:?}", action);
            }
            _ => prop_assert_eq!(action, Command::Backoff { floor: f.retry_after }),
        }
    }

    /// A failing watch-list stream: R19 once at "", fallbacks to a paged LIST in the same cycle
    /// (R19, R20), else R15.
    #[test]
    fn stream_errors_follow_the_table(
        mut m in any_machine(),
        retried in any::<bool>(),
        f in failure(),
        start in any::<bool>(),
    ) {
        m.state = State::Streaming { rv: "5".into(), retried_at_empty: retried };
        let was_disabled = m.streaming_disabled;
        let phase = if start { Phase::StreamStart } else { Phase::Stream };
        let facts = Facts { transport: f.transport, retried_at_empty: retried, ..Facts::default() };
        let answer = on_error(phase, f.class, facts);
        let ev = if start { Event::StartFailed(f) } else { Event::StreamFailed(f) };
        let (m, action, note) = m.step(ev, Instant::now());
        match answer {
            ErrorAnswer::RetryStreamAtEmpty => {
                prop_assert_eq!(action, Command::Stream { rv: String::new() });
                prop_assert_eq!(m.state, State::Streaming { rv: String::new(), retried_at_empty: true });
            }
            ErrorAnswer::FallBackToList { disable_streaming } => {
                prop_assert!(matches!(action, Command::List { .. }), "{:?}", action);
                prop_assert_eq!(note, Some(Note::FellBack { disabled: disable_streaming }));
                prop_assert_eq!(m.streaming_disabled, was_disabled || disable_streaming);
            }
            ErrorAnswer::TreatAsClose => {
                prop_assert!(matches!(action, Command::List { .. }), "{:?}", action);
                // R20: only the BROKEN_STREAMS_LIMIT-th broken stream in a row disables streaming.
                prop_assert_eq!(
                    m.streaming_disabled,
                    was_disabled || m.broken_streams >= BROKEN_STREAMS_LIMIT,
                    "R20"
                );
            }
            _ => prop_assert_eq!(action, Command::Backoff { floor: f.retry_after }),
        }
    }

    /// Over any sequence of events from the start: the machine never stops unless told to;
    /// every request starts at once or after exactly one backoff (R1); a relist directly
    /// after a watch error never asks for "" unless a LIST found the RV unavailable (R11, R12);
    /// and once streaming is disabled it stays disabled.
    #[test]
    fn walks_keep_the_invariants(
        streaming in any::<bool>(),
        events in proptest::collection::vec(event(), 1..60),
    ) {
        let strategy = if streaming {
            InitialListStrategy::StreamingList
        } else {
            InitialListStrategy::ListWatch
        };
        let mut m = machine(strategy);
        let mut disabled = false;
        for ev in events {
            let stops = matches!(ev, Event::Cancelled | Event::StoreClosed);
            let before = m.state.clone();
            let last = m.rv.last_synced.clone();
            let unavailable = m.rv.unavailable;
            let (next, action, _) = m.step(ev, Instant::now());
            prop_assert!(consistent(&next.state, &action));
            if stops {
                prop_assert_eq!(action, Command::Stop);
                break;
            }
            // R1: a cycle begins only from Idle, after the backoff the Backoff action asked for
            // (or at the very start).
            if before == State::Idle {
                prop_assert!(
                    matches!(action, Command::List { .. } | Command::Stream { .. } | Command::Backoff { .. }),
                    "{:?}", action
                );
            }
            // R12: from a watch, a LIST at "" needs an RV marked unavailable by a LIST.
            if before == State::Watching
                && let Command::List { rv, .. } = &action
            {
                prop_assert!(!rv.is_empty() || unavailable || last.is_none_or(|l| l.is_empty()) , "{:?}", action);
            }
            if disabled {
                prop_assert!(next.streaming_disabled);
                prop_assert!(!matches!(action, Command::Stream { .. }), "{:?}", action);
            }
            disabled = next.streaming_disabled;
            m = next;
        }
    }
}
