//! [`SlimMeta`]: the metadata a controller reads, decoded without the rest of `ObjectMeta`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use serde::{Deserialize, Deserializer, Serialize};

use super::{IStr, StrMap};

/// The slim metadata of a projection ([P4]): name, namespace, uid, resourceVersion, generation,
/// labels, annotations, owner references, deletion timestamp and finalizers.
///
/// Everything else in `ObjectMeta` (managedFields above all: 2-4 KiB per Pod, [M8]) is skipped by
/// the decoder, never materialised. Repeating strings are interned ([`IStr`], [`StrMap`]); the
/// name, UID and resourceVersion, unique per object, are exact boxed strings.
///
/// ```
/// use informer_runtime::projection::SlimMeta;
/// let meta: SlimMeta = serde_json::from_str(r#"{
///     "name": "web-1", "namespace": "prod", "uid": "u1", "resourceVersion": "42",
///     "labels": {"app": "web"}, "managedFields": [{"manager": "kubectl"}]
/// }"#).unwrap();
/// assert_eq!(meta.labels.get("app"), Some("web"));
/// assert_eq!(meta.resource_version.as_deref(), Some("42"));
/// ```
///
/// [P4]: https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md#12-compact-types-and-projections-ours
/// [M8]: https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md#11-known-failure-modes-to-design-against
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SlimMeta {
    /// `metadata.name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<Box<str>>,
    /// `metadata.namespace`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<IStr>,
    /// `metadata.uid`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<Box<str>>,
    /// `metadata.resourceVersion`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<Box<str>>,
    /// `metadata.generation`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    /// `metadata.labels` (empty when absent).
    #[serde(default, skip_serializing_if = "StrMap::is_empty")]
    pub labels: StrMap,
    /// `metadata.annotations` (empty when absent).
    #[serde(default, skip_serializing_if = "StrMap::is_empty")]
    pub annotations: StrMap,
    /// `metadata.ownerReferences` (empty when absent).
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "<[_]>::is_empty"
    )]
    pub owner_references: Box<[SlimOwnerReference]>,
    /// `metadata.deletionTimestamp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<Time>,
    /// `metadata.finalizers` (empty when absent).
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "<[_]>::is_empty"
    )]
    pub finalizers: Box<[IStr]>,
}

/// An owner reference of [`SlimMeta`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SlimOwnerReference {
    /// `apiVersion` of the owner, e.g. `apps/v1`.
    #[serde(default)]
    pub api_version: IStr,
    /// `kind` of the owner.
    #[serde(default)]
    pub kind: IStr,
    /// `name` of the owner.
    #[serde(default)]
    pub name: IStr,
    /// `uid` of the owner.
    #[serde(default)]
    pub uid: Box<str>,
    /// Whether the owner is the managing controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<bool>,
    /// `blockOwnerDeletion`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_owner_deletion: Option<bool>,
}

impl SlimMeta {
    /// The owner reference with `controller: true`, if any (controller-runtime's `Owns`).
    pub fn controller_owner(&self) -> Option<&SlimOwnerReference> {
        self.owner_references
            .iter()
            .find(|o| o.controller == Some(true))
    }
}

impl From<&ObjectMeta> for SlimMeta {
    /// The slim view of a full `ObjectMeta` (for tests and for writes read back into a cache).
    fn from(meta: &ObjectMeta) -> Self {
        SlimMeta {
            name: meta.name.as_deref().map(Box::from),
            namespace: meta.namespace.as_deref().map(IStr::new),
            uid: meta.uid.as_deref().map(Box::from),
            resource_version: meta.resource_version.as_deref().map(Box::from),
            generation: meta.generation,
            labels: meta.labels.as_ref().map(StrMap::from).unwrap_or_default(),
            annotations: meta
                .annotations
                .as_ref()
                .map(StrMap::from)
                .unwrap_or_default(),
            owner_references: meta
                .owner_references
                .iter()
                .flatten()
                .map(SlimOwnerReference::from)
                .collect(),
            deletion_timestamp: meta.deletion_timestamp.clone(),
            finalizers: meta
                .finalizers
                .iter()
                .flatten()
                .map(|f| IStr::new(f))
                .collect(),
        }
    }
}

impl From<&OwnerReference> for SlimOwnerReference {
    fn from(o: &OwnerReference) -> Self {
        SlimOwnerReference {
            api_version: IStr::new(&o.api_version),
            kind: IStr::new(&o.kind),
            name: IStr::new(&o.name),
            uid: Box::from(o.uid.as_str()),
            controller: o.controller,
            block_owner_deletion: o.block_owner_deletion,
        }
    }
}

/// Decodes `null` as the type's default, like an absent field.
fn nullable<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p4_slim_meta_matches_the_full_meta_it_was_decoded_beside() {
        let json = serde_json::json!({
            "name": "web-1", "namespace": "prod", "uid": "u-1", "resourceVersion": "7",
            "generation": 3, "generateName": "web-", "creationTimestamp": "2026-11-20T08:14:03Z",
            "labels": {"app": "web", "tier": "backend"},
            "annotations": {"note": "x"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-rs",
                                 "uid": "o-1", "controller": true, "blockOwnerDeletion": true}],
            "finalizers": ["example.com/cleanup"],
            "deletionTimestamp": "2026-11-21T00:00:00Z",
            "managedFields": [{"manager": "kubelet", "operation": "Update", "fieldsV1": {"f:status": {}}}]
        });
        let slim: SlimMeta = serde_json::from_value(json.clone()).unwrap();
        let full: ObjectMeta = serde_json::from_value(json).unwrap();
        assert_eq!(slim, SlimMeta::from(&full));
        assert_eq!(
            slim.controller_owner().map(|o| o.name.as_str()),
            Some("web-rs")
        );
    }

    #[test]
    fn null_collections_decode_as_empty() {
        let slim: SlimMeta = serde_json::from_str(
            r#"{"name": "a", "labels": null, "ownerReferences": null, "finalizers": null}"#,
        )
        .unwrap();
        assert!(slim.labels.is_empty() && slim.owner_references.is_empty());
        assert!(slim.finalizers.is_empty());
    }
}
