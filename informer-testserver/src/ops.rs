//! Object semantics shared by HTTP writes and the handle's seeding helpers: create (uid,
//! timestamps, generateName), update with optimistic concurrency, patch, delete with finalizers,
//! the status subresource, and the CRD lifecycle.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::clock::now;
use crate::crd;
use crate::gc::{self, Node};
pub(crate) use crate::gc::{DeleteOptions, Propagation};
use crate::patch::{self, PatchKind};
use crate::resources::ResourceInfo;
use crate::selectors::{Selectors, field_paths};
use crate::state::Shared;
use crate::status::ApiError;
use crate::store::{Change, EventType, ObjKey, Stored};

/// Which part of the object a write addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    /// The main resource (status changes are ignored when a status subresource exists).
    Main,
    /// The `status` subresource (only status changes are kept).
    Status,
}

fn meta(v: &Value) -> Option<&Map<String, Value>> {
    v.get("metadata").and_then(Value::as_object)
}

fn meta_str<'a>(v: &'a Value, field: &str) -> Option<&'a str> {
    meta(v)?.get(field)?.as_str()
}

fn meta_mut(v: &mut Value) -> Result<&mut Map<String, Value>, ApiError> {
    let obj = v
        .as_object_mut()
        .ok_or_else(|| ApiError::bad_request("the object must be a JSON object"))?;
    let m = obj.entry("metadata").or_insert_with(|| json!({}));
    if !m.is_object() {
        *m = json!({});
    }
    m.as_object_mut()
        .ok_or_else(|| ApiError::bad_request("metadata must be an object"))
}

/// Checks/sets apiVersion and kind of a written body against the endpoint.
fn check_type(info: &ResourceInfo, v: &mut Value) -> Result<(), ApiError> {
    let Some(obj) = v.as_object_mut() else {
        return Err(ApiError::bad_request(
            "the body of the request must be a JSON object",
        ));
    };
    match obj.get("kind").and_then(Value::as_str) {
        Some(k) if k != info.kind => {
            return Err(ApiError::bad_request(format!(
                "the kind of the object ({k}) does not match the expected kind ({})",
                info.kind
            )));
        }
        _ => {}
    }
    if let Some(av) = obj.get("apiVersion").and_then(Value::as_str) {
        let group = av.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
        if group != info.group {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({av}) does not match the expected API version ({})",
                info.api_version()
            )));
        }
    }
    obj.insert("kind".into(), Value::String(info.kind.clone()));
    obj.insert("apiVersion".into(), Value::String(info.api_version()));
    Ok(())
}

fn key(info: &ResourceInfo, ns: Option<&str>, name: &str) -> ObjKey {
    let ns = if info.namespaced {
        ns.unwrap_or_default()
    } else {
        ""
    };
    (ns.to_owned(), name.to_owned())
}

fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let bytes = uuid::Uuid::new_v4().into_bytes();
    bytes[..5]
        .iter()
        .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
        .collect()
}

