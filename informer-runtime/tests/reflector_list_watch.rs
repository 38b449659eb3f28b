//! `ListWatch` for typed, dynamic and metadata-only objects against informer-testserver over real HTTP.

mod reflector_support;

use std::time::Duration;

use futures::StreamExt;
use informer_runtime::list_watch::{ListRequest, ListWatch, WatchRequest};
use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ApiResource, DynamicObject, PartialObjectMeta};
use kube::core::WatchEvent;
use reflector_support::*;

fn watch_at(rv: &str) -> WatchRequest {
    WatchRequest {
        resource_version: rv.to_string(),
        timeout: Duration::from_secs(300),
        ..Default::default()
    }
}

#[tokio::test]
async fn typed_list_pages_and_watch_events() {
    // Without the watch cache, a list at "0" is paged.
    let server = TestServer::builder()
        .watch_cache(false)
        .start()
        .await
        .expect("server");
    seed(&server, 3);
    let lw = ListWatch::new(Api::<ConfigMap>::namespaced(server.client(), "default"));
    let page = lw
        .list(&ListRequest {
            resource_version: Some("0".into()),
            limit: Some(2),
            ..Default::default()
        })
        .await
        .expect("list");
    assert_eq!(page.items.len(), 2);
    let token = page.continue_token.clone().expect("a second page");
    let rest = lw
        .list(&ListRequest {
            continue_token: Some(token),
            limit: Some(2),
            ..Default::default()
        })
        .await
        .expect("page 2");
    assert_eq!(rest.items.len(), 1);
    assert!(rest.continue_token.is_none());

    let mut events = lw
        .watch(&watch_at(&page.resource_version))
        .await
        .expect("watch");
    server.create(&cm("new")).expect("create");
    let ev = tokio::time::timeout(WAIT, events.next())
        .await
        .expect("an event");
    match ev {
        Some(Ok(WatchEvent::Added(o))) => assert_eq!(o.metadata.name.as_deref(), Some("new")),
        other => panic!("{other:?}"),
    }
    let w = watches(&server);
    assert_eq!(
        w[0].query.timeout_seconds,
        Some(300),
        "timeoutSeconds ≥ 295 is sent as is"
    );
    assert!(w[0].query.allow_watch_bookmarks);
}

#[tokio::test]
async fn metadata_only_list_and_watch() {
    let server = TestServer::start().await.expect("server");
    seed(&server, 2);
    let lw = ListWatch::<PartialObjectMeta<ConfigMap>>::metadata(Api::all(server.client()));
    let page = lw.list(&ListRequest::default()).await.expect("list");
    assert_eq!(page.items.len(), 2);
    assert!(page.items.iter().all(|o| o.metadata.name.is_some()));
    let mut events = lw
        .watch(&watch_at(&page.resource_version))
        .await
        .expect("watch");
    server.create(&cm("meta")).expect("create");
    match tokio::time::timeout(WAIT, events.next())
        .await
        .expect("an event")
    {
        Some(Ok(WatchEvent::Added(o))) => assert_eq!(o.metadata.name.as_deref(), Some("meta")),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn dynamic_list_and_watch() {
    let server = TestServer::start().await.expect("server");
    seed(&server, 2);
    let ar = ApiResource::erase::<ConfigMap>(&());
    let lw = ListWatch::dynamic(Api::<DynamicObject>::all_with(server.client(), &ar), &ar);
    let page = lw.list(&ListRequest::default()).await.expect("list");
    assert_eq!(page.items.len(), 2);
    let mut events = lw
        .watch(&watch_at(&page.resource_version))
        .await
        .expect("watch");
    server.create(&cm("dyn")).expect("create");
    match tokio::time::timeout(WAIT, events.next())
        .await
        .expect("an event")
    {
        Some(Ok(WatchEvent::Added(o))) => assert_eq!(o.metadata.name.as_deref(), Some("dyn")),
        other => panic!("{other:?}"),
    }
}
