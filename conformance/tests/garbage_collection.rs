//! Garbage collection by owner references (decision record 28): the same deletes against
//! informer-testserver with `garbage_collection(true)` and against kube-apiserver with
//! kube-controller-manager's garbage collector beside it, held to the same results. Background,
//! foreground (`blockOwnerDeletion`), orphan, several owners, a collection delete, an owner that
//! never existed, and the `DeleteOptions` kube-apiserver refuses.

use informer_conformance::*;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

/// The finalizer the scenarios hold a dependent with.
const HOLD: &str = "conformance.informer-rs.dev/hold";

/// A ConfigMap named `name` with owner references to `owners` (`(owner, blockOwnerDeletion)`)
/// and `finalizers`.
async fn create(
    api: &Api<ConfigMap>,
    name: &str,
    owners: &[(&ConfigMap, bool)],
    finalizers: &[&str],
) -> ConfigMap {
    let refs: Vec<Value> = owners
        .iter()
        .map(|(o, block)| {
            json!({"apiVersion": "v1", "kind": "ConfigMap", "name": o.name_any(),
                   "uid": o.uid().expect("a stored object has a uid"),
                   "blockOwnerDeletion": block})
        })
        .collect();
    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": name, "ownerReferences": refs, "finalizers": finalizers},
        "data": {"k": "v"},
    }))
    .expect("a ConfigMap");
    api.create(&PostParams::default(), &cm)
        .await
        .unwrap_or_else(|e| panic!("create {name}: {e}"))
}

async fn gone(api: &Api<ConfigMap>, name: &str) -> bool {
    api.get_opt(name).await.expect("get").is_none()
}

/// The names of the owners `name` refers to now (`None` once it is gone).
async fn owners_of(api: &Api<ConfigMap>, name: &str) -> Option<Vec<String>> {
    let cm = api.get_opt(name).await.expect("get")?;
    Some(
        cm.owner_references()
            .iter()
            .map(|r| r.name.clone())
            .collect(),
    )
}

async fn setup(backend: &Backend, prefix: &str) -> (Client, String, Api<ConfigMap>) {
    let client = backend.client().await;
    let ns = backend.namespace(prefix).await;
    (client.clone(), ns.clone(), Api::namespaced(client, &ns))
}

/// Background, the default for a ConfigMap: the dependents go after the owner, and their own
/// dependents after them.
async fn background_deletes_dependents_and_theirs(backend: &Backend) {
    let (_, _, api) = setup(backend, "gc-background").await;
    let owner = create(&api, "owner", &[], &[]).await;
    let child = create(&api, "child", &[(&owner, false)], &[]).await;
    create(&api, "grandchild", &[(&child, true)], &[]).await;
    let bystander = create(&api, "bystander", &[], &[]).await;
    api.delete("owner", &DeleteParams::default())
        .await
        .expect("delete the owner");
    wait_for("the child and the grandchild are collected", || async {
        gone(&api, "owner").await && gone(&api, "child").await && gone(&api, "grandchild").await
    })
    .await;
    let still = api.get("bystander").await.expect("the bystander stays");
    assert_eq!(still.uid(), bystander.uid());
}
conformance!(background_deletes_dependents_and_theirs, GarbageCollector);

/// A dependent with another owner left only loses the reference to the one that went; it goes
/// with the last.
async fn a_dependent_with_another_owner_loses_only_the_reference(backend: &Backend) {
    let (_, _, api) = setup(backend, "gc-owners").await;
    let first = create(&api, "first", &[], &[]).await;
    let second = create(&api, "second", &[], &[]).await;
    create(&api, "shared", &[(&first, false), (&second, false)], &[]).await;
    api.delete("first", &DeleteParams::background())
        .await
        .expect("delete the first owner");
    wait_for(
        "the shared dependent keeps only its second owner",
        || async { owners_of(&api, "shared").await == Some(vec!["second".to_owned()]) },
    )
    .await;
    api.delete("second", &DeleteParams::background())
        .await
        .expect("delete the second owner");
    wait_for("the shared dependent is collected", || async {
        gone(&api, "shared").await
    })
    .await;
}
conformance!(
    a_dependent_with_another_owner_loses_only_the_reference,
    GarbageCollector
);

