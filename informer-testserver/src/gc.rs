//! Garbage collection by owner references (`TestServerBuilder::garbage_collection`, decision
//! record 28): what kube-apiserver does with `DeleteOptions` (the `orphan` and
//! `foregroundDeletion` finalizers) and what kube-controller-manager's garbage collector does
//! with owner references, done inside the server.
//!
//! The collector keeps an index from an owner's uid to the objects that named it and, after
//! every write, works a queue of the objects a write may concern until it is empty: a dependent
//! whose owners are all gone is deleted (with the propagation its own finalizers ask for); a
//! dependent with a remaining owner loses the references to the gone ones; an owner deleted in
//! the foreground waits for the dependents that block it (`blockOwnerDeletion`), an orphaning
//! owner first removes itself from its dependents. The steps are those of kube-controller-
//! manager's `attemptToDeleteItem`, `processDeletingDependentsItem` and `orphanDependents`; the
//! conformance scenarios hold both servers to the same results. Unlike the real collector, the
//! work is done before the write that caused it answers, so a test never waits for it; a test
//! that must also pass against kube-apiserver waits on a condition all the same.

use std::cell::Cell;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Map, Value};

use crate::resources::ResourceInfo;
use crate::status::ApiError;
use crate::store::EventType;

/// `DeleteOptions` as the server reads them: the preconditions and how the delete propagates.
#[derive(Debug, Clone, Default)]
pub(crate) struct DeleteOptions {
    /// `preconditions.uid`.
    pub(crate) uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub(crate) resource_version: Option<String>,
    /// `propagationPolicy`.
    pub(crate) propagation: Option<Propagation>,
    /// `orphanDependents` (deprecated; it cannot be sent with `propagationPolicy`).
    pub(crate) orphan_dependents: Option<bool>,
}

/// `DeleteOptions.propagationPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Propagation {
    Orphan,
    Background,
    Foreground,
}

impl Propagation {
    /// Reads a policy as the API validates it (422 for any other value).
    pub(crate) fn parse(text: &str) -> Result<Propagation, ApiError> {
        match text {
            "Orphan" => Ok(Propagation::Orphan),
            "Background" => Ok(Propagation::Background),
            "Foreground" => Ok(Propagation::Foreground),
            other => Err(ApiError::new(
                422,
                "Invalid",
                format!(
                    "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"{other}\": supported values: \"Foreground\", \"Background\", \"Orphan\""
                ),
            )),
        }
    }
}

/// What the collector needs of the server: implemented by the server's shared state
/// (`ops.rs`), so this module depends on neither.
pub(crate) trait Cluster {
    /// The collector's state.
    fn collector(&self) -> &Collector;
    /// The stored object of `node` and its resource.
    fn object(&self, node: &Node) -> Option<(Arc<ResourceInfo>, Value)>;
    /// The served resource of an `apiVersion` and `kind`.
    fn resource(&self, api_version: &str, kind: &str) -> Option<Arc<ResourceInfo>>;
    /// A DELETE with `options`.
    fn delete(
        &self,
        info: &Arc<ResourceInfo>,
        node: &Node,
        options: &DeleteOptions,
    ) -> Result<(), ApiError>;
    /// Edits the metadata of the object of `node` if its uid is `uid`.
    fn edit_metadata(
        &self,
        info: &Arc<ResourceInfo>,
        node: &Node,
        uid: &str,
        edit: &mut dyn FnMut(&mut Map<String, Value>),
    ) -> Result<(), ApiError>;
}

/// The finalizer of an orphaning delete.
pub(crate) const ORPHAN: &str = "orphan";
/// The finalizer of a foreground delete.
pub(crate) const FOREGROUND: &str = "foregroundDeletion";

/// An object the collector looks at: its resource, namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Node {
    pub(crate) res: Arc<str>,
    pub(crate) namespace: String,
    pub(crate) name: String,
}

impl Node {
    /// The namespace, `None` for a cluster-scoped object.
    pub(crate) fn ns(&self) -> Option<&str> {
        (!self.namespace.is_empty()).then_some(self.namespace.as_str())
    }
}

/// What to do with a node.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Work {
    /// Check its owner references (`attemptToDeleteItem`).
    Dependent(Node),
    /// It is being deleted with `orphan` or `foregroundDeletion`: act on its dependents.
    Owner(Node),
}

