//! The object store: objects by resource, one global resourceVersion counter, a bounded event
//! history for watch replay and consistent paging, and a broadcast channel feeding every watcher.
//!
//! Each object is serialized once per write; lists and every watcher share the same `Bytes`.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ops::Bound;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use serde_json::Value;
use tokio::sync::broadcast;

use crate::status::ApiError;

pub(crate) use crate::stored::{ObjKey, Stored};

/// Watch event types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventType {
    /// ADDED.
    Added,
    /// MODIFIED.
    Modified,
    /// DELETED.
    Deleted,
}

impl EventType {
    /// The wire name.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change, shared by the history and every watcher.
#[derive(Debug)]
pub(crate) struct Event {
    /// resourceVersion of the change.
    pub(crate) rv: u64,
    /// Storage key of the collection.
    pub(crate) res: Arc<str>,
    /// Event type.
    pub(crate) kind: EventType,
    /// The object after the change (for DELETED: its final state, with the deletion's RV).
    pub(crate) obj: Arc<Stored>,
    /// The object before the change.
    pub(crate) prev: Option<Arc<Stored>>,
}

/// What a mutation closure decided.
#[derive(Debug)]
pub(crate) enum Change {
    /// Store this value (create or update).
    Put(Value),
    /// Remove the object; the value is its final state.
    Delete(Value),
    /// Nothing changed: no new RV, no event.
    Noop,
    /// Dry run: build the object with the next RV but commit nothing.
    Preview(Value),
}

/// Result of a mutation.
#[derive(Debug)]
pub(crate) struct Mutation {
    /// The object now (for a delete: its final state).
    pub(crate) obj: Arc<Stored>,
    /// The event emitted, if any.
    pub(crate) event: Option<EventType>,
}

/// A page of a list.
#[derive(Debug)]
pub(crate) struct Page {
    /// Items in key order.
    pub(crate) items: Vec<Arc<Stored>>,
    /// resourceVersion the list is consistent at.
    pub(crate) rv: u64,
    /// Key of the last item when more items follow.
    pub(crate) next: Option<ObjKey>,
}

/// How a list is read.
pub(crate) struct ListRead<'a> {
    /// Restrict to one namespace.
    pub(crate) namespace: Option<&'a str>,
    /// Read at this exact RV (None: the latest state).
    pub(crate) at: Option<u64>,
    /// Start after this key (continue).
    pub(crate) start_after: Option<ObjKey>,
    /// Page size.
    pub(crate) limit: Option<usize>,
    /// Item filter (selectors).
    pub(crate) filter: &'a dyn Fn(&Stored) -> bool,
}

/// Where a watch starts.
#[derive(Debug, Clone, Copy)]
pub(crate) enum WatchFrom {
    /// Now; with `initial`, the current objects come first as ADDED.
    Now {
        /// Send the current state first.
        initial: bool,
    },
    /// Replay every event after this RV.
    After(u64),
}

/// A watch's starting material, taken atomically with its subscription.
pub(crate) struct WatchStart {
    /// Current objects to send as synthetic ADDED events.
    pub(crate) initial: Vec<Arc<Stored>>,
    /// Past events to replay.
    pub(crate) replay: Vec<Arc<Event>>,
    /// Live events after `rv`.
    pub(crate) rx: broadcast::Receiver<Arc<Event>>,
    /// The RV the watch is consistent at when it starts.
    pub(crate) rv: u64,
}

#[derive(Debug, Default)]
struct State {
    rv: u64,
    collections: HashMap<Arc<str>, BTreeMap<ObjKey, Arc<Stored>>>,
    history: VecDeque<Arc<Event>>,
    /// The oldest RV a watch or exact list can start from.
    floor: u64,
    /// Continue tokens issued at or below this RV are expired.
    continue_floor: u64,
}

/// The store. Cheap reads under a read lock; writes serialize under the write lock.
#[derive(Debug)]
pub(crate) struct Store {
    state: RwLock<State>,
    tx: broadcast::Sender<Arc<Event>>,
    history_size: usize,
    compress: bool,
    /// Encode each written object of a built-in kind as protobuf too, at the write.
    eager_protobuf: bool,
    /// The fields that protobuf carries (T8).
    schema: crate::protobuf::Schema,
}

