//! Server-side sharded LIST and WATCH (KEP-5866) over HTTP: `shardSelector` on
//! LIST, WATCH and watch-list, the `shardInfo` echo, 400 for a malformed selector, and the switch
//! that makes the server behave like one without the `ShardedListAndWatch` gate.
// Test helpers outside #[test] fns may unwrap too (clippy's test allowance covers only #[test]).
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;

use common::*;
use informer_testserver::{TestServer, shard_hash};

const CMS: &str = "/api/v1/configmaps";

/// `shardRange(object.metadata.uid, start, end)` for shard `i` of `n` (equal ranges).
fn shard_of(field: &str, i: u128, n: u128) -> String {
    let size = (1u128 << 64) / n;
    let start = i * size;
    let end = if i + 1 == n {
        1u128 << 64
    } else {
        (i + 1) * size
    };
    let hex = |v: u128| {
        if v == 1u128 << 64 {
            "0x10000000000000000".to_string()
        } else {
            format!("0x{v:016x}")
        }
    };
    format!("shardRange({field}, '{}', '{}')", hex(start), hex(end))
}

/// Percent-encodes a query value.
fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Every ConfigMap's (name, uid) on the server.
async fn all(server: &TestServer) -> Vec<(String, String)> {
    let list = get_ok(server, CMS).await;
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["metadata"]["name"].as_str().unwrap().to_owned(),
                i["metadata"]["uid"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn list_shards_partition_the_collection_by_uid_hash_and_echo_shard_info() {
    let server = TestServer::start().await.unwrap();
    for i in 0..200 {
        server.create(&cm(&format!("cm-{i:03}"), &[])).unwrap();
    }
    let everything = all(&server).await;
    let mut seen = BTreeSet::new();
    for i in 0..4 {
        let sel = shard_of("object.metadata.uid", i, 4);
        let list = get_ok(&server, &format!("{CMS}?shardSelector={}", enc(&sel))).await;
        assert_eq!(
            list["metadata"]["shardInfo"]["selector"],
            sel.as_str(),
            "{list}"
        );
        for item in list["items"].as_array().unwrap() {
            let name = item["metadata"]["name"].as_str().unwrap().to_owned();
            let uid = item["metadata"]["uid"].as_str().unwrap();
            let h = u128::from(shard_hash(uid));
            let size = (1u128 << 64) / 4;
            assert!(
                h >= i * size && (i == 3 || h < (i + 1) * size),
                "{name} in shard {i}"
            );
            assert!(seen.insert(name), "an object in two shards");
        }
    }
    assert_eq!(
        seen.len(),
        everything.len(),
        "every object in exactly one shard"
    );
    // Paged lists page within the shard.
    let sel = shard_of("object.metadata.uid", 0, 2);
    let mut names = BTreeSet::new();
    let mut cont = String::new();
    loop {
        let list = get_ok(
            &server,
            &format!("{CMS}?limit=7&shardSelector={}&continue={cont}", enc(&sel)),
        )
        .await;
        assert_eq!(list["metadata"]["shardInfo"]["selector"], sel.as_str());
        names.extend(names_of(&list));
        match list["metadata"]["continue"].as_str() {
            Some(c) if !c.is_empty() => cont = c.to_owned(),
            _ => break,
        }
    }
    let expected: BTreeSet<String> = everything
        .iter()
        .filter(|(_, uid)| shard_hash(uid) < 1 << 63)
        .map(|(n, _)| n.clone())
        .collect();
    assert_eq!(names, expected);
    // Two ranges joined by || cover their union; namespace sharding hashes the namespace.
    let both = format!(
        "{} || {}",
        shard_of("object.metadata.uid", 0, 4),
        shard_of("object.metadata.uid", 3, 4)
    );
    let list = get_ok(&server, &format!("{CMS}?shardSelector={}", enc(&both))).await;
    let size = (1u128 << 64) / 4;
    for (_, uid) in everything
        .iter()
        .filter(|(n, _)| names_of(&list).contains(n))
    {
        let h = u128::from(shard_hash(uid));
        assert!(h < size || h >= 3 * size);
    }
    let ns = shard_of("object.metadata.namespace", 0, 1);
    let list = get_ok(&server, &format!("{CMS}?shardSelector={}", enc(&ns))).await;
    assert_eq!(list["items"].as_array().unwrap().len(), everything.len());
}

fn names_of(list: &serde_json::Value) -> Vec<String> {
    names(list)
}

#[tokio::test]
async fn watch_and_watch_list_send_only_the_shard_and_keep_bookmarks() {
    let server = TestServer::start().await.unwrap();
    for i in 0..40 {
        server.create(&cm(&format!("cm-{i:02}"), &[])).unwrap();
    }
    let sel = shard_of("object.metadata.uid", 1, 2);
    let in_shard = |uid: &str| shard_hash(uid) >= 1 << 63;
    let everything = all(&server).await;
    let expected: BTreeSet<String> = everything
        .iter()
        .filter(|(_, uid)| in_shard(uid))
        .map(|(n, _)| n.clone())
        .collect();
    // Watch-list: initial events of the shard only, then the end bookmark.
    let mut w = Lines::open(
        &server,
        &format!(
            "{CMS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&shardSelector={}",
            enc(&sel)
        ),
    )
    .await;
    assert_eq!(w.status, 200);
    let mut initial = BTreeSet::new();
    loop {
        let ev = w.next().await.expect("stream open");
        if ev["type"] == "BOOKMARK" {
            assert_eq!(
                ev["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
                "true"
            );
            break;
        }
        initial.insert(
            ev["object"]["metadata"]["name"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    assert_eq!(initial, expected);
    // Live events: only objects of the shard arrive.
    for i in 0..40 {
        server.create(&cm(&format!("live-{i:02}"), &[])).unwrap();
    }
    let live: Vec<(String, String)> = all(&server)
        .await
        .into_iter()
        .filter(|(n, _)| n.starts_with("live-"))
        .collect();
    let want = live.iter().filter(|(_, uid)| in_shard(uid)).count();
    assert!(
        want > 0 && want < live.len(),
        "the live objects straddle the shards"
    );
    let got = w.take(want).await;
    for (ty, name) in &got {
        assert_eq!(ty, "ADDED");
        let uid = &live.iter().find(|(n, _)| n == name).unwrap().1;
        assert!(in_shard(uid), "{name} is outside the shard");
    }
}

#[tokio::test]
async fn a_malformed_selector_is_a_400_and_a_server_without_the_gate_ignores_it() {
    let server = TestServer::start().await.unwrap();
    server.create(&cm("a", &[])).unwrap();
    for bad in [
        "shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')",
        "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",
        "shardRange(object.metadata.uid, '0x8000000000000000', '0x0000000000000000')",
        "shardRange(object.metadata.uid, 0x0000000000000000, '0x8000000000000000')",
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000')",
        "uid in (a)",
    ] {
        for q in ["", "watch=true&"] {
            let (code, status) = raw(
                &server,
                "GET",
                &format!("{CMS}?{q}shardSelector={}", enc(bad)),
                None,
                b"",
            )
            .await;
            assert_eq!(code, 400, "{q}{bad}: {status}");
            assert_eq!(status["kind"], "Status");
            assert!(
                status["message"]
                    .as_str()
                    .unwrap()
                    .contains("shardSelector"),
                "{status}"
            );
        }
    }
    // Without the gate: the parameter is ignored, whole collection, no shardInfo.
    server.set_sharded_list_and_watch(false);
    let sel = shard_of("object.metadata.uid", 0, 1024);
    let list = get_ok(&server, &format!("{CMS}?shardSelector={}", enc(&sel))).await;
    assert_eq!(names(&list), vec!["a".to_string()]);
    assert!(list["metadata"].get("shardInfo").is_none(), "{list}");
    let (code, _) = raw(
        &server,
        "GET",
        &format!("{CMS}?shardSelector=garbage"),
        None,
        b"",
    )
    .await;
    assert_eq!(code, 200, "an old server does not even parse it");
}

/// The switches for S4 tests: the gate per verb (API servers behind one load balancer, only
/// some with the gate) and a selector applied and echoed instead of the request's.
#[tokio::test]
async fn the_gate_switches_per_verb_and_an_override_is_applied_and_echoed() {
    let server = TestServer::start().await.unwrap();
    for i in 0..100 {
        server.create(&cm(&format!("cm-{i:03}"), &[])).unwrap();
    }
    let everything = all(&server).await.len();
    let sel = shard_of("object.metadata.uid", 0, 2);
    let url = format!("{CMS}?shardSelector={}", enc(&sel));
    // LIST on, WATCH off.
    server.set_sharded_list(true);
    server.set_sharded_watch(false);
    let list = get_ok(&server, &url).await;
    assert_eq!(list["metadata"]["shardInfo"]["selector"], sel.as_str());
    assert!(names_of(&list).len() < everything);
    // LIST off: everything, no shardInfo.
    server.set_sharded_list(false);
    let list = get_ok(&server, &url).await;
    assert_eq!(names_of(&list).len(), everything);
    assert!(list["metadata"].get("shardInfo").is_none());
    // An override: applied and echoed instead of the request's selector.
    server.set_sharded_list(true);
    let whole = shard_of("object.metadata.uid", 0, 1);
    server.set_shard_selector_override(Some(&whole));
    let list = get_ok(&server, &url).await;
    assert_eq!(list["metadata"]["shardInfo"]["selector"], whole.as_str());
    assert_eq!(names_of(&list).len(), everything);
    server.set_shard_selector_override(None);
    let list = get_ok(&server, &url).await;
    assert_eq!(list["metadata"]["shardInfo"]["selector"], sel.as_str());
}
