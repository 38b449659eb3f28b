//! Unit tests of the fan-out and listeners without an informer or a server (H5-H11, Y4).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::timeout;

use super::*;
use crate::informer::handler::{DeletedObject, handler_fn};

const WAIT: Duration = Duration::from_secs(5);

type Obj = String;

fn fan_out(backlog_max: usize) -> Arc<FanOut<Obj>> {
    Arc::new(FanOut::new(
        Arc::from("test"),
        ListenerDefaults {
            resync: Duration::ZERO,
            backlog_max,
            overflow: OverflowPolicy::CoalesceByKey,
        },
        InformerMetrics::new(),
    ))
}

fn key(name: &str) -> ObjectKey {
    ObjectKey::new(Some("ns"), name)
}

/// Distributes one notification, as the run loop does; nothing may be held.
fn send(p: &FanOut<Obj>, name: &str, event: InformerEvent<Obj>, is_resync: bool) {
    let key = key(name);
    let notification = Notification {
        key,
        event,
        is_resync,
    };
    let held = p.lock().distribute(std::iter::once(notification));
    assert!(futures::FutureExt::now_or_never(held.deliver()).is_some());
}

fn add(p: &FanOut<Obj>, name: &str, is_in_initial_list: bool) {
    let obj = Arc::new(name.to_string());
    send(
        p,
        name,
        InformerEvent::Added {
            obj,
            is_in_initial_list,
        },
        false,
    );
}

fn update(p: &FanOut<Obj>, name: &str, v: &str, is_sync: bool) {
    let new = Arc::new(format!("{name}={v}"));
    let old = Arc::clone(&new);
    send(p, name, InformerEvent::Updated { old, new }, is_sync);
}

fn delete(p: &FanOut<Obj>, name: &str) {
    let obj = DeletedObject::Known(Arc::new(name.to_string()));
    send(p, name, InformerEvent::Deleted(obj), false);
}

/// A handler that reports every call on a channel as a string.
fn recording() -> (
    Arc<dyn ResourceEventHandler<Obj>>,
    mpsc::UnboundedReceiver<String>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let (t1, t2, t3) = (tx.clone(), tx.clone(), tx);
    let h = handler_fn::<Obj>()
        .on_add(move |o, initial| drop(t1.send(format!("add {o} {initial}"))))
        .on_update(move |_, n| drop(t2.send(format!("update {n}"))))
        .on_delete(move |d| {
            drop(t3.send(format!(
                "delete {}",
                d.last_known().map_or("?", |o| o.as_str())
            )))
        });
    (Arc::new(h), rx)
}

async fn recv(rx: &mut mpsc::UnboundedReceiver<String>) -> String {
    timeout(WAIT, rx.recv())
        .await
        .expect("timed out")
        .expect("closed")
}

async fn recv_n(rx: &mut mpsc::UnboundedReceiver<String>, n: usize) -> Vec<String> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(recv(rx).await);
    }
    out
}

/// A handler that blocks in every call until the test opens the gate.
struct Gated {
    open: std::sync::Mutex<bool>,
    cv: std::sync::Condvar,
    tx: mpsc::UnboundedSender<String>,
}

impl Gated {
    fn new() -> (Arc<Self>, mpsc::UnboundedReceiver<String>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            Arc::new(Gated {
                open: std::sync::Mutex::new(false),
                cv: std::sync::Condvar::new(),
                tx,
            }),
            rx,
        )
    }
    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.cv.notify_all();
    }
    fn wait(&self) {
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.cv.wait(open).unwrap();
        }
    }
}

impl ResourceEventHandler<Obj> for Gated {
    fn on_add(&self, obj: &Arc<Obj>, _: bool) {
        let _ = self.tx.send(format!("start {obj}"));
        self.wait();
    }
    fn on_update(&self, _: &Arc<Obj>, new: &Arc<Obj>) {
        let _ = self.tx.send(format!("start {new}"));
        self.wait();
    }
    fn on_delete(&self, obj: &DeletedObject<Obj>) {
        let _ = self.tx.send(format!(
            "start delete {}",
            obj.last_known().map_or("?", |o| o.as_str())
        ));
        self.wait();
    }
}

