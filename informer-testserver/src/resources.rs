//! The resource registry: the static table of built-in resources plus the CRDs created at run time.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

/// Verbs of a fully served resource, as discovery reports them.
pub(crate) const ALL_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];
/// Verbs of a read-only resource (componentstatuses).
const READ_ONLY: &[&str] = &["get", "list"];

/// One served resource (a group/version/plural), built in or from a CRD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceInfo {
    /// API group, `""` for the core group.
    pub group: String,
    /// API version, e.g. `v1`.
    pub version: String,
    /// Kind, e.g. `Pod`.
    pub kind: String,
    /// Plural resource name used in URLs, e.g. `pods`.
    pub plural: String,
    /// Lower-case singular name.
    pub singular: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Whether the `status` subresource is served.
    pub status_subresource: bool,
    /// Short names kubectl accepts (`po`, `svc`).
    pub short_names: Vec<String>,
    /// Categories (`all`).
    pub categories: Vec<String>,
    /// Discovery verbs.
    pub verbs: Vec<String>,
    /// True for resources defined by a CustomResourceDefinition.
    pub custom: bool,
}

impl ResourceInfo {
    /// `apiVersion` of objects of this resource (`v1`, `apps/v1`).
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The kind of the list type (`PodList`).
    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    /// The storage key: objects of every version of one group/plural share one collection.
    pub(crate) fn storage_key(&self) -> Arc<str> {
        Arc::from(format!("{}/{}", self.group, self.plural))
    }

    /// `plural` or `plural.group`, as used in Status messages (`pods`, `deployments.apps`).
    pub fn group_resource(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// Whether the `scale` subresource (`autoscaling/v1 Scale`) is served.
    pub(crate) fn scale_subresource(&self) -> bool {
        !self.custom
            && matches!(
                (self.group.as_str(), self.kind.as_str()),
                ("apps", "Deployment" | "ReplicaSet" | "StatefulSet")
                    | ("", "ReplicationController")
            )
    }

    /// Whether discovery advertises `verb` for this resource.
    pub(crate) fn allows(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == verb)
    }

    /// The legacy discovery entry (`APIResource`) for this resource and its subresources.
    pub(crate) fn discovery_entries(&self) -> Vec<Value> {
        let mut out = vec![json!({
            "name": self.plural,
            "singularName": self.singular,
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": self.verbs,
            "shortNames": self.short_names,
            "categories": self.categories,
        })];
        if self.scale_subresource() {
            out.push(json!({
                "name": format!("{}/scale", self.plural),
                "singularName": "",
                "namespaced": self.namespaced,
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
                "verbs": ["get", "patch", "update"],
            }));
        }
        if self.status_subresource {
            out.push(json!({
                "name": format!("{}/status", self.plural),
                "singularName": "",
                "namespaced": self.namespaced,
                "kind": self.kind,
                "verbs": ["get", "patch", "update"],
            }));
        }
        out
    }
}

/// A row of the static table.
#[derive(Debug)]
struct Builtin {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    status: bool,
    short: &'static [&'static str],
    categories: &'static [&'static str],
    verbs: &'static [&'static str],
}

#[allow(clippy::too_many_arguments)] // a table row constructor; named fields would triple the table
const fn b(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    status: bool,
    short: &'static [&'static str],
    categories: &'static [&'static str],
    verbs: &'static [&'static str],
) -> Builtin {
    Builtin {
        group,
        version,
        kind,
        plural,
        namespaced,
        status,
        short,
        categories,
        verbs,
    }
}

