//! [`SlimMeta`]: the metadata a controller reads, decoded without the rest of `ObjectMeta`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use serde::{Deserialize, Deserializer, Serialize};

use super::{IStr, StrMap};

/// The slim metadata of a projection (P4): name, namespace, uid, resourceVersion, generation,
/// labels, annotations, owner references, deletion timestamp and finalizers.
///
/// Everything else in `ObjectMeta` (managedFields above all: 2-4 KiB per Pod, M8) is skipped by
/// the decoder, never materialised. Repeating strings are interned ([`IStr`], [`StrMap`]); the
/// name, UID and resourceVersion, unique per object, are exact boxed strings. The deletion
/// timestamp and the finalizers, which most objects lack, share one box ([`Lifecycle`]); read
/// them through [`ProjectedMeta`](super::ProjectedMeta).
///
/// ```
/// use informer_runtime::projection::SlimMeta;
/// let meta: SlimMeta = serde_json::from_str(r#"{
///     "name": "web-1", "namespace": "prod", "uid": "u1", "resourceVersion": "42",
///     "labels": {"app": "web"}, "managedFields": [{"manager": "kubectl"}]
/// }"#).unwrap();
/// assert_eq!(meta.labels.get("app"), Some("web"));
/// assert_eq!(meta.resource_version.as_deref(), Some("42"));
/// assert!(meta.lifecycle.is_none(), "no deletionTimestamp, no finalizers: nothing boxed");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "SlimMetaWire", into = "SlimMetaWire")]
pub struct SlimMeta {
    /// `metadata.name`.
    pub name: Option<Box<str>>,
    /// `metadata.namespace`.
    pub namespace: Option<IStr>,
    /// `metadata.uid`.
    pub uid: Option<Box<str>>,
    /// `metadata.resourceVersion`.
    pub resource_version: Option<Box<str>>,
    /// `metadata.generation`.
    pub generation: Option<i64>,
    /// `metadata.labels` (empty when absent).
    pub labels: StrMap,
    /// `metadata.annotations` (empty when absent).
    pub annotations: StrMap,
    /// `metadata.ownerReferences` (empty when absent).
    pub owner_references: Box<[SlimOwnerReference]>,
    /// `metadata.deletionTimestamp` and `metadata.finalizers` (C9); `None` when the object has
    /// neither, as most objects: one pointer where the two took 32 bytes inline.
    pub lifecycle: Option<Box<Lifecycle>>,
}

/// The deletion state of a [`SlimMeta`] (C9): what a finalizer reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lifecycle {
    /// `metadata.deletionTimestamp`.
    pub deletion_timestamp: Option<Time>,
    /// `metadata.finalizers`.
    pub finalizers: Box<[IStr]>,
}

impl Lifecycle {
    /// The box a [`SlimMeta`] keeps: `None` when there is no deletion timestamp and no finalizer.
    pub fn boxed(deletion_timestamp: Option<Time>, finalizers: Box<[IStr]>) -> Option<Box<Self>> {
        (deletion_timestamp.is_some() || !finalizers.is_empty()).then(|| {
            Box::new(Lifecycle {
                deletion_timestamp,
                finalizers,
            })
        })
    }
}

/// [`SlimMeta`] as the wire has it: what serde decodes and encodes, flat.
#[derive(Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SlimMetaWire {
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

impl From<SlimMetaWire> for SlimMeta {
    fn from(w: SlimMetaWire) -> Self {
        SlimMeta {
            name: w.name,
            namespace: w.namespace,
            uid: w.uid,
            resource_version: w.resource_version,
            generation: w.generation,
            labels: w.labels,
            annotations: w.annotations,
            owner_references: w.owner_references,
            lifecycle: Lifecycle::boxed(w.deletion_timestamp, w.finalizers),
        }
    }
}

impl From<SlimMeta> for SlimMetaWire {
    fn from(m: SlimMeta) -> Self {
        let (deletion_timestamp, finalizers) = match m.lifecycle {
            Some(l) => (l.deletion_timestamp, l.finalizers),
            None => (None, Box::default()),
        };
        SlimMetaWire {
            name: m.name,
            namespace: m.namespace,
            uid: m.uid,
            resource_version: m.resource_version,
            generation: m.generation,
            labels: m.labels,
            annotations: m.annotations,
            owner_references: m.owner_references,
            deletion_timestamp,
            finalizers,
        }
    }
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
            lifecycle: Lifecycle::boxed(
                meta.deletion_timestamp.clone(),
                meta.finalizers
                    .iter()
                    .flatten()
                    .map(|f| IStr::new(f))
                    .collect(),
            ),
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
        assert!(slim.lifecycle.is_none());
    }

    #[test]
    fn c9_deletion_state_is_boxed_only_when_present_and_encodes_flat() {
        let slim: SlimMeta = serde_json::from_str(
            r#"{"name": "a", "finalizers": ["example.com/x"], "deletionTimestamp": "2026-11-21T00:00:00Z"}"#,
        )
        .unwrap();
        let lifecycle = slim.lifecycle.as_deref().expect("boxed");
        assert_eq!(lifecycle.finalizers.len(), 1);
        assert!(lifecycle.deletion_timestamp.is_some());
        let json = serde_json::to_value(&slim).unwrap();
        assert_eq!(json["finalizers"][0], "example.com/x");
        assert_eq!(json["deletionTimestamp"], "2026-11-21T00:00:00Z");
        assert_eq!(serde_json::from_value::<SlimMeta>(json).unwrap(), slim);
        // The box costs one pointer inline, where the two fields took 32 bytes.
        assert_eq!(
            std::mem::size_of::<Option<Box<Lifecycle>>>(),
            std::mem::size_of::<usize>()
        );
        let plain: SlimMeta = serde_json::from_str(r#"{"name": "b", "finalizers": []}"#).unwrap();
        assert!(plain.lifecycle.is_none());
    }
}
