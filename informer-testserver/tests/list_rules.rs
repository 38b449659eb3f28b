//! LIST over HTTP: paging and continue expiry, every resourceVersion rule, selectors and
//! metadata-only lists.
// Test helpers outside #[test] fns may unwrap too (clippy's test allowance covers only #[test]).
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use informer_testserver::{TestServer, Verb};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams};

const CMS: &str = "/api/v1/namespaces/default/configmaps";

async fn seeded(n: usize) -> TestServer {
    let server = TestServer::start().await.unwrap();
    for i in 0..n {
        server
            .create(&cm(
                &format!("cm-{i:04}"),
                &[("app", if i % 2 == 0 { "even" } else { "odd" })],
            ))
            .unwrap();
    }
    server
}

#[tokio::test]
async fn paging_walks_every_item_once_at_one_resource_version() {
    let server = seeded(1200).await;
    let list_rv = server.current_resource_version();
    let mut seen = Vec::new();
    let mut cont = String::new();
    let mut pages = 0;
    loop {
        let page = get_ok(&server, &format!("{CMS}?limit=500&continue={cont}")).await;
        assert_eq!(page["metadata"]["resourceVersion"], list_rv.to_string());
        seen.extend(names(&page));
        pages += 1;
        // A write between pages must not show up in later pages (consistent snapshot).
        if pages == 1 {
            server.create(&cm("cm-9999", &[])).unwrap();
            server
                .delete::<ConfigMap>(Some("default"), "cm-1100")
                .unwrap();
        }
        match page["metadata"]["continue"].as_str() {
            Some(c) => cont = c.to_owned(),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(seen.len(), 1200);
    assert!(seen.contains(&"cm-1100".to_owned()) && !seen.contains(&"cm-9999".to_owned()));
    let lists: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.verb == Verb::List)
        .collect();
    assert_eq!(lists.len(), 3);
    assert!(lists.iter().all(|r| r.query.limit == Some(500)));

    // kube's paginated list_all-style walk works too.
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let first = api.list(&ListParams::default().limit(700)).await.unwrap();
    assert_eq!(first.items.len(), 700);
    let rest = api
        .list(
            &ListParams::default()
                .limit(700)
                .continue_token(first.metadata.continue_.as_deref().unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(rest.items.len(), 500);
    assert!(rest.metadata.continue_.is_none());
}

#[tokio::test]
async fn expired_continue_tokens_answer_410() {
    let server = seeded(10).await;
    let page = get_ok(&server, &format!("{CMS}?limit=4")).await;
    let cont = page["metadata"]["continue"].as_str().unwrap().to_owned();
    server.expire_continue_tokens();
    let (code, status) = raw(
        &server,
        "GET",
        &format!("{CMS}?limit=4&continue={cont}"),
        None,
        b"",
    )
    .await;
    assert_eq!((code, status["reason"].as_str()), (410, Some("Expired")));
    assert_eq!(status["kind"], "Status");

    // Compaction past a token's RV expires it as well.
    let page = get_ok(&server, &format!("{CMS}?limit=4")).await;
    let cont = page["metadata"]["continue"].as_str().unwrap().to_owned();
    server.create(&cm("later", &[])).unwrap();
    server.compact_all();
    let (code, _) = raw(
        &server,
        "GET",
        &format!("{CMS}?limit=4&continue={cont}"),
        None,
        b"",
    )
    .await;
    assert_eq!(code, 410);
    // The fault switch expires the next continued request only.
    let page = get_ok(&server, &format!("{CMS}?limit=4")).await;
    let cont = page["metadata"]["continue"].as_str().unwrap().to_owned();
    server.faults().expire_continue_tokens();
    let (code, _) = raw(
        &server,
        "GET",
        &format!("{CMS}?limit=4&continue={cont}"),
        None,
        b"",
    )
    .await;
    assert_eq!(code, 410);
    let (code, _) = raw(
        &server,
        "GET",
        &format!("{CMS}?limit=4&continue={cont}"),
        None,
        b"",
    )
    .await;
    assert_eq!(code, 200);
    // A malformed token is a 400.
    let (code, _) = raw(
        &server,
        "GET",
        &format!("{CMS}?limit=4&continue=zzz"),
        None,
        b"",
    )
    .await;
    assert_eq!(code, 400);
}

#[tokio::test]
async fn resource_version_rules_for_list() {
    let server = seeded(3).await;
    let rv_at_3 = server.current_resource_version();
    server.create(&cm("cm-late", &[])).unwrap();
    let now = server.current_resource_version();

    // "" and "0": the latest state.
    for q in [
        "",
        "?resourceVersion=",
        "?resourceVersion=0",
        "?resourceVersion=0&resourceVersionMatch=NotOlderThan",
    ] {
        let l = get_ok(&server, &format!("{CMS}{q}")).await;
        assert_eq!(names(&l).len(), 4, "{q}");
        assert_eq!(l["metadata"]["resourceVersion"], now.to_string());
    }
    // NotOlderThan an older RV: the latest state.
    let l = get_ok(
        &server,
        &format!("{CMS}?resourceVersion={rv_at_3}&resourceVersionMatch=NotOlderThan"),
    )
    .await;
    assert_eq!(names(&l).len(), 4);
    // Exact: the state at that RV.
    let l = get_ok(
        &server,
        &format!("{CMS}?resourceVersion={rv_at_3}&resourceVersionMatch=Exact"),
    )
    .await;
    assert_eq!(names(&l).len(), 3);
    assert_eq!(l["metadata"]["resourceVersion"], rv_at_3.to_string());
    // Legacy: a specific RV with a limit is exact.
    let l = get_ok(
        &server,
        &format!("{CMS}?resourceVersion={rv_at_3}&limit=10"),
    )
    .await;
    assert_eq!(names(&l).len(), 3);

    // Too large: 504 Timeout with the ResourceVersionTooLarge cause.
    for m in ["NotOlderThan", "Exact"] {
        let (code, st) = raw(
            &server,
            "GET",
            &format!(
                "{CMS}?resourceVersion={}&resourceVersionMatch={m}",
                now + 10
            ),
            None,
            b"",
        )
        .await;
        assert_eq!((code, st["reason"].as_str()), (504, Some("Timeout")), "{m}");
        assert!(
            st["message"]
                .as_str()
                .unwrap()
                .contains("Too large resource version")
        );
        assert_eq!(
            st["details"]["causes"][0]["reason"],
            "ResourceVersionTooLarge"
        );
    }
    // Too old for Exact after compaction: 410.
    server.compact_all();
    let (code, st) = raw(
        &server,
        "GET",
        &format!("{CMS}?resourceVersion={rv_at_3}&resourceVersionMatch=Exact"),
        None,
        b"",
    )
    .await;
    assert_eq!((code, st["reason"].as_str()), (410, Some("Expired")));
    // Invalid ListOptions are 422 Invalid (kube-apiserver's query validation); a malformed RV 400.
    for q in [
        "?resourceVersionMatch=Exact",
        "?resourceVersion=0&resourceVersionMatch=Exact",
        "?resourceVersion=1&resourceVersionMatch=Newest",
        "?sendInitialEvents=true",
    ] {
        let (code, st) = raw(&server, "GET", &format!("{CMS}{q}"), None, b"").await;
        assert_eq!((code, st["reason"].as_str()), (422, Some("Invalid")), "{q}");
        assert!(
            st["message"]
                .as_str()
                .unwrap()
                .starts_with("ListOptions.meta.k8s.io")
        );
    }
    let (code, st) = raw(
        &server,
        "GET",
        &format!("{CMS}?resourceVersion=abc"),
        None,
        b"",
    )
    .await;
    assert_eq!((code, st["reason"].as_str()), (400, Some("BadRequest")));
}

#[tokio::test]
async fn label_and_field_selectors() {
    let server = seeded(6).await;
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let count = async |lp: ListParams| api.list(&lp).await.unwrap().items.len();
    assert_eq!(count(ListParams::default().labels("app=even")).await, 3);
    assert_eq!(count(ListParams::default().labels("app!=even")).await, 3);
    assert_eq!(
        count(ListParams::default().labels("app in (even,odd)")).await,
        6
    );
    assert_eq!(
        count(ListParams::default().labels("app notin (even)")).await,
        3
    );
    assert_eq!(count(ListParams::default().labels("app")).await, 6);
    assert_eq!(count(ListParams::default().labels("!app")).await, 0);
    assert_eq!(
        count(ListParams::default().fields("metadata.name=cm-0001")).await,
        1
    );
    assert_eq!(
        count(ListParams::default().fields("metadata.name!=cm-0001,metadata.namespace=default"))
            .await,
        5
    );
    // Paging with a selector counts only matches.
    let page = api
        .list(&ListParams::default().labels("app=odd").limit(2))
        .await
        .unwrap();
    assert_eq!(page.items.len(), 2);
    assert!(page.metadata.continue_.is_some());
    // Bad selectors are 400 BadRequest.
    assert_eq!(
        api_reason(api.list(&ListParams::default().labels("app in even")).await),
        (400, "BadRequest".to_owned())
    );
    assert_eq!(
        api_reason(
            api.list(&ListParams::default().fields("spec.foo=bar"))
                .await
        ),
        (400, "BadRequest".to_owned())
    );
    // Cluster-wide lists of namespaced kinds see every namespace.
    server.create_json(serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "other"}})).unwrap();
    let all: Api<ConfigMap> = Api::all(server.client());
    assert_eq!(
        all.list(&ListParams::default()).await.unwrap().items.len(),
        7
    );
    assert_eq!(
        all.list(&ListParams::default().fields("metadata.namespace=other"))
            .await
            .unwrap()
            .items
            .len(),
        1
    );
}

#[tokio::test]
async fn metadata_only_lists_and_gets() {
    let server = seeded(3).await;
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let list = api.list_metadata(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 3);
    assert_eq!(
        list.items[0].types.as_ref().unwrap().kind,
        "PartialObjectMetadata"
    );
    let one = api.get_metadata("cm-0001").await.unwrap();
    assert_eq!(one.metadata.labels.unwrap()["app"], "odd");
    let (_, raw_list) = raw_with(
        &server,
        "GET",
        CMS,
        &[(
            "accept",
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
        )],
        b"",
    )
    .await;
    assert_eq!(raw_list["kind"], "PartialObjectMetadataList");
    assert!(raw_list["items"][0].get("data").is_none());
    // A Table request gets kubectl's ConfigMap columns, one row per object.
    let (_, table) = raw_with(
        &server,
        "GET",
        CMS,
        &[(
            "accept",
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
        )],
        b"",
    )
    .await;
    assert_eq!(table["kind"], "Table");
    let names: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Name", "Data", "Age"]);
    assert_eq!(table["rows"].as_array().unwrap().len(), 3);
    assert_eq!(table["rows"][0]["cells"][0], "cm-0000");
    assert_eq!(table["rows"][0]["cells"][1], 1);
    assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
}
