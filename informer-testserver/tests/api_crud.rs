//! kube `Api` CRUD, list and watch against the test server, for a built-in kind and a CRD.
// Test helpers outside #[test] fns may unwrap too (clippy's test allowance covers only #[test]).
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::*;
use futures::{StreamExt, TryStreamExt};
use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};

const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<TestServer>();
    send_sync::<informer_testserver::Faults>();
    send_sync::<informer_testserver::RequestRecord>();
};

#[tokio::test]
async fn configmap_crud_over_http() {
    let server = TestServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let created = api
        .create(&PostParams::default(), &cm("a", &[("app", "x")]))
        .await
        .unwrap();
    let meta = &created.metadata;
    assert!(meta.uid.is_some() && meta.creation_timestamp.is_some());
    let rv: u64 = meta.resource_version.as_deref().unwrap().parse().unwrap();
    assert_eq!(rv, server.current_resource_version());

    let got = api.get("a").await.unwrap();
    assert_eq!(got.data, created.data);

    // Optimistic concurrency: replace with the current RV works, a stale RV is 409 Conflict.
    let mut next = got.clone();
    next.data = Some([("k".to_owned(), "v2".to_owned())].into());
    let replaced = api
        .replace("a", &PostParams::default(), &next)
        .await
        .unwrap();
    assert_ne!(
        replaced.metadata.resource_version,
        got.metadata.resource_version
    );
    assert_eq!(
        api_reason(api.replace("a", &PostParams::default(), &next).await),
        (409, "Conflict".to_owned())
    );

    // Merge patch and JSON patch.
    let patched = api
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"data": {"m": "1"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        patched.data.as_ref().unwrap().get("m").map(String::as_str),
        Some("1")
    );
    let req = http::Request::patch("/api/v1/namespaces/default/configmaps/a")
        .header("content-type", "application/json-patch+json")
        .body(br#"[{"op": "remove", "path": "/data/m"}]"#.to_vec())
        .unwrap();
    let patched: ConfigMap = server.client().request(req).await.unwrap();
    assert!(!patched.data.as_ref().unwrap().contains_key("m"));

    // Duplicate create is 409 AlreadyExists; unknown name is 404.
    assert_eq!(
        api_reason(api.create(&PostParams::default(), &cm("a", &[])).await),
        (409, "AlreadyExists".to_owned())
    );
    assert_eq!(api_code(api.get("missing").await), 404);

    // generateName.
    let mut generated = cm("", &[]);
    generated.metadata.name = None;
    generated.metadata.generate_name = Some("gen-".into());
    let g = api
        .create(&PostParams::default(), &generated)
        .await
        .unwrap();
    assert!(g.metadata.name.as_deref().unwrap().starts_with("gen-"));
    assert_eq!(g.metadata.name.as_deref().unwrap().len(), 9);

    let list = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 2);
    api.delete("a", &DeleteParams::default()).await.unwrap();
    assert_eq!(api_code(api.get("a").await), 404);
    assert_eq!(
        api.list(&ListParams::default()).await.unwrap().items.len(),
        1
    );
}

#[tokio::test]
async fn watch_replays_from_a_resource_version_and_follows() {
    // A dropped watch is noticed on the server's next write; bookmarks make that prompt.
    let server = TestServer::builder()
        .bookmark_interval(Duration::from_millis(100))
        .start()
        .await
        .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let start = server.current_resource_version().to_string();
    server.create(&cm("w1", &[])).unwrap();
    let mut stream = api
        .watch(&WatchParams::default().timeout(10), &start)
        .await
        .unwrap()
        .boxed();
    match stream.try_next().await.unwrap() {
        Some(WatchEvent::Added(o)) => assert_eq!(o.metadata.name.as_deref(), Some("w1")),
        other => panic!("unexpected {other:?}"),
    }
    server
        .patch_json(
            "v1",
            "ConfigMap",
            Some("default"),
            "w1",
            &serde_json::json!({"data": {"x": "y"}}),
        )
        .unwrap();
    let mut next = async || loop {
        match stream.try_next().await.unwrap() {
            Some(WatchEvent::Bookmark(_)) => continue,
            other => return other,
        }
    };
    assert!(matches!(next().await, Some(WatchEvent::Modified(_))));
    server.delete::<ConfigMap>(Some("default"), "w1").unwrap();
    assert!(matches!(next().await, Some(WatchEvent::Deleted(_))));
    assert_eq!(server.active_watches(), 1);
    drop(stream);
    assert!(
        server
            .wait_for_active_watches(0, Duration::from_secs(5))
            .await
    );
}