/// Foreground: the owner stays, being deleted with `foregroundDeletion`, until every dependent
/// with `blockOwnerDeletion` is gone; a dependent that does not block is deleted all the same.
async fn foreground_waits_for_the_dependents_that_block(backend: &Backend) {
    let (_, _, api) = setup(backend, "gc-foreground").await;
    let owner = create(&api, "owner", &[], &[]).await;
    create(&api, "blocking", &[(&owner, true)], &[HOLD]).await;
    create(&api, "free", &[(&owner, false)], &[]).await;
    let answer = api
        .delete("owner", &DeleteParams::foreground())
        .await
        .expect("delete the owner in the foreground");
    let deleting = answer
        .left()
        .expect("the owner is answered, still there, not a Status");
    assert!(deleting.metadata.deletion_timestamp.is_some());
    assert_eq!(deleting.finalizers(), ["foregroundDeletion".to_owned()]);
    wait_for(
        "the free dependent is collected and the blocking one is being deleted",
        || async {
            let blocking = api.get_opt("blocking").await.expect("get");
            gone(&api, "free").await
                && blocking.is_some_and(|b| b.metadata.deletion_timestamp.is_some())
        },
    )
    .await;
    let owner_now = api
        .get("owner")
        .await
        .expect("the owner waits for the blocking dependent");
    assert_eq!(owner_now.finalizers(), ["foregroundDeletion".to_owned()]);
    api.patch(
        "blocking",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .expect("release the blocking dependent");
    wait_for(
        "the blocking dependent and then the owner are gone",
        || async { gone(&api, "blocking").await && gone(&api, "owner").await },
    )
    .await;
}
conformance!(
    foreground_waits_for_the_dependents_that_block,
    GarbageCollector
);

/// Orphan: the owner goes once its dependents no longer name it; they stay.
async fn orphan_keeps_the_dependents_without_the_reference(backend: &Backend) {
    let (_, _, api) = setup(backend, "gc-orphan").await;
    let owner = create(&api, "owner", &[], &[]).await;
    let other = create(&api, "other", &[], &[]).await;
    create(&api, "kept", &[(&owner, true)], &[]).await;
    create(&api, "kept-too", &[(&owner, false), (&other, false)], &[]).await;
    let answer = api
        .delete("owner", &DeleteParams::orphan())
        .await
        .expect("delete the owner, orphaning");
    let deleting = answer
        .left()
        .expect("the owner is answered, still there, not a Status");
    assert_eq!(deleting.finalizers(), ["orphan".to_owned()]);
    wait_for("the owner is gone", || async { gone(&api, "owner").await }).await;
    assert_eq!(owners_of(&api, "kept").await, Some(vec![]));
    assert_eq!(
        owners_of(&api, "kept-too").await,
        Some(vec!["other".to_owned()])
    );
}
conformance!(
    orphan_keeps_the_dependents_without_the_reference,
    GarbageCollector
);

/// A DELETE of a collection deletes each object with the request's `DeleteOptions`: orphaning
/// here, so the dependents of every deleted owner stay.
async fn a_collection_delete_propagates_as_each_delete(backend: &Backend) {
    let (_, _, api) = setup(backend, "gc-collection").await;
    let labelled = |name: &str| -> ConfigMap {
        serde_json::from_value(json!({"metadata": {"name": name, "labels": {"set": "a"}}}))
            .expect("a ConfigMap")
    };
    let mut owners = Vec::new();
    for name in ["first", "second"] {
        owners.push(
            api.create(&PostParams::default(), &labelled(name))
                .await
                .expect("create an owner"),
        );
    }
    create(&api, "first-dependent", &[(&owners[0], true)], &[]).await;
    create(&api, "second-dependent", &[(&owners[1], false)], &[]).await;
    api.delete_collection(
        &DeleteParams::orphan(),
        &kube::api::ListParams::default().labels("set=a"),
    )
    .await
    .expect("delete the collection, orphaning");
    wait_for("both owners are gone", || async {
        gone(&api, "first").await && gone(&api, "second").await
    })
    .await;
    for dependent in ["first-dependent", "second-dependent"] {
        assert_eq!(
            owners_of(&api, dependent).await,
            Some(vec![]),
            "{dependent}"
        );
    }
}
conformance!(
    a_collection_delete_propagates_as_each_delete,
    GarbageCollector
);

/// An object created naming an owner that does not exist is collected.
async fn a_dependent_of_an_owner_that_never_existed_is_collected(backend: &Backend) {
    let (_, _, api) = setup(backend, "gc-ghost").await;
    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "orphaned-at-birth", "ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost",
             "uid": "00000000-0000-0000-0000-00000000dead"}]},
    }))
    .expect("a ConfigMap");
    api.create(&PostParams::default(), &cm)
        .await
        .expect("create");
    wait_for("the dependent of a missing owner is collected", || async {
        gone(&api, "orphaned-at-birth").await
    })
    .await;
}
conformance!(
    a_dependent_of_an_owner_that_never_existed_is_collected,
    GarbageCollector
);

/// `orphanDependents` with `propagationPolicy`, or a policy that does not exist, is a 422.
async fn delete_options_kube_apiserver_refuses(backend: &Backend) {
    let (client, ns, api) = setup(backend, "gc-options").await;
    create(&api, "target", &[], &[]).await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps/target");
    for body in [
        json!({"kind": "DeleteOptions", "apiVersion": "v1", "orphanDependents": true,
               "propagationPolicy": "Background"}),
        json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Sideways"}),
    ] {
        let req = http::Request::delete(&path)
            .header("content-type", "application/json")
            .body(serde_json::to_vec(&body).expect("json"))
            .expect("request");
        match client.request::<Value>(req).await {
            Err(kube::Error::Api(status)) => assert_eq!(status.code, 422, "{body}: {status:?}"),
            other => panic!("{body}: expected 422, got {other:?}"),
        }
    }
    assert!(
        !gone(&api, "target").await,
        "a refused delete deletes nothing"
    );
}
conformance!(delete_options_kube_apiserver_refuses);
