//! Delta FIFO behaviour tests, one per semantics rule (D1–D9; D13 in `delta_fifo_in_flight.rs`). Run: `cargo test -p informer-runtime --test delta_fifo`.

mod fifo_store;
mod fifo_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use fifo_store::{apply, cm, d, show};
use fifo_support::pop_one;
use futures::FutureExt;
use informer_runtime::delta_fifo::{Delta, DeltaFifo, DeltaType, KnownObjects};
use informer_runtime::indexer::Indexer;
use informer_runtime::key::ObjectKey;
use informer_runtime::store::{ReflectorStore, StoreError};
use k8s_openapi::api::core::v1::ConfigMap;

fn fifo_with_store() -> (DeltaFifo<ConfigMap>, Arc<Indexer<ConfigMap>>) {
    let store = Arc::new(Indexer::<ConfigMap>::new());
    let fifo = DeltaFifo::builder().known_objects(store.clone()).build();
    (fifo, store)
}

/// Pops one key without waiting: its key and deltas, marked done.
fn pop_now(fifo: &DeltaFifo<ConfigMap>) -> (String, Vec<(DeltaType, String)>) {
    let popped = pop_one(fifo)
        .now_or_never()
        .expect("an item is queued")
        .expect("not closed");
    let out = (
        popped.key().to_string(),
        popped.deltas().iter().map(show).collect(),
    );
    popped.done();
    out
}

use DeltaType::{Added, Deleted, Replaced, Sync, Updated};

#[test]
fn d2_a1_b1_a2_pops_a1_a2_then_b1() {
    let (fifo, _) = fifo_with_store();
    fifo.add(cm("a", "1")).unwrap();
    fifo.add(cm("b", "1")).unwrap();
    fifo.update(cm("a", "2")).unwrap();
    assert_eq!(fifo.len(), 2, "a key appears in the queue once");
    assert_eq!(
        pop_now(&fifo),
        ("ns/a".into(), vec![d(Added, "1"), d(Updated, "2")])
    );
    assert_eq!(pop_now(&fifo), ("ns/b".into(), vec![d(Added, "1")]));
    assert!(fifo.is_empty());
}

#[test]
fn d3_two_deletes_keep_older_unless_tombstone() {
    let (fifo, _) = fifo_with_store();
    fifo.add(cm("a", "1")).unwrap();
    fifo.delete(cm("a", "2")).unwrap();
    fifo.delete(cm("a", "3")).unwrap();
    assert_eq!(
        pop_now(&fifo).1,
        [d(Added, "1"), d(Deleted, "2")],
        "the older real delete is kept"
    );

    // Older is a tombstone (from replace): the newer, real delete replaces it.
    fifo.add(cm("b", "1")).unwrap();
    fifo.replace(vec![], "5".into()).unwrap();
    assert_eq!(
        fifo.queued_deltas("ns/b")
            .unwrap()
            .iter()
            .map(show)
            .collect::<Vec<_>>(),
        [d(Added, "1"), d(Deleted, "~1")]
    );
    fifo.delete(cm("b", "4")).unwrap();
    assert_eq!(pop_now(&fifo).1, [d(Added, "1"), d(Deleted, "4")]);
}

#[test]
fn d3_only_consecutive_deletes_merge() {
    let (fifo, _) = fifo_with_store();
    fifo.add(cm("a", "1")).unwrap();
    fifo.delete(cm("a", "2")).unwrap();
    fifo.add(cm("a", "3")).unwrap();
    fifo.delete(cm("a", "4")).unwrap();
    assert_eq!(
        pop_now(&fifo).1,
        [
            d(Added, "1"),
            d(Deleted, "2"),
            d(Added, "3"),
            d(Deleted, "4")
        ]
    );
}