#[tokio::test]
async fn crd_makes_its_resource_served_and_deleting_it_removes_it() {
    let server = TestServer::start().await.unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(server.client());
    let crd: CustomResourceDefinition = serde_json::from_value(widget_crd()).unwrap();
    let created = crds.create(&PostParams::default(), &crd).await.unwrap();
    let conds = created.status.unwrap().conditions.unwrap();
    assert!(
        conds
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True")
    );

    let widgets: Api<Widget> = Api::namespaced(server.client(), "default");
    let w = Widget::new("w", WidgetSpec { size: 3 });
    let stream = widgets
        .watch(&WatchParams::default().timeout(10), "0")
        .await
        .unwrap();
    futures::pin_mut!(stream);
    let created = widgets.create(&PostParams::default(), &w).await.unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    match stream.next().await {
        Some(Ok(WatchEvent::Added(o))) => assert_eq!(o.spec.size, 3),
        other => panic!("unexpected {other:?}"),
    }

    // The status subresource: main-resource writes ignore status, /status writes only status.
    let mut with_status = created.clone();
    with_status.status = Some(WidgetStatus { ready: true });
    let after = widgets
        .replace("w", &PostParams::default(), &with_status)
        .await
        .unwrap();
    assert_eq!(after.status, None);
    let after = widgets
        .patch_status(
            "w",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"status": {"ready": true}, "spec": {"size": 9}})),
        )
        .await
        .unwrap();
    assert_eq!(after.status, Some(WidgetStatus { ready: true }));
    assert_eq!(after.spec.size, 3);
    assert_eq!(after.metadata.generation, Some(1));
    let after = widgets
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"size": 4}})),
        )
        .await
        .unwrap();
    assert_eq!(after.metadata.generation, Some(2));

    assert_eq!(
        widgets
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    let watches_before = server.active_watches();
    crds.delete("widgets.example.com", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(api_code(widgets.list(&ListParams::default()).await), 404);
    // The open watch on the removed resource ends (after its pending and DELETED events).
    loop {
        match tokio::time::timeout(Duration::from_secs(5), stream.next())
            .await
            .unwrap()
        {
            Some(Ok(
                WatchEvent::Modified(_) | WatchEvent::Deleted(_) | WatchEvent::Bookmark(_),
            )) => {}
            None => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(
        server
            .wait_for_active_watches(watches_before - 1, Duration::from_secs(5))
            .await
    );
}

#[tokio::test]
async fn seeding_helpers_take_the_store_path() {
    let server = TestServer::start().await.unwrap();
    server.create_json(widget_crd()).unwrap();
    let w = Widget::new("seeded", WidgetSpec { size: 1 });
    let v = server.create(&w).unwrap();
    assert_eq!(v["metadata"]["namespace"], "default");
    let got: Widget = server.get(Some("default"), "seeded").unwrap();
    assert_eq!(got.spec.size, 1);
    let objs = server
        .apply_yaml("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  a: b\n---\napiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: seeded\nspec:\n  size: 2\n")
        .unwrap();
    assert_eq!(objs.len(), 2);
    let got: Widget = server.get(Some("default"), "seeded").unwrap();
    assert_eq!(got.spec.size, 2);
    // update_json replaces; a stale resourceVersion is refused like over HTTP.
    let mut cfg = objs[0].clone();
    cfg["data"] = serde_json::json!({"a": "c"});
    let updated = server.update_json(cfg.clone()).unwrap();
    assert_eq!(updated["data"]["a"], "c");
    assert_ne!(
        updated["metadata"]["resourceVersion"],
        cfg["metadata"]["resourceVersion"]
    );
    let stale = server.update_json(cfg).unwrap_err();
    assert_eq!(stale.code(), Some(409));
    let err = server
        .get::<ConfigMap>(Some("default"), "nope")
        .unwrap_err();
    assert_eq!(err.code(), Some(404));
}