/// Creates an object.
pub(crate) fn create(
    sh: &Shared,
    info: &Arc<ResourceInfo>,
    ns: Option<&str>,
    mut body: Value,
    dry_run: bool,
) -> Result<Arc<Stored>, ApiError> {
    check_type(info, &mut body)?;
    let body_has_spec = body.get("spec").is_some();
    let m = meta_mut(&mut body)?;
    if m.get("resourceVersion")
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty())
    {
        return Err(ApiError::bad_request(
            "resourceVersion should not be set on objects to be created",
        ));
    }
    let mut name = m
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if name.is_empty() {
        match m.get("generateName").and_then(Value::as_str) {
            Some(prefix) if !prefix.is_empty() => name = format!("{prefix}{}", random_suffix()),
            _ => {
                return Err(ApiError::invalid(
                    info,
                    "",
                    "metadata.name: Required value: name or generateName is required",
                ));
            }
        }
    }
    crate::names::check(info, &name)?;
    m.insert("name".into(), Value::String(name.clone()));
    if info.namespaced {
        let Some(ns) = ns else {
            return Err(ApiError::bad_request(
                "a namespace is required to create a namespaced object",
            ));
        };
        match m.get("namespace").and_then(Value::as_str) {
            Some(b) if !b.is_empty() && b != ns => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            _ => {}
        }
        m.insert("namespace".into(), Value::String(ns.to_owned()));
    } else {
        m.remove("namespace");
    }
    m.insert(
        "uid".into(),
        Value::String(uuid::Uuid::new_v4().to_string()),
    );
    m.insert("creationTimestamp".into(), Value::String(now()));
    // Like the registry strategies: kinds with a spec (and every custom resource) track generation.
    let tracks_generation = info.custom || body_has_spec;
    if tracks_generation {
        m.insert("generation".into(), json!(1));
    } else {
        m.remove("generation");
    }
    m.remove("deletionTimestamp");
    m.remove("deletionGracePeriodSeconds");
    if info.group.is_empty() && info.kind == "Namespace" {
        body["spec"]["finalizers"] = json!(["kubernetes"]);
        if body.pointer("/status/phase").is_none() {
            body["status"] = json!({"phase": "Active"});
        }
    }
    // The one default kubectl's printers show: a Secret without a type is Opaque.
    if info.group.is_empty() && info.kind == "Secret" && body.get("type").is_none() {
        body["type"] = json!("Opaque");
    }
    crate::secret::fold_string_data(info, &mut body)?;
    if info.group.is_empty() && info.kind == "Service" {
        allocate_service_addresses(&mut body, sh.store.current_rv());
    }
    let is_crd = is_crd(info);
    if is_crd {
        crd::prepare(&mut body)?;
    }
    // A custom object is created without status when the status subresource is on (the
    // apiextensions strategy); built-in kinds keep theirs here (the benchmark seeds Pods with one).
    if info.custom
        && info.status_subresource
        && let Some(o) = body.as_object_mut()
    {
        o.remove("status");
    }
    if let Some(schema) = custom_schema(sh, info) {
        crate::schema::apply(info, &name, &schema, &mut body)?;
    }
    let k = key(info, ns, &name);
    let res = info.storage_key();
    let mutation = sh
        .store
        .mutate(&res, &k, field_paths(&info.group, &info.kind), |cur, _| {
            if cur.is_some() {
                return Err(ApiError::already_exists(info, &name));
            }
            Ok(if dry_run {
                Change::Preview(body)
            } else {
                Change::Put(body)
            })
        })?;
    after_write(sh, info, &mutation.obj, mutation.event)?;
    Ok(mutation.obj)
}

/// Carries over what clients cannot change and decides the change of an update.
fn finish_update(
    info: &ResourceInfo,
    old: &Value,
    mut new: Value,
    part: Part,
) -> Result<Change, ApiError> {
    if part == Part::Status {
        let mut out = old.clone();
        match new.get_mut("status").map(Value::take) {
            Some(s) => out["status"] = s,
            None => {
                if let Some(o) = out.as_object_mut() {
                    o.remove("status");
                }
            }
        }
        new = out;
    } else if info.status_subresource {
        match old.get("status") {
            Some(s) => new["status"] = s.clone(),
            None => {
                if let Some(o) = new.as_object_mut() {
                    o.remove("status");
                }
            }
        }
    }
    let old_meta = meta(old).cloned().unwrap_or_default();
    let m = meta_mut(&mut new)?;
    for field in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
    ] {
        match old_meta.get(field) {
            Some(v) => {
                m.insert(field.into(), v.clone());
            }
            None => {
                m.remove(field);
            }
        }
    }
    m.insert(
        "resourceVersion".into(),
        old_meta
            .get("resourceVersion")
            .cloned()
            .unwrap_or(Value::Null),
    );
    if m.get("finalizers")
        .and_then(Value::as_array)
        .is_some_and(Vec::is_empty)
    {
        m.remove("finalizers");
    }
    let deleting = m.contains_key("deletionTimestamp");
    let no_finalizers = m.get("finalizers").is_none();
    // generation moves when anything outside metadata and status changes.
    let spec_changed = {
        let strip = |v: &Value| {
            let mut v = v.clone();
            if let Some(o) = v.as_object_mut() {
                o.remove("metadata");
                o.remove("status");
            }
            v
        };
        strip(old) != strip(&new)
    };
    if spec_changed && old_meta.contains_key("generation") {
        let g = old_meta
            .get("generation")
            .and_then(Value::as_i64)
            .unwrap_or(0)
            + 1;
        new["metadata"]["generation"] = json!(g);
    }
    if deleting && no_finalizers {
        return Ok(Change::Delete(new));
    }
    if &new == old {
        return Ok(Change::Noop);
    }
    Ok(Change::Put(new))
}

