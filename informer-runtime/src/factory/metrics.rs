//! The factory's metrics collector: every informer of one factory, read at scrape time (V4; the
//! families are in [`crate::informer::collector`]).

use std::sync::{Arc, OnceLock, Weak};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;

use super::Inner;

/// The factory the collector reports on; filled in when the factory is built.
pub(super) type Slot = Arc<OnceLock<Weak<Inner>>>;

/// A prometheus-client collector over every informer of one factory. It holds the factory
/// weakly, so registering it never keeps a shut-down factory alive.
#[derive(Debug)]
pub(super) struct FactoryCollector {
    pub(super) slot: Slot,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedInformerFactory")
            .finish_non_exhaustive()
    }
}

impl Collector for FactoryCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let Some(inner) = self.slot.get().and_then(Weak::upgrade) else {
            return Ok(());
        };
        crate::informer::collector::encode(&inner.snapshots(), &mut encoder)?;
        // P3: the process-wide interner and sharing pools, which the factory's objects use.
        crate::pool::encode(&mut encoder)
    }
}
