//! Status conditions: apimachinery's `meta.SetStatusCondition` and its neighbours for Rust (G10).
//!
//! A condition is anything of the `metav1.Condition` shape ([`Condition`]): k8s-openapi's
//! `Condition`, informer-k8s's compact `Condition`, and every struct informer-gen generates from
//! a CRD schema whose fields are that shape (G10). The functions work on the field as a type
//! holds it ([`ConditionList`]: `Option<Box<[C]>>` in generated types, `Vec<C>` in k8s-openapi's,
//! and the other two combinations), so no code converts the list to a `Vec` and back.
//!
//! ```
//! use informer_runtime::conditions::{self, NewCondition};
//! use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
//!
//! let mut list: Option<Vec<Condition>> = None;
//! let ready = NewCondition::new("Ready", conditions::TRUE).reason("Deployed").observed_generation(3);
//! assert!(conditions::set(&mut list, ready.clone())); // appended, lastTransitionTime = now
//! assert!(!conditions::set(&mut list, ready)); // nothing changed
//! assert!(conditions::is_true(&list, "Ready"));
//! assert_eq!(conditions::find(&list, "Ready").map(|c| c.reason.as_str()), Some("Deployed"));
//! assert!(conditions::remove(&mut list, "Ready"));
//! assert!(list.is_none()); // an empty list is absent, as `omitempty` writes it
//! ```

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition as K8sCondition, Time};
use k8s_openapi::jiff::Timestamp;

/// The `status` of a condition that holds.
pub const TRUE: &str = "True";
/// The `status` of a condition that does not hold.
pub const FALSE: &str = "False";
/// The `status` of a condition the controller cannot judge.
pub const UNKNOWN: &str = "Unknown";

/// A value of the `metav1.Condition` shape: `type`, `status`, `reason`, `message`,
/// `observedGeneration` and `lastTransitionTime`, read and written as apimachinery's `meta`
/// functions do. A type without one of the optional fields (`reason`, `message`,
/// `observedGeneration`) reads it as empty (`""`, `0`) and ignores writes to it; an optional
/// string field written empty becomes absent.
///
/// ```
/// use informer_runtime::conditions::Condition;
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition as K8sCondition, Time};
///
/// let mut c = K8sCondition::new_condition("Ready", "False", Time(Default::default()));
/// c.set_reason("Waiting");
/// assert_eq!((c.condition_type(), c.condition_status(), c.reason()), ("Ready", "False", "Waiting"));
/// ```
pub trait Condition {
    /// A condition of this type and status that changed at `last_transition_time`; its other
    /// fields are empty.
    fn new_condition(condition_type: &str, status: &str, last_transition_time: Time) -> Self
    where
        Self: Sized;
    /// `type`.
    fn condition_type(&self) -> &str;
    /// `status` (`True`, `False`, `Unknown`).
    fn condition_status(&self) -> &str;
    /// `reason`, `""` when absent.
    fn reason(&self) -> &str;
    /// `message`, `""` when absent.
    fn message(&self) -> &str;
    /// `observedGeneration`, `0` when absent.
    fn observed_generation(&self) -> i64;
    /// `lastTransitionTime`, if set.
    fn last_transition_time(&self) -> Option<&Time>;
    /// Writes `status`.
    fn set_condition_status(&mut self, status: &str);
    /// Writes `reason`.
    fn set_reason(&mut self, reason: &str);
    /// Writes `message`.
    fn set_message(&mut self, message: &str);
    /// Writes `observedGeneration`.
    fn set_observed_generation(&mut self, generation: i64);
    /// Writes `lastTransitionTime`.
    fn set_last_transition_time(&mut self, time: Time);
}

/// The condition to [`set`]: what apimachinery's `SetStatusCondition` takes as `newCondition`.
/// `last_transition_time` left `None` means now (the zero time in Go).
#[derive(Clone, Debug, PartialEq)]
pub struct NewCondition<'a> {
    /// `type`.
    pub condition_type: &'a str,
    /// `status` ([`TRUE`], [`FALSE`], [`UNKNOWN`]).
    pub status: &'a str,
    /// `reason`.
    pub reason: &'a str,
    /// `message`.
    pub message: &'a str,
    /// `observedGeneration` (`0`: not set).
    pub observed_generation: i64,
    /// `lastTransitionTime` for an added condition or a changed status; `None` is now.
    pub last_transition_time: Option<Time>,
}

impl<'a> NewCondition<'a> {
    /// A condition of this type and status, with no reason, message or generation.
    ///
    /// ```
    /// use informer_runtime::conditions::{NewCondition, FALSE};
    /// let c = NewCondition::new("Ready", FALSE).reason("Scaling").message("2 of 3 ready");
    /// assert_eq!((c.reason, c.observed_generation), ("Scaling", 0));
    /// ```
    pub fn new(condition_type: &'a str, status: &'a str) -> Self {
        NewCondition {
            condition_type,
            status,
            reason: "",
            message: "",
            observed_generation: 0,
            last_transition_time: None,
        }
    }

    /// With this `reason`.
    pub fn reason(self, reason: &'a str) -> Self {
        NewCondition { reason, ..self }
    }