/// The collector's state.
#[derive(Debug, Default)]
pub(crate) struct Collector {
    on: AtomicBool,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Owner uid -> the objects that named it when last written (checked again on use).
    dependents: HashMap<String, BTreeSet<Node>>,
    queue: VecDeque<Work>,
}

thread_local! {
    /// Set while this thread works the queue, so the collector's own writes only queue work.
    static WORKING: Cell<bool> = const { Cell::new(false) };
}

/// One owner reference, as the collector reads it.
#[derive(Debug, Clone)]
struct OwnerRef {
    api_version: String,
    kind: String,
    name: String,
    uid: String,
    block: bool,
}

/// An object's metadata, as the collector reads it.
#[derive(Debug, Default)]
struct Meta {
    uid: String,
    deleting: bool,
    finalizers: Vec<String>,
    owners: Vec<OwnerRef>,
}

impl Meta {
    fn of(value: &Value) -> Meta {
        let Some(m) = value.get("metadata").and_then(Value::as_object) else {
            return Meta::default();
        };
        let text = |m: &Map<String, Value>, k: &str| {
            m.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let owners = m
            .get("ownerReferences")
            .and_then(Value::as_array)
            .map(|refs| {
                refs.iter()
                    .filter_map(Value::as_object)
                    .map(|r| OwnerRef {
                        api_version: text(r, "apiVersion"),
                        kind: text(r, "kind"),
                        name: text(r, "name"),
                        uid: text(r, "uid"),
                        block: r.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true),
                    })
                    .collect()
            })
            .unwrap_or_default();
        Meta {
            uid: text(m, "uid"),
            deleting: m.contains_key("deletionTimestamp"),
            finalizers: finalizers(value),
            owners,
        }
    }

    fn has(&self, finalizer: &str) -> bool {
        self.finalizers.iter().any(|f| f == finalizer)
    }

    /// Being deleted in the foreground (`isDeletingDependents`).
    fn deleting_dependents(&self) -> bool {
        self.deleting && self.has(FOREGROUND)
    }
}