#[test]
fn d4_unknown_delete_is_ignored() {
    let (fifo, store) = fifo_with_store();
    fifo.delete(cm("ghost", "1")).unwrap();
    assert!(fifo.is_empty());
    // Known through the store: queued.
    store.add(Arc::new(cm("stored", "1"))).unwrap();
    fifo.delete(cm("stored", "2")).unwrap();
    assert_eq!(pop_now(&fifo), ("ns/stored".into(), vec![d(Deleted, "2")]));
    // Without known objects, only queued keys count.
    let bare = DeltaFifo::<ConfigMap>::builder().build();
    bare.delete(cm("x", "1")).unwrap();
    assert!(bare.is_empty());
    bare.add(cm("x", "1")).unwrap();
    bare.delete(cm("x", "2")).unwrap();
    assert_eq!(pop_now(&bare).1, [d(Added, "1"), d(Deleted, "2")]);
}

#[test]
fn d5_replace_queues_items_then_tombstones_for_queued_and_known_keys() {
    let (fifo, store) = fifo_with_store();
    store.add(Arc::new(cm("stored", "1"))).unwrap();
    store.add(Arc::new(cm("kept", "1"))).unwrap();
    fifo.add(cm("queued", "2")).unwrap();
    fifo.update(cm("queued", "3")).unwrap();
    fifo.replace(vec![cm("kept", "4"), cm("new", "4")], "4".into())
        .unwrap();
    assert_eq!(fifo.last_resource_version().as_deref(), Some("4"));
    let mut popped = Vec::new();
    while !fifo.is_empty() {
        popped.push(pop_now(&fifo));
    }
    assert_eq!(
        popped,
        [
            (
                "ns/queued".into(),
                vec![d(Added, "2"), d(Updated, "3"), d(Deleted, "~3")]
            ),
            ("ns/kept".into(), vec![d(Replaced, "4")]),
            ("ns/new".into(), vec![d(Replaced, "4")]),
            ("ns/stored".into(), vec![d(Deleted, "~1")]),
        ]
    );
}

#[test]
fn d5_replace_emits_sync_when_replaced_emission_is_off() {
    let store = Arc::new(Indexer::<ConfigMap>::new());
    let fifo = DeltaFifo::builder()
        .known_objects(store)
        .emit_delta_type_replaced(false)
        .build();
    fifo.replace(vec![cm("a", "1")], "1".into()).unwrap();
    assert_eq!(pop_now(&fifo).1, [d(Sync, "1")]);
}

/// A store whose `get_by_key` fails for listed keys: the tombstone then carries no state (D5).
struct Flaky;
impl KnownObjects<ConfigMap> for Flaky {
    fn list_keys(&self) -> Vec<informer_runtime::key::ObjectKey> {
        vec![informer_runtime::key::ObjectKey::parse("ns/vanished").expect("test fixture")]
    }
    fn get_by_key(&self, _: &str) -> Option<Arc<ConfigMap>> {
        None
    }
}

#[test]
fn d5_tombstone_without_state_when_lookup_fails() {
    let fifo = DeltaFifo::builder().known_objects(Arc::new(Flaky)).build();
    fifo.replace(vec![], "1".into()).unwrap();
    assert_eq!(
        pop_now(&fifo),
        ("ns/vanished".into(), vec![d(Deleted, "-")])
    );
}

#[test]
fn d6_resync_only_for_keys_without_queued_deltas() {
    let (fifo, store) = fifo_with_store();
    store.add(Arc::new(cm("idle", "1"))).unwrap();
    store.add(Arc::new(cm("busy", "1"))).unwrap();
    fifo.update(cm("busy", "2")).unwrap();
    fifo.resync().unwrap();
    assert_eq!(
        pop_now(&fifo),
        ("ns/busy".into(), vec![d(Updated, "2")]),
        "no stale Sync behind the update"
    );
    assert_eq!(pop_now(&fifo), ("ns/idle".into(), vec![d(Sync, "1")]));
    assert!(fifo.is_empty());
}

