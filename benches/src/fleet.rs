//! The operator scenario's objects: Deployments, the Pods their selectors match, and the
//! ConfigMap the operator must write for each Deployment.
//!
//! Deployment `d` lives in namespace `d % namespaces` and selects, by the label
//! [`DEPLOYMENT_LABEL`] and a `shard Exists` expression, the Pods drawn to it; Pod `p` is drawn
//! to Deployment `mix(p) % deployments` (so the counts vary around the mean) and lives in its
//! namespace, with the distinct corpus's body ([`crate::pods::pod_json`]: 15 KiB of
//! JSON, managedFields included). Every namespace holds the Pods of several Deployments, so an
//! operator that ignored the selector would count the wrong Pods, and `spec.replicas` differs
//! from the Pod count, so one that wrote the one for the other would be caught too.
//!
//! The operator (`benches/src/child/operator.rs`, `benches/controller-runtime/`) writes for each
//! Deployment a ConfigMap [`config_map_name`] with the label [`MANAGED_BY`], a controller owner
//! reference to the Deployment and the data [`expected_data`]: the orchestrator checks each one
//! it sees against that ([`Fleet::check`]) and counts a Deployment done only when its ConfigMap
//! is right.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::{Value, json};

use crate::pods::{mix, namespace_name, pod_json, uuid_of};

/// The label by which a Deployment selects its Pods.
pub const DEPLOYMENT_LABEL: &str = "bench.informer-rs.io/deployment";

/// The label on every ConfigMap the operator writes, as a selector (`key=value`); the
/// orchestrator watches and deletes by it.
pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by=bench-operator";
/// [`MANAGED_BY`]'s key.
pub const MANAGED_BY_KEY: &str = "app.kubernetes.io/managed-by";
/// [`MANAGED_BY`]'s value.
pub const MANAGED_BY_VALUE: &str = "bench-operator";

/// What each ConfigMap must hold, by its `namespace/name` ([`Fleet::expected`]): its
/// Deployment's name and its data.
pub type Expected = HashMap<String, (String, BTreeMap<String, String>)>;

/// A ConfigMap's `namespace/name`, the key of [`Expected`].
pub fn key_of(cm: &ConfigMap) -> Option<String> {
    let meta = &cm.metadata;
    Some(format!(
        "{}/{}",
        meta.namespace.as_deref()?,
        meta.name.as_deref()?
    ))
}

/// The ConfigMap the operator writes for Deployment `deployment`.
pub fn config_map_name(deployment: &str) -> String {
    format!("{deployment}-summary")
}

/// The data of that ConfigMap: the Deployment's `spec.replicas` and how many Pods of its
/// namespace its selector matches.
pub fn expected_data(replicas: i32, pods: usize) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("replicas".to_string(), replicas.to_string()),
        ("pods".to_string(), pods.to_string()),
    ])
}

/// `deployments` Deployments and `pods` Pods over `namespaces` namespaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fleet {
    /// Number of Deployments (the operator writes one ConfigMap each).
    pub deployments: usize,
    /// Number of Pods.
    pub pods: usize,
    /// Number of namespaces (`bench-000` …).
    pub namespaces: usize,
}

impl Fleet {
    /// The fleet; at least one Deployment and one namespace.
    pub fn new(deployments: usize, pods: usize, namespaces: usize) -> Self {
        Fleet {
            deployments: deployments.max(1),
            pods,
            namespaces: namespaces.max(1),
        }
    }

    /// The name of Deployment `d`.
    pub fn deployment_name(&self, d: usize) -> String {
        format!("app-{d:05}")
    }

    /// The namespace of Deployment `d` (and of its Pods).
    pub fn namespace_of(&self, d: usize) -> String {
        namespace_name(d % self.namespaces)
    }

    /// `spec.replicas` of Deployment `d` (1-5, never its Pod count by design).
    pub fn replicas(&self, d: usize) -> i32 {
        1 + (d % 5) as i32
    }

    /// The Deployment Pod `p` belongs to.
    pub fn owner_of(&self, p: usize) -> usize {
        (mix(p as u64 ^ 0x000f_1ee7) % self.deployments as u64) as usize
    }

