//! Cross-checks the server's built-in resource table against k8s-openapi's `Resource` impls
//! (group, version, kind, plural, scope) for every listable resource of the v1_37 feature.

use std::collections::BTreeSet;

use informer_testserver::builtin_resources;
use k8s_openapi::{ListableResource, Resource, ResourceScope};

type Row = (String, String, String, String, bool);

fn check<K: Resource + ListableResource>(seen: &mut BTreeSet<Row>)
where
    K::Scope: ResourceScope,
{
    let namespaced = std::any::type_name::<K::Scope>().ends_with("NamespaceResourceScope");
    seen.insert((
        K::GROUP.to_owned(),
        K::VERSION.to_owned(),
        K::KIND.to_owned(),
        K::URL_PATH_SEGMENT.to_owned(),
        namespaced,
    ));
}

#[test]
fn table_matches_k8s_openapi() {
    let mut seen = BTreeSet::new();
    check::<k8s_openapi::api::core::v1::ComponentStatus>(&mut seen);
    check::<k8s_openapi::api::core::v1::ConfigMap>(&mut seen);
    check::<k8s_openapi::api::core::v1::Endpoints>(&mut seen);
    check::<k8s_openapi::api::core::v1::Event>(&mut seen);
    check::<k8s_openapi::api::core::v1::LimitRange>(&mut seen);
    check::<k8s_openapi::api::core::v1::Namespace>(&mut seen);
    check::<k8s_openapi::api::core::v1::Node>(&mut seen);
    check::<k8s_openapi::api::core::v1::PersistentVolume>(&mut seen);
    check::<k8s_openapi::api::core::v1::PersistentVolumeClaim>(&mut seen);
    check::<k8s_openapi::api::core::v1::Pod>(&mut seen);
    check::<k8s_openapi::api::core::v1::PodTemplate>(&mut seen);
    check::<k8s_openapi::api::core::v1::ReplicationController>(&mut seen);
    check::<k8s_openapi::api::core::v1::ResourceQuota>(&mut seen);
    check::<k8s_openapi::api::core::v1::Secret>(&mut seen);
    check::<k8s_openapi::api::core::v1::Service>(&mut seen);
    check::<k8s_openapi::api::core::v1::ServiceAccount>(&mut seen);
    check::<k8s_openapi::api::admissionregistration::v1::MutatingAdmissionPolicy>(&mut seen);
    check::<k8s_openapi::api::admissionregistration::v1::MutatingAdmissionPolicyBinding>(&mut seen);
    check::<k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration>(&mut seen);
    check::<k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicy>(&mut seen);
    check::<k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicyBinding>(
        &mut seen,
    );
    check::<k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration>(&mut seen);
    check::<k8s_openapi::api::admissionregistration::v1alpha1::MutatingAdmissionPolicy>(&mut seen);
    check::<k8s_openapi::api::admissionregistration::v1alpha1::MutatingAdmissionPolicyBinding>(
        &mut seen,
    );
    check::<k8s_openapi::api::admissionregistration::v1beta1::MutatingAdmissionPolicy>(&mut seen);
    check::<k8s_openapi::api::admissionregistration::v1beta1::MutatingAdmissionPolicyBinding>(
        &mut seen,
    );
    check::<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>(&mut seen);
    check::<k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService>(&mut seen);
    check::<k8s_openapi::api::apps::v1::ControllerRevision>(&mut seen);
    check::<k8s_openapi::api::apps::v1::DaemonSet>(&mut seen);
    check::<k8s_openapi::api::apps::v1::Deployment>(&mut seen);
    check::<k8s_openapi::api::apps::v1::ReplicaSet>(&mut seen);
    check::<k8s_openapi::api::apps::v1::StatefulSet>(&mut seen);
    check::<k8s_openapi::api::autoscaling::v1::HorizontalPodAutoscaler>(&mut seen);
    check::<k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler>(&mut seen);
    check::<k8s_openapi::api::batch::v1::CronJob>(&mut seen);
    check::<k8s_openapi::api::batch::v1::Job>(&mut seen);
    check::<k8s_openapi::api::certificates::v1::CertificateSigningRequest>(&mut seen);
    check::<k8s_openapi::api::certificates::v1::ClusterTrustBundle>(&mut seen);
    check::<k8s_openapi::api::certificates::v1::PodCertificateRequest>(&mut seen);
    check::<k8s_openapi::api::certificates::v1beta1::ClusterTrustBundle>(&mut seen);
    check::<k8s_openapi::api::certificates::v1beta1::PodCertificateRequest>(&mut seen);
    check::<k8s_openapi::api::coordination::v1::Lease>(&mut seen);
    check::<k8s_openapi::api::coordination::v1alpha2::LeaseCandidate>(&mut seen);
    check::<k8s_openapi::api::coordination::v1beta1::LeaseCandidate>(&mut seen);
    check::<k8s_openapi::api::discovery::v1::EndpointSlice>(&mut seen);
    check::<k8s_openapi::api::events::v1::Event>(&mut seen);
    check::<k8s_openapi::api::flowcontrol::v1::FlowSchema>(&mut seen);
    check::<k8s_openapi::api::flowcontrol::v1::PriorityLevelConfiguration>(&mut seen);
    check::<k8s_openapi::api::apiserverinternal::v1alpha1::StorageVersion>(&mut seen);
    check::<k8s_openapi::api::lifecycle::v1alpha1::Eviction>(&mut seen);
    check::<k8s_openapi::api::lifecycle::v1alpha1::EvictionRequest>(&mut seen);
    check::<k8s_openapi::api::networking::v1::IPAddress>(&mut seen);
    check::<k8s_openapi::api::networking::v1::Ingress>(&mut seen);
    check::<k8s_openapi::api::networking::v1::IngressClass>(&mut seen);
    check::<k8s_openapi::api::networking::v1::NetworkPolicy>(&mut seen);
    check::<k8s_openapi::api::networking::v1::ServiceCIDR>(&mut seen);
    check::<k8s_openapi::api::node::v1::RuntimeClass>(&mut seen);
    check::<k8s_openapi::api::policy::v1::PodDisruptionBudget>(&mut seen);
    check::<k8s_openapi::api::rbac::v1::ClusterRole>(&mut seen);
    check::<k8s_openapi::api::rbac::v1::ClusterRoleBinding>(&mut seen);
    check::<k8s_openapi::api::rbac::v1::Role>(&mut seen);
    check::<k8s_openapi::api::rbac::v1::RoleBinding>(&mut seen);
    check::<k8s_openapi::api::resource::v1::DeviceClass>(&mut seen);
    check::<k8s_openapi::api::resource::v1::DeviceTaintRule>(&mut seen);
    check::<k8s_openapi::api::resource::v1::ResourceClaim>(&mut seen);
    check::<k8s_openapi::api::resource::v1::ResourceClaimTemplate>(&mut seen);
    check::<k8s_openapi::api::resource::v1::ResourceSlice>(&mut seen);
    check::<k8s_openapi::api::resource::v1alpha3::DeviceTaintRule>(&mut seen);
    check::<k8s_openapi::api::resource::v1alpha3::ResourcePoolStatusRequest>(&mut seen);
    check::<k8s_openapi::api::resource::v1beta1::DeviceClass>(&mut seen);
    check::<k8s_openapi::api::resource::v1beta1::ResourceClaim>(&mut seen);
    check::<k8s_openapi::api::resource::v1beta1::ResourceClaimTemplate>(&mut seen);
    check::<k8s_openapi::api::resource::v1beta1::ResourceSlice>(&mut seen);
    check::<k8s_openapi::api::resource::v1beta2::DeviceClass>(&mut seen);
    check::<k8s_openapi::api::resource::v1beta2::DeviceTaintRule>(&mut seen);
    check::<k8s_openapi::api::resource::v1beta2::ResourceClaim>(&mut seen);
    check::<k8s_openapi::api::resource::v1beta2::ResourceClaimTemplate>(&mut seen);
    check::<k8s_openapi::api::resource::v1beta2::ResourceSlice>(&mut seen);
    check::<k8s_openapi::api::scheduling::v1::PriorityClass>(&mut seen);
    check::<k8s_openapi::api::scheduling::v1alpha3::CompositePodGroup>(&mut seen);
    check::<k8s_openapi::api::scheduling::v1alpha3::PodGroup>(&mut seen);
    check::<k8s_openapi::api::scheduling::v1alpha3::Workload>(&mut seen);
    check::<k8s_openapi::api::scheduling::v1beta1::PodGroup>(&mut seen);
    check::<k8s_openapi::api::scheduling::v1beta1::Workload>(&mut seen);
    check::<k8s_openapi::api::storage::v1::CSIDriver>(&mut seen);
    check::<k8s_openapi::api::storage::v1::CSINode>(&mut seen);
    check::<k8s_openapi::api::storage::v1::CSIStorageCapacity>(&mut seen);
    check::<k8s_openapi::api::storage::v1::StorageClass>(&mut seen);
    check::<k8s_openapi::api::storage::v1::VolumeAttachment>(&mut seen);
    check::<k8s_openapi::api::storage::v1::VolumeAttributesClass>(&mut seen);
    check::<k8s_openapi::api::storagemigration::v1::StorageVersionMigration>(&mut seen);
    check::<k8s_openapi::api::storagemigration::v1beta1::StorageVersionMigration>(&mut seen);
    let table: BTreeSet<Row> = builtin_resources()
        .into_iter()
        .map(|r| (r.group, r.version, r.kind, r.plural, r.namespaced))
        .collect();
    let missing: Vec<_> = seen.difference(&table).collect();
    let extra: Vec<_> = table.difference(&seen).collect();
    assert!(
        missing.is_empty(),
        "in k8s-openapi but not in the table: {missing:#?}"
    );
    assert!(
        extra.is_empty(),
        "in the table but not in k8s-openapi: {extra:#?}"
    );
    assert_eq!(seen.len(), 93);
}
