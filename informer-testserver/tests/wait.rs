//! `TestServer::wait_until` / `wait_until_all`: conditions on the stored state, re-checked after
//! every write, from HTTP or the handle.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use informer_testserver::{Error, TestServer};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, PostParams};

const WAIT: Duration = Duration::from_secs(20);

fn cm(name: &str, v: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.data = Some([("v".to_owned(), v.to_owned())].into());
    cm
}

fn v(cm: Option<&ConfigMap>) -> Option<&str> {
    cm?.data.as_ref()?.get("v").map(String::as_str)
}

#[tokio::test]
async fn wait_until_sees_a_later_http_write_and_returns_that_state() {
    let server = TestServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    // The waiter starts first and must be woken by the writes, not find them already there.
    let waiter = server.wait_until::<ConfigMap>(Some("default"), "a", WAIT, |c| v(c) == Some("2"));
    let writer = async {
        api.create(&PostParams::default(), &cm("a", "1"))
            .await
            .unwrap();
        api.replace("a", &PostParams::default(), &{
            let mut c = api.get("a").await.unwrap();
            c.data = cm("a", "2").data;
            c
        })
        .await
        .unwrap();
    };
    let (found, ()) = tokio::join!(waiter, writer);
    assert_eq!(v(found.unwrap().as_ref()), Some("2"));

    // `None` is what the condition sees once the object is gone.
    let gone = server.wait_until::<ConfigMap>(Some("default"), "a", WAIT, |c| c.is_none());
    let delete = async {
        api.delete("a", &DeleteParams::default()).await.unwrap();
    };
    let (gone, ()) = tokio::join!(gone, delete);
    assert!(gone.unwrap().is_none());
}

#[tokio::test]
async fn wait_until_all_counts_the_objects_of_a_namespace() {
    let server = TestServer::start().await.unwrap();
    server.create(&cm("x", "1")).unwrap();
    let mut other = cm("y", "1");
    other.metadata.namespace = Some("other".into());
    server.create(&other).unwrap();
    let two = server.wait_until_all::<ConfigMap>(Some("default"), WAIT, |all| all.len() == 2);
    let write = async { server.create(&cm("z", "1")).unwrap() };
    let (two, _) = tokio::join!(two, write);
    let names: Vec<_> = two
        .unwrap()
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    assert_eq!(names, ["x", "z"]);
    let everywhere = server
        .wait_until_all::<ConfigMap>(None, WAIT, |all| all.len() == 3)
        .await
        .unwrap();
    assert_eq!(everywhere.len(), 3);
    // Cluster-scoped kinds ignore the namespace.
    let mut ns = Namespace::default();
    ns.metadata.name = Some("n1".into());
    server.create(&ns).unwrap();
    let named = |all: &[Namespace]| -> Vec<String> {
        all.iter().filter_map(|n| n.metadata.name.clone()).collect()
    };
    let nss = server
        .wait_until_all::<Namespace>(Some("default"), WAIT, |all| {
            named(all).contains(&"n1".to_owned())
        })
        .await
        .unwrap();
    assert!(
        named(&nss).contains(&"default".to_owned()),
        "{:?}",
        named(&nss)
    );
}

#[tokio::test]
async fn a_condition_that_never_holds_times_out_naming_it() {
    let server = TestServer::start().await.unwrap();
    server.create(&cm("a", "1")).unwrap();
    let err = server
        .wait_until::<ConfigMap>(Some("default"), "a", Duration::from_millis(50), |c| {
            v(c) == Some("never")
        })
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "{err}");
    assert!(err.to_string().contains("configmaps default/a"), "{err}");
}