/// Replaces an object (PUT); `body_rv` mismatch answers 409.
pub(crate) fn update(
    sh: &Shared,
    info: &Arc<ResourceInfo>,
    ns: Option<&str>,
    name: &str,
    mut body: Value,
    part: Part,
) -> Result<Arc<Stored>, ApiError> {
    check_type(info, &mut body)?;
    let m = meta_mut(&mut body)?;
    match m.get("name").and_then(Value::as_str) {
        Some(n) if n != name => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            )));
        }
        _ => {}
    }
    m.insert("name".into(), Value::String(name.to_owned()));
    if info.namespaced {
        if let (Some(b), Some(ns)) = (m.get("namespace").and_then(Value::as_str), ns)
            && !b.is_empty()
            && b != ns
        {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        m.insert(
            "namespace".into(),
            Value::String(ns.unwrap_or_default().to_owned()),
        );
    }
    let want_rv = m
        .get("resourceVersion")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned);
    replace_existing(sh, info, ns, name, part, |cur, _old| {
        if let Some(rv) = &want_rv
            && *rv != cur.rv.to_string()
        {
            return Err(modified(info, name));
        }
        Ok(body)
    })
}

/// Patches an object; an apply patch creates it when missing.
pub(crate) fn patch(
    sh: &Shared,
    info: &Arc<ResourceInfo>,
    ns: Option<&str>,
    name: &str,
    kind: PatchKind,
    body: &[u8],
    part: Part,
) -> Result<Arc<Stored>, ApiError> {
    if sh
        .store
        .get(&info.storage_key(), &key(info, ns, name))
        .is_none()
    {
        if kind == PatchKind::Apply && part == Part::Main {
            let mut v = patch::parse_apply(body)?;
            if let Ok(m) = meta_mut(&mut v) {
                m.insert("name".into(), Value::String(name.to_owned()));
            }
            return create(sh, info, ns, v, false);
        }
        return Err(ApiError::not_found(info, name));
    }
    replace_existing(sh, info, ns, name, part, |cur, old| {
        let mut new = old.clone();
        patch::apply(kind, &mut new, body)?;
        if meta_str(&new, "name") != Some(name) {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({}) does not match the name on the URL ({name})",
                meta_str(&new, "name").unwrap_or_default()
            )));
        }
        let rv = meta_str(&new, "resourceVersion").unwrap_or_default();
        if !rv.is_empty() && rv != cur.rv.to_string() {
            return Err(modified(info, name));
        }
        check_type(info, &mut new)?;
        Ok(new)
    })
}

/// The conflict of a write whose resourceVersion is not the stored one.
fn modified(info: &ResourceInfo, name: &str) -> ApiError {
    ApiError::conflict(
        info,
        name,
        "the object has been modified; please apply your changes to the latest version and try again",
    )
}

/// Replaces the stored object `name` with what `next` makes of it and the stored body (update
/// and patch): `next` checks its own preconditions; the update rules (`finish_update`), a
/// custom resource's preparation and schema, and the write's event are the same for both.
fn replace_existing(
    sh: &Shared,
    info: &Arc<ResourceInfo>,
    ns: Option<&str>,
    name: &str,
    part: Part,
    next: impl FnOnce(&Stored, &Value) -> Result<Value, ApiError>,
) -> Result<Arc<Stored>, ApiError> {
    let is_crd = is_crd(info);
    let schema = custom_schema(sh, info);
    let res = info.storage_key();
    let key = key(info, ns, name);
    let mutation = sh.store.mutate(
        &res,
        &key,
        field_paths(&info.group, &info.kind),
        |cur, _| {
            let cur = cur.ok_or_else(|| ApiError::not_found(info, name))?;
            let old = cur.value()?;
            let mut new = next(cur, &old)?;
            crate::secret::fold_string_data(info, &mut new)?;
            let mut change = finish_update(info, &old, new, part)?;
            if let Change::Put(v) = &mut change {
                if is_crd {
                    crd::prepare(v)?;
                }
                if let Some(schema) = &schema {
                    crate::schema::apply(info, name, schema, v)?;
                }
            }
            Ok(change)
        },
    )?;
    after_write(sh, info, &mutation.obj, mutation.event)?;
    Ok(mutation.obj)
}

