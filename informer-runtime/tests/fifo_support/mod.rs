//! The delta FIFO tests' pop: the informer's own call (V3), one key at a time.

use informer_runtime::delta_fifo::{DeltaFifo, Popped};
use informer_runtime::object::Meta;

/// Waits for the next key and hands it out (D9): a batch of one from
/// [`DeltaFifo::pop_batch`], not atomic. `None` once the FIFO is closed.
pub(crate) async fn pop_one<K: Meta>(fifo: &DeltaFifo<K>) -> Option<Popped<'_, K>> {
    fifo.pop_batch(1, false).await?.pop()
}