#[tokio::test]
async fn d7_has_synced_flips_only_after_the_last_initial_item_is_processed() {
    let (fifo, store) = fifo_with_store();
    let fifo = Arc::new(fifo);
    assert!(!fifo.has_synced());
    fifo.replace(vec![cm("a", "1"), cm("b", "1")], "1".into())
        .unwrap();
    let waiter = tokio::spawn({
        let fifo = fifo.clone();
        async move { fifo.wait_synced().await }
    });
    let first = pop_one(&fifo).await.unwrap();
    assert!(first.is_in_initial_list());
    apply(&store, first.key().as_str(), first.deltas());
    first.done();
    let second = pop_one(&fifo).await.unwrap();
    assert!(second.is_in_initial_list());
    apply(&store, second.key().as_str(), second.deltas());
    assert!(!fifo.has_synced(), "popped but not yet processed");
    assert!(!waiter.is_finished());
    second.done();
    assert!(fifo.has_synced());
    assert!(
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .unwrap()
            .unwrap()
    );
    // Later items are not part of the initial list.
    fifo.add(cm("c", "2")).unwrap();
    assert!(!pop_one(&fifo).await.unwrap().is_in_initial_list());
}

#[test]
fn d7_counts_tombstones_and_add_before_replace_syncs_at_once() {
    let store = Arc::new(Indexer::<ConfigMap>::new());
    store.add(Arc::new(cm("gone", "1"))).unwrap();
    let fifo = DeltaFifo::builder().known_objects(store).build();
    fifo.replace(vec![cm("a", "2")], "2".into()).unwrap();
    pop_now(&fifo);
    assert!(
        !fifo.has_synced(),
        "the tombstone is part of the initial population"
    );
    pop_now(&fifo);
    assert!(fifo.has_synced());

    let (fifo, _) = fifo_with_store();
    fifo.add(cm("a", "1")).unwrap();
    assert!(fifo.has_synced(), "an add before any replace means synced");
    let (fifo, _) = fifo_with_store();
    fifo.replace(vec![], "1".into()).unwrap();
    assert!(fifo.has_synced(), "an empty first list means synced");
    assert!(fifo.wait_synced().now_or_never().unwrap());
}