/// Deletes an object: with finalizers it only gets a deletionTimestamp. With garbage
/// collection on, the options' propagation first sets the `orphan` or `foregroundDeletion`
/// finalizer as kube-apiserver does (decision record 28). Returns the object and whether it is
/// gone.
pub(crate) fn delete(
    sh: &Shared,
    info: &Arc<ResourceInfo>,
    ns: Option<&str>,
    name: &str,
    options: &DeleteOptions,
) -> Result<(Arc<Stored>, bool), ApiError> {
    let res = info.storage_key();
    let gc = sh.gc.on();
    let mutation = sh.store.mutate(&res, &key(info, ns, name), field_paths(&info.group, &info.kind), |cur, _| {
        let cur = cur.ok_or_else(|| ApiError::not_found(info, name))?;
        let mut v = cur.value()?;
        if let Some(uid) = &options.uid {
            let have = meta_str(&v, "uid").unwrap_or_default();
            if uid != have {
                return Err(ApiError::conflict(info, name, &format!("Precondition failed: UID in precondition: {uid}, UID in object meta: {have}")));
            }
        }
        if let Some(rv) = &options.resource_version
            && *rv != cur.rv.to_string() {
                return Err(ApiError::conflict(info, name, &format!("Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}", cur.rv)));
            }
        let changed = if gc { gc::deletion_finalizers(info, &v, options) } else { None };
        let deleting = meta(&v).is_some_and(|m| m.contains_key("deletionTimestamp"));
        let m = meta_mut(&mut v)?;
        if let Some(finalizers) = &changed {
            if finalizers.is_empty() {
                m.remove("finalizers");
            } else {
                m.insert("finalizers".into(), json!(finalizers));
            }
        }
        let has_finalizers = m.get("finalizers").and_then(Value::as_array).is_some_and(|f| !f.is_empty());
        if deleting {
            return Ok(match (changed.is_some(), has_finalizers) {
                (false, _) => Change::Noop,
                (true, true) => Change::Put(v),
                (true, false) => Change::Delete(v),
            });
        }
        if has_finalizers {
            // kube-apiserver's markAsDeleting: the generation moves with the deletion.
            if let Some(g) = m.get("generation").and_then(Value::as_i64).filter(|g| *g > 0) {
                m.insert("generation".into(), json!(g + 1));
            }
            m.insert("deletionTimestamp".into(), Value::String(now()));
            m.insert("deletionGracePeriodSeconds".into(), json!(0));
            return Ok(Change::Put(v));
        }
        Ok(Change::Delete(v))
    })?;
    let gone = mutation.event == Some(EventType::Deleted);
    after_write(sh, info, &mutation.obj, mutation.event)?;
    Ok((mutation.obj, gone))
}

/// Turns garbage collection on or off (`TestServer::set_garbage_collection`).
pub(crate) fn set_garbage_collection(sh: &Shared, on: bool) {
    gc::set(sh, on, || {
        let mut seen = std::collections::HashSet::new();
        let mut objects = Vec::new();
        for info in sh.registry().all() {
            let res = info.storage_key();
            if !seen.insert(res.clone()) {
                continue;
            }
            for obj in sh.store.all(&res, None) {
                if let Ok(value) = obj.value() {
                    let node = Node {
                        res: res.clone(),
                        namespace: obj.namespace.clone(),
                        name: obj.name.clone(),
                    };
                    objects.push((node, value));
                }
            }
        }
        objects
    });
}

/// The server as the garbage collector sees it.
impl gc::Cluster for Shared {
    fn collector(&self) -> &gc::Collector {
        &self.gc
    }