/// An object's finalizers.
pub(crate) fn finalizers(value: &Value) -> Vec<String> {
    value
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|f| {
            f.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// What a resource's deletes propagate to by default (its registry strategy's
/// `DefaultGarbageCollectionPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DefaultPolicy {
    /// Background: dependents are deleted after the owner.
    DeleteDependents,
    /// Orphan, for backwards compatibility (`v1` ReplicationControllers, `batch/v1` Jobs).
    OrphanDependents,
    /// The GC finalizers are never set (Events).
    Unsupported,
}

pub(crate) fn default_policy(info: &ResourceInfo) -> DefaultPolicy {
    match (
        info.group.as_str(),
        info.version.as_str(),
        info.kind.as_str(),
    ) {
        ("", "v1", "ReplicationController") | ("batch", "v1", "Job") => {
            DefaultPolicy::OrphanDependents
        }
        ("", _, "Event") | ("events.k8s.io", _, "Event") => DefaultPolicy::Unsupported,
        _ => DefaultPolicy::DeleteDependents,
    }
}

/// The finalizers a delete leaves on `value` (kube-apiserver's
/// `deletionFinalizersForGarbageCollection`): `None` when they do not change.
pub(crate) fn deletion_finalizers(
    info: &ResourceInfo,
    value: &Value,
    options: &DeleteOptions,
) -> Option<Vec<String>> {
    let default = default_policy(info);
    if default == DefaultPolicy::Unsupported {
        return None;
    }
    let current = finalizers(value);
    let by_finalizer = |orphan: bool| {
        current.iter().find_map(|f| match f.as_str() {
            ORPHAN => Some(orphan),
            FOREGROUND => Some(!orphan),
            _ => None,
        })
    };
    let orphan = match (options.orphan_dependents, options.propagation) {
        (Some(orphan), _) => orphan,
        (None, Some(p)) => p == Propagation::Orphan,
        (None, None) => by_finalizer(true).unwrap_or(default == DefaultPolicy::OrphanDependents),
    };
    let foreground = match (options.orphan_dependents, options.propagation) {
        (Some(_), _) => false,
        (None, Some(p)) => p == Propagation::Foreground,
        (None, None) => by_finalizer(false).unwrap_or(false),
    };
    let mut next: Vec<String> = current
        .iter()
        .filter(|f| *f != ORPHAN && *f != FOREGROUND)
        .cloned()
        .collect();
    if orphan {
        next.push(ORPHAN.to_owned());
    }
    if foreground {
        next.push(FOREGROUND.to_owned());
    }
    let same = current.iter().collect::<BTreeSet<_>>() == next.iter().collect::<BTreeSet<_>>();
    (!same).then_some(next)
}

impl Collector {
    pub(crate) fn new(on: bool) -> Self {
        Collector {
            on: AtomicBool::new(on),
            inner: Mutex::default(),
        }
    }

    /// Whether the collector runs.
    pub(crate) fn on(&self) -> bool {
        self.on.load(Ordering::Acquire)
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Turns the collector on or off; turned on, it indexes `objects` (every stored object, as
/// its node and value) and collects what is already collectable.
pub(crate) fn set<C: Cluster>(c: &C, on: bool, objects: impl FnOnce() -> Vec<(Node, Value)>) {
    let was = c.collector().on.swap(on, Ordering::AcqRel);
    if !on || was {
        return;
    }
    for (node, value) in objects() {
        observe(c, node, &value, EventType::Added);
    }
    work(c);
}

/// Called after every write that stored an event: indexes the object, queues what the write
/// concerns and, unless this thread is already working the queue, works it.
pub(crate) fn after_write<C: Cluster>(c: &C, node: Node, value: &Value, event: EventType) {
    if !c.collector().on() {
        return;
    }
    observe(c, node, value, event);
    if !WORKING.with(Cell::get) {
        work(c);
    }
}

/// Indexes one written object and queues the work it causes.
fn observe<C: Cluster>(c: &C, node: Node, value: &Value, event: EventType) {
    let meta = Meta::of(value);
    let mut inner = c.collector().lock();
    match event {
        EventType::Deleted => {
            // Its dependents may now be dangling; a foreground owner it blocked may go.
            let dependents = inner.dependents.remove(&meta.uid).unwrap_or_default();
            inner
                .queue
                .extend(dependents.into_iter().map(Work::Dependent));
            for owner in &meta.owners {
                if let Some(set) = inner.dependents.get_mut(&owner.uid) {
                    set.remove(&node);
                }
                if let Some(owner) = resolve(c, &node, owner) {
                    inner.queue.push_back(Work::Owner(owner.0));
                }
            }
        }
        _ => {
            for owner in &meta.owners {
                inner
                    .dependents
                    .entry(owner.uid.clone())
                    .or_default()
                    .insert(node.clone());
            }
            if meta.deleting && (meta.has(ORPHAN) || meta.has(FOREGROUND)) {
                inner.queue.push_back(Work::Owner(node.clone()));
                if meta.has(FOREGROUND) {
                    // Its dependents now wait on it (`startsWaitingForDependentsDeleted`).
                    let dependents = inner.dependents.get(&meta.uid).cloned().unwrap_or_default();
                    inner
                        .queue
                        .extend(dependents.into_iter().map(Work::Dependent));
                }
            }
            if !meta.owners.is_empty() {
                inner.queue.push_back(Work::Dependent(node));
            }
        }
    }
}

/// Works the queue until it is empty.
fn work<C: Cluster>(c: &C) {
    WORKING.with(|w| w.set(true));
    // A bound against a cycle of owners that keeps requeueing (each step writes, so the store
    // moves on; the real collector backs off instead).
    let mut budget = 1_000_000usize;
    loop {
        let next = c.collector().lock().queue.pop_front();
        let Some(item) = next else { break };
        budget = budget.saturating_sub(1);
        if budget == 0 {
            tracing::warn!("garbage collection stopped: too much work queued at once");
            c.collector().lock().queue.clear();
            break;
        }
        match item {
            Work::Dependent(node) => attempt_to_delete(c, &node),
            Work::Owner(node) => process_owner(c, &node),
        }
    }
    WORKING.with(|w| w.set(false));
}

/// The stored object of `node`, its resource and its metadata.
fn load<C: Cluster>(c: &C, node: &Node) -> Option<(Arc<ResourceInfo>, Meta)> {
    let (info, value) = c.object(node)?;
    Some((info, Meta::of(&value)))
}

/// The owner an owner reference names, looked up where the collector looks: in the
/// dependent's namespace for a namespaced owner, cluster-wide otherwise. `None` when its kind
/// is not served, or a cluster-scoped dependent names a namespaced owner: the real collector
/// cannot resolve either and leaves the dependent alone.
fn resolve<C: Cluster>(c: &C, dependent: &Node, owner: &OwnerRef) -> Option<(Node, Option<Meta>)> {
    let info = c.resource(&owner.api_version, &owner.kind)?;
    if info.namespaced && dependent.namespace.is_empty() {
        return None;
    }
    let node = Node {
        res: info.storage_key(),
        namespace: if info.namespaced {
            dependent.namespace.clone()
        } else {
            String::new()
        },
        name: owner.name.clone(),
    };
    let meta = load(c, &node)
        .map(|(_, m)| m)
        .filter(|m| m.uid == owner.uid);
    Some((node, meta))
}

/// The current dependents of the object with `uid`: those in the index that still name it.
fn dependents_of<C: Cluster>(c: &C, uid: &str) -> Vec<(Node, OwnerRef)> {
    let candidates = c
        .collector()
        .lock()
        .dependents
        .get(uid)
        .cloned()
        .unwrap_or_default();
    candidates
        .into_iter()
        .filter_map(|node| {
            let (_, meta) = load(c, &node)?;
            let r = meta.owners.into_iter().find(|o| o.uid == uid)?;
            Some((node, r))
        })
        .collect()
}

/// kube-controller-manager's `attemptToDeleteItem` for one dependent.
fn attempt_to_delete<C: Cluster>(c: &C, node: &Node) {
    let Some((info, meta)) = load(c, node) else {
        return;
    };
    if meta.deleting {
        if meta.deleting_dependents() {
            process_owner(c, node);
        }
        return;
    }
    if meta.owners.is_empty() {
        return;
    }
    let (mut solid, mut gone) = (0usize, Vec::new());
    let mut waiting = 0usize;
    for owner in &meta.owners {
        match resolve(c, node, owner) {
            // Not resolvable: neither solid nor dangling; the real collector retries it.
            None => solid += 1,
            Some((_, None)) => gone.push(owner.uid.clone()),
            Some((_, Some(m))) if m.deleting_dependents() => {
                waiting += 1;
                gone.push(owner.uid.clone());
            }
            Some(_) => solid += 1,
        }
    }
    if solid > 0 {
        if !gone.is_empty() {
            remove_owner_refs(c, &info, node, &meta.uid, &gone);
        }
        return;
    }
    let policy = if waiting > 0 && !dependents_of(c, &meta.uid).is_empty() {
        Propagation::Foreground
    } else if meta.has(ORPHAN) {
        Propagation::Orphan
    } else if meta.has(FOREGROUND) {
        Propagation::Foreground
    } else {
        Propagation::Background
    };
    let options = DeleteOptions {
        uid: Some(meta.uid.clone()),
        propagation: Some(policy),
        ..DeleteOptions::default()
    };
    if let Err(e) = c.delete(&info, node, &options) {
        tracing::debug!(name = %node.name, error = %e.message, "garbage collector: delete skipped");
    }
}

/// An owner being deleted: orphan its dependents, or wait for the blocking ones.
fn process_owner<C: Cluster>(c: &C, node: &Node) {
    let Some((info, meta)) = load(c, node) else {
        return;
    };
    if !meta.deleting {
        return;
    }
    if meta.has(ORPHAN) {
        // `orphanDependents`, then the finalizer goes.
        for (dep, _) in dependents_of(c, &meta.uid) {
            if let Some((dep_info, dep_meta)) = load(c, &dep) {
                remove_owner_refs(
                    c,
                    &dep_info,
                    &dep,
                    &dep_meta.uid,
                    std::slice::from_ref(&meta.uid),
                );
            }
        }
        remove_finalizer(c, &info, node, &meta.uid, ORPHAN);
    } else if meta.has(FOREGROUND) {
        // `processDeletingDependentsItem`.
        let blocking: Vec<Node> = dependents_of(c, &meta.uid)
            .into_iter()
            .filter(|(_, r)| r.block)
            .map(|(n, _)| n)
            .collect();
        if blocking.is_empty() {
            remove_finalizer(c, &info, node, &meta.uid, FOREGROUND);
            return;
        }
        let mut inner = c.collector().lock();
        for dep in blocking {
            let work = Work::Dependent(dep);
            if !inner.queue.contains(&work) {
                inner.queue.push_back(work);
            }
        }
    }
}

/// Removes the owner references with `owner_uids` from the object with `uid`.
fn remove_owner_refs<C: Cluster>(
    c: &C,
    info: &Arc<ResourceInfo>,
    node: &Node,
    uid: &str,
    owner_uids: &[String],
) {
    rewrite_metadata(c, info, node, uid, &mut |m| {
        if let Some(refs) = m.get_mut("ownerReferences").and_then(Value::as_array_mut) {
            refs.retain(|r| {
                let u = r.get("uid").and_then(Value::as_str).unwrap_or_default();
                !owner_uids.iter().any(|o| o == u)
            });
            if refs.is_empty() {
                m.remove("ownerReferences");
            }
        }
    });
}

/// Removes one finalizer from the object with `uid` (which deletes it if it was the last).
fn remove_finalizer<C: Cluster>(
    c: &C,
    info: &Arc<ResourceInfo>,
    node: &Node,
    uid: &str,
    finalizer: &str,
) {
    rewrite_metadata(c, info, node, uid, &mut |m| {
        if let Some(f) = m.get_mut("finalizers").and_then(Value::as_array_mut) {
            f.retain(|v| v.as_str() != Some(finalizer));
        }
    });
}

fn rewrite_metadata<C: Cluster>(
    c: &C,
    info: &Arc<ResourceInfo>,
    node: &Node,
    uid: &str,
    edit: &mut dyn FnMut(&mut Map<String, Value>),
) {
    if let Err(e) = c.edit_metadata(info, node, uid, edit) {
        tracing::debug!(name = %node.name, error = %e.message, "garbage collector: update skipped");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn info(group: &str, version: &str, kind: &str) -> ResourceInfo {
        let mut info = crate::resources::builtin_resources()
            .into_iter()
            .find(|r| r.group == group && r.kind == kind)
            .expect("a built-in kind");
        info.version = version.to_owned();
        info
    }

    fn with_finalizers(f: &[&str]) -> Value {
        json!({"metadata": {"name": "o", "finalizers": f}})
    }

    fn options(policy: Option<Propagation>, orphan: Option<bool>) -> DeleteOptions {
        DeleteOptions {
            propagation: policy,
            orphan_dependents: orphan,
            ..DeleteOptions::default()
        }
    }

    #[test]
    fn the_policy_sets_one_gc_finalizer_and_keeps_the_others() {
        let cm = info("", "v1", "ConfigMap");
        let plain = with_finalizers(&["example.com/hold"]);
        assert_eq!(
            deletion_finalizers(&cm, &plain, &options(Some(Propagation::Foreground), None)),
            Some(vec!["example.com/hold".to_owned(), FOREGROUND.to_owned()])
        );
        assert_eq!(
            deletion_finalizers(&cm, &plain, &options(Some(Propagation::Orphan), None)),
            Some(vec!["example.com/hold".to_owned(), ORPHAN.to_owned()])
        );
        assert_eq!(
            deletion_finalizers(&cm, &plain, &options(Some(Propagation::Background), None)),
            None
        );
        // A later delete may change its mind; orphanDependents wins over the finalizer.
        let orphaning = with_finalizers(&[ORPHAN]);
        assert_eq!(
            deletion_finalizers(
                &cm,
                &orphaning,
                &options(Some(Propagation::Foreground), None)
            ),
            Some(vec![FOREGROUND.to_owned()])
        );
        assert_eq!(
            deletion_finalizers(&cm, &orphaning, &options(None, Some(false))),
            Some(vec![])
        );
        assert_eq!(
            deletion_finalizers(&cm, &orphaning, &options(None, None)),
            None
        );
    }

    #[test]
    fn defaults_orphan_for_v1_replication_controllers_and_jobs_and_never_touch_events() {
        let none = with_finalizers(&[]);
        for (group, kind) in [("", "ReplicationController"), ("batch", "Job")] {
            assert_eq!(
                deletion_finalizers(&info(group, "v1", kind), &none, &options(None, None)),
                Some(vec![ORPHAN.to_owned()]),
                "{kind}"
            );
        }
        let apps = info("apps", "v1", "ReplicaSet");
        assert_eq!(
            deletion_finalizers(&apps, &none, &options(None, None)),
            None
        );
        let event = info("", "v1", "Event");
        assert_eq!(
            deletion_finalizers(&event, &none, &options(Some(Propagation::Foreground), None)),
            None
        );
    }
}