#[test]
fn d8_transform_runs_at_enqueue_but_not_for_sync_or_tombstones() {
    let store = Arc::new(Indexer::<ConfigMap>::new());
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let fifo = DeltaFifo::builder()
        .known_objects(store.clone())
        .emit_delta_type_replaced(false)
        .transform(Arc::new(move |obj: &mut ConfigMap| {
            counter.fetch_add(1, Ordering::SeqCst);
            obj.metadata.managed_fields = None;
            obj.metadata
                .annotations
                .get_or_insert_default()
                .insert("t".into(), "1".into());
        }))
        .build();
    fifo.add(cm("a", "1")).unwrap();
    fifo.update(cm("a", "2")).unwrap();
    // Replace items are transformed even when emitted as Sync.
    fifo.replace(vec![cm("b", "1")], "3".into()).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    let a = fifo.queued_deltas("ns/a").unwrap();
    assert!(
        a.iter()
            .all(|d| d.object().unwrap().metadata.annotations.is_some())
    );
    while let Some(Some(p)) = pop_one(&fifo).now_or_never() {
        apply(&store, p.key().as_str(), p.deltas());
        p.done();
    }
    // A resync re-queues stored (already transformed) objects without running it again.
    fifo.resync().unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    // The tombstone for `a` is not transformed either.
    fifo.replace(vec![], "4".into()).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    // A real delete is (client-go transforms every non-tombstone, non-Sync delta).
    store.add(Arc::new(cm("c", "1"))).unwrap();
    fifo.delete(cm("c", "5")).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    // The same transform applied twice is harmless (idempotent, D8).
    fifo.set_transform(None);
    fifo.add(cm("d", "1")).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn d9_processing_runs_without_the_queue_lock() {
    let (fifo, store) = fifo_with_store();
    fifo.add(cm("a", "1")).unwrap();
    // Writing into the FIFO while a popped key is processed would deadlock if pop held the lock.
    let popped = pop_one(&fifo).await.unwrap();
    apply(&store, popped.key().as_str(), popped.deltas());
    fifo.update(cm("a", "2")).unwrap();
    assert_eq!(fifo.len(), 1);
    popped.done();
    assert_eq!(pop_now(&fifo).1, [d(Updated, "2")]);
}

#[tokio::test]
async fn d9_in_flight_key_counts_as_known() {
    let (fifo, store) = fifo_with_store();
    fifo.add(cm("a", "1")).unwrap();
    let popped = pop_one(&fifo).await.unwrap();
    // Not yet in the store, not queued: a delete must still be queued (D4 with D9).
    fifo.delete(cm("a", "2")).unwrap();
    // A resync must not queue a stale copy for the in-flight key (D6 with D9).
    fifo.resync().unwrap();
    apply(&store, popped.key().as_str(), popped.deltas());
    popped.done();
    assert_eq!(pop_now(&fifo), ("ns/a".into(), vec![d(Deleted, "2")]));
    store.delete_key("ns/a");

    // A relist without the in-flight key tombstones it with the in-flight state (D5 with D9).
    fifo.add(cm("b", "1")).unwrap();
    let popped = pop_one(&fifo).await.unwrap();
    fifo.replace(vec![], "9".into()).unwrap();
    apply(&store, popped.key().as_str(), popped.deltas());
    popped.done();
    assert_eq!(pop_now(&fifo), ("ns/b".into(), vec![d(Deleted, "~1")]));
    assert!(fifo.is_empty(), "no second tombstone from the store");
}

#[tokio::test]
async fn d9_failed_processing_requeues_in_front_of_newer_deltas() {
    let (fifo, _) = fifo_with_store();
    fifo.add(cm("a", "1")).unwrap();
    fifo.add(cm("b", "1")).unwrap();
    // Processing fails: the deltas go back (D9).
    let popped = pop_one(&fifo).await.unwrap();
    fifo.update(cm("a", "2")).unwrap();
    popped.requeue();
    assert_eq!(pop_now(&fifo), ("ns/b".into(), vec![d(Added, "1")]));
    assert_eq!(
        pop_now(&fifo),
        ("ns/a".into(), vec![d(Added, "1"), d(Updated, "2")])
    );

    // Without newer deltas the key goes to the back.
    fifo.add(cm("c", "1")).unwrap();
    fifo.add(cm("e", "1")).unwrap();
    let p = pop_one(&fifo).await.unwrap();
    p.requeue();
    assert_eq!(
        fifo.queued_keys()
            .iter()
            .map(|k| k.to_string())
            .collect::<Vec<_>>(),
        ["ns/e", "ns/c"]
    );
}

#[tokio::test]
async fn d9_requeue_keeps_has_synced_false_until_processed() {
    let (fifo, _) = fifo_with_store();
    fifo.replace(vec![cm("a", "1")], "1".into()).unwrap();
    fifo.add(cm("b", "1")).unwrap();
    pop_one(&fifo).await.unwrap().requeue();
    pop_now(&fifo); // b, not initial
    assert!(
        !fifo.has_synced(),
        "the failed initial item is still pending"
    );
    pop_now(&fifo); // a
    assert!(fifo.has_synced());
}

#[tokio::test]
async fn close_wakes_pop_and_rejects_writes() {
    let (fifo, _) = fifo_with_store();
    let fifo = Arc::new(fifo);
    let popper = tokio::spawn({
        let fifo = fifo.clone();
        async move { pop_one(&fifo).await.is_none() }
    });
    let waiter = tokio::spawn({
        let fifo = fifo.clone();
        async move { fifo.wait_synced().await }
    });
    tokio::task::yield_now().await;
    fifo.close();
    assert!(
        tokio::time::timeout(Duration::from_secs(5), popper)
            .await
            .unwrap()
            .unwrap()
    );
    assert!(
        !tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .unwrap()
            .unwrap()
    );
    assert_eq!(fifo.add(cm("a", "1")), Err(StoreError::Closed));
    assert_eq!(fifo.replace(vec![], "1".into()), Err(StoreError::Closed));
    assert!(fifo.is_closed());
}

#[tokio::test]
async fn pop_waits_for_an_item() {
    let (fifo, _) = fifo_with_store();
    let fifo = Arc::new(fifo);
    let popper = tokio::spawn({
        let fifo = fifo.clone();
        async move { pop_one(&fifo).await.map(|p| p.key().to_string()) }
    });
    tokio::task::yield_now().await;
    fifo.add(cm("a", "1")).unwrap();
    let key = tokio::time::timeout(Duration::from_secs(5), popper)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(key.as_deref(), Some("ns/a"));
}

#[test]
fn d1_bookmark_records_the_rv_and_queues_nothing() {
    let (fifo, _) = fifo_with_store();
    fifo.bookmark("42");
    assert_eq!(fifo.last_resource_version().as_deref(), Some("42"));
    assert!(fifo.is_empty());
    assert!(!fifo.has_synced(), "a bookmark is not a list");
}

#[test]
fn x1_keyless_objects_are_errors() {
    let (fifo, _) = fifo_with_store();
    assert!(matches!(
        fifo.add(ConfigMap::default()),
        Err(StoreError::Key(_))
    ));
    assert!(matches!(
        fifo.replace(vec![ConfigMap::default()], "1".into()),
        Err(StoreError::Key(_))
    ));
    assert!(fifo.is_empty());
}

#[test]
fn x1_tombstone_key_is_unwrapped() {
    let (fifo, store) = fifo_with_store();
    store.add(Arc::new(cm("a", "1"))).unwrap();
    fifo.replace(vec![], "1".into()).unwrap();
    let deltas = fifo.queued_deltas("ns/a").unwrap();
    let Delta::Deleted(gone) = &deltas[0] else {
        panic!("expected a delete")
    };
    assert!(gone.is_tombstone());
    assert_eq!(gone.key().unwrap().as_str(), "ns/a");
    assert!(Arc::ptr_eq(
        gone.last_known().unwrap(),
        &store.get_by_key("ns/a").unwrap()
    ));
}

#[tokio::test]
async fn d7_wait_synced_wakes_on_a_write_before_any_replace() {
    let (fifo, _) = fifo_with_store();
    let fifo = Arc::new(fifo);
    let waiter = tokio::spawn({
        let fifo = fifo.clone();
        async move { fifo.wait_synced().await }
    });
    tokio::task::yield_now().await;
    // An unknown delete is ignored but still counts as a write (client-go sets `populated`).
    fifo.delete(cm("ghost", "1")).expect("open");
    assert!(fifo.is_empty());
    assert!(
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("woken")
            .expect("joined")
    );
}

#[test]
fn d8_behind_a_reflector_objects_are_transformed_at_decode_and_not_again() {
    let store = Arc::new(Indexer::<ConfigMap>::new());
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let fifo = DeltaFifo::builder()
        .known_objects(store.clone())
        .transform(Arc::new(move |obj: &mut ConfigMap| {
            counter.fetch_add(1, Ordering::SeqCst);
            obj.metadata
                .annotations
                .get_or_insert_default()
                .insert("t".into(), "1".into());
        }))
        .build();
    // What the reflector does: transform each decoded object, share it, then hand the
    // finished `Arc` over (D8: no pre-transformed mode in the FIFO).
    let mut a = cm("a", "1");
    ReflectorStore::transform(&fifo, &mut a);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let ka = ObjectKey::from_resource(&a).unwrap();
    let a = fifo.share(&ka, a);
    fifo.replace_shared(vec![(ka, a)], "1".into()).unwrap();
    let mut b = cm("b", "2");
    ReflectorStore::transform(&fifo, &mut b);
    fifo.add_shared(ObjectKey::from_resource(&b).unwrap(), Arc::new(b))
        .unwrap();
    let mut a2 = cm("a", "3");
    ReflectorStore::transform(&fifo, &mut a2);
    fifo.update_shared(ObjectKey::from_resource(&a2).unwrap(), Arc::new(a2))
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 3, "not transformed twice");
    // By-value writes of a hand-wired FIFO still transform, once each, whatever came before.
    fifo.update(cm("b", "3")).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    for key in ["ns/a", "ns/b"] {
        assert!(
            fifo.queued_deltas(key).unwrap().iter().all(|d| d
                .object()
                .unwrap()
                .metadata
                .annotations
                .is_some())
        );
    }
    while let Some(Some(p)) = pop_one(&fifo).now_or_never() {
        apply(&store, p.key().as_str(), p.deltas());
        p.done();
    }
    // DELETED events are not pre-transformed: the FIFO transforms a real delete itself (D4)...
    fifo.delete(cm("b", "4")).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 5);
    let deltas = fifo.queued_deltas("ns/b").unwrap();
    assert!(
        deltas
            .iter()
            .all(|d| d.object().unwrap().metadata.annotations.is_some())
    );
    // ...but not an ignored one, nor resync Syncs or tombstones.
    fifo.delete(cm("zz", "5")).unwrap();
    fifo.resync().unwrap();
    fifo.replace(vec![], "6".into()).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 5);
}