    /// With this `message`.
    pub fn message(self, message: &'a str) -> Self {
        NewCondition { message, ..self }
    }

    /// With this `observedGeneration` (usually the object's `metadata.generation`).
    pub fn observed_generation(self, observed_generation: i64) -> Self {
        NewCondition {
            observed_generation,
            ..self
        }
    }

    /// With this `lastTransitionTime` instead of now.
    pub fn last_transition_time(self, time: Time) -> Self {
        NewCondition {
            last_transition_time: Some(time),
            ..self
        }
    }
}

/// Now, to the second: the precision `Time` has on the wire, so a value set here survives a
/// round trip through JSON unchanged.
fn now() -> Time {
    let now = Timestamp::now();
    Time(Timestamp::from_second(now.as_second()).unwrap_or(now))
}

/// A `status.conditions` field as a type holds it: `Vec<C>`, `Box<[C]>`, or either in an
/// `Option` (`None` is the empty list; removing the last condition makes it `None` again).
pub trait ConditionList {
    /// The condition type.
    type Item: Condition;
    /// The conditions, in order.
    fn conditions(&self) -> &[Self::Item];
    /// The conditions, to change in place.
    fn conditions_mut(&mut self) -> &mut [Self::Item];
    /// Appends `condition`.
    fn push_condition(&mut self, condition: Self::Item);
    /// Keeps only the conditions `keep` accepts.
    fn retain_conditions(&mut self, keep: &mut dyn FnMut(&Self::Item) -> bool);
}

/// Edits a `Vec` as it is.
fn edit_vec<C>(list: &mut Vec<C>, edit: impl FnOnce(&mut Vec<C>)) {
    edit(list);
}

/// Edits a `Box<[C]>` as the `Vec` it was made from: one reallocation at most.
fn edit_boxed<C>(list: &mut Box<[C]>, edit: impl FnOnce(&mut Vec<C>)) {
    let mut vec = Vec::from(std::mem::take(list));
    edit(&mut vec);
    *list = vec.into_boxed_slice();
}

/// `ConditionList` for a list that derefs to its slice and is edited as a `Vec` by `$edit`.
macro_rules! slice_list {
    ($list:ty, $edit:ident) => {
        impl<C: Condition> ConditionList for $list {
            type Item = C;
            fn conditions(&self) -> &[C] {
                self
            }
            fn conditions_mut(&mut self) -> &mut [C] {
                self
            }
            fn push_condition(&mut self, condition: C) {
                $edit(self, |list| list.push(condition));
            }
            fn retain_conditions(&mut self, keep: &mut dyn FnMut(&C) -> bool) {
                $edit(self, |list| list.retain(|c| keep(c)));
            }
        }
    };
}

slice_list!(Vec<C>, edit_vec);
slice_list!(Box<[C]>, edit_boxed);

impl<L: ConditionList + Default> ConditionList for Option<L> {
    type Item = L::Item;
    fn conditions(&self) -> &[L::Item] {
        self.as_ref().map_or(&[], L::conditions)
    }
    fn conditions_mut(&mut self) -> &mut [L::Item] {
        self.as_mut().map_or(&mut [], L::conditions_mut)
    }
    fn push_condition(&mut self, condition: L::Item) {
        self.get_or_insert_with(L::default)
            .push_condition(condition);
    }
    fn retain_conditions(&mut self, keep: &mut dyn FnMut(&L::Item) -> bool) {
        if let Some(list) = self {
            list.retain_conditions(keep);
            if list.conditions().is_empty() {
                *self = None;
            }
        }
    }
}

/// Sets `new` in `list` (apimachinery's `meta.SetStatusCondition`) and says whether anything
/// changed. A type not in the list is appended, changed at `new.last_transition_time` or now.
/// A type in the list takes the new status, and then `new.last_transition_time` or now as its
/// `lastTransitionTime`; an unchanged status keeps the time it has. Reason, message and
/// observedGeneration are written when they differ.
///
/// ```
/// use informer_runtime::conditions::{self, NewCondition, TRUE, FALSE};
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
///
/// let mut list: Vec<Condition> = Vec::new();
/// conditions::set(&mut list, NewCondition::new("Ready", FALSE).reason("Starting"));
/// let since = list[0].last_transition_time.clone();
/// assert!(conditions::set(&mut list, NewCondition::new("Ready", FALSE).reason("Pulling")));
/// assert_eq!(list[0].last_transition_time, since); // same status: same transition time
/// assert!(conditions::set(&mut list, NewCondition::new("Ready", TRUE)));
/// assert_eq!(list[0].reason, "");
/// ```
pub fn set<L: ConditionList + ?Sized>(list: &mut L, new: NewCondition<'_>) -> bool {
    let Some(existing) = find_mut(list, new.condition_type) else {
        let time = new.last_transition_time.unwrap_or_else(now);
        let mut condition = L::Item::new_condition(new.condition_type, new.status, time);
        condition.set_reason(new.reason);
        condition.set_message(new.message);
        condition.set_observed_generation(new.observed_generation);
        list.push_condition(condition);
        return true;
    };
    let mut changed = false;
    if existing.condition_status() != new.status {
        existing.set_condition_status(new.status);
        existing.set_last_transition_time(new.last_transition_time.unwrap_or_else(now));
        changed = true;
    }
    if existing.reason() != new.reason {
        existing.set_reason(new.reason);
        changed = true;
    }
    if existing.message() != new.message {
        existing.set_message(new.message);
        changed = true;
    }
    if existing.observed_generation() != new.observed_generation {
        existing.set_observed_generation(new.observed_generation);
        changed = true;
    }
    changed
}