    /// Deployment `d` as JSON, with a uid (informer-testserver keeps it; kube-apiserver's seed
    /// strips it and sets its own).
    pub fn deployment_json(&self, d: usize) -> Value {
        let name = self.deployment_name(d);
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": name,
                "namespace": self.namespace_of(d),
                "uid": uuid_of(mix(d as u64 ^ 0x00de_b10e)),
                "labels": {"app.kubernetes.io/part-of": "storefront"},
            },
            "spec": {
                "replicas": self.replicas(d),
                "selector": {
                    "matchLabels": {DEPLOYMENT_LABEL: name},
                    "matchExpressions": [{"key": "shard", "operator": "Exists"}],
                },
                "template": {
                    "metadata": {"labels": {DEPLOYMENT_LABEL: name, "shard": "0"}},
                    "spec": {"containers": [{
                        "name": "app",
                        "image": "registry.example.com/storefront/app:v1.0.0",
                    }]},
                },
            },
        })
    }

    /// Pod `p` as JSON: the distinct corpus's Pod in its Deployment's namespace, labelled for it.
    pub fn pod_json(&self, p: usize) -> Value {
        let d = self.owner_of(p);
        let deployment = self.deployment_name(d);
        let mut pod = pod_json(
            &self.namespace_of(d),
            &format!("{deployment}-{p:06x}"),
            p as u64,
            0,
        );
        pod["metadata"]["labels"][DEPLOYMENT_LABEL] = json!(deployment);
        pod
    }

    /// The ConfigMap every Deployment must end with, by `namespace/name` of the ConfigMap:
    /// its Deployment's name and the expected data.
    pub fn expected(&self) -> Expected {
        let mut counts = vec![0usize; self.deployments];
        for p in 0..self.pods {
            counts[self.owner_of(p)] += 1;
        }
        (0..self.deployments)
            .map(|d| {
                let name = self.deployment_name(d);
                let key = format!("{}/{}", self.namespace_of(d), config_map_name(&name));
                (key, (name, expected_data(self.replicas(d), counts[d])))
            })
            .collect()
    }

    /// Whether `cm` is the ConfigMap `expected` wants under its key: the data, the label and a
    /// controller owner reference to the Deployment. Returns the key when it is.
    pub fn check(expected: &Expected, cm: &ConfigMap) -> Option<String> {
        let meta = &cm.metadata;
        let key = key_of(cm)?;
        let (deployment, data) = expected.get(&key)?;
        let labelled = meta
            .labels
            .as_ref()
            .and_then(|l| l.get(MANAGED_BY_KEY))
            .is_some_and(|v| v == MANAGED_BY_VALUE);
        let owned = meta.owner_references.iter().flatten().any(|o| {
            o.controller == Some(true)
                && o.kind == "Deployment"
                && o.api_version == "apps/v1"
                && &o.name == deployment
                && !o.uid.is_empty()
        });
        (labelled && owned && cm.data.as_ref() == Some(data)).then_some(key)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    use kube::api::ObjectMeta;

    use super::*;

    fn written(fleet: &Fleet, d: usize, data: BTreeMap<String, String>) -> ConfigMap {
        let name = fleet.deployment_name(d);
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(config_map_name(&name)),
                namespace: Some(fleet.namespace_of(d)),
                labels: Some(BTreeMap::from([(
                    MANAGED_BY_KEY.to_string(),
                    MANAGED_BY_VALUE.to_string(),
                )])),
                owner_references: Some(vec![OwnerReference {
                    api_version: "apps/v1".into(),
                    kind: "Deployment".into(),
                    name,
                    uid: "u".into(),
                    controller: Some(true),
                    block_owner_deletion: Some(true),
                }]),
                ..ObjectMeta::default()
            },
            data: Some(data),
            ..ConfigMap::default()
        }
    }

    #[test]
    fn the_selector_is_the_label() {
        assert_eq!(MANAGED_BY, format!("{MANAGED_BY_KEY}={MANAGED_BY_VALUE}"));
    }

    #[test]
    fn only_the_right_config_map_counts() {
        let fleet = Fleet::new(7, 90, 3);
        let expected = fleet.expected();
        assert_eq!(expected.len(), 7);
        let total: usize = expected
            .values()
            .map(|(_, d)| d["pods"].parse::<usize>().expect("a count"))
            .sum();
        assert_eq!(total, 90, "every Pod belongs to one Deployment");
        let (_, want) = &expected[&format!("bench-001/{}", config_map_name("app-00004"))];
        let right = written(&fleet, 4, want.clone());
        assert!(Fleet::check(&expected, &right).is_some());
        // The namespace's Pod count, or the replicas in place of the Pods, is wrong.
        let mut wrong = want.clone();
        wrong.insert("pods".into(), fleet.replicas(4).to_string());
        assert!(Fleet::check(&expected, &written(&fleet, 4, wrong)).is_none());
        let mut unowned = right.clone();
        unowned.metadata.owner_references = None;
        assert!(Fleet::check(&expected, &unowned).is_none());
        let mut unlabelled = right;
        unlabelled.metadata.labels = None;
        assert!(Fleet::check(&expected, &unlabelled).is_none());
    }

    #[test]
    fn pods_match_their_deployment_and_namespaces_mix_deployments() {
        let fleet = Fleet::new(10, 200, 2);
        for p in [0, 17, 199] {
            let pod = fleet.pod_json(p);
            let d = fleet.owner_of(p);
            assert_eq!(pod["metadata"]["namespace"], json!(fleet.namespace_of(d)));
            let selector = &fleet.deployment_json(d)["spec"]["selector"]["matchLabels"];
            assert_eq!(
                pod["metadata"]["labels"][DEPLOYMENT_LABEL],
                selector[DEPLOYMENT_LABEL]
            );
            assert!(pod["metadata"]["labels"]["shard"].is_string());
        }
        let counts: Vec<usize> = (0..10)
            .map(|d| (0..200).filter(|p| fleet.owner_of(*p) == d).count())
            .collect();
        assert!(counts.iter().any(|c| *c != counts[0]), "{counts:?}");
    }
}
