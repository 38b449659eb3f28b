//! What the consumer's store reflects (K3, K4): the resource version the FIFO settles on
//! once popped keys are finished, and the wake-up for bookmarks that find the FIFO drained.

use super::DeltaFifo;

impl<K: crate::object::Meta> DeltaFifo<K> {
    /// The last list's or bookmark's resource version, but only while nothing is queued or in
    /// flight: then the consumer's store reflects it (K4). `None` otherwise, or before any.
    pub fn drained_resource_version(&self) -> Option<String> {
        let queue = self.queue.lock();
        if queue.queued.len() == 0 && queue.in_flight == 0 {
            queue.last_resource_version.clone()
        } else {
            None
        }
    }

    /// The resource version the consumer's store reflects once every popped key is finished,
    /// given the newest version it applied (`applied`) (K3, K4): a version no queued change
    /// is at or below, so a reader that waits for its own write's version never finds the
    /// store older than that write. With nothing queued it is the newer of `applied` and the
    /// last list's or bookmark's version; with changes queued it is `applied`, lowered below
    /// the lowest queued change's version (the keyed mode hands keys out in first-enqueue
    /// order, so a key popped later can hold an older change). `None` while popped keys are
    /// unfinished, or when there is nothing to report.
    ///
    /// ```
    /// # async fn demo() {
    /// use std::sync::Arc;
    /// use informer_runtime::delta_fifo::DeltaFifo;
    /// use informer_runtime::indexer::Indexer;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// # let cm = |n: &str, rv: &str| ConfigMap { metadata: kube::api::ObjectMeta { name: Some(n.into()),
    /// #     namespace: Some("ns".into()), resource_version: Some(rv.into()), ..Default::default() },
    /// #     ..Default::default() };
    /// let store = Arc::new(Indexer::<ConfigMap>::new());
    /// let fifo = DeltaFifo::builder().known_objects(store.clone()).build();
    /// fifo.update(cm("a", "100")).unwrap();
    /// fifo.update(cm("b", "101")).unwrap();
    /// fifo.update(cm("a", "102")).unwrap(); // queued as [a(100, 102), b(101)]
    /// let a = fifo.pop_batch(1, false).await.unwrap().pop().unwrap();
    /// // ... apply a's deltas to the store ...
    /// a.done();
    /// // b@101 is still queued: the store reflects 100, not 102.
    /// assert_eq!(fifo.settled_resource_version(Some(102)), Some(100));
    /// # }
    /// ```
    pub fn settled_resource_version(&self, applied: Option<u64>) -> Option<u64> {
        let mut queue = self.queue.lock();
        if queue.in_flight > 0 {
            return None;
        }
        if queue.queued.len() == 0 {
            let drained = queue
                .last_resource_version
                .as_deref()
                .and_then(|rv| rv.parse::<u64>().ok());
            return drained.into_iter().chain(applied).max();
        }
        match queue.queued.lowest_pending_version() {
            None => applied,
            // Version 0 is no version: nothing below a change of unknown version is reported.
            Some(lowest) => applied
                .map(|rv| rv.min(lowest.saturating_sub(1)))
                .filter(|rv| *rv > 0),
        }
    }

    /// Resolves after a bookmark arrives while the FIFO is drained (nothing queued or in
    /// flight), so the consumer can advance its store's resource version although no object
    /// changed (K4). A bookmark that arrives with items queued needs no wake-up: the consumer
    /// reads [`drained_resource_version`](Self::drained_resource_version) after processing them.
    pub async fn wait_progress(&self) {
        self.progress.notified().await;
    }
}