/// The condition of this type in `list` (apimachinery's `meta.FindStatusCondition`).
///
/// ```
/// use informer_runtime::conditions::{self, NewCondition, Condition, UNKNOWN};
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition as K8sCondition;
///
/// let mut list: Option<Box<[K8sCondition]>> = None;
/// conditions::set(&mut list, NewCondition::new("Synced", UNKNOWN));
/// assert_eq!(conditions::find(&list, "Synced").map(|c| c.condition_status()), Some(UNKNOWN));
/// assert!(conditions::find(&list, "Ready").is_none());
/// ```
pub fn find<'a, L: ConditionList + ?Sized>(
    list: &'a L,
    condition_type: &str,
) -> Option<&'a L::Item> {
    list.conditions()
        .iter()
        .find(|c| c.condition_type() == condition_type)
}

/// The condition of this type in `list`, to change in place.
pub fn find_mut<'a, L: ConditionList + ?Sized>(
    list: &'a mut L,
    condition_type: &str,
) -> Option<&'a mut L::Item> {
    list.conditions_mut()
        .iter_mut()
        .find(|c| c.condition_type() == condition_type)
}

/// Removes the conditions of this type (apimachinery's `meta.RemoveStatusCondition`) and says
/// whether there was one.
///
/// ```
/// use informer_runtime::conditions::{self, NewCondition, TRUE};
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
///
/// let mut list: Vec<Condition> = Vec::new();
/// conditions::set(&mut list, NewCondition::new("Ready", TRUE));
/// assert!(!conditions::remove(&mut list, "Synced"));
/// assert!(conditions::remove(&mut list, "Ready"));
/// assert!(list.is_empty());
/// ```
pub fn remove<L: ConditionList + ?Sized>(list: &mut L, condition_type: &str) -> bool {
    let mut removed = false;
    list.retain_conditions(&mut |c| {
        let matches = c.condition_type() == condition_type;
        removed |= matches;
        !matches
    });
    removed
}

/// Whether `list` has a condition of this type with this status (apimachinery's
/// `meta.IsStatusConditionPresentAndEqual`).
pub fn is_present_and_equal<L: ConditionList + ?Sized>(
    list: &L,
    condition_type: &str,
    status: &str,
) -> bool {
    find(list, condition_type).is_some_and(|c| c.condition_status() == status)
}

/// Whether the condition of this type is present and `True` (`meta.IsStatusConditionTrue`).
///
/// ```
/// use informer_runtime::conditions::{self, NewCondition, FALSE};
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
///
/// let mut list: Vec<Condition> = Vec::new();
/// assert!(!conditions::is_true(&list, "Ready") && !conditions::is_false(&list, "Ready"));
/// conditions::set(&mut list, NewCondition::new("Ready", FALSE));
/// assert!(conditions::is_false(&list, "Ready"));
/// ```
pub fn is_true<L: ConditionList + ?Sized>(list: &L, condition_type: &str) -> bool {
    is_present_and_equal(list, condition_type, TRUE)
}

/// Whether the condition of this type is present and `False` (`meta.IsStatusConditionFalse`).
pub fn is_false<L: ConditionList + ?Sized>(list: &L, condition_type: &str) -> bool {
    is_present_and_equal(list, condition_type, FALSE)
}

impl Condition for K8sCondition {
    fn new_condition(condition_type: &str, status: &str, last_transition_time: Time) -> Self {
        K8sCondition {
            type_: condition_type.to_owned(),
            status: status.to_owned(),
            reason: String::new(),
            message: String::new(),
            observed_generation: None,
            last_transition_time,
        }
    }
    fn condition_type(&self) -> &str {
        &self.type_
    }
    fn condition_status(&self) -> &str {
        &self.status
    }
    fn reason(&self) -> &str {
        &self.reason
    }
    fn message(&self) -> &str {
        &self.message
    }
    fn observed_generation(&self) -> i64 {
        self.observed_generation.unwrap_or(0)
    }
    fn last_transition_time(&self) -> Option<&Time> {
        Some(&self.last_transition_time)
    }
    fn set_condition_status(&mut self, status: &str) {
        status.clone_into(&mut self.status);
    }
    fn set_reason(&mut self, reason: &str) {
        reason.clone_into(&mut self.reason);
    }
    fn set_message(&mut self, message: &str) {
        message.clone_into(&mut self.message);
    }
    fn set_observed_generation(&mut self, generation: i64) {
        self.observed_generation = (generation != 0).then_some(generation);
    }
    fn set_last_transition_time(&mut self, time: Time) {
        self.last_transition_time = time;
    }
}

#[cfg(test)]
mod tests;