impl Store {
    /// An empty store with the given history size and watcher buffer (events).
    pub(crate) fn new(history_size: usize, watch_buffer: usize) -> Self {
        let (tx, _) = broadcast::channel(watch_buffer.max(16));
        Store {
            state: RwLock::new(State::default()),
            tx,
            history_size: history_size.max(1),
            compress: false,
            eager_protobuf: false,
            schema: crate::protobuf::Schema::Built,
        }
    }

    /// Keeps every object's JSON LZ4-compressed from now on.
    pub(crate) fn compress_objects(mut self, on: bool) -> Self {
        self.compress = on;
        self
    }

    pub(crate) fn eager_protobuf(mut self, on: bool) -> Self {
        self.eager_protobuf = on;
        self
    }

    /// The fields that [`eager_protobuf`](Self::eager_protobuf) encodes (T8).
    pub(crate) fn protobuf_schema(mut self, schema: crate::protobuf::Schema) -> Self {
        self.schema = schema;
        self
    }

    fn read(&self) -> RwLockReadGuard<'_, State> {
        self.state
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, State> {
        self.state
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Every event from now on (one per write), for waits on the stored state.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        self.tx.subscribe()
    }

    /// The current global resourceVersion.
    pub(crate) fn current_rv(&self) -> u64 {
        self.read().rv
    }

    /// The oldest RV still replayable.
    pub(crate) fn floor(&self) -> u64 {
        self.read().floor
    }

    /// Reads one object.
    pub(crate) fn get(&self, res: &str, key: &ObjKey) -> Option<Arc<Stored>> {
        self.read().collections.get(res)?.get(key).cloned()
    }

    /// All objects of a collection (optionally one namespace), in key order.
    pub(crate) fn all(&self, res: &str, namespace: Option<&str>) -> Vec<Arc<Stored>> {
        let st = self.read();
        let Some(coll) = st.collections.get(res) else {
            return Vec::new();
        };
        coll.values()
            .filter(|o| namespace.is_none_or(|ns| o.namespace == ns))
            .cloned()
            .collect()
    }

