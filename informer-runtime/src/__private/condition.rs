//! `impl_condition!`: the runtime's [`Condition`](crate::conditions::Condition) impl for a
//! struct of the `metav1.Condition` shape (G10), written once here; informer-gen emits one
//! invocation per condition-shaped struct, and decides which structs qualify.
//!
//! A field's shape (required or `Option`) is read from its type through the traits below, so an
//! invocation names only the fields: `reason`, `message` and `observed_generation` may be left
//! out (read empty, ignore writes), and `status` is a string or a string enum whose listed
//! values the invocation spells (else the enum's catch-all variant). An optional string or
//! generation written empty (`""`, `0`) becomes absent, as Go's `omitempty` writes it.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::projection::IStr;

/// A `reason` or `message` field: an `IStr` (required) or `Option<IStr>` (absent when empty).
pub trait ConditionText {
    /// The text, `""` when absent.
    fn condition_text(&self) -> &str;
    /// The field holding `value`.
    fn from_condition_text(value: &str) -> Self;
}

impl ConditionText for IStr {
    fn condition_text(&self) -> &str {
        self.as_str()
    }
    fn from_condition_text(value: &str) -> Self {
        IStr::from(value)
    }
}

impl ConditionText for Option<IStr> {
    fn condition_text(&self) -> &str {
        self.as_ref().map_or("", |v| v.as_str())
    }
    fn from_condition_text(value: &str) -> Self {
        (!value.is_empty()).then(|| IStr::from(value))
    }
}

/// A `lastTransitionTime` field: a `Time` (required) or `Option<Time>`.
pub trait ConditionTime {
    /// The time, if set.
    fn condition_time(&self) -> Option<&Time>;
    /// The field holding `time`.
    fn from_condition_time(time: Time) -> Self;
}

impl ConditionTime for Time {
    fn condition_time(&self) -> Option<&Time> {
        Some(self)
    }
    fn from_condition_time(time: Time) -> Self {
        time
    }
}

impl ConditionTime for Option<Time> {
    fn condition_time(&self) -> Option<&Time> {
        self.as_ref()
    }
    fn from_condition_time(time: Time) -> Self {
        Some(time)
    }
}

/// An `observedGeneration` field: an `i64` (required) or `Option<i64>` (absent when 0).
pub trait ConditionGeneration {
    /// The generation, `0` when absent.
    fn condition_generation(&self) -> i64;
    /// The field holding `generation`.
    fn from_condition_generation(generation: i64) -> Self;
}

impl ConditionGeneration for i64 {
    fn condition_generation(&self) -> i64 {
        *self
    }
    fn from_condition_generation(generation: i64) -> Self {
        generation
    }
}

impl ConditionGeneration for Option<i64> {
    fn condition_generation(&self) -> i64 {
        self.unwrap_or(0)
    }
    fn from_condition_generation(generation: i64) -> Self {
        (generation != 0).then_some(generation)
    }
}

/// `impl Condition for $ty` (G10), for generated code (`rt::impl_condition!`).
///
/// The struct's fields are named by role (`role = field,`), in this order; `reason`, `message` and
/// `observed_generation` are optional, and a field's shape (`Option` or not) comes from its type
/// (`rt::ConditionText`, `rt::ConditionTime`, `rt::ConditionGeneration`). `status` is an `IStr`, or a
/// string enum (with `as Path { "Json" => Variant, …; else Other }`) whose listed values become
/// their variant and any other string its catch-all variant.
///
/// ```
/// use informer_runtime::__private::{IStr, Time};
/// use informer_runtime::conditions::{self, NewCondition, TRUE};
///
/// #[derive(Clone, Debug, PartialEq)]
/// enum Status { True, Other(IStr) }
/// impl Status {
///     fn as_str(&self) -> &str {
///         match self { Self::True => "True", Self::Other(s) => s.as_str() }
///     }
/// }
/// struct Ready { kind: IStr, status: Status, at: Option<Time>, reason: Option<IStr> }
/// informer_runtime::__private::impl_condition! {
///     Ready {
///         type = kind,
///         status = status as Status { "True" => True; else Other },
///         last_transition_time = at,
///         reason = reason,
///     }
/// }
///
/// let mut list: Option<Box<[Ready]>> = None;
/// assert!(conditions::set(&mut list, NewCondition::new("Ready", TRUE).reason("Up")));
/// let ready = conditions::find(&list, "Ready").expect("set");
/// assert_eq!((&ready.status, ready.reason.as_deref()), (&Status::True, Some("Up")));
/// ```
#[doc(hidden)]
#[macro_export]
macro_rules! __impl_condition {
    (
        $ty:ident {
            type = $type_f:ident,
            status = $status_f:ident
                $(as $enum:ty { $($json:literal => $variant:ident),* ; else $other:ident })?,
            last_transition_time = $time_f:ident,
            $(reason = $reason_f:ident,)?
            $(message = $message_f:ident,)?
            $(observed_generation = $generation_f:ident,)?
        }
    ) => {
        impl $crate::__private::Condition for $ty {
            fn new_condition(
                condition_type: &str,
                status: &str,
                time: $crate::__private::Time,
            ) -> Self {
                $ty {
                    $type_f: $crate::__private::IStr::from(condition_type),
                    $status_f: $crate::__impl_condition!(
                        @status status $($enum { $($json => $variant),* ; else $other })?
                    ),
                    $time_f: $crate::__private::ConditionTime::from_condition_time(time),
                    $($reason_f: $crate::__private::Default::default(),)?
                    $($message_f: $crate::__private::Default::default(),)?
                    $($generation_f: $crate::__private::Default::default(),)?
                }
            }
            fn condition_type(&self) -> &str {
                self.$type_f.as_str()
            }
            fn condition_status(&self) -> &str {
                self.$status_f.as_str()
            }
            fn last_transition_time(&self) -> $crate::__private::Option<&$crate::__private::Time> {
                $crate::__private::ConditionTime::condition_time(&self.$time_f)
            }
            fn set_condition_status(&mut self, status: &str) {
                self.$status_f = $crate::__impl_condition!(
                    @status status $($enum { $($json => $variant),* ; else $other })?
                );
            }
            fn set_last_transition_time(&mut self, time: $crate::__private::Time) {
                self.$time_f = $crate::__private::ConditionTime::from_condition_time(time);
            }
            $crate::__impl_condition!(@text reason set_reason $($reason_f)?);
            $crate::__impl_condition!(@text message set_message $($message_f)?);
            $crate::__impl_condition!(@generation $($generation_f)?);
        }
    };
    // `status` as a string.
    (@status $value:ident) => {
        $crate::__private::IStr::from($value)
    };
    // `status` as a string enum: a listed value's variant, else the catch-all one.
    (@status $value:ident $enum:ty { $($json:literal => $variant:ident),* ; else $other:ident }) => {
        match $value {
            $($json => <$enum>::$variant,)*
            other => <$enum>::$other($crate::__private::IStr::from(other)),
        }
    };
    (@text $getter:ident $setter:ident) => {
        fn $getter(&self) -> &str {
            ""
        }
        fn $setter(&mut self, _: &str) {}
    };
    (@text $getter:ident $setter:ident $field:ident) => {
        fn $getter(&self) -> &str {
            $crate::__private::ConditionText::condition_text(&self.$field)
        }
        fn $setter(&mut self, value: &str) {
            self.$field = $crate::__private::ConditionText::from_condition_text(value);
        }
    };
    (@generation) => {
        fn observed_generation(&self) -> i64 {
            0
        }
        fn set_observed_generation(&mut self, _: i64) {}
    };
    (@generation $field:ident) => {
        fn observed_generation(&self) -> i64 {
            $crate::__private::ConditionGeneration::condition_generation(&self.$field)
        }
        fn set_observed_generation(&mut self, generation: i64) {
            self.$field = $crate::__private::ConditionGeneration::from_condition_generation(generation);
        }
    };
}

