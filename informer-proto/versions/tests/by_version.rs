//! The protobuf table is the one of the Kubernetes version k8s-openapi was built for (decision
//! record 22): a field that version lacks is passed over and counted, as that version's JSON
//! path passes it over (decision record 25), and a field it has is read. Run under every supported version
//! by `cargo xtask k8s-versions`, and under 1.37 by the workspace's tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use informer_proto::schema::KUBERNETES_VERSION;
use informer_proto::wire::put_len;
use informer_proto::{for_kind, from_slice};
use serde_json::{Value, json};

/// The minor version the table was built for (`34` for 1.34).
fn minor() -> u32 {
    KUBERNETES_VERSION
        .strip_prefix("1.")
        .and_then(|m| m.parse().ok())
        .expect("a version 1.MM")
}

/// A Pod `web` whose spec sets `hostnameOverride` (PodSpec field 41, added in Kubernetes 1.34),
/// as protobuf.
fn pod_with_hostname_override() -> Vec<u8> {
    let mut meta = Vec::new();
    put_len(&mut meta, 1, b"web");
    let mut spec = Vec::new();
    put_len(&mut spec, 41, b"web-0.example");
    let mut pod = Vec::new();
    put_len(&mut pod, 1, &meta);
    put_len(&mut pod, 2, &spec);
    pod
}

#[test]
fn a_field_the_version_added_is_read_there_and_passed_over_before() {
    let pod = for_kind("v1", "Pod").expect("Pod");
    let counted = informer_proto::Skipped::start();
    let decoded = from_slice::<Value>(pod, &pod_with_hostname_override());
    let skipped = counted.since();
    if minor() >= 34 {
        let value = decoded.unwrap_or_else(|e| panic!("Kubernetes {KUBERNETES_VERSION}: {e}"));
        assert_eq!(
            value,
            json!({"metadata": {"name": "web"}, "spec": {"hostnameOverride": "web-0.example"}}),
            "Kubernetes {KUBERNETES_VERSION}"
        );
        assert_eq!(skipped.count, 0);
    } else {
        // T8: an older table passes over the newer field, as an older Go client does.
        let value = decoded.unwrap_or_else(|e| panic!("Kubernetes {KUBERNETES_VERSION}: {e}"));
        assert_eq!(value, json!({"metadata": {"name": "web"}, "spec": {}}));
        assert_eq!(skipped.example, Some(("api.core.v1.PodSpec", 41)));
        assert_eq!(skipped.count, 1);
    }
}

#[test]
fn a_kind_the_version_lacks_has_no_message() {
    // resource.k8s.io/v1 became GA in Kubernetes 1.34; 1.33 had v1beta1 and v1beta2.
    assert_eq!(
        for_kind("resource.k8s.io/v1", "ResourceClaim").is_some(),
        minor() >= 34,
        "Kubernetes {KUBERNETES_VERSION}"
    );
    assert!(for_kind("resource.k8s.io/v1beta1", "ResourceClaim").is_some());
}
