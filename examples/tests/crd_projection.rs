//! Projections of types generated from CRD schemas (P4, P5): a projection of the
//! generated `Gizmo` reads each field under the JSON name the generated type gives it (`$ref`,
//! `fooBar` and `foo_bar` as two fields, `self`, `8080`), from LIST pages and from watch events,
//! over HTTP (`kube::Client` against informer-testserver).
//!
//! Run with `cargo test -p informer-examples --test crd_projection`.

use informer_test_support::{WAIT, wait_until};

use informer_examples::generated::gizmos::v1;
use informer_runtime::lister::Lister;
use informer_runtime::projection::{IStr, SlimMeta};
use informer_runtime::reflector::{InitialListStrategy, ReflectorConfig};
use informer_runtime::{Projection, SharedInformerFactory};
use informer_testserver::TestServer;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

/// A controller's view of a Gizmo: its size and, of each item, every field whose JSON name is not
/// its Rust name.
#[derive(Projection, Clone, Debug)]
#[projection(of = v1::full::Gizmo)]
struct GizmoView {
    metadata: SlimMeta,
    spec: GizmoSpecView,
}

#[derive(Projection, Clone, Debug, Default)]
#[projection(of = v1::GizmoSpec)]
struct GizmoSpecView {
    size: i32,
    required_nullable: Option<IStr>,
    items: Option<Box<[ItemView]>>,
}

/// `fooBar` is `foo_bar` and `foo_bar` is `foo_bar_2` in the generated type; `$ref` is `r#ref`.
#[derive(Projection, Clone, Debug, Default, PartialEq)]
#[projection(of = v1::GizmoSpecItems)]
struct ItemView {
    r#type: IStr,
    r#ref: Option<IStr>,
    foo_bar: Option<IStr>,
    foo_bar_2: Option<IStr>,
    self_: Option<IStr>,
    _8080: Option<i64>,
}

fn gizmo_json(name: &str, items: Value) -> Value {
    json!({
        "apiVersion": "features.example.com/v1",
        "kind": "Gizmo",
        "metadata": {"name": name, "namespace": "prod"},
        "spec": {"size": 2, "requiredNullable": "set", "items": items}
    })
}

fn item(
    ty: &str,
    r#ref: Option<&str>,
    camel: Option<&str>,
    snake: Option<&str>,
    self_: Option<&str>,
    port: Option<i64>,
) -> ItemView {
    ItemView {
        r#type: IStr::new(ty),
        r#ref: r#ref.map(IStr::new),
        foo_bar: camel.map(IStr::new),
        foo_bar_2: snake.map(IStr::new),
        self_: self_.map(IStr::new),
        _8080: port,
    }
}

fn items_of(lister: &Lister<GizmoView>, name: &str) -> Option<Vec<ItemView>> {
    let view = lister.namespaced("prod").get(name).ok()?;
    Some(view.spec.items.as_deref().unwrap_or_default().to_vec())
}

/// The items every test writes: both spellings of `foo bar`, each alone, and `$ref`.
fn first_items() -> Value {
    json!([
        {"type": "both", "fooBar": "camel", "foo_bar": "snake", "$ref": "#/r", "self": "s", "8080": 1},
        {"type": "snake-only", "foo_bar": "snake"},
        {"type": "camel-only", "fooBar": "camel", "$ref": "#/only"}
    ])
}

fn first_views() -> Vec<ItemView> {
    vec![
        item(
            "both",
            Some("#/r"),
            Some("camel"),
            Some("snake"),
            Some("s"),
            Some(1),
        ),
        item("snake-only", None, None, Some("snake"), None, None),
        item(
            "camel-only",
            Some("#/only"),
            Some("camel"),
            None,
            None,
            None,
        ),
    ]
}

async fn server_with_crd() -> TestServer {
    let server = TestServer::start().await.expect("testserver");
    server
        .apply_yaml(include_str!("../crds/features.yaml"))
        .expect("the manifest installs");
    server
}

/// LIST: objects that exist before the informer starts are decoded from a LIST page, and each
/// JSON key lands in its own field whatever the others are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p4_p5_a_projection_of_a_generated_type_reads_renamed_and_colliding_keys_from_a_list() {
    let server = server_with_crd().await;
    server
        .create_json(gizmo_json("listed", first_items()))
        .expect("seeded");
    let factory = SharedInformerFactory::builder(server.client())
        .reflector_config(ReflectorConfig {
            strategy: InitialListStrategy::ListWatch,
            ..Default::default()
        })
        .build();
    let informer = factory.informer_for::<GizmoView>();
    factory.start();
    factory
        .wait_for_cache_sync_timeout(WAIT)
        .await
        .expect("syncs");
    assert!(
        server
            .requests()
            .iter()
            .any(|r| r.is_list() && r.path.ends_with("/gizmos")),
        "the object came from a LIST"
    );
    let lister = Lister::from_indexer(informer.indexer().clone());
    assert_eq!(items_of(&lister, "listed"), Some(first_views()));
    let view = lister.namespaced("prod").get("listed").expect("cached");
    assert_eq!(view.spec.size, 2);
    assert_eq!(view.spec.required_nullable.as_deref(), Some("set"));
    factory.shutdown().await;
}

/// WATCH: objects created and changed through `kube::Api<Gizmo>` after the sync arrive as watch
/// events and are decoded the same way; a change that swaps the two spellings is followed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p4_p5_a_projection_of_a_generated_type_reads_renamed_and_colliding_keys_from_a_watch() {
    let server = server_with_crd().await;
    let factory = SharedInformerFactory::builder(server.client())
        .reflector_config(ReflectorConfig {
            strategy: InitialListStrategy::ListWatch,
            ..Default::default()
        })
        .build();
    let informer = factory.informer_for::<GizmoView>();
    factory.start();
    factory
        .wait_for_cache_sync_timeout(WAIT)
        .await
        .expect("syncs");
    let lister = Lister::from_indexer(informer.indexer().clone());

    let api: Api<v1::full::Gizmo> = Api::namespaced(server.client(), "prod");
    let sent: v1::full::Gizmo =
        serde_json::from_value(gizmo_json("watched", first_items())).expect("a Gizmo");
    api.create(&PostParams::default(), &sent)
        .await
        .expect("create");
    wait_until("the ADDED event", || items_of(&lister, "watched").is_some()).await;
    assert_eq!(items_of(&lister, "watched"), Some(first_views()));

    let swapped = json!({"spec": {"items": [
        {"type": "both", "fooBar": "snake", "foo_bar": "camel", "$ref": "#/changed"},
        {"type": "camel-only", "fooBar": "camel"}
    ]}});
    api.patch("watched", &PatchParams::default(), &Patch::Merge(&swapped))
        .await
        .expect("patch");
    let expected = vec![
        item(
            "both",
            Some("#/changed"),
            Some("snake"),
            Some("camel"),
            None,
            None,
        ),
        item("camel-only", None, Some("camel"), None, None, None),
    ];
    wait_until("the MODIFIED event", || {
        items_of(&lister, "watched").is_some_and(|items| items.len() == 2)
    })
    .await;
    assert_eq!(items_of(&lister, "watched"), Some(expected));
    assert!(
        server
            .requests()
            .iter()
            .any(|r| r.is_watch() && r.path.ends_with("/gizmos")),
        "the changes came from a WATCH"
    );
    factory.shutdown().await;
}
