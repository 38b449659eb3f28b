//! The `meta` semantics of `set`, `find`, `remove`, `is_true` and `is_false` (G10).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition as K8sCondition, Time};
use k8s_openapi::jiff::Timestamp;
use proptest::prelude::*;

use super::*;

fn at(second: i64) -> Time {
    Time(Timestamp::from_second(second).unwrap_or_default())
}

type Boxed = Option<Box<[K8sCondition]>>;

#[test]
fn a_new_type_is_appended_at_the_given_time_or_now() {
    let mut list: Boxed = None;
    assert!(set(
        &mut list,
        NewCondition::new("Ready", TRUE).last_transition_time(at(10))
    ));
    let before = Timestamp::now().as_second();
    assert!(set(
        &mut list,
        NewCondition::new("Synced", FALSE)
            .reason("Wait")
            .message("m")
    ));
    let list_ref = list.as_deref().unwrap_or_default();
    assert_eq!(list_ref.len(), 2);
    assert_eq!(list_ref[0].type_, "Ready");
    assert_eq!(list_ref[0].last_transition_time, at(10));
    assert_eq!(
        (list_ref[1].reason.as_str(), list_ref[1].message.as_str()),
        ("Wait", "m")
    );
    let stamped = list_ref[1].last_transition_time.0.as_second();
    assert!(stamped >= before && stamped <= Timestamp::now().as_second());
    assert_eq!(list_ref[1].last_transition_time.0.subsec_nanosecond(), 0);
}

#[test]
fn a_changed_status_moves_the_transition_time() {
    let mut list: Vec<K8sCondition> = Vec::new();
    set(
        &mut list,
        NewCondition::new("Ready", FALSE).last_transition_time(at(10)),
    );
    assert!(set(
        &mut list,
        NewCondition::new("Ready", TRUE).last_transition_time(at(20))
    ));
    assert_eq!(
        (list[0].status.as_str(), &list[0].last_transition_time),
        (TRUE, &at(20))
    );
    // Without a time: now.
    assert!(set(&mut list, NewCondition::new("Ready", FALSE)));
    assert!(list[0].last_transition_time.0.as_second() > 20);
}

#[test]
fn an_unchanged_status_keeps_the_transition_time() {
    let mut list: Vec<K8sCondition> = Vec::new();
    set(
        &mut list,
        NewCondition::new("Ready", TRUE).last_transition_time(at(10)),
    );
    assert!(!set(
        &mut list,
        NewCondition::new("Ready", TRUE).last_transition_time(at(20))
    ));
    assert!(!set(&mut list, NewCondition::new("Ready", TRUE)));
    assert_eq!(list[0].last_transition_time, at(10));
}

#[test]
fn reason_message_and_generation_are_updated() {
    let mut list: Boxed = None;
    // Each step changes one field of the last: every one is a change, none moves the time.
    let steps = [("A", "a", 1), ("B", "a", 1), ("B", "b", 1), ("B", "b", 2)];
    for (reason, message, generation) in steps {
        let new = NewCondition::new("Ready", TRUE)
            .reason(reason)
            .message(message)
            .observed_generation(generation)
            .last_transition_time(at(generation));
        assert!(set(&mut list, new));
    }
    let c = find(&list, "Ready").cloned().expect("set");
    assert_eq!(
        (c.reason.as_str(), c.message.as_str(), c.observed_generation),
        ("B", "b", Some(2))
    );
    assert_eq!(c.last_transition_time, at(1));
    assert!(set(&mut list, NewCondition::new("Ready", TRUE)));
    let c = find(&list, "Ready").cloned().expect("set");
    assert_eq!((c.reason.as_str(), c.observed_generation), ("", None));
}