    fn object(&self, node: &Node) -> Option<(Arc<ResourceInfo>, Value)> {
        let obj = self
            .store
            .get(&node.res, &(node.namespace.clone(), node.name.clone()))?;
        let value = obj.value().ok()?;
        let api_version = value.get("apiVersion").and_then(Value::as_str)?;
        let kind = value.get("kind").and_then(Value::as_str)?;
        let info = self
            .resolve_kind(api_version, kind)
            .ok()
            .filter(|info| info.storage_key() == node.res)?;
        Some((info, value))
    }

    fn resource(&self, api_version: &str, kind: &str) -> Option<Arc<ResourceInfo>> {
        self.resolve_kind(api_version, kind).ok()
    }

    fn delete(
        &self,
        info: &Arc<ResourceInfo>,
        node: &Node,
        options: &DeleteOptions,
    ) -> Result<(), ApiError> {
        delete(self, info, node.ns(), &node.name, options).map(|_| ())
    }

    fn edit_metadata(
        &self,
        info: &Arc<ResourceInfo>,
        node: &Node,
        uid: &str,
        edit: &mut dyn FnMut(&mut Map<String, Value>),
    ) -> Result<(), ApiError> {
        edit_metadata(self, info, node.ns(), &node.name, uid, edit).map(|_| ())
    }
}

/// Edits the metadata of the object with `uid` (the garbage collector's writes): an object
/// being deleted whose last finalizer goes is deleted.
pub(crate) fn edit_metadata(
    sh: &Shared,
    info: &Arc<ResourceInfo>,
    ns: Option<&str>,
    name: &str,
    uid: &str,
    edit: &mut dyn FnMut(&mut Map<String, Value>),
) -> Result<Arc<Stored>, ApiError> {
    let res = info.storage_key();
    let mutation = sh.store.mutate(
        &res,
        &key(info, ns, name),
        field_paths(&info.group, &info.kind),
        |cur, _| {
            let cur = cur.ok_or_else(|| ApiError::not_found(info, name))?;
            let old = cur.value()?;
            if meta_str(&old, "uid") != Some(uid) {
                return Err(ApiError::conflict(info, name, "the object was replaced"));
            }
            let mut v = old.clone();
            let m = meta_mut(&mut v)?;
            edit(m);
            if m.get("finalizers")
                .and_then(Value::as_array)
                .is_some_and(Vec::is_empty)
            {
                m.remove("finalizers");
            }
            let delete = m.contains_key("deletionTimestamp") && !m.contains_key("finalizers");
            Ok(if delete {
                Change::Delete(v)
            } else if v == old {
                Change::Noop
            } else {
                Change::Put(v)
            })
        },
    )?;
    after_write(sh, info, &mutation.obj, mutation.event)?;
    Ok(mutation.obj)
}