/// `cm` with a UID.
fn cm_uid(name: &str, rv: &str, uid: &str) -> ConfigMap {
    let mut obj = cm(name, rv);
    obj.metadata.uid = Some(uid.into());
    obj
}

#[test]
fn m8_share_reuses_the_cached_arc_only_for_the_same_uid_and_resource_version() {
    let (fifo, store) = fifo_with_store();
    fifo.replace(
        vec![
            cm_uid("a", "1", "ua"),
            cm_uid("b", "1", "ub"),
            cm_uid("c", "1", "uc"),
        ],
        "1".into(),
    )
    .unwrap();
    while let Some(Some(p)) = pop_one(&fifo).now_or_never() {
        apply(&store, p.key().as_str(), p.deltas());
        p.done();
    }
    let cached = |name: &str| store.get_by_key(&format!("ns/{name}")).expect("cached");

    // X7: an unchanged object is the cached Arc itself, not a second copy.
    let share = |fifo: &DeltaFifo<ConfigMap>, obj: ConfigMap| {
        fifo.share(&ObjectKey::from_resource(&obj).unwrap(), obj)
    };
    let same = share(&fifo, cm_uid("a", "1", "ua"));
    assert!(Arc::ptr_eq(&same, &cached("a")));
    // A new resourceVersion, a recreated object (new UID), an empty resourceVersion or an
    // unknown key get their own Arc.
    for (obj, why) in [
        (cm_uid("b", "2", "ub"), "changed"),
        (cm_uid("c", "1", "uc2"), "recreated"),
        (cm_uid("a", "", "ua"), "no resourceVersion"),
        (cm_uid("d", "1", "ud"), "unknown"),
    ] {
        let name = obj.metadata.name.clone().unwrap();
        let shared = share(&fifo, obj);
        if let Some(old) = store.get_by_key(&format!("ns/{name}")) {
            assert!(!Arc::ptr_eq(&shared, &old), "{why}");
        }
        assert_eq!(
            shared.metadata.name.as_deref(),
            Some(name.as_str()),
            "{why}"
        );
    }

    // A relist through `replace` queues the cached Arc for the unchanged object (D5 still
    // queues `Replaced` for it) and the new decode for the changed one.
    fifo.replace(
        vec![cm_uid("a", "1", "ua"), cm_uid("b", "2", "ub")],
        "2".into(),
    )
    .unwrap();
    let a = fifo.queued_deltas("ns/a").expect("queued");
    assert_eq!(
        a.iter().map(show).collect::<Vec<_>>(),
        vec![d(Replaced, "1")]
    );
    assert!(Arc::ptr_eq(a[0].object().unwrap(), &cached("a")));
    let b = fifo.queued_deltas("ns/b").expect("queued");
    assert_eq!(
        b.iter().map(show).collect::<Vec<_>>(),
        vec![d(Replaced, "2")]
    );
    assert!(!Arc::ptr_eq(b[0].object().unwrap(), &cached("b")));

    // Without known objects nothing is reused.
    let bare = DeltaFifo::<ConfigMap>::builder().build();
    let fresh = share(&bare, cm_uid("a", "1", "ua"));
    assert!(!Arc::ptr_eq(&fresh, &cached("a")));
}