#[cfg(test)]
mod tests {
    use crate::__private::{IStr, Time};
    use crate::conditions::{self, Condition, FALSE, NewCondition, TRUE, UNKNOWN};
    use k8s_openapi::jiff::Timestamp;

    fn at(second: i64) -> Time {
        Time(Timestamp::from_second(second).unwrap_or_default())
    }

    /// Every role present: a required time and reason, optional message and generation.
    #[derive(Debug, PartialEq)]
    struct Full {
        r#type: IStr,
        status: IStr,
        time: Time,
        reason: IStr,
        message: Option<IStr>,
        generation: Option<i64>,
    }
    crate::__private::impl_condition! {
        Full {
            type = r#type,
            status = status,
            last_transition_time = time,
            reason = reason,
            message = message,
            observed_generation = generation,
        }
    }

    mod status {
        use crate::__private::IStr;

        /// A generated string enum's shape.
        #[derive(Debug, PartialEq)]
        pub(super) enum Status {
            True,
            False,
            Other(IStr),
        }
        impl Status {
            pub(super) fn as_str(&self) -> &str {
                match self {
                    Self::True => "True",
                    Self::False => "False",
                    Self::Other(s) => s.as_str(),
                }
            }
        }
    }

    /// Only the three required roles, an enum status (through a path) and an optional time.
    #[derive(Debug, PartialEq)]
    struct Bare {
        kind: IStr,
        status: self::status::Status,
        time: Option<Time>,
    }
    crate::__private::impl_condition! {
        Bare {
            type = kind,
            status = status as self::status::Status { "True" => True, "False" => False; else Other },
            last_transition_time = time,
        }
    }

    #[test]
    fn set_and_find_through_the_macro_impl() {
        let mut list: Vec<Full> = Vec::new();
        let new = NewCondition::new("Ready", FALSE)
            .reason("Wait")
            .observed_generation(2)
            .last_transition_time(at(10));
        assert!(conditions::set(&mut list, new));
        assert_eq!(
            list[0],
            Full {
                r#type: "Ready".into(),
                status: FALSE.into(),
                time: at(10),
                reason: "Wait".into(),
                message: None,
                generation: Some(2),
            }
        );
        let changed = NewCondition::new("Ready", TRUE).last_transition_time(at(20));
        assert!(conditions::set(&mut list, changed));
        let ready = conditions::find(&list, "Ready").expect("set");
        // A required string keeps `""`; an optional generation written 0 becomes absent.
        assert_eq!((ready.reason.as_str(), ready.generation), ("", None));
        assert_eq!(ready.last_transition_time(), Some(&at(20)));
        assert!(conditions::is_true(&list, "Ready"));
        assert!(conditions::remove(&mut list, "Ready"));
    }

    #[test]
    fn absent_roles_read_empty_and_an_enum_status_keeps_unlisted_values() {
        let mut c = Bare::new_condition("Synced", UNKNOWN, at(5));
        assert_eq!(c.status, status::Status::Other(UNKNOWN.into()));
        c.set_reason("ignored");
        c.set_message("ignored");
        c.set_observed_generation(7);
        assert_eq!(
            (c.reason(), c.message(), c.observed_generation()),
            ("", "", 0)
        );
        c.set_condition_status(TRUE);
        assert_eq!(
            (&c.status, c.condition_status()),
            (&status::Status::True, TRUE)
        );
        assert_eq!(c.last_transition_time(), Some(&at(5)));
        assert_eq!(c.condition_type(), "Synced");
    }
}