    /// Applies `f` to the current object under the write lock, assigning the next RV.
    pub(crate) fn mutate<F>(
        &self,
        res: &Arc<str>,
        key: &ObjKey,
        field_paths: &[&'static str],
        f: F,
    ) -> Result<Mutation, ApiError>
    where
        F: FnOnce(Option<&Arc<Stored>>, u64) -> Result<Change, ApiError>,
    {
        let mut st = self.write();
        let next = st.rv + 1;
        let cur = st.collections.get(res).and_then(|c| c.get(key)).cloned();
        let stored = |v: &Value| {
            let obj = Stored::from_value(v, next, field_paths, self.compress)?;
            if self.eager_protobuf
                && let Some(kind) = v.get("kind").and_then(Value::as_str)
            {
                obj.fill_protobuf(kind, v, self.schema);
            }
            Ok::<_, ApiError>(Arc::new(obj))
        };
        let (obj, kind) = match f(cur.as_ref(), next)? {
            Change::Noop => {
                let obj =
                    cur.ok_or_else(|| ApiError::internal("no-op change on a missing object"))?;
                return Ok(Mutation { obj, event: None });
            }
            Change::Preview(mut value) => {
                set_rv(&mut value, next);
                let obj = stored(&value)?;
                return Ok(Mutation { obj, event: None });
            }
            Change::Put(mut value) => {
                set_rv(&mut value, next);
                let obj = stored(&value)?;
                st.collections
                    .entry(res.clone())
                    .or_default()
                    .insert(key.clone(), obj.clone());
                let kind = if cur.is_some() {
                    EventType::Modified
                } else {
                    EventType::Added
                };
                (obj, kind)
            }
            Change::Delete(mut value) => {
                set_rv(&mut value, next);
                let obj = stored(&value)?;
                if let Some(c) = st.collections.get_mut(res) {
                    c.remove(key);
                }
                (obj, EventType::Deleted)
            }
        };
        st.rv = next;
        let ev = Arc::new(Event {
            rv: next,
            res: res.clone(),
            kind,
            obj: obj.clone(),
            prev: cur,
        });
        st.history.push_back(ev.clone());
        while st.history.len() > self.history_size {
            if let Some(old) = st.history.pop_front() {
                st.floor = st.floor.max(old.rv);
            }
        }
        // No receivers is fine; lagging receivers are detected on their side.
        let _ = self.tx.send(ev);
        Ok(Mutation {
            obj,
            event: Some(kind),
        })
    }

    /// Drops history up to `rv` (clamped to the current RV) so older RVs answer 410.
    pub(crate) fn compact(&self, rv: u64) {
        let mut st = self.write();
        let rv = rv.min(st.rv);
        while st.history.front().is_some_and(|e| e.rv <= rv) {
            st.history.pop_front();
        }
        st.floor = st.floor.max(rv);
    }

    /// Makes every continue token issued so far expire.
    pub(crate) fn expire_continue_tokens(&self) {
        let mut st = self.write();
        st.continue_floor = st.rv;
    }

    /// Whether a continue token issued at `rv` is still valid.
    pub(crate) fn continue_valid(&self, rv: u64) -> bool {
        let st = self.read();
        rv > st.continue_floor && rv >= st.floor
    }

    /// Reads a page of a collection.
    pub(crate) fn list(&self, res: &str, req: &ListRead<'_>) -> Result<Page, ApiError> {
        let st = self.read();
        let at = req.at.unwrap_or(st.rv);
        if at > st.rv {
            return Err(ApiError::too_large_rv(at, st.rv));
        }
        if at < st.floor {
            return Err(ApiError::expired(format!(
                "The resourceVersion for the provided list is too old. (requested {at}, oldest available {})",
                st.floor
            )));
        }
        // The state at `at`: the current objects, with every key changed after `at` replaced by
        // its value before the first such change.
        let mut overrides: BTreeMap<&ObjKey, Option<&Arc<Stored>>> = BTreeMap::new();
        let keyed: Vec<(ObjKey, Option<&Arc<Stored>>)> = if at < st.rv {
            let start = st.history.partition_point(|e| e.rv <= at);
            st.history
                .range(start..)
                .filter(|e| &*e.res == res)
                .map(|e| {
                    (
                        (e.obj.namespace.clone(), e.obj.name.clone()),
                        e.prev.as_ref(),
                    )
                })
                .collect()
        } else {
            Vec::new()
        };
        for (k, prev) in &keyed {
            overrides.entry(k).or_insert(*prev);
        }
        let empty = BTreeMap::new();
        let coll = st.collections.get(res).unwrap_or(&empty);
        let lower = match (&req.start_after, req.namespace) {
            (Some(k), _) => Bound::Excluded(k.clone()),
            (None, Some(ns)) => Bound::Included((ns.to_owned(), String::new())),
            (None, None) => Bound::Unbounded,
        };
        let in_ns = |k: &ObjKey| req.namespace.is_none_or(|ns| k.0 == ns);
        let mut current = coll
            .range((lower.clone(), Bound::Unbounded))
            .take_while(|(k, _)| in_ns(k))
            .filter(|(k, _)| !overrides.contains_key(k))
            .peekable();
        let mut past = overrides
            .iter()
            .filter(|(k, _)| match &lower {
                Bound::Excluded(s) => **k > s,
                Bound::Included(s) => **k >= s,
                Bound::Unbounded => true,
            })
            .filter(|(k, _)| in_ns(k))
            .filter_map(|(k, v)| v.map(|v| (*k, v)))
            .peekable();
        let limit = req.limit.filter(|l| *l > 0).unwrap_or(usize::MAX);
        let mut items = Vec::new();
        let mut next = None;
        loop {
            let take_current = match (current.peek(), past.peek()) {
                (None, None) => break,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some((a, _)), Some((b, _))) => a < b,
            };
            let item = if take_current {
                current.next()
            } else {
                past.next()
            };
            let Some((_, obj)) = item else { break };
            if !(req.filter)(obj) {
                continue;
            }
            if items.len() == limit {
                next = items
                    .last()
                    .map(|o: &Arc<Stored>| (o.namespace.clone(), o.name.clone()));
                break;
            }
            items.push(obj.clone());
        }
        Ok(Page {
            items,
            rv: at,
            next,
        })
    }

