//! The lease record decision, as pure functions of (record, observation time, now), so the
//! clock-skew rule (E3) is unit-tested without a server.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::LeaseSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use tokio::time::Instant;

/// What a candidate does after reading the lease.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Decision {
    /// Another holder's record changed within its lease duration, measured on our clock since
    /// we observed the change (E3): wait until `expires` (our clock).
    Wait {
        /// The current holder.
        holder: String,
        /// When the lease expires by our observation.
        expires: Instant,
    },
    /// Write this record with the read resourceVersion (acquire, or renew when we hold it).
    Write(LeaseSpec),
}

/// The record we write when we hold the lease, or take it over (E3, E4).
///
/// `observed_at` is when *we* first saw `current` in this exact form; the holder's
/// `renewTime` is never compared with our clock, so skew between machines does not matter,
/// only the rate of our clock (client-go's documented tolerance).
pub(crate) fn decide(
    identity: &str,
    lease_duration: Duration,
    current: &LeaseSpec,
    observed_at: Instant,
    now: Instant,
    wall_now: Timestamp,
) -> Decision {
    let holder = current.holder_identity.as_deref().unwrap_or_default();
    let held_by_us = holder == identity;
    if !holder.is_empty() && !held_by_us {
        let expires = expiry(current, observed_at);
        if expires > now {
            return Decision::Wait {
                holder: holder.to_owned(),
                expires,
            };
        }
    }
    let stamp = Some(MicroTime(wall_now));
    let transitions = current.lease_transitions.unwrap_or(0);
    Decision::Write(LeaseSpec {
        holder_identity: Some(identity.to_owned()),
        lease_duration_seconds: Some(duration_seconds(lease_duration)),
        acquire_time: if held_by_us {
            current.acquire_time.clone().or_else(|| stamp.clone())
        } else {
            stamp.clone()
        },
        renew_time: stamp,
        // Counted only when the holder changes (an empty holder after a release included).
        lease_transitions: Some(if held_by_us {
            transitions
        } else {
            transitions.saturating_add(1)
        }),
        ..current.clone()
    })
}

/// When a record first observed at `observed_at` expires, by the observer's clock (E3): its
/// `leaseDurationSeconds` later, never its `renewTime`.
pub(crate) fn expiry(record: &LeaseSpec, observed_at: Instant) -> Instant {
    let secs = record.lease_duration_seconds.unwrap_or(0).max(0);
    observed_at + Duration::from_secs(u64::try_from(secs).unwrap_or(0))
}

/// A new lease held by `identity` (E3: no record yet).
pub(crate) fn initial(identity: &str, lease_duration: Duration, wall_now: Timestamp) -> LeaseSpec {
    LeaseSpec {
        holder_identity: Some(identity.to_owned()),
        lease_duration_seconds: Some(duration_seconds(lease_duration)),
        acquire_time: Some(MicroTime(wall_now)),
        renew_time: Some(MicroTime(wall_now)),
        lease_transitions: Some(0),
        ..Default::default()
    }
}

/// The record a leader writes on graceful release (E5): no holder, a 1 s duration.
pub(crate) fn released(current: &LeaseSpec, wall_now: Timestamp) -> LeaseSpec {
    LeaseSpec {
        holder_identity: None,
        lease_duration_seconds: Some(1),
        acquire_time: Some(MicroTime(wall_now)),
        renew_time: Some(MicroTime(wall_now)),
        ..current.clone()
    }
}

/// `leaseDurationSeconds` is whole seconds: round up, so a follower never waits less than the
/// configured duration.
pub(crate) fn duration_seconds(d: Duration) -> i32 {
    let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    i32::try_from(secs).unwrap_or(i32::MAX).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(holder: &str, secs: i32, transitions: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(holder.into()),
            lease_duration_seconds: Some(secs),
            acquire_time: Some(MicroTime(Timestamp::UNIX_EPOCH)),
            renew_time: Some(MicroTime(Timestamp::UNIX_EPOCH)),
            lease_transitions: Some(transitions),
            ..Default::default()
        }
    }

    #[test]
    fn e3_another_holder_waits_by_our_observation_time_not_its_renew_time() {
        let t0 = Instant::now();
        // The record's renewTime is the epoch (a holder whose clock is decades behind):
        // irrelevant, only our observation counts.
        let rec = spec("other", 15, 3);
        let d = decide(
            "me",
            Duration::from_secs(15),
            &rec,
            t0,
            t0 + Duration::from_secs(14),
            Timestamp::now(),
        );
        assert_eq!(
            d,
            Decision::Wait {
                holder: "other".into(),
                expires: t0 + Duration::from_secs(15)
            }
        );
        let later = t0 + Duration::from_secs(15);
        let Decision::Write(new) = decide(
            "me",
            Duration::from_secs(15),
            &rec,
            t0,
            later,
            Timestamp::now(),
        ) else {
            panic!("expired lease is taken");
        };
        assert_eq!(new.holder_identity.as_deref(), Some("me"));
        assert_eq!(
            new.lease_transitions,
            Some(4),
            "a takeover counts a transition"
        );
        assert_ne!(new.acquire_time, rec.acquire_time);
    }

    #[test]
    fn e4_renewal_keeps_acquire_time_and_transitions() {
        let t0 = Instant::now();
        let rec = spec("me", 15, 7);
        let Decision::Write(new) = decide(
            "me",
            Duration::from_secs(15),
            &rec,
            t0,
            t0,
            Timestamp::now(),
        ) else {
            panic!("own lease is renewed");
        };
        assert_eq!(new.lease_transitions, Some(7));
        assert_eq!(new.acquire_time, rec.acquire_time);
        assert_ne!(new.renew_time, rec.renew_time);
    }

    #[test]
    fn e5_a_released_lease_is_taken_at_once() {
        let t0 = Instant::now();
        let rel = released(&spec("other", 15, 2), Timestamp::now());
        assert_eq!(rel.holder_identity, None);
        assert_eq!(rel.lease_duration_seconds, Some(1));
        let Decision::Write(new) = decide(
            "me",
            Duration::from_secs(15),
            &rel,
            t0,
            t0,
            Timestamp::now(),
        ) else {
            panic!("released lease is free");
        };
        assert_eq!(new.holder_identity.as_deref(), Some("me"));
        assert_eq!(new.lease_transitions, Some(3));
    }

    #[test]
    fn durations_round_up_to_whole_seconds() {
        assert_eq!(duration_seconds(Duration::from_millis(1500)), 2);
        assert_eq!(duration_seconds(Duration::from_secs(15)), 15);
        assert_eq!(duration_seconds(Duration::from_millis(1)), 1);
    }
}
