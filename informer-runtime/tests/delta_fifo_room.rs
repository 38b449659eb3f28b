//! The delta FIFO's bound on queued deltas (D12): when the reflector must wait, and when the
//! wait ends. Run: `cargo test -p informer-runtime --test delta_fifo_room`.

mod fifo_support;

use std::sync::Arc;
use std::time::Duration;

use fifo_support::pop_one;
use futures::FutureExt;
use informer_runtime::delta_fifo::DeltaFifo;
use informer_runtime::indexer::Indexer;
use informer_runtime::store::ReflectorStore;
use k8s_openapi::api::core::v1::ConfigMap;

/// A ConfigMap whose resourceVersion marks its version.
fn cm(name: &str, rv: &str) -> ConfigMap {
    informer_test_support::cm_at("ns", name, rv)
}

/// Pops one key without waiting and marks it done.
fn pop_now(fifo: &DeltaFifo<ConfigMap>) {
    let popped = pop_one(fifo)
        .now_or_never()
        .expect("an item is queued")
        .expect("not closed");
    popped.done();
}

/// D12: the reflector's wait for room starts at the bound of queued deltas (every key's, not
/// keys), ends once the consumer has popped all but half of them, and ends when the FIFO closes.
#[tokio::test]
async fn d12_room_waits_at_the_bound_of_deltas_and_resumes_at_half() {
    let store = Arc::new(Indexer::<ConfigMap>::new());
    let fifo = DeltaFifo::builder()
        .known_objects(store.clone())
        .max_queued_deltas(6)
        .build();
    for i in 0..5 {
        fifo.add(cm(&format!("a{i}"), "1")).unwrap();
    }
    assert!(fifo.room().is_none(), "5 deltas of 6: room");
    fifo.update(cm("a4", "2")).unwrap();
    assert_eq!((fifo.len(), fifo.delta_count()), (5, 6), "keys, deltas");
    let mut room = fifo.room().expect("6 deltas of 6: wait");
    assert!((&mut room).now_or_never().is_none(), "nothing popped yet");
    pop_now(&fifo);
    assert!((&mut room).now_or_never().is_none(), "5 deltas left");
    pop_now(&fifo);
    assert!((&mut room).now_or_never().is_none(), "4 deltas left");
    pop_now(&fifo);
    assert_eq!(fifo.delta_count(), 3);
    tokio::time::timeout(Duration::from_secs(5), room)
        .await
        .expect("3 deltas of 6 left: the wait ends");
    assert!(fifo.room().is_none(), "below the bound: no wait");

    for i in 0..3 {
        fifo.update(cm(&format!("a{i}"), "3")).unwrap();
    }
    let room = fifo.room().expect("at the bound again");
    fifo.close();
    tokio::time::timeout(Duration::from_secs(5), room)
        .await
        .expect("closing ends the wait");
    assert!(
        fifo.room().is_none(),
        "a closed FIFO never makes the reflector wait"
    );

    let unbounded = DeltaFifo::builder().max_queued_deltas(0).build();
    for i in 0..100 {
        unbounded.add(cm(&format!("b{i}"), "1")).unwrap();
    }
    assert!(unbounded.room().is_none(), "0: no bound");
}
