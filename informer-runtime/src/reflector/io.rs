//! What the reflector's requests are made with ([`Io`]): the list-watch client, the store, the
//! configuration, the shared counters and the cancellation token; and a started watch
//! ([`ActiveWatch`]), and the finish stage every decoded object goes through ([`Finish`]). The
//! driver (`cycle.rs`) owns one `Io`; the paged LIST (`list.rs`) and the
//! watch-list stream (`watch_list.rs`) borrow it, so neither reaches back into the driver.

use std::sync::Arc;
use std::time::Duration;

use rand::Rng;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::policy::watch_timeout;
use super::{Error, Finish, ReflectorConfig, Shared, bump};
use crate::budget::{Account, Breach, ListCharge};
use crate::list_watch::{ListWatch, ProbedStream, WatchRequest};
use crate::store::ReflectorStore;

/// A started watch and what it was started with.
pub(super) struct ActiveWatch<K> {
    pub(super) stream: ProbedStream<K>,
    /// The RV the watch started from (R8).
    pub(super) start_rv: String,
    /// Its `timeoutSeconds` (R6), for dead-connection detection (R7).
    pub(super) timeout: Duration,
}

/// The reflector's I/O handles.
pub(super) struct Io<K> {
    pub(super) lw: ListWatch<K>,
    pub(super) store: Arc<dyn ReflectorStore<K>>,
    pub(super) config: ReflectorConfig,
    pub(super) shared: Arc<Shared>,
    pub(super) cancel: CancellationToken,
    /// The finish stage of every decoded object (D8, M8, M17), in the reflector's runtime and
    /// span.
    pub(super) finish: Arc<Finish<K>>,
    /// This reflector's charge on its [`ReflectorConfig::budget`] (B1-B4, decision record 30).
    pub(super) account: Option<Arc<Account>>,
}

impl<K> Io<K> {
    /// Sleeps unless cancelled first; false if cancelled.
    pub(super) async fn sleep(&self, d: Duration) -> bool {
        if d.is_zero() {
            return !self.cancel.is_cancelled();
        }
        tokio::select! {
            _ = self.cancel.cancelled() => false,
            _ = tokio::time::sleep(d) => true,
        }
    }

    /// Logs and counts an error and hands it to the watch error handler.
    pub(super) fn report(&self, err: Error) {
        bump(&self.shared.counters.errors);
        match &err {
            // R16: an event of the wrong kind is logged as an error.
            Error::UnexpectedObject(_) => tracing::error!(error = %err, "dropped watch event"),
            Error::DeadWatch(_) | Error::VeryShortWatch(_) => info!(error = %err, "watch ended"),
            _ => warn!(error = %err, "reflector error"),
        }
        if let Some(h) = &self.config.watch_error_handler {
            h(&err);
        }
    }

    /// The list being read holds `n` objects: refused past the budget (B2).
    pub(super) fn charge_listing(&self, n: usize) -> Result<(), Breach> {
        self.account.as_ref().map_or(Ok(()), |a| a.listing(n))
    }

    /// A new paged LIST's charge, object by object (B2).
    pub(super) fn list_charge(&self) -> Option<Arc<ListCharge>> {
        let account = self.account.as_ref()?;
        Some(Arc::new(ListCharge::new(Arc::clone(account))))
    }

    /// What the list being read held is dropped (it failed, or went over budget).
    pub(super) fn abandon_listing(&self) {
        if let Some(a) = &self.account {
            a.abandon();
        }
    }

    /// A complete list of `n` objects replaced the cache (B1).
    pub(super) fn charge_replaced(&self, n: usize) {
        if let Some(a) = &self.account {
            a.replaced(n);
        }
    }

    /// A live `ADDED` (`added`) or `DELETED` event was applied (B1, B3).
    pub(super) fn charge_live(&self, added: bool) {
        match &self.account {
            Some(a) if added => a.added(),
            Some(a) => a.deleted(),
            None => {}
        }
    }

    /// A watch request at `rv` with a fresh random timeout (R6).
    pub(super) fn watch_request(&self, rv: String, send_initial_events: bool) -> WatchRequest {
        let unit: f64 = rand::rng().random();
        WatchRequest {
            resource_version: rv,
            timeout: watch_timeout(self.config.min_watch_timeout, unit),
            send_initial_events,
            label_selector: self.config.label_selector.clone(),
            field_selector: self.config.field_selector.clone(),
            max_line_bytes: Some(self.config.max_watch_line_bytes),
            shard_selector: self.config.shard.as_ref().map(|s| s.selector()),
            // S4: every event is probed on the client, also when the last LIST said the server
            // filters: a WATCH may reach a server without the gate (behind a load balancer), and
            // a filtering server sends no foreign event, so the probe costs nothing there.
            client_shard: self.config.shard.clone(),
        }
    }
}