/// Every listable resource of k8s-openapi 0.29 / Kubernetes 1.37 (generated from its `ListableResource`
/// impls; `tests/resource_table.rs` cross-checks it against the crate).
#[rustfmt::skip]
static BUILTINS: &[Builtin] = &[
    b("", "v1", "ComponentStatus", "componentstatuses", false, false, &["cs"], &[], READ_ONLY),
    b("", "v1", "ConfigMap", "configmaps", true, false, &["cm"], &[], ALL_VERBS),
    b("", "v1", "Endpoints", "endpoints", true, false, &["ep"], &[], ALL_VERBS),
    b("", "v1", "Event", "events", true, false, &["ev"], &[], ALL_VERBS),
    b("", "v1", "LimitRange", "limitranges", true, false, &["limits"], &[], ALL_VERBS),
    b("", "v1", "Namespace", "namespaces", false, true, &["ns"], &[], ALL_VERBS),
    b("", "v1", "Node", "nodes", false, true, &["no"], &[], ALL_VERBS),
    b("", "v1", "PersistentVolume", "persistentvolumes", false, true, &["pv"], &[], ALL_VERBS),
    b("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", true, true, &["pvc"], &[], ALL_VERBS),
    b("", "v1", "Pod", "pods", true, true, &["po"], &["all"], ALL_VERBS),
    b("", "v1", "PodTemplate", "podtemplates", true, false, &[], &[], ALL_VERBS),
    b("", "v1", "ReplicationController", "replicationcontrollers", true, true, &["rc"], &["all"], ALL_VERBS),
    b("", "v1", "ResourceQuota", "resourcequotas", true, true, &["quota"], &[], ALL_VERBS),
    b("", "v1", "Secret", "secrets", true, false, &[], &[], ALL_VERBS),
    b("", "v1", "Service", "services", true, true, &["svc"], &["all"], ALL_VERBS),
    b("", "v1", "ServiceAccount", "serviceaccounts", true, false, &["sa"], &[], ALL_VERBS),
    b("admissionregistration.k8s.io", "v1", "MutatingAdmissionPolicy", "mutatingadmissionpolicies", false, false, &[], &[], ALL_VERBS),
    b("admissionregistration.k8s.io", "v1", "MutatingAdmissionPolicyBinding", "mutatingadmissionpolicybindings", false, false, &[], &[], ALL_VERBS),
    b("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations", false, false, &[], &[], ALL_VERBS),
    b("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy", "validatingadmissionpolicies", false, true, &[], &[], ALL_VERBS),
    b("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings", false, false, &[], &[], ALL_VERBS),
    b("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration", "validatingwebhookconfigurations", false, false, &[], &[], ALL_VERBS),
    b("admissionregistration.k8s.io", "v1alpha1", "MutatingAdmissionPolicy", "mutatingadmissionpolicies", false, false, &[], &[], ALL_VERBS),
    b("admissionregistration.k8s.io", "v1alpha1", "MutatingAdmissionPolicyBinding", "mutatingadmissionpolicybindings", false, false, &[], &[], ALL_VERBS),
    b("admissionregistration.k8s.io", "v1beta1", "MutatingAdmissionPolicy", "mutatingadmissionpolicies", false, false, &[], &[], ALL_VERBS),
    b("admissionregistration.k8s.io", "v1beta1", "MutatingAdmissionPolicyBinding", "mutatingadmissionpolicybindings", false, false, &[], &[], ALL_VERBS),
    b("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", false, true, &["crd", "crds"], &[], ALL_VERBS),
    b("apiregistration.k8s.io", "v1", "APIService", "apiservices", false, true, &[], &[], ALL_VERBS),
    b("apps", "v1", "ControllerRevision", "controllerrevisions", true, false, &[], &[], ALL_VERBS),
    b("apps", "v1", "DaemonSet", "daemonsets", true, true, &["ds"], &["all"], ALL_VERBS),
    b("apps", "v1", "Deployment", "deployments", true, true, &["deploy"], &["all"], ALL_VERBS),
    b("apps", "v1", "ReplicaSet", "replicasets", true, true, &["rs"], &["all"], ALL_VERBS),
    b("apps", "v1", "StatefulSet", "statefulsets", true, true, &["sts"], &["all"], ALL_VERBS),
    b("autoscaling", "v1", "HorizontalPodAutoscaler", "horizontalpodautoscalers", true, true, &["hpa"], &["all"], ALL_VERBS),
    b("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", true, true, &["hpa"], &["all"], ALL_VERBS),
    b("batch", "v1", "CronJob", "cronjobs", true, true, &["cj"], &["all"], ALL_VERBS),
    b("batch", "v1", "Job", "jobs", true, true, &[], &["all"], ALL_VERBS),
    b("certificates.k8s.io", "v1", "CertificateSigningRequest", "certificatesigningrequests", false, true, &["csr"], &[], ALL_VERBS),
    b("certificates.k8s.io", "v1", "ClusterTrustBundle", "clustertrustbundles", false, false, &[], &[], ALL_VERBS),
    b("certificates.k8s.io", "v1", "PodCertificateRequest", "podcertificaterequests", true, true, &[], &[], ALL_VERBS),
    b("certificates.k8s.io", "v1beta1", "ClusterTrustBundle", "clustertrustbundles", false, false, &[], &[], ALL_VERBS),
    b("certificates.k8s.io", "v1beta1", "PodCertificateRequest", "podcertificaterequests", true, true, &[], &[], ALL_VERBS),
    b("coordination.k8s.io", "v1", "Lease", "leases", true, false, &[], &[], ALL_VERBS),
    b("coordination.k8s.io", "v1alpha2", "LeaseCandidate", "leasecandidates", true, false, &[], &[], ALL_VERBS),
    b("coordination.k8s.io", "v1beta1", "LeaseCandidate", "leasecandidates", true, false, &[], &[], ALL_VERBS),
    b("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", true, false, &[], &[], ALL_VERBS),
    b("events.k8s.io", "v1", "Event", "events", true, false, &["ev"], &[], ALL_VERBS),
    b("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema", "flowschemas", false, true, &[], &[], ALL_VERBS),
    b("flowcontrol.apiserver.k8s.io", "v1", "PriorityLevelConfiguration", "prioritylevelconfigurations", false, true, &[], &[], ALL_VERBS),
    b("internal.apiserver.k8s.io", "v1alpha1", "StorageVersion", "storageversions", false, true, &[], &[], ALL_VERBS),
    b("lifecycle.k8s.io", "v1alpha1", "Eviction", "evictions", true, true, &[], &[], ALL_VERBS),
    b("lifecycle.k8s.io", "v1alpha1", "EvictionRequest", "evictionrequests", true, true, &[], &[], ALL_VERBS),
    b("networking.k8s.io", "v1", "IPAddress", "ipaddresses", false, false, &[], &[], ALL_VERBS),
    b("networking.k8s.io", "v1", "Ingress", "ingresses", true, true, &["ing"], &[], ALL_VERBS),
    b("networking.k8s.io", "v1", "IngressClass", "ingressclasses", false, false, &[], &[], ALL_VERBS),
    b("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", true, false, &["netpol"], &[], ALL_VERBS),
    b("networking.k8s.io", "v1", "ServiceCIDR", "servicecidrs", false, true, &[], &[], ALL_VERBS),
    b("node.k8s.io", "v1", "RuntimeClass", "runtimeclasses", false, false, &[], &[], ALL_VERBS),
    b("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", true, true, &["pdb"], &[], ALL_VERBS),
    b("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", false, false, &[], &[], ALL_VERBS),
    b("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", false, false, &[], &[], ALL_VERBS),
    b("rbac.authorization.k8s.io", "v1", "Role", "roles", true, false, &[], &[], ALL_VERBS),
    b("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", true, false, &[], &[], ALL_VERBS),
    b("resource.k8s.io", "v1", "DeviceClass", "deviceclasses", false, false, &[], &[], ALL_VERBS),
    b("resource.k8s.io", "v1", "DeviceTaintRule", "devicetaintrules", false, true, &[], &[], ALL_VERBS),
    b("resource.k8s.io", "v1", "ResourceClaim", "resourceclaims", true, true, &[], &[], ALL_VERBS),
    b("resource.k8s.io", "v1", "ResourceClaimTemplate", "resourceclaimtemplates", true, false, &[], &[], ALL_VERBS),
    b("resource.k8s.io", "v1", "ResourceSlice", "resourceslices", false, false, &[], &[], ALL_VERBS),
    b("resource.k8s.io", "v1alpha3", "DeviceTaintRule", "devicetaintrules", false, true, &[], &[], ALL_VERBS),
    b("resource.k8s.io", "v1alpha3", "ResourcePoolStatusRequest", "resourcepoolstatusrequests", false, true, &[], &[], ALL_VERBS),
    b("resource.k8s.io", "v1beta1", "DeviceClass", "deviceclasses", false, false, &[], &[], ALL_VERBS),
    b("resource.k8s.io", "v1beta1", "ResourceClaim", "resourceclaims", true, true, &[], &[], ALL_VERBS),
    b("resource.k8s.io", "v1beta1", "ResourceClaimTemplate", "resourceclaimtemplates", true, false, &[], &[], ALL_VERBS),
    b("resource.k8s.io", "v1beta1", "ResourceSlice", "resourceslices", false, false, &[], &[], ALL_VERBS),
    b("resource.k8s.io", "v1beta2", "DeviceClass", "deviceclasses", false, false, &[], &[], ALL_VERBS),
    b("resource.k8s.io", "v1beta2", "DeviceTaintRule", "devicetaintrules", false, true, &[], &[], ALL_VERBS),
    b("resource.k8s.io", "v1beta2", "ResourceClaim", "resourceclaims", true, true, &[], &[], ALL_VERBS),
    b("resource.k8s.io", "v1beta2", "ResourceClaimTemplate", "resourceclaimtemplates", true, false, &[], &[], ALL_VERBS),
    b("resource.k8s.io", "v1beta2", "ResourceSlice", "resourceslices", false, false, &[], &[], ALL_VERBS),
    b("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", false, false, &["pc"], &[], ALL_VERBS),
    b("scheduling.k8s.io", "v1alpha3", "CompositePodGroup", "compositepodgroups", true, true, &[], &[], ALL_VERBS),
    b("scheduling.k8s.io", "v1alpha3", "PodGroup", "podgroups", true, true, &[], &[], ALL_VERBS),
    b("scheduling.k8s.io", "v1alpha3", "Workload", "workloads", true, false, &[], &[], ALL_VERBS),
    b("scheduling.k8s.io", "v1beta1", "PodGroup", "podgroups", true, true, &[], &[], ALL_VERBS),
    b("scheduling.k8s.io", "v1beta1", "Workload", "workloads", true, false, &[], &[], ALL_VERBS),
    b("storage.k8s.io", "v1", "CSIDriver", "csidrivers", false, false, &[], &[], ALL_VERBS),
    b("storage.k8s.io", "v1", "CSINode", "csinodes", false, false, &[], &[], ALL_VERBS),
    b("storage.k8s.io", "v1", "CSIStorageCapacity", "csistoragecapacities", true, false, &[], &[], ALL_VERBS),
    b("storage.k8s.io", "v1", "StorageClass", "storageclasses", false, false, &["sc"], &[], ALL_VERBS),
    b("storage.k8s.io", "v1", "VolumeAttachment", "volumeattachments", false, true, &[], &[], ALL_VERBS),
    b("storage.k8s.io", "v1", "VolumeAttributesClass", "volumeattributesclasses", false, false, &[], &[], ALL_VERBS),
    b("storagemigration.k8s.io", "v1", "StorageVersionMigration", "storageversionmigrations", false, true, &[], &[], ALL_VERBS),
    b("storagemigration.k8s.io", "v1beta1", "StorageVersionMigration", "storageversionmigrations", false, true, &[], &[], ALL_VERBS),
];

