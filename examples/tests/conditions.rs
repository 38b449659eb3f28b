//! `informer_runtime::conditions` on the types informer-gen generates (G10): conditions set on a
//! CRD kind's `status.conditions` (`Option<Box<[_]>>`, an enum `status`) are written as the API
//! server expects them and read back equal from JSON; informer-k8s's compact `Condition` works
//! the same way.
//!
//! Run with `cargo test -p informer-examples --test conditions`.

use informer_examples::generated::certificate_requests::v1::{
    CertificateRequestStatus, CertificateRequestStatusConditionsStatus, full,
};
use informer_examples::generated::gizmos::v1::GizmoStatusConditions;
use informer_k8s::compact::apimachinery::pkg::apis::meta::v1::Condition as CompactCondition;
use informer_runtime::conditions::{self, FALSE, NewCondition, TRUE};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde_json::json;

fn at(second: i64) -> Time {
    Time(Timestamp::from_second(second).expect("in range"))
}

fn request() -> full::CertificateRequest {
    serde_json::from_value(json!({
        "apiVersion": "cert-manager.io/v1",
        "kind": "CertificateRequest",
        "metadata": {"name": "web", "namespace": "prod", "generation": 4},
        "spec": {"issuerRef": {"name": "ca"}, "request": "cmVx"},
        "status": {"conditions": [{
            "type": "Approved", "status": "True", "reason": "Policy",
            "lastTransitionTime": "2026-11-20T08:00:00Z"
        }]}
    }))
    .expect("a valid CertificateRequest")
}

#[test]
fn a_condition_set_on_a_generated_status_round_trips_through_json() {
    let mut cr = request();
    let status = cr.status.get_or_insert_with(Default::default);
    let ready = NewCondition::new("Ready", FALSE)
        .reason("Pending")
        .message("waiting for the issuer")
        .last_transition_time(at(1_800_000_000));
    assert!(conditions::set(&mut status.conditions, ready.clone()));
    assert!(!conditions::set(&mut status.conditions, ready));
    // Same status: the transition time stays; a new status moves it.
    assert!(conditions::set(
        &mut status.conditions,
        NewCondition::new("Approved", TRUE)
            .reason("Policy")
            .message("ok")
    ));
    assert!(conditions::set(
        &mut status.conditions,
        NewCondition::new("Ready", TRUE)
            .reason("Issued")
            .last_transition_time(at(1_800_000_060))
    ));
    assert!(conditions::is_true(&status.conditions, "Ready"));
    let ready = conditions::find(&status.conditions, "Ready").expect("set");
    assert_eq!(ready.status, CertificateRequestStatusConditionsStatus::True);
    assert_eq!(ready.message.as_deref(), None);

    let written = serde_json::to_value(&cr).expect("serializes");
    assert_eq!(
        written["status"]["conditions"],
        json!([
            {"type": "Approved", "status": "True", "reason": "Policy", "message": "ok",
             "lastTransitionTime": "2026-11-20T08:00:00Z"},
            {"type": "Ready", "status": "True", "reason": "Issued",
             "lastTransitionTime": "2027-01-15T08:01:00Z"}
        ])
    );
    let read: full::CertificateRequest = serde_json::from_value(written).expect("decodes");
    assert_eq!(read, cr);

    let status: &mut CertificateRequestStatus = cr.status.as_deref_mut().expect("status");
    assert!(conditions::remove(&mut status.conditions, "Approved"));
    assert!(conditions::remove(&mut status.conditions, "Ready"));
    assert_eq!(status.conditions, None);
}

#[test]
fn a_condition_type_without_reason_keeps_what_it_has() {
    let mut list: Option<Box<[GizmoStatusConditions]>> = None;
    let new = NewCondition::new("Ready", "Degraded")
        .reason("Ignored")
        .message("m");
    assert!(conditions::set(&mut list, new));
    let written = serde_json::to_value(&list).expect("serializes");
    assert_eq!(written[0]["status"], "Degraded");
    assert_eq!(written[0].get("reason"), None);
    assert!(!conditions::is_true(&list, "Ready") && !conditions::is_false(&list, "Ready"));
}

#[test]
fn the_compact_condition_of_informer_k8s_is_a_condition() {
    let mut list: Box<[CompactCondition]> = Box::default();
    let new = NewCondition::new("Available", TRUE).observed_generation(2);
    assert!(conditions::set(
        &mut list,
        new.last_transition_time(at(1_800_000_000))
    ));
    let full: k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition = (&list[0]).into();
    assert_eq!(
        (full.type_.as_str(), full.observed_generation),
        ("Available", Some(2))
    );
    assert_eq!(full.last_transition_time, at(1_800_000_000));
}
