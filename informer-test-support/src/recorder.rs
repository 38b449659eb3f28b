//! [`Recorder`]: a log that tests wait on.

use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::watch;

use crate::WAIT;

/// A log of `T`s that tests wait on: every push wakes the waiters.
pub struct Recorder<T> {
    items: Mutex<Vec<T>>,
    changed: watch::Sender<u64>,
}

impl<T: Clone> Recorder<T> {
    /// An empty log.
    pub fn new() -> Arc<Self> {
        Arc::new(Recorder {
            items: Mutex::new(Vec::new()),
            changed: watch::Sender::new(0),
        })
    }

    /// Appends `item` and wakes the waiters.
    pub fn push(&self, item: T) {
        self.items.lock().push(item);
        self.changed.send_modify(|n| *n += 1);
    }

    /// A copy of the log.
    pub fn snapshot(&self) -> Vec<T> {
        self.items.lock().clone()
    }

    /// Waits until `cond` holds for the log and returns it; panics with the log after [`WAIT`].
    pub async fn wait_until(&self, what: &str, cond: impl Fn(&[T]) -> bool) -> Vec<T>
    where
        T: std::fmt::Debug,
    {
        let mut rx = self.changed.subscribe();
        let wait = async {
            loop {
                rx.borrow_and_update();
                let items = self.snapshot();
                if cond(&items) {
                    return items;
                }
                if rx.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        };
        match tokio::time::timeout(WAIT, wait).await {
            Ok(items) => items,
            Err(_) => panic!("timed out waiting for {what}; log: {:?}", self.snapshot()),
        }
    }
}