/// Deletes every matching object of a collection, each with `options`.
pub(crate) fn delete_collection(
    sh: &Shared,
    info: &Arc<ResourceInfo>,
    ns: Option<&str>,
    sel: &Selectors,
    options: &DeleteOptions,
) -> Result<Vec<Arc<Stored>>, ApiError> {
    let mut out = Vec::new();
    for obj in sh
        .store
        .all(&info.storage_key(), ns.filter(|_| info.namespaced))
    {
        if !sel.matches(&obj) {
            continue;
        }
        let ns = (!obj.namespace.is_empty()).then_some(obj.namespace.as_str());
        match delete(sh, info, ns, &obj.name, options) {
            Ok((o, _)) => out.push(o),
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// What the service IP and node-port allocators would do: a cluster IP (from 10.96.0.0/16, by
/// the next resourceVersion, so unique among creates) unless the Service is headless or an
/// ExternalName, and a node port (30000-32767) for NodePort and LoadBalancer ports without one.
fn allocate_service_addresses(body: &mut Value, rv: u64) {
    let next = rv + 1;
    let ty = body
        .pointer("/spec/type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP")
        .to_owned();
    if ty == "ExternalName" {
        return;
    }
    if !body.get("spec").is_some_and(Value::is_object) {
        body["spec"] = json!({});
    }
    let unset = body
        .pointer("/spec/clusterIP")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty);
    if unset {
        let ip = format!("10.96.{}.{}", (next >> 8) & 0xff, (next & 0xff).max(1));
        body["spec"]["clusterIP"] = json!(ip);
        body["spec"]["clusterIPs"] = json!([ip]);
    }
    if (ty == "NodePort" || ty == "LoadBalancer")
        && let Some(ports) = body
            .pointer_mut("/spec/ports")
            .and_then(Value::as_array_mut)
    {
        for (i, p) in ports.iter_mut().enumerate() {
            if p.get("nodePort").and_then(Value::as_i64).unwrap_or(0) == 0 {
                p["nodePort"] = json!(30000 + (next * 7 + i as u64) % 2768);
            }
        }
    }
}

/// The `openAPIV3Schema` of the CRD version that serves `info`, for a custom resource.
fn custom_schema(sh: &Shared, info: &ResourceInfo) -> Option<Value> {
    if !info.custom {
        return None;
    }
    let crds: Arc<str> = Arc::from("apiextensions.k8s.io/customresourcedefinitions");
    let crd_key = (String::new(), format!("{}.{}", info.plural, info.group));
    let crd = sh.store.get(&crds, &crd_key)?.value().ok()?;
    crd.pointer("/spec/versions")?
        .as_array()?
        .iter()
        .find(|v| v.get("name").and_then(Value::as_str) == Some(info.version.as_str()))?
        .pointer("/schema/openAPIV3Schema")
        .cloned()
}

fn is_crd(info: &ResourceInfo) -> bool {
    !info.custom && info.group == "apiextensions.k8s.io" && info.kind == "CustomResourceDefinition"
}

/// Side effects of a committed write: CRD (un)registration, namespace cleanup and garbage
/// collection.
fn after_write(
    sh: &Shared,
    info: &Arc<ResourceInfo>,
    obj: &Arc<Stored>,
    event: Option<EventType>,
) -> Result<(), ApiError> {
    let Some(event) = event else { return Ok(()) };
    if is_crd(info) {
        let v = obj.value()?;
        let (group, plural) = crd::group_plural(&v);
        let served = {
            let mut reg = sh.registry_mut();
            let served = reg
                .all()
                .into_iter()
                .filter(|r| r.custom && r.group == group && r.plural == plural)
                .collect::<Vec<_>>();
            reg.remove_custom(&group, &plural);
            sh.resources_removed.send_modify(|n| *n = n.wrapping_add(1));
            if event != EventType::Deleted {
                for r in crd::resources(&v) {
                    reg.insert(r);
                }
            }
            served
        };
        if event == EventType::Deleted {
            // Like the CRD cleanup finalizer: the custom objects go away with their definition.
            if let Some(r) = served.first() {
                for o in sh.store.all(&r.storage_key(), None) {
                    let ns = (!o.namespace.is_empty()).then_some(o.namespace.as_str());
                    let _ =
                        sh.store
                            .mutate(
                                &r.storage_key(),
                                &key(r, ns, &o.name),
                                &[],
                                |cur, _| match cur {
                                    Some(c) => Ok(Change::Delete(c.value()?)),
                                    None => Ok(Change::Noop),
                                },
                            );
                }
            }
        }
    }
    if event == EventType::Deleted && info.group.is_empty() && info.kind == "Namespace" {
        // The namespace controller's job, done at once: delete what the namespace held.
        let ns = obj.name.clone();
        let all = sh.registry().all();
        let mut seen = std::collections::HashSet::new();
        for r in all.into_iter().filter(|r| r.namespaced) {
            if !seen.insert(r.storage_key()) {
                continue;
            }
            for o in sh.store.all(&r.storage_key(), Some(&ns)) {
                let _ = delete(sh, &r, Some(&ns), &o.name, &DeleteOptions::default());
            }
        }
    }
    if sh.gc.on() {
        let node = Node {
            res: info.storage_key(),
            namespace: obj.namespace.clone(),
            name: obj.name.clone(),
        };
        if let Ok(value) = obj.value() {
            gc::after_write(sh, node, &value, event);
        }
    }
    Ok(())
}