/// Orders versions as Kubernetes does: GA before beta before alpha, higher numbers first.
pub(crate) fn version_priority(v: &str) -> (u8, u32, u32) {
    let rest = v.strip_prefix('v').unwrap_or(v);
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let major = digits.parse::<u32>().unwrap_or(0);
    let tail = &rest[digits.len()..];
    let (level, minor_str) = if let Some(m) = tail.strip_prefix("beta") {
        (1, m)
    } else if let Some(m) = tail.strip_prefix("alpha") {
        (0, m)
    } else if tail.is_empty() {
        (2, "")
    } else {
        return (0, 0, 0);
    };
    (level, major, minor_str.parse::<u32>().unwrap_or(0))
}

/// All served resources, indexed by group and version.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    /// group -> version -> plural -> info.
    groups: BTreeMap<String, BTreeMap<String, BTreeMap<String, Arc<ResourceInfo>>>>,
}

impl Registry {
    /// The registry with every built-in resource.
    pub(crate) fn with_builtins() -> Self {
        let mut reg = Registry::default();
        for it in BUILTINS {
            let info = ResourceInfo {
                group: it.group.to_owned(),
                version: it.version.to_owned(),
                kind: it.kind.to_owned(),
                plural: it.plural.to_owned(),
                singular: it.kind.to_lowercase(),
                namespaced: it.namespaced,
                status_subresource: it.status,
                short_names: it.short.iter().map(|s| (*s).to_owned()).collect(),
                categories: it.categories.iter().map(|s| (*s).to_owned()).collect(),
                verbs: it.verbs.iter().map(|s| (*s).to_owned()).collect(),
                custom: false,
            };
            reg.insert(info);
        }
        reg
    }

