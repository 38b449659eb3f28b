//! Event handlers: the [`ResourceEventHandler`] trait, the closure builder [`handler_fn`], the delete payload and [`FilteringHandler`] (H12, H15).

use std::fmt;
use std::sync::Arc;

pub use crate::delta_fifo::{DeletedFinalStateUnknown, DeletedObject};

/// Receives the notifications of one registration (client-go's `ResourceEventHandler`).
///
/// Calls are made one at a time, in distribution order (H8), always after the informer's store
/// shows the change (H2). Each registration runs on its own thread (H9), so a call may block
/// (synchronous I/O, a lock) without delaying other handlers or the informer; its backlog grows
/// instead (H10). For async work, hand the key to a workqueue or use
/// [`SharedIndexInformer::event_stream`](super::SharedIndexInformer::event_stream). A panic is
/// caught, logged and counted (H11). Every method has a no-op default.
pub trait ResourceEventHandler<K>: Send + Sync + 'static {
    /// An object was added. `is_in_initial_list` is true for adds from the first list and for
    /// the synthetic adds a late handler receives (H3, H5).
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        let _ = (obj, is_in_initial_list);
    }

    /// An object changed, or a resync replayed it (then `Arc::ptr_eq(old, new)` or equal
    /// resource versions; Y1, H4).
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        let _ = (old, new);
    }

    /// An object was deleted (H12).
    fn on_delete(&self, obj: &DeletedObject<K>) {
        let _ = obj;
    }
}

impl<K, H: ResourceEventHandler<K> + ?Sized> ResourceEventHandler<K> for Arc<H> {
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        (**self).on_add(obj, is_in_initial_list)
    }
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        (**self).on_update(old, new)
    }
    fn on_delete(&self, obj: &DeletedObject<K>) {
        (**self).on_delete(obj)
    }
}

type AddFn<K> = Box<dyn Fn(&Arc<K>, bool) + Send + Sync>;
type UpdateFn<K> = Box<dyn Fn(&Arc<K>, &Arc<K>) + Send + Sync>;
type DeleteFn<K> = Box<dyn Fn(&DeletedObject<K>) + Send + Sync>;

/// A handler built from closures; start with [`handler_fn`].
///
/// ```
/// # use informer_runtime::informer::handler_fn;
/// # use k8s_openapi::api::core::v1::ConfigMap;
/// let handler = handler_fn::<ConfigMap>()
///     .on_add(|cm, initial| println!("add {:?} initial={initial}", cm.metadata.name))
///     .on_delete(|gone| println!("delete tombstone={}", gone.is_tombstone()));
/// ```
pub struct HandlerFn<K> {
    on_add: Option<AddFn<K>>,
    on_update: Option<UpdateFn<K>>,
    on_delete: Option<DeleteFn<K>>,
}

/// Starts a closure handler with no callbacks; chain `on_add`, `on_update`, `on_delete`.
pub fn handler_fn<K>() -> HandlerFn<K> {
    HandlerFn {
        on_add: None,
        on_update: None,
        on_delete: None,
    }
}

impl<K> HandlerFn<K> {
    /// Sets the add callback: `(obj, is_in_initial_list)`.
    pub fn on_add(mut self, f: impl Fn(&Arc<K>, bool) + Send + Sync + 'static) -> Self {
        self.on_add = Some(Box::new(f));
        self
    }

    /// Sets the update callback: `(old, new)`.
    pub fn on_update(mut self, f: impl Fn(&Arc<K>, &Arc<K>) + Send + Sync + 'static) -> Self {
        self.on_update = Some(Box::new(f));
        self
    }

    /// Sets the delete callback.
    pub fn on_delete(mut self, f: impl Fn(&DeletedObject<K>) + Send + Sync + 'static) -> Self {
        self.on_delete = Some(Box::new(f));
        self
    }
}

impl<K> fmt::Debug for HandlerFn<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandlerFn")
            .field("on_add", &self.on_add.is_some())
            .field("on_update", &self.on_update.is_some())
            .field("on_delete", &self.on_delete.is_some())
            .finish()
    }
}

impl<K: Send + Sync + 'static> ResourceEventHandler<K> for HandlerFn<K> {
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        if let Some(f) = &self.on_add {
            f(obj, is_in_initial_list)
        }
    }
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        if let Some(f) = &self.on_update {
            f(old, new)
        }
    }
    fn on_delete(&self, obj: &DeletedObject<K>) {
        if let Some(f) = &self.on_delete {
            f(obj)
        }
    }
}