    /// Subscribes a watcher, taking its starting material atomically with the subscription.
    pub(crate) fn watch(
        &self,
        res: &str,
        namespace: Option<&str>,
        from: WatchFrom,
    ) -> Result<WatchStart, ApiError> {
        let st = self.read();
        let rx = self.tx.subscribe();
        match from {
            WatchFrom::Now { initial } => {
                let initial = if initial {
                    st.collections
                        .get(res)
                        .map(|c| {
                            c.values()
                                .filter(|o| namespace.is_none_or(|ns| o.namespace == ns))
                                .cloned()
                                .collect()
                        })
                        .unwrap_or_default()
                } else {
                    Vec::new()
                };
                Ok(WatchStart {
                    initial,
                    replay: Vec::new(),
                    rx,
                    rv: st.rv,
                })
            }
            WatchFrom::After(rv) => {
                if rv < st.floor {
                    return Err(ApiError::expired(format!(
                        "too old resource version: {rv} ({})",
                        st.floor
                    )));
                }
                let start = st.history.partition_point(|e| e.rv <= rv);
                let replay = st
                    .history
                    .range(start..)
                    .filter(|e| &*e.res == res)
                    .cloned()
                    .collect();
                Ok(WatchStart {
                    initial: Vec::new(),
                    replay,
                    rx,
                    rv: st.rv.max(rv),
                })
            }
        }
    }
}

/// Sets `metadata.resourceVersion`.
fn set_rv(value: &mut Value, rv: u64) {
    if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn put(store: &Store, res: &Arc<str>, name: &str, data: &str) -> u64 {
        let key = ("ns".to_owned(), name.to_owned());
        let v = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns"}, "data": {"a": data}});
        store
            .mutate(res, &key, &[], |_, _| Ok(Change::Put(v)))
            .expect("put")
            .obj
            .rv
    }

    #[test]
    fn exact_list_sees_the_past() {
        let store = Store::new(100, 100);
        let res: Arc<str> = Arc::from("/configmaps");
        put(&store, &res, "a", "1");
        let rv = put(&store, &res, "b", "1");
        put(&store, &res, "a", "2");
        put(&store, &res, "c", "1");
        let key = ("ns".to_owned(), "b".to_owned());
        let last = store
            .mutate(&res, &key, &[], |cur, _| {
                Ok(Change::Delete(cur.expect("b").value()?))
            })
            .expect("del");
        assert_eq!(last.event, Some(EventType::Deleted));
        let all = |_: &Stored| true;
        let read = ListRead {
            namespace: None,
            at: Some(rv),
            start_after: None,
            limit: None,
            filter: &all,
        };
        let page = store.list(&res, &read).expect("list");
        let names: Vec<_> = page.items.iter().map(|o| (o.name.as_str(), o.rv)).collect();
        assert_eq!(names, [("a", 1), ("b", 2)]);
        let now = store
            .list(&res, &ListRead { at: None, ..read })
            .expect("list");
        let names: Vec<_> = now.items.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, ["a", "c"]);
    }

    #[test]
    fn paging_and_compaction() {
        let store = Store::new(3, 100);
        let res: Arc<str> = Arc::from("/configmaps");
        for i in 0..5 {
            put(&store, &res, &format!("o{i}"), "x");
        }
        let all = |_: &Stored| true;
        let read = ListRead {
            namespace: Some("ns"),
            at: None,
            start_after: None,
            limit: Some(2),
            filter: &all,
        };
        let page = store.list(&res, &read).expect("page");
        assert_eq!(page.items.len(), 2);
        assert_eq!(page.next, Some(("ns".into(), "o1".into())));
        assert!(store.watch(&res, None, WatchFrom::After(1)).is_err());
        assert_eq!(
            store
                .watch(&res, None, WatchFrom::After(2))
                .expect("watch")
                .replay
                .len(),
            3
        );
    }
}