    /// Adds or replaces a resource.
    pub(crate) fn insert(&mut self, info: ResourceInfo) {
        self.groups
            .entry(info.group.clone())
            .or_default()
            .entry(info.version.clone())
            .or_default()
            .insert(info.plural.clone(), Arc::new(info));
    }

    /// Removes every custom resource of `group`/`plural` (all versions).
    pub(crate) fn remove_custom(&mut self, group: &str, plural: &str) {
        if let Some(versions) = self.groups.get_mut(group) {
            for resources in versions.values_mut() {
                resources.retain(|p, info| !(p == plural && info.custom));
            }
            versions.retain(|_, r| !r.is_empty());
            if versions.is_empty() {
                self.groups.remove(group);
            }
        }
    }

    /// Looks a resource up by group, version and plural.
    pub(crate) fn get(
        &self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Option<Arc<ResourceInfo>> {
        self.groups.get(group)?.get(version)?.get(plural).cloned()
    }

    /// Looks a resource up by group, version and kind.
    pub(crate) fn by_kind(
        &self,
        group: &str,
        version: &str,
        kind: &str,
    ) -> Option<Arc<ResourceInfo>> {
        self.groups
            .get(group)?
            .get(version)?
            .values()
            .find(|r| r.kind == kind)
            .cloned()
    }

    /// Whether the group/version exists.
    pub(crate) fn has_version(&self, group: &str, version: &str) -> bool {
        self.groups
            .get(group)
            .is_some_and(|g| g.contains_key(version))
    }

    /// Versions of a group, preferred first.
    pub(crate) fn versions(&self, group: &str) -> Vec<String> {
        let mut out: Vec<String> = self
            .groups
            .get(group)
            .map(|g| g.keys().cloned().collect())
            .unwrap_or_default();
        out.sort_by_key(|v| std::cmp::Reverse(version_priority(v)));
        out
    }

    /// Non-core group names, in order.
    pub(crate) fn group_names(&self) -> Vec<String> {
        self.groups
            .keys()
            .filter(|g| !g.is_empty())
            .cloned()
            .collect()
    }

    /// Resources of one group/version.
    pub(crate) fn resources(&self, group: &str, version: &str) -> Vec<Arc<ResourceInfo>> {
        self.groups
            .get(group)
            .and_then(|g| g.get(version))
            .map(|r| r.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Every served resource.
    pub(crate) fn all(&self) -> Vec<Arc<ResourceInfo>> {
        self.groups
            .values()
            .flat_map(|g| g.values())
            .flat_map(|r| r.values().cloned())
            .collect()
    }
}

/// A (group, version, kind, plural, namespaced) row of the built-in table, for cross-checks in tests.
pub fn builtin_resources() -> Vec<ResourceInfo> {
    Registry::with_builtins()
        .all()
        .into_iter()
        .map(|r| (*r).clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_like_kubernetes() {
        let mut v = vec!["v1alpha1", "v1beta2", "v2", "v1", "v1beta1", "v2beta1"];
        v.sort_by_key(|v| std::cmp::Reverse(version_priority(v)));
        assert_eq!(v, ["v2", "v1", "v2beta1", "v1beta2", "v1beta1", "v1alpha1"]);
    }

    #[test]
    fn registry_finds_pods_and_deployments() {
        let reg = Registry::with_builtins();
        let pods = reg.get("", "v1", "pods").expect("pods");
        assert!(pods.namespaced && pods.status_subresource);
        assert_eq!(
            reg.by_kind("apps", "v1", "Deployment")
                .expect("deploy")
                .plural,
            "deployments"
        );
        assert_eq!(reg.versions("autoscaling"), ["v2", "v1"]);
    }
}
