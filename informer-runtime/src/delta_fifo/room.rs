//! The bound on queued deltas at which the reflector's watch stops reading (D12): the count,
//! the wait, and the wake-up after a pop.

use super::{DeltaFifo, Locked};

impl<K: crate::object::Meta> DeltaFifo<K> {
    /// Queued deltas, of every key and in either mode; popped ones are not counted. This is what
    /// [`max_queued_deltas`](super::DeltaFifoBuilder::max_queued_deltas) bounds (D12).
    pub fn delta_count(&self) -> usize {
        self.queue.lock().queued.held()
    }

    /// Whether the queue holds few enough deltas for a waiting reflector to read on: at most
    /// half of `max_queued` (D12).
    fn below_low_water(&self, queue: &Locked<K>) -> bool {
        queue.queued.held() <= self.max_queued / 2
    }

    /// After a pop: wakes a reflector waiting for room once the queue is down to half of its
    /// bound (D12). Runs under the queue lock; `notify_waiters` takes only the `Notify`'s own.
    pub(super) fn wake_room(&self, queue: &mut Locked<K>) {
        if queue.room_wanted && self.below_low_water(queue) {
            queue.room_wanted = false;
            self.room.notify_waiters();
        }
    }

    /// Resolves once the queue is down to half of its bound, or the FIFO is closed (D12).
    async fn wait_room(&self) {
        loop {
            let notified = self.room.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut queue = self.queue.lock();
                if queue.closed || self.below_low_water(&queue) {
                    return;
                }
                queue.room_wanted = true;
            }
            notified.await;
        }
    }

    /// [`ReflectorStore::room`](crate::store::ReflectorStore::room): a wait when the queue holds
    /// [`max_queued_deltas`](super::DeltaFifoBuilder::max_queued_deltas) or more deltas
    /// (D12).
    pub(super) fn room_future(&self) -> Option<crate::store::RoomFuture<'_>> {
        if self.max_queued == 0 {
            return None;
        }
        let queue = self.queue.lock();
        if queue.closed || queue.queued.held() < self.max_queued {
            return None;
        }
        drop(queue);
        Some(Box::pin(self.wait_room()))
    }
}