fn start(p: &FanOut<Obj>) {
    p.start(Handle::current());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn h8_h9_slow_handler_does_not_delay_a_fast_one() {
    let p = fan_out(1000);
    let (slow, mut slow_rx) = Gated::new();
    let slow_reg = p
        .add(
            Some(slow.clone()),
            HandlerOptions::new().name("slow"),
            Vec::new,
        )
        .unwrap();
    let (fast, mut fast_rx) = recording();
    p.add(Some(fast), HandlerOptions::new().name("fast"), Vec::new)
        .unwrap();
    start(&p);
    for i in 0..50 {
        add(&p, &format!("o{i}"), false);
    }
    let got = recv_n(&mut fast_rx, 50).await;
    let expected: Vec<String> = (0..50).map(|i| format!("add o{i} false")).collect();
    assert_eq!(got, expected, "H8: in distribution order");
    assert_eq!(recv(&mut slow_rx).await, "start o0");
    assert_eq!(
        slow_reg.pending(),
        49,
        "H10: the slow handler's own backlog holds the rest"
    );
    slow.open();
    for i in 1..50 {
        assert_eq!(recv(&mut slow_rx).await, format!("start o{i}"));
    }
    for l in p.stop() {
        timeout(WAIT, l.wait_finished()).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn h10_gauge_stops_at_max_and_coalescing_keeps_deletes() {
    let p = fan_out(4);
    let (slow, mut slow_rx) = Gated::new();
    let reg = p
        .add(
            Some(slow.clone()),
            HandlerOptions::new().name("slow"),
            Vec::new,
        )
        .unwrap();
    start(&p);
    add(&p, "first", false);
    assert_eq!(recv(&mut slow_rx).await, "start first");
    for k in 0..4 {
        add(&p, &format!("k{k}"), false);
    }
    for round in 0..1000 {
        for k in 0..4 {
            update(&p, &format!("k{k}"), &round.to_string(), false);
        }
        assert!(reg.pending() <= 4, "pending {}", reg.pending());
    }
    delete(&p, "k2");
    // H10: the handler never saw k2, so its pending add and the delete both vanish.
    assert_eq!(reg.pending(), 3);
    assert!(reg.coalesced() >= 4000);
    delete(&p, "first");
    assert_eq!(
        reg.pending(),
        4,
        "a delete of an object the handler saw is kept"
    );
    slow.open();
    let got = recv_n(&mut slow_rx, 4).await;
    assert_eq!(
        got,
        [
            "start k0=999",
            "start k1=999",
            "start k3=999",
            "start delete first"
        ]
    );
    for l in p.stop() {
        timeout(WAIT, l.wait_finished()).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h11_panicking_handler_is_isolated_and_counted() {
    let p = fan_out(100);
    let panicky = handler_fn::<Obj>().on_add(|o, _| {
        if o.as_str() == "boom" {
            panic!("handler bug");
        }
    });
    let (tx, mut rx) = mpsc::unbounded_channel();
    let panicky_reg = p
        .add(
            Some(Arc::new(panicky)),
            HandlerOptions::new().name("panicky"),
            Vec::new,
        )
        .unwrap();
    let after = handler_fn::<Obj>().on_add(move |o, _| drop(tx.send(o.to_string())));
    let other_reg = p
        .add(
            Some(Arc::new(after)),
            HandlerOptions::new().name("other"),
            Vec::new,
        )
        .unwrap();
    start(&p);
    add(&p, "a", true);
    add(&p, "boom", true);
    add(&p, "c", true);
    assert_eq!(recv_n(&mut rx, 3).await, ["a", "boom", "c"]);
    p.gate().set_for_test();
    // H11 + H6: a panicking initial add still counts as delivered.
    timeout(WAIT, panicky_reg.wait_for_sync()).await.unwrap();
    assert_eq!(panicky_reg.panics(), 1);
    assert_eq!(other_reg.panics(), 0);
    assert!(other_reg.has_synced());
    let _ = p.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn h6_per_handler_sync_waits_for_that_handlers_initial_adds() {
    let p = fan_out(100);
    let (slow, mut slow_rx) = Gated::new();
    let slow_reg = p
        .add(Some(slow.clone()), HandlerOptions::new(), Vec::new)
        .unwrap();
    let (fast, mut fast_rx) = recording();
    let fast_reg = p.add(Some(fast), HandlerOptions::new(), Vec::new).unwrap();
    start(&p);
    add(&p, "a", true);
    add(&p, "b", true);
    recv_n(&mut fast_rx, 2).await;
    assert!(!fast_reg.has_synced(), "the store has not synced yet");
    p.gate().set_for_test();
    timeout(WAIT, fast_reg.wait_for_sync()).await.unwrap();
    assert!(fast_reg.has_synced());
    assert_eq!(recv(&mut slow_rx).await, "start a");
    assert!(
        !slow_reg.has_synced(),
        "M10: synced store, handler still busy"
    );
    let waiter = tokio::spawn({
        let reg = slow_reg.clone();
        async move { reg.wait_for_sync().await }
    });
    slow.open();
    timeout(WAIT, waiter).await.unwrap().unwrap();
    assert!(slow_reg.has_synced());
    let _ = p.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h5_late_handler_gets_the_snapshot_as_initial_adds_then_live_events() {
    let p = fan_out(100);
    start(&p);
    p.gate().set_for_test();
    let (h, mut rx) = recording();
    let reg = p
        .add(Some(h), HandlerOptions::new(), || {
            vec![
                (key("x"), Arc::new("x".to_string())),
                (key("y"), Arc::new("y".to_string())),
            ]
        })
        .unwrap();
    update(&p, "x", "2", false);
    assert_eq!(
        recv_n(&mut rx, 3).await,
        ["add x true", "add y true", "update x=2"]
    );
    timeout(WAIT, reg.wait_for_sync()).await.unwrap();
    let _ = p.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h7_removed_handler_receives_nothing_more_and_self_removal_errors() {
    let p = fan_out(100);
    start(&p);
    let (h, mut rx) = recording();
    let reg = p.add(Some(h), HandlerOptions::new(), Vec::new).unwrap();
    add(&p, "a", false);
    assert_eq!(recv(&mut rx).await, "add a false");
    timeout(WAIT, p.remove_and_wait(&reg))
        .await
        .unwrap()
        .unwrap();
    assert!(reg.is_removed());
    add(&p, "b", false);
    assert!(
        rx.recv().await.is_none(),
        "the handler was dropped with its task"
    );

    // Awaiting removal from inside the same handler errors instead of deadlocking.
    let (tx, mut results) = mpsc::unbounded_channel();
    let slot: Arc<std::sync::Mutex<Option<HandlerRegistration<Obj>>>> = Arc::default();
    let (p2, slot2) = (Arc::clone(&p), Arc::clone(&slot));
    let selfish = handler_fn::<Obj>().on_add(move |_, _| {
        let reg = slot2.lock().unwrap().clone().unwrap();
        let res = futures::executor::block_on(p2.remove_and_wait(&reg));
        let _ = tx.send(res.map_err(|e| e.to_string()));
    });
    let reg = p
        .add(Some(Arc::new(selfish)), HandlerOptions::new(), Vec::new)
        .unwrap();
    *slot.lock().unwrap() = Some(reg.clone());
    add(&p, "c", false);
    let res = timeout(WAIT, results.recv()).await.unwrap().unwrap();
    assert!(res.is_err(), "{res:?}");
    p.remove(&reg);
    let _ = p.stop();
}

/// Registers a `Block` handler on `p`, starts `p` and returns once the handler is blocked in
/// its call for `a`, with nothing left in its queue.
async fn blocked_in_a(
    p: &FanOut<Obj>,
) -> (
    Arc<Gated>,
    mpsc::UnboundedReceiver<String>,
    HandlerRegistration<Obj>,
) {
    let (slow, mut slow_rx) = Gated::new();
    let reg = p
        .add(
            Some(slow.clone()),
            HandlerOptions::new().overflow(OverflowPolicy::Block),
            Vec::new,
        )
        .unwrap();
    start(p);
    add(p, "a", false);
    assert_eq!(recv(&mut slow_rx).await, "start a");
    (slow, slow_rx, reg)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn h10_block_policy_waits_for_space() {
    let p = fan_out(2);
    let (slow, _slow_rx, reg) = blocked_in_a(&p).await;
    add(&p, "b", false);
    add(&p, "c", false);
    assert_eq!(reg.pending(), 2);
    let mut wait = Box::pin(p.wait_for_room());
    assert!(
        futures::poll!(wait.as_mut()).is_pending(),
        "full: the processing loop must wait"
    );
    slow.open();
    timeout(WAIT, wait).await.unwrap();
    let _ = p.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn h10_v2_a_full_block_handler_gets_the_rest_of_a_batch_as_it_makes_room() {
    let p = fan_out(1);
    let (fast, mut fast_rx) = recording();
    p.add(Some(fast), HandlerOptions::new(), Vec::new).unwrap();
    let (slow, mut slow_rx, reg) = blocked_in_a(&p).await;
    // A batch of three (a relist's, say) after the store took all of it: `b` fits, `c` and `d`
    // are held for the `Block` handler alone.
    let batch = ["b", "c", "d"].map(|name| Notification {
        key: key(name),
        event: InformerEvent::Added {
            obj: Arc::new(name.to_string()),
            is_in_initial_list: false,
        },
        is_resync: false,
    });
    let held = p.lock().distribute(batch.into_iter());
    assert_eq!(reg.pending(), 1, "never past the maximum");
    assert_eq!(
        recv_n(&mut fast_rx, 4).await,
        ["add a false", "add b false", "add c false", "add d false"],
        "other handlers are not held"
    );
    let mut deliver = Box::pin(held.deliver());
    assert!(
        futures::poll!(deliver.as_mut()).is_pending(),
        "c waits for room"
    );
    slow.open();
    timeout(WAIT, deliver).await.unwrap();
    assert_eq!(
        recv_n(&mut slow_rx, 3).await,
        ["start b", "start c", "start d"]
    );
    let _ = p.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h4_y4_sync_notifications_go_only_to_due_handlers() {
    let p = Arc::new(FanOut::new(
        Arc::from("test"),
        ListenerDefaults {
            resync: Duration::from_secs(1),
            backlog_max: 100,
            overflow: OverflowPolicy::CoalesceByKey,
        },
        InformerMetrics::new(),
    ));
    let (h1, mut rx1) = recording();
    let r1 = p.add(Some(h1), HandlerOptions::new(), Vec::new).unwrap();
    let (h0, mut rx0) = recording();
    let r0 = p
        .add(
            Some(h0),
            HandlerOptions::new().resync(Duration::ZERO),
            Vec::new,
        )
        .unwrap();
    assert_eq!(
        (r1.resync_period(), r0.resync_period()),
        (Duration::from_secs(1), Duration::ZERO)
    );
    start(&p);
    // Nobody is due before the first period passed: a sync update reaches nobody.
    assert!(!p.should_resync());
    update(&p, "a", "1", true);
    // Force the handler due by ticking its state in the future.
    let later = Instant::now() + Duration::from_secs(2);
    assert!(
        p.lock()
            .listeners
            .iter()
            .any(|l| l.resync.lock().tick(later))
    );
    update(&p, "a", "2", true);
    update(&p, "a", "3", false);
    assert_eq!(recv_n(&mut rx1, 2).await, ["update a=2", "update a=3"]);
    assert_eq!(
        recv(&mut rx0).await,
        "update a=3",
        "resync-0 handler gets only the real update"
    );
    let _ = p.stop();
}

#[tokio::test]
async fn h14_add_after_stop_is_an_error() {
    let p = fan_out(10);
    start(&p);
    assert!(p.stop().is_empty());
    let (h, _rx) = recording();
    assert!(matches!(
        p.add(Some(h), HandlerOptions::new(), Vec::new),
        Err(Error::Stopped)
    ));
}
