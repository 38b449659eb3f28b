//! Hostile responses (`Faults::hostile_next`) over HTTP: each answer is what its doc says, it
//! goes only to the verb it fits, and the count runs out.
// Test helpers outside #[test] fns may unwrap too (clippy's test allowance covers only #[test]).
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::*;
use futures::StreamExt;
use http_body_util::BodyExt;
use informer_testserver::{FaultTarget, HostileResponse, TestServer};

const CMS: &str = "/api/v1/namespaces/default/configmaps";

async fn seeded(n: usize) -> TestServer {
    let server = TestServer::start().await.unwrap();
    for i in 0..n {
        server.create(&cm(&format!("cm-{i}"), &[])).unwrap();
    }
    server
}

#[tokio::test]
async fn list_hostile_bodies_come_with_http_200_then_the_count_runs_out() {
    let server = seeded(3).await;
    let f = server.faults();
    f.hostile_next(
        FaultTarget::List,
        HostileResponse::ListStatusBody {
            code: 410,
            reason: "Expired".into(),
        },
        1,
    );
    let (code, body) = raw(&server, "GET", CMS, None, b"").await;
    assert_eq!(code, 200);
    assert_eq!(body["kind"], "Status");
    assert_eq!(body["code"], 410);

    f.hostile_next(FaultTarget::List, HostileResponse::ListWithoutItems, 1);
    let body = get_ok(&server, CMS).await;
    assert_eq!(body["kind"], "ConfigMapList");
    assert!(body.get("items").is_none(), "{body}");

    f.hostile_next(
        FaultTarget::List,
        HostileResponse::ListOfKind("PodList".into()),
        1,
    );
    assert_eq!(get_ok(&server, CMS).await["kind"], "PodList");

    f.hostile_next(
        FaultTarget::List,
        HostileResponse::ListExtraItem(r#"{"metadata":{"namespace":"default"}}"#.into()),
        1,
    );
    let body = get_ok(&server, CMS).await;
    assert_eq!(body["items"].as_array().map(Vec::len), Some(4));
    assert_eq!(names(&body)[0], "", "the extra item comes first");

    // Every hostile answer was used up: a real list again.
    let body = get_ok(&server, CMS).await;
    assert_eq!(names(&body).len(), 3);
}

#[tokio::test]
async fn endless_continue_repeats_a_token_or_issues_fresh_ones() {
    let server = seeded(3).await;
    let f = server.faults();
    f.hostile_next(
        FaultTarget::List,
        HostileResponse::EndlessContinue { same_token: true },
        2,
    );
    let page = get_ok(&server, &format!("{CMS}?limit=2")).await;
    let token = page["metadata"]["continue"].as_str().unwrap().to_owned();
    let again = get_ok(&server, &format!("{CMS}?limit=2&continue={token}")).await;
    assert_eq!(again["metadata"]["continue"], token.as_str(), "same token");
    assert_eq!(names(&again), names(&page), "served from the start again");

    f.hostile_next(
        FaultTarget::List,
        HostileResponse::EndlessContinue { same_token: false },
        2,
    );
    let a = get_ok(&server, &format!("{CMS}?limit=2")).await;
    let ta = a["metadata"]["continue"].as_str().unwrap().to_owned();
    let b = get_ok(&server, &format!("{CMS}?limit=2&continue={ta}")).await;
    assert_ne!(b["metadata"]["continue"], ta.as_str(), "a fresh token");
    assert!(b["metadata"]["continue"].is_string());
}

#[tokio::test]
async fn redirect_answers_3xx_with_a_location() {
    let server = seeded(1).await;
    server
        .faults()
        .hostile_next(FaultTarget::Any, HostileResponse::Redirect(302), 1);
    let req = http::Request::get(CMS)
        .body(kube::client::Body::from(Vec::new()))
        .unwrap();
    let resp = server.client().send(req).await.unwrap();
    assert_eq!(resp.status().as_u16(), 302);
    assert!(resp.headers().contains_key(http::header::LOCATION));
}

#[tokio::test]
async fn watch_only_responses_are_not_used_up_by_a_list() {
    let server = seeded(1).await;
    server.faults().hostile_next(
        FaultTarget::Any,
        HostileResponse::WatchErrorObject(r#"{"kind":"Secret","apiVersion":"v1"}"#.into()),
        1,
    );
    assert_eq!(names(&get_ok(&server, CMS).await).len(), 1, "a real LIST");
    let mut lines = Lines::open(&server, &format!("{CMS}?watch=true")).await;
    assert_eq!(lines.status, 200);
    let ev = lines.next().await.unwrap();
    assert_eq!(ev["type"], "ERROR");
    assert_eq!(ev["object"]["kind"], "Secret");
}

#[tokio::test]
async fn unterminated_watch_line_sends_its_bytes_without_a_newline_and_stays_open() {
    let server = seeded(1).await;
    let len = 300 * 1024;
    server.faults().hostile_next(
        FaultTarget::Watch,
        HostileResponse::UnterminatedWatchLine { len },
        1,
    );
    let req = http::Request::get(format!("{CMS}?watch=true"))
        .body(kube::client::Body::from(Vec::new()))
        .unwrap();
    let resp = server.client().send(req).await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let mut body = resp.into_body().into_data_stream();
    let mut got = Vec::new();
    while got.len() < len {
        let chunk = tokio::time::timeout(Duration::from_secs(10), body.next())
            .await
            .expect("data within 10 s")
            .expect("the stream stays open")
            .unwrap();
        got.extend_from_slice(&chunk);
    }
    assert_eq!(got.len(), len);
    assert!(!got.contains(&b'\n'));
    assert!(got.starts_with(br#"{"type":"ADDED""#));
    // Nothing more arrives, and the connection is not closed.
    let more = tokio::time::timeout(Duration::from_millis(200), body.next()).await;
    assert!(more.is_err(), "silence after the line");
}