/// V2/V3: `pop_batch` hands out at most `max` keys, except that a relist's `replace` (after the
/// first list was processed) comes out whole, with everything queued before it and nothing after.
#[tokio::test]
async fn v2_v3_pop_batch_caps_batches_but_hands_out_a_relist_whole() {
    for mode in [
        informer_runtime::delta_fifo::FifoMode::Coalescing,
        informer_runtime::delta_fifo::FifoMode::Ordered,
    ] {
        let store = Arc::new(Indexer::<ConfigMap>::new());
        let fifo = DeltaFifo::builder()
            .known_objects(store.clone())
            .mode(mode)
            .build();
        // The first list is not atomic: batches of at most 3.
        let first: Vec<_> = (0..10).map(|i| cm(&format!("k{i}"), "1")).collect();
        fifo.replace(first, "1".into()).unwrap();
        let mut sizes = Vec::new();
        while !fifo.is_empty() {
            let batch = fifo.pop_batch(3, true).await.expect("open");
            sizes.push(batch.len());
            for popped in batch {
                for delta in popped.deltas() {
                    store
                        .upsert(popped.key().clone(), delta.object().unwrap().clone())
                        .unwrap();
                }
                popped.done();
            }
        }
        assert_eq!(
            sizes,
            vec![3, 3, 3, 1],
            "{mode:?}: first list in capped batches"
        );
        assert!(fifo.has_synced());

        // A live event before the relist, the relist (8 items: 2 keys vanish), an event after.
        fifo.add(cm("before", "2")).unwrap();
        let relist: Vec<_> = (0..8).map(|i| cm(&format!("k{i}"), "3")).collect();
        fifo.replace(relist, "3".into()).unwrap();
        fifo.add(cm("after", "4")).unwrap();
        let batch = fifo.pop_batch(3, true).await.expect("open");
        let keys: Vec<String> = batch.iter().map(|p| p.key().to_string()).collect();
        assert!(
            keys.contains(&"ns/before".to_string()) && !keys.contains(&"ns/after".to_string()),
            "{mode:?}: {keys:?}"
        );
        let tombstones = batch
            .iter()
            .flat_map(|p| p.deltas())
            .filter(|d| matches!(d, Delta::Deleted(_)))
            .count();
        // k8 and k9 vanished from the store's view; `before` was queued but is not listed (D5).
        assert_eq!(
            tombstones, 3,
            "{mode:?}: the relist's tombstones are in the batch"
        );
        assert_eq!(
            batch.len(),
            11,
            "{mode:?}: before + 8 listed + 2 tombstones: {keys:?}"
        );
        drop(batch);
        let rest = fifo.pop_batch(3, true).await.expect("open");
        assert_eq!(rest.len(), 1, "{mode:?}");
        assert_eq!(rest[0].key().as_str(), "ns/after");

        // Without `atomic`, a relist is capped like anything else.
        drop(rest);
        let relist: Vec<_> = (0..8).map(|i| cm(&format!("k{i}"), "5")).collect();
        fifo.replace(relist, "5".into()).unwrap();
        assert_eq!(
            fifo.pop_batch(3, false).await.expect("open").len(),
            3,
            "{mode:?}"
        );
    }
}
