//! Owner references for objects a controller creates, from any cached form of the owner (C4).

use informer_runtime::Object;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

/// The owner reference with `controller: true` that an object created for `owner` carries, so
/// that [`Controller::owns`](crate::Controller::owns) maps the object's events back to `owner`
/// (C4) and the garbage collector deletes it with `owner`: kube's
/// `Resource::controller_owner_ref`, for any cached form of the owner (the kind itself, its
/// compact form, a projection). Its `apiVersion` and `kind` are those of `K`'s source kind.
/// `None` when `owner` has no name or no UID.
///
/// ```
/// use informer_controller::controller_owner_ref;
/// use informer_k8s::compact::api::apps::v1 as compact;
/// use k8s_openapi::api::apps::v1::Deployment;
///
/// let mut web = Deployment::default();
/// web.metadata.name = Some("web".into());
/// web.metadata.uid = Some("6a1b".into());
/// let cached = compact::Deployment::from(&web);
/// let owner = controller_owner_ref(&cached).expect("a name and a UID");
/// assert_eq!((owner.api_version.as_str(), owner.kind.as_str()), ("apps/v1", "Deployment"));
/// assert_eq!(owner.controller, Some(true));
/// assert_eq!(Some(owner), kube::Resource::controller_owner_ref(&web, &()));
/// ```
pub fn controller_owner_ref<K: Object>(owner: &K) -> Option<OwnerReference> {
    use kube::Resource;
    Some(OwnerReference {
        api_version: K::Source::api_version(&()).into_owned(),
        kind: K::Source::kind(&()).into_owned(),
        name: owner.object_name()?.to_owned(),
        uid: owner.object_uid()?.to_owned(),
        controller: Some(true),
        block_owner_deletion: None,
    })
}