#[test]
fn find_remove_and_the_status_checks() {
    let mut list: Boxed = None;
    assert!(!remove(&mut list, "Ready"));
    set(&mut list, NewCondition::new("Ready", TRUE));
    set(&mut list, NewCondition::new("Synced", FALSE));
    set(&mut list, NewCondition::new("Degraded", UNKNOWN));
    assert!(is_true(&list, "Ready") && !is_false(&list, "Ready"));
    assert!(is_false(&list, "Synced") && !is_true(&list, "Synced"));
    assert!(!is_true(&list, "Degraded") && !is_false(&list, "Degraded"));
    assert!(is_present_and_equal(&list, "Degraded", UNKNOWN));
    assert!(find(&list, "Missing").is_none());
    assert!(remove(&mut list, "Synced"));
    assert!(!remove(&mut list, "Synced"));
    let types: Vec<&str> = list.conditions().iter().map(|c| c.type_.as_str()).collect();
    assert_eq!(types, ["Ready", "Degraded"]);
    assert!(remove(&mut list, "Ready") && remove(&mut list, "Degraded"));
    assert_eq!(list, None);
}

#[derive(Clone, Debug)]
enum Op {
    Set(u8, bool, u8, i64),
    Remove(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u8..3, any::<bool>(), 0u8..3, 0i64..3).prop_map(|(t, s, r, g)| Op::Set(t, s, r, g)),
        (0u8..3).prop_map(Op::Remove),
    ]
}

const TYPES: [&str; 3] = ["Ready", "Synced", "Degraded"];
const REASONS: [&str; 3] = ["", "A", "B"];

proptest! {
    /// Each step against a model: one entry per type, in first-set order; a time moves exactly
    /// when the status changes; `set` reports a change exactly when a field differs. Both list
    /// shapes agree.
    #[test]
    fn set_and_remove_follow_the_model(ops in prop::collection::vec(op(), 0..40)) {
        let mut boxed: Boxed = None;
        let mut vec: Vec<K8sCondition> = Vec::new();
        let mut model: Vec<(usize, bool, usize, i64, i64)> = Vec::new();
        for (step, op) in ops.into_iter().enumerate() {
            let step = step as i64 + 1;
            match op {
                Op::Set(t, s, r, g) => {
                    let (t, r) = (usize::from(t), usize::from(r));
                    let new = NewCondition::new(TYPES[t], if s { TRUE } else { FALSE })
                        .reason(REASONS[r])
                        .observed_generation(g)
                        .last_transition_time(at(step));
                    let expect = match model.iter_mut().find(|m| m.0 == t) {
                        None => { model.push((t, s, r, g, step)); true }
                        Some(m) => {
                            let changed = (m.1, m.2, m.3) != (s, r, g);
                            if m.1 != s { m.4 = step; }
                            (m.1, m.2, m.3) = (s, r, g);
                            changed
                        }
                    };
                    prop_assert_eq!(set(&mut boxed, new.clone()), expect);
                    prop_assert_eq!(set(&mut vec, new), expect);
                }
                Op::Remove(t) => {
                    let t = usize::from(t);
                    let expect = model.iter().any(|m| m.0 == t);
                    model.retain(|m| m.0 != t);
                    prop_assert_eq!(remove(&mut boxed, TYPES[t]), expect);
                    prop_assert_eq!(remove(&mut vec, TYPES[t]), expect);
                }
            }
            prop_assert_eq!(boxed.is_none(), model.is_empty());
            prop_assert_eq!(boxed.conditions(), vec.as_slice());
            prop_assert_eq!(vec.len(), model.len());
            for (c, m) in vec.iter().zip(&model) {
                prop_assert_eq!(c.type_.as_str(), TYPES[m.0]);
                prop_assert_eq!(is_true(&vec, TYPES[m.0]), m.1);
                prop_assert_eq!(is_false(&vec, TYPES[m.0]), !m.1);
                prop_assert_eq!(c.reason.as_str(), REASONS[m.2]);
                prop_assert_eq!(c.observed_generation(), m.3);
                prop_assert_eq!(&c.last_transition_time, &at(m.4));
            }
        }
    }
}