/// Passes through only the events whose object matches a predicate (H15, client-go's
/// `FilteringResourceEventHandler`).
///
/// An update that stops matching becomes `on_delete(Known(old))`; one that starts matching
/// becomes `on_add(new, false)`. A tombstone without a last known state cannot be tested and is
/// passed through, because deletes must never be lost.
pub struct FilteringHandler<K, H> {
    predicate: Box<dyn Fn(&K) -> bool + Send + Sync>,
    inner: H,
}

impl<K, H> FilteringHandler<K, H> {
    /// Wraps `inner` so it only sees objects for which `predicate` returns true.
    pub fn new(predicate: impl Fn(&K) -> bool + Send + Sync + 'static, inner: H) -> Self {
        FilteringHandler {
            predicate: Box::new(predicate),
            inner,
        }
    }

    /// The wrapped handler.
    pub fn inner(&self) -> &H {
        &self.inner
    }
}

impl<K, H> fmt::Debug for FilteringHandler<K, H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FilteringHandler").finish_non_exhaustive()
    }
}

impl<K, H> ResourceEventHandler<K> for FilteringHandler<K, H>
where
    K: Send + Sync + 'static,
    H: ResourceEventHandler<K>,
{
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        if (self.predicate)(obj) {
            self.inner.on_add(obj, is_in_initial_list);
        }
    }

    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        match ((self.predicate)(old), (self.predicate)(new)) {
            (true, true) => self.inner.on_update(old, new),
            (false, true) => self.inner.on_add(new, false),
            (true, false) => self.inner.on_delete(&DeletedObject::Known(Arc::clone(old))),
            (false, false) => {}
        }
    }

    fn on_delete(&self, obj: &DeletedObject<K>) {
        let matches = obj.last_known().is_none_or(|last| (self.predicate)(last));
        if matches {
            self.inner.on_delete(obj);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::ObjectKey;
    use parking_lot::Mutex;

    #[derive(Debug, Clone, PartialEq)]
    struct Obj {
        name: &'static str,
        label: bool,
    }

    #[derive(Default)]
    struct Recorder(Mutex<Vec<String>>);

    impl ResourceEventHandler<Obj> for Recorder {
        fn on_add(&self, obj: &Arc<Obj>, initial: bool) {
            self.0.lock().push(format!("add {} {initial}", obj.name));
        }
        fn on_update(&self, old: &Arc<Obj>, new: &Arc<Obj>) {
            self.0
                .lock()
                .push(format!("update {} {}", old.name, new.name));
        }
        fn on_delete(&self, obj: &DeletedObject<Obj>) {
            let name = obj.last_known().map_or("?", |o| o.name);
            self.0
                .lock()
                .push(format!("delete {name} {}", obj.is_tombstone()));
        }
    }

    fn obj(name: &'static str, label: bool) -> Arc<Obj> {
        Arc::new(Obj { name, label })
    }

    #[test]
    fn h15_filtering_handler_turns_transitions_into_add_and_delete() {
        let rec = Arc::new(Recorder::default());
        let h = FilteringHandler::new(|o: &Obj| o.label, Arc::clone(&rec));
        h.on_add(&obj("a", true), true);
        h.on_add(&obj("b", false), true);
        h.on_update(&obj("a", true), &obj("a2", true));
        h.on_update(&obj("b", false), &obj("b2", true));
        h.on_update(&obj("a2", true), &obj("a3", false));
        h.on_update(&obj("c", false), &obj("c2", false));
        h.on_delete(&DeletedObject::Known(obj("b2", true)));
        h.on_delete(&DeletedObject::Known(obj("x", false)));
        h.on_delete(&DeletedObject::Unknown(DeletedFinalStateUnknown {
            key: ObjectKey::new(None, "t"),
            last_known: None,
        }));
        assert_eq!(
            *rec.0.lock(),
            vec![
                "add a true",
                "update a a2",
                "add b2 false",
                "delete a2 false",
                "delete b2 false",
                "delete ? true",
            ]
        );
    }

    #[test]
    fn h12_handler_fn_dispatches_to_the_set_closures_only() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (s1, s2) = (Arc::clone(&seen), Arc::clone(&seen));
        let h = handler_fn::<Obj>()
            .on_add(move |o, init| s1.lock().push(format!("add {} {init}", o.name)))
            .on_delete(move |d| s2.lock().push(format!("delete {}", d.is_tombstone())));
        let h: &dyn ResourceEventHandler<Obj> = &h;
        h.on_add(&obj("a", true), false);
        h.on_update(&obj("a", true), &obj("a", true));
        h.on_delete(&DeletedObject::Unknown(DeletedFinalStateUnknown {
            key: ObjectKey::new(Some("ns"), "a"),
            last_known: Some(obj("a", true)),
        }));
        assert_eq!(*seen.lock(), vec!["add a false", "delete true"]);
    }
}
