//! The finalizer helper (C9): add our finalizer before acting on a live object, run cleanup on
//! deletion, then remove only our finalizer, never overwriting a concurrent writer.
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use informer_controller::{Action, Context, Request};
//! # use informer_controller::finalizer::{self, Event};
//! # use k8s_openapi::api::core::v1::ConfigMap;
//! # #[derive(Debug, thiserror::Error)] #[error("x")] struct MyError;
//! async fn reconcile(req: Request<ConfigMap>, ctx: Arc<Context<()>>) -> Result<Action, finalizer::Error<MyError>> {
//!     let Some(obj) = req.object.clone() else { return Ok(Action::Done) };
//!     let api = kube::Api::<ConfigMap>::namespaced(ctx.client().clone(), req.namespace().unwrap_or("default"));
//!     let recorder = ctx.recorder(&req.key);
//!     finalizer::finalizer(&api, "example.com/cleanup", obj, &recorder, |event| async move {
//!         match event {
//!             Event::Apply(cm) => { let _ = cm; Ok(Action::Done) }
//!             Event::Cleanup(cm) => { let _ = cm; Ok(Action::Done) }
//!         }
//!     })
//!     .await
//! }
//! ```

use std::future::Future;
use std::sync::Arc;

use informer_runtime::Object;
use kube::api::{Api, Patch, PatchParams};
use serde::de::DeserializeOwned;

use crate::{Action, WriteRecorder};

/// What the reconcile should do with the object.
#[derive(Debug)]
pub enum Event<K> {
    /// The object is live and carries our finalizer: make the world match it.
    Apply(Arc<K>),
    /// The object is being deleted and still carries our finalizer: clean up. Once this
    /// returns `Ok`, the finalizer is removed and the API server may delete the object.
    Cleanup(Arc<K>),
}

/// Why the finalizer helper failed.
#[derive(Debug, thiserror::Error)]
pub enum Error<E: std::error::Error + 'static> {
    /// The apply step failed; the finalizer stays. Retryable.
    #[error("apply failed: {0}")]
    ApplyFailed(#[source] E),
    /// The cleanup step failed; the finalizer stays, so the object is not deleted. Retryable.
    #[error("cleanup failed: {0}")]
    CleanupFailed(#[source] E),
    /// Adding the finalizer failed (a 409 Conflict means someone else wrote the object since
    /// the cache saw it: retry after the cache catches up). Retryable.
    #[error("adding finalizer: {0}")]
    AddFinalizer(#[source] kube::Error),
    /// Removing the finalizer failed (409: the object changed; retry). Retryable.
    #[error("removing finalizer: {0}")]
    RemoveFinalizer(#[source] kube::Error),
    /// The object has no name, so it cannot be patched. Not retryable.
    #[error("object has no name")]
    UnnamedObject,
}

/// Runs `reconcile` with finalizer `name` managed on `obj` (C9, kube-runtime's `finalizer`
/// shape):
///
/// - live and without our finalizer: add it (a merge patch carrying the cached
///   resourceVersion, so a concurrent writer makes it fail with 409 rather than be
///   overwritten) and return [`Action::Done`]; the write triggers the next reconcile, which
///   sees the finalizer and applies;
/// - live with our finalizer: `reconcile(Event::Apply(obj))`;
/// - being deleted with our finalizer: `reconcile(Event::Cleanup(obj))`, then remove only our
///   finalizer (again with the resourceVersion as precondition);
/// - being deleted without our finalizer: nothing to do.
///
/// `obj` is the cached object in any form, the kind itself, its compact form or a projection
/// (the finalizers and the deletion timestamp are read through the runtime's `Meta`); `api` is
/// the `kube::Api` of its kind (for a compact `Deployment`, `Api<k8s_openapi::...::Deployment>`).
///
/// Each finalizer patch is recorded with `recorder` (K2: the next reconcile of the key waits
/// until the cache holds it; pass [`WriteRecorder::detached`] outside a controller). Removing
/// the finalizer from an object that is already gone (404: a second cleanup of a deletion that
/// has completed) is success, not an error (C9).
pub async fn finalizer<K, F, Fut, E>(
    api: &Api<K::Source>,
    name: &str,
    obj: Arc<K>,
    recorder: &WriteRecorder,
    reconcile: F,
) -> Result<Action, Error<E>>
where
    K: Object,
    F: FnOnce(Event<K>) -> Fut,
    Fut: Future<Output = Result<Action, E>>,
    E: std::error::Error + 'static,
{
    let obj_name = obj
        .object_name()
        .map(str::to_owned)
        .ok_or(Error::UnnamedObject)?;
    let finalizers: Vec<String> = obj.object_finalizers().map(str::to_owned).collect();
    let ours = finalizers.iter().any(|f| f == name);
    let deleting = obj.object_deletion_timestamp().is_some();
    let rv = obj.object_resource_version().map(str::to_owned);
    match (deleting, ours) {
        (false, true) => reconcile(Event::Apply(obj))
            .await
            .map_err(Error::ApplyFailed),
        (false, false) => {
            let mut updated = finalizers;
            updated.push(name.to_owned());
            let patched = patch_finalizers(api, &obj_name, rv.as_deref(), updated)
                .await
                .map_err(Error::AddFinalizer)?;
            recorder.record(&patched);
            Ok(Action::Done)
        }
        (true, true) => {
            let action = reconcile(Event::Cleanup(Arc::clone(&obj)))
                .await
                .map_err(Error::CleanupFailed)?;
            let remaining: Vec<String> = finalizers.into_iter().filter(|f| f != name).collect();
            match patch_finalizers(api, &obj_name, rv.as_deref(), remaining).await {
                Ok(patched) => recorder.record(&patched),
                // Already gone: the deletion this cleanup was for has completed.
                Err(kube::Error::Api(status)) if status.code == 404 => {
                    tracing::debug!(object = %obj_name, finalizer = name, "object already gone; nothing to remove");
                }
                Err(err) => return Err(Error::RemoveFinalizer(err)),
            }
            Ok(action)
        }
        (true, false) => Ok(Action::Done),
    }
}

/// Sets `metadata.finalizers` with `resourceVersion` as a precondition (409 when stale) and
/// returns the patched object.
async fn patch_finalizers<K>(
    api: &Api<K>,
    name: &str,
    resource_version: Option<&str>,
    finalizers: Vec<String>,
) -> Result<K, kube::Error>
where
    K: kube::Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    let finalizers = if finalizers.is_empty() {
        serde_json::Value::Null
    } else {
        serde_json::json!(finalizers)
    };
    let patch = serde_json::json!({
        "metadata": {
            "resourceVersion": resource_version,
            "finalizers": finalizers,
        }
    });
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
}
