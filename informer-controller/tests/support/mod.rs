//! Helpers of the controller tests: the shared ones from `informer-test-support`, and the
//! Lease timings these tests use.

#![allow(dead_code, unreachable_pub, unused_imports)]

use std::time::Duration;

pub mod ownership;

pub use informer_test_support::{
    Recorder, WAIT, client_with_agent, cm, config_map, init_tracing, poll_within, sample, scrape,
    wait_until, wait_watch, within,
};

/// Lease timings with E2's proportions, short (lease 2 s, renew 1 s, retry 250 ms) and without
/// jitter, so a takeover's bound is lease + retry.
pub fn fast() -> informer_controller::leader::LeaderElectionConfig {
    informer_controller::leader::LeaderElectionConfig {
        lease_duration: Duration::from_secs(2),
        renew_deadline: Duration::from_secs(1),
        retry_period: Duration::from_millis(250),
        jitter_factor: 0.0,
        release_on_cancel: true,
    }
}
