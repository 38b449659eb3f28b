//! Garbage collection on the test server alone: what the conformance scenarios cannot hold
//! kube-apiserver to (decision record 28). Off (the default), a delete's propagation is ignored;
//! turned on while the server runs, what is already collectable goes at once; a chain of
//! dependents deleted in the foreground goes bottom-up, the owner last.

use futures::TryStreamExt;
use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;

async fn create(api: &Api<ConfigMap>, name: &str, owner: Option<&ConfigMap>) -> ConfigMap {
    let refs: Vec<serde_json::Value> = owner
        .map(|o| {
            json!({"apiVersion": "v1", "kind": "ConfigMap", "name": o.name_any(),
                   "uid": o.uid().unwrap_or_default(), "blockOwnerDeletion": true})
        })
        .into_iter()
        .collect();
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": name, "ownerReferences": refs}}))
            .expect("a ConfigMap");
    api.create(&PostParams::default(), &cm)
        .await
        .expect("create")
}

#[tokio::test]
async fn off_a_delete_ignores_its_propagation_and_collects_nothing() {
    let server = TestServer::start().await.expect("start");
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let owner = create(&api, "owner", None).await;
    create(&api, "child", Some(&owner)).await;
    let answer = api
        .delete("owner", &DeleteParams::foreground())
        .await
        .expect("delete");
    assert!(answer.is_left(), "the deleted object is answered");
    assert!(
        api.get_opt("owner").await.expect("get").is_none(),
        "no finalizer was set"
    );
    let child = api
        .get("child")
        .await
        .expect("the child stays without a collector");
    assert_eq!(child.owner_references().len(), 1);
}

#[tokio::test]
async fn turned_on_it_collects_what_is_already_collectable() {
    let server = TestServer::start().await.expect("start");
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let owner = create(&api, "owner", None).await;
    create(&api, "child", Some(&owner)).await;
    api.delete("owner", &DeleteParams::default())
        .await
        .expect("delete");
    assert!(api.get_opt("child").await.expect("get").is_some());
    server.set_garbage_collection(true);
    assert!(api.get_opt("child").await.expect("get").is_none());
}

#[tokio::test]
async fn a_foreground_chain_goes_bottom_up_the_owner_last() {
    let server = TestServer::builder()
        .garbage_collection(true)
        .start()
        .await
        .expect("start");
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let top = create(&api, "top", None).await;
    let middle = create(&api, "middle", Some(&top)).await;
    create(&api, "bottom", Some(&middle)).await;
    let from = server.current_resource_version();
    api.delete("top", &DeleteParams::foreground())
        .await
        .expect("delete");
    for name in ["top", "middle", "bottom"] {
        assert!(api.get_opt(name).await.expect("get").is_none(), "{name}");
    }
    // The order of the deletions, as a watch from before the delete sees them.
    let stream = api
        .watch(&WatchParams::default().timeout(10), &from.to_string())
        .await
        .expect("watch");
    let mut stream = std::pin::pin!(stream);
    let mut deleted = Vec::new();
    while deleted.len() < 3 {
        match stream.try_next().await.expect("a watch event") {
            Some(WatchEvent::Deleted(cm)) => deleted.push(cm.name_any()),
            Some(_) => {}
            None => break,
        }
    }
    assert_eq!(deleted, ["bottom", "middle", "top"]);
}
