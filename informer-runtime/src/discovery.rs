//! Resolving a `GroupVersionResource` through the server's discovery, for dynamic informers (F9).

use kube::api::GroupVersionResource;
use kube::core::GroupVersion;
use kube::discovery::{ApiResource, Scope};

/// Looks `gvr` up in the server's discovery for its group/version. Returns the resource and
/// whether it is namespaced, `Ok(None)` when the server does not serve it, and the client's error
/// for anything else (retryable).
pub async fn discover(
    client: &kube::Client,
    gvr: &GroupVersionResource,
) -> Result<Option<(ApiResource, bool)>, kube::Error> {
    let gv = GroupVersion::gv(&gvr.group, &gvr.version);
    let group = match kube::discovery::pinned_group(client, &gv).await {
        Ok(group) => group,
        Err(kube::Error::Api(status)) if status.is_not_found() => return Ok(None),
        Err(err) => return Err(err),
    };
    Ok(group
        .versioned_resources(&gvr.version)
        .into_iter()
        .find(|(resource, _)| resource.plural == gvr.resource)
        .map(|(resource, caps)| (resource, caps.scope == Scope::Namespaced)))
}
