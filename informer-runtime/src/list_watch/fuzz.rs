//! Property tests over hostile input (decision record 09): the watch-event decoder, the sized LIST
//! decoder and the chunked LIST walk get arbitrary bytes and mutated real inputs. None may panic,
//! none may allocate from a length written in the input (every size hint is a count of elements
//! actually present), and the chunked walk decodes exactly what the whole-body decoder decodes.

use std::marker::PhantomData;
use std::mem::{Discriminant, discriminant};
use std::sync::Arc;

use bytes::Bytes;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use proptest::prelude::*;

use super::format::{EventCtx, Fallback, Format, Json, Newer, Protobuf, WireFormat};
use super::{DecodePool, RawListPage, sized};
use crate::shard::{Shard, ShardField};

const CM_EVENT: &str = r#"{"type":"MODIFIED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","resourceVersion":"12","labels":{"app":"web"},"managedFields":[{"manager":"m","operation":"Update","fieldsV1":{"f:data":{}}}]},"data":{"k":"v\n\"q\""}}}"#;
const POD_EVENT: &str = r#"{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"ns","resourceVersion":"3"},"spec":{"containers":[{"name":"c","image":"i","ports":[{"containerPort":80},{"containerPort":443}],"env":[{"name":"A","value":"1"}]}]},"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}}"#;
const ERROR_EVENT: &str = r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","code":410,"reason":"Expired","message":"too old"}}"#;
const BOOKMARK: &str = r#"{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"99","annotations":{"k8s.io/initial-events-end":"true"}}}}"#;

/// A real-looking ConfigMapList body with `n` items.
fn cm_list(n: usize) -> String {
    let items: Vec<String> = (0..n)
        .map(|i| {
            format!(
                r#"{{"metadata":{{"name":"cm-{i}","namespace":"ns-{i}","resourceVersion":"{i}","labels":{{"i":"{i}"}}}},"data":{{"k":"[{{]}}\"\\{i}"}}}}"#
            )
        })
        .collect();
    format!(
        r#"{{"kind":"ConfigMapList","apiVersion":"v1","metadata":{{"resourceVersion":"77"}},"items":[{}]}}"#,
        items.join(",")
    )
}

/// Byte-level mutations of a real input: overwrite, insert (digits make huge numbers), cut,
/// duplicate a slice.
fn mutate(input: &[u8], ops: &[(u8, usize, u8)]) -> Vec<u8> {
    let mut out = input.to_vec();
    for &(op, at, byte) in ops {
        let len = out.len();
        let i = if len == 0 { 0 } else { at % len };
        match op % 4 {
            0 if len > 0 => out[i] = byte,
            1 => out
                .splice(
                    i..i,
                    std::iter::repeat_n(b'0' + byte % 10, 1 + byte as usize % 12),
                )
                .for_each(drop),
            2 => out.truncate(i),
            _ if len > 0 => {
                let end = (i + 1 + byte as usize).min(len);
                let dup = out[i..end].to_vec();
                out.splice(i..i, dup).for_each(drop);
            }
            _ => {}
        }
    }
    out
}

fn ops() -> impl Strategy<Value = Vec<(u8, usize, u8)>> {
    proptest::collection::vec((any::<u8>(), any::<usize>(), any::<u8>()), 0..6)
}

fn page<K>(body: Vec<u8>, exact: bool) -> RawListPage<K> {
    RawListPage {
        body: Bytes::from(body),
        format: Format::Json(Json {
            exact_capacity: exact,
        }),
        list_kinds: Arc::from(vec!["ConfigMapList".to_string()]),
        resource_version: String::new(),
        continue_token: None,
        shard_info: None,
        client_shard: None,
        _k: PhantomData,
    }
}

/// The LIST driver (`streamed.rs`, the body in one piece, inline) against a model, serde_json
/// decoding the whole body at once: (driver, model), names in order.
fn decode_both(
    body: Vec<u8>,
    exact: bool,
) -> (Result<Vec<String>, String>, Result<Vec<String>, String>) {
    #[derive(serde::Deserialize)]
    struct Model {
        kind: Option<String>,
        items: Option<Vec<ConfigMap>>,
    }
    let name = |cm: ConfigMap| cm.metadata.name.unwrap_or_default();
    let pipeline = streamed(body.clone(), false, exact, &[], &DecodePool::inline(), None)
        .map(|(names, _)| names)
        .map_err(|e| format!("{e:?}"));
    let model = serde_json::from_slice::<Model>(&body)
        .map_err(|e| e.to_string())
        .and_then(|m| match m.kind.as_deref() {
            None | Some("ConfigMapList") => Ok(m.items.unwrap_or_default()),
            Some(other) => Err(format!("a {other}")),
        })
        .map(|items| items.into_iter().map(name).collect());
    (pipeline, model)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The watch-event decoder returns an event or an error for any line.
    #[test]
    fn watch_event_decoder_never_panics(
        base in proptest::sample::select(vec![CM_EVENT, POD_EVENT, ERROR_EVENT, BOOKMARK]),
        ops in ops(),
        arbitrary in proptest::collection::vec(any::<u8>(), 0..200),
        exact in any::<bool>(),
    ) {
        let json = Json { exact_capacity: exact };
        let cms = EventCtx::<ConfigMap> { expected_kind: "ConfigMap".into(), check: None, shard: None };
        let pods = EventCtx::<Pod> { expected_kind: "Pod".into(), check: None, shard: None };
        for line in [mutate(base.as_bytes(), &ops), arbitrary] {
            let line = Bytes::from(line);
            let _ = json.event(line.clone(), &cms);
            let _ = json.event(line, &pods);
        }
    }

    /// The sized decoder never panics, and its size hints are counts of elements present: they
    /// sum to less than the input's length, whatever numbers the input holds.
    #[test]
    fn sized_decoder_never_panics_and_hints_are_bounded_by_the_input(
        n in 0usize..6,
        ops in ops(),
        arbitrary in proptest::collection::vec(any::<u8>(), 0..200),
    ) {
        for body in [mutate(cm_list(n).as_bytes(), &ops), mutate(POD_EVENT.as_bytes(), &ops), arbitrary] {
            let hinted: u64 = sized::array_lengths(&body).iter().map(|&l| u64::from(l)).sum();
            prop_assert!(hinted <= body.len() as u64, "hints {hinted} for {} bytes", body.len());
            let _ = sized::from_slice::<serde_json::Value>(&body);
            let _ = sized::from_slice::<Pod>(&body);
        }
    }

    /// The LIST driver decodes exactly the items serde_json decodes from the whole body, in
    /// order, for real lists of any size; on mutated or arbitrary bodies it never panics and,
    /// where both succeed, they agree.
    #[test]
    fn the_item_pipeline_matches_a_whole_body_decode(
        n in 0usize..12,
        exact in any::<bool>(),
        ops in ops(),
        arbitrary in proptest::collection::vec(any::<u8>(), 0..120),
    ) {
        let (pipeline, model) = decode_both(cm_list(n).into_bytes(), exact);
        prop_assert_eq!(pipeline.as_ref().map(Vec::len), Ok(n));
        prop_assert_eq!(&pipeline, &model);
        for body in [mutate(cm_list(n).as_bytes(), &ops), arbitrary] {
            let (pipeline, model) = decode_both(body, exact);
            if let (Ok(p), Ok(m)) = (&pipeline, &model) {
                prop_assert_eq!(p, m);
            }
        }
    }

    /// KEP-5866's client-side probes never panic on hostile input, and wherever serde_json can
    /// read the same field they agree with it: the probe skips, it never misreads.
    #[test]
    fn shard_probes_never_panic_and_agree_with_a_full_parse(
        base in proptest::sample::select(vec![CM_EVENT, POD_EVENT, ERROR_EVENT, BOOKMARK]),
        ops in ops(),
        arbitrary in proptest::collection::vec(any::<u8>(), 0..200),
    ) {
        use super::chunked::{EventProbe, probe_event, probe_metadata_field};
        for line in [base.as_bytes().to_vec(), mutate(base.as_bytes(), &ops), arbitrary] {
            let probed = probe_event(&line, "namespace");
            if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&line) {
                let t = v["type"].as_str().unwrap_or_default();
                if matches!(probed, Some(EventProbe::Object(Some(_))))
                    && v["object"]["metadata"].is_object()
                {
                    let want = v["object"]["metadata"]["namespace"].as_str().unwrap_or_default();
                    prop_assert!(t != "BOOKMARK" && t != "ERROR");
                    let want = std::borrow::Cow::Borrowed(want.as_bytes());
                    prop_assert_eq!(probed, Some(EventProbe::Object(Some(want))));
                }
                if v["object"].is_object() {
                    let object = serde_json::to_vec(&v["object"]).unwrap_or_default();
                    if let (Some(got), Some(meta)) = (
                        probe_metadata_field(&object, "namespace"),
                        v["object"]["metadata"].as_object(),
                    ) {
                        let want = meta.get("namespace").and_then(|n| n.as_str()).unwrap_or_default();
                        prop_assert_eq!(&*got, want.as_bytes());
                    }
                }
            }
            let _ = probe_metadata_field(&line, "uid");
        }
    }

    /// The probing walk finds the same elements as the plain walk, and reads the same field
    /// values as probing each element on its own, on real, mutated and arbitrary lists.
    #[test]
    fn probing_walk_matches_the_plain_walk(
        n in 0usize..8,
        ops in ops(),
        arbitrary in proptest::collection::vec(any::<u8>(), 0..120),
    ) {
        use super::chunked::{ChunkedList, probe_metadata_field};
        for body in [cm_list(n).into_bytes(), mutate(cm_list(n).as_bytes(), &ops), arbitrary] {
            let mut plain = Vec::new();
            let a = ChunkedList::new(&body).step(usize::MAX, |raw| {
                plain.push(raw.to_vec());
                Ok(())
            });
            let mut probed = Vec::new();
            let b = ChunkedList::new(&body).step_probed(usize::MAX, Some("namespace"), |raw, v| {
                probed.push((raw.to_vec(), v.map(|v| v.into_owned())));
                Ok(())
            });
            prop_assert_eq!(a.is_ok(), b.is_ok());
            if a.is_ok() {
                prop_assert_eq!(plain.len(), probed.len());
                for (raw, (praw, v)) in plain.iter().zip(&probed) {
                    prop_assert_eq!(raw, praw);
                    if let Some(v) = v {
                        let alone = probe_metadata_field(raw, "namespace").map(|v| v.into_owned());
                        prop_assert_eq!(Some(v.clone()), alone);
                    }
                }
            }
        }
    }
}

/// A ConfigMapList of `n` items in Kubernetes protobuf, as informer-testserver encodes it.
fn cm_list_protobuf(n: usize) -> Vec<u8> {
    let list: serde_json::Value = serde_json::from_str(&cm_list(n)).expect("a list");
    informer_testserver::encode_protobuf(&list).expect("encodes")
}

/// `body` as a page in `protobuf` or JSON (exact capacity as given), filtered by `shard`.
fn page_in<K>(body: Vec<u8>, protobuf: bool, exact: bool, shard: Option<Shard>) -> RawListPage<K> {
    let mut page = page::<K>(body, exact);
    if protobuf {
        page.format = Format::Protobuf(Protobuf {
            message: informer_proto::for_kind("v1", "ConfigMap").expect("built in"),
            fallback: Fallback::default(),
            newer: Newer::default(),
        });
    }
    page.client_shard(shard)
}

/// What decoding `body` whole gives, item by item, the reference the LIST driver is held to:
/// the list's head, then each item the walk finds, dropped if `shard` does not admit it, else
/// decoded; then the body's checks (M14). The names of its items, its resourceVersion,
/// continue token and echoed shard selector, or the kind of error it ends with (the two reads
/// meet a malformed body at different places: the whole-body read checks the envelope before
/// any item, the streaming read as it arrives).
fn whole_body(
    body: Vec<u8>,
    protobuf: bool,
    exact: bool,
    shard: Option<&Shard>,
) -> Result<(Vec<String>, String), Discriminant<super::Error>> {
    fn reference<F: WireFormat>(
        format: &F,
        page: &RawListPage<ConfigMap>,
        shard: Option<&Shard>,
    ) -> super::Result<(Vec<String>, String)> {
        use super::format::ItemWalk as _;
        let head = format.list_head(&page.body, &page.list_kinds)?;
        let mut names = Vec::new();
        let mut walk = format.walk(&page.body);
        while let Some(item) = walk.next_item() {
            let (range, hint) = item?;
            let item = page
                .body
                .get(range)
                .ok_or_else(|| super::format::item_outside_list(&page.list_kinds))?;
            if let Some(shard) = shard
                && !format.admits(shard, item)?
            {
                continue;
            }
            let cm: ConfigMap = format.decode(item, hint)?;
            names.push(cm.metadata.name.unwrap_or_default());
        }
        walk.finish(&page.list_kinds)?;
        let shown = format!(
            "{} {:?} {:?}",
            head.resource_version, head.continue_token, head.shard_info
        );
        Ok((names, shown))
    }
    let page = page_in::<ConfigMap>(body, protobuf, exact, None);
    match &page.format {
        Format::Json(f) => reference(f, &page, shard),
        Format::Protobuf(f) => reference(f, &page, shard),
    }
    .map_err(|e| discriminant(&e))
}

/// What the streaming decode gives for `body` arriving in pieces cut at `cuts`, on `pool`; the
/// head is what it announced to `on_body`, which it must call exactly when it succeeds.
fn streamed(
    body: Vec<u8>,
    protobuf: bool,
    exact: bool,
    cuts: &[usize],
    pool: &DecodePool,
    shard: Option<Shard>,
) -> Result<(Vec<String>, String), Discriminant<super::Error>> {
    let page = page_in::<ConfigMap>(body, protobuf, exact, None);
    let mut at: Vec<usize> = cuts.iter().map(|c| c % (page.body.len() + 1)).collect();
    at.sort_unstable();
    let mut chunks = std::collections::VecDeque::new();
    let mut from = 0;
    for cut in at.into_iter().chain([page.body.len()]) {
        chunks.push_back(page.body.slice(from..cut));
        from = cut;
    }
    let body = super::streamed::Body {
        reader: chunks,
        idle: std::time::Duration::from_secs(30),
        max: usize::MAX,
        max_item: usize::MAX,
        total: 0,
        eof: false,
    };
    let announced = std::sync::Mutex::new(None);
    // S4: what the answer echoed, as the driver read it before the first item.
    let echoed = Arc::new(std::sync::Mutex::new(Vec::new()));
    let echoes = Arc::clone(&echoed);
    let shard_by: super::streamed::ShardBy = Box::new(move |echo: Option<&str>| {
        echoes
            .lock()
            .expect("not poisoned")
            .push(echo.map(str::to_string));
        shard
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    let res = rt.block_on(super::streamed::decode(
        body,
        page.format.clone(),
        Arc::clone(&page.list_kinds),
        pool,
        Some(shard_by),
        |cm: ConfigMap| Some(cm.metadata.name.unwrap_or_default()),
        |rv: &str, token: Option<&str>| {
            let head = format!("{rv} {:?}", token.map(str::to_string));
            *announced.lock().expect("not poisoned") = Some(head);
        },
    ));
    let announced = announced.into_inner().expect("not poisoned");
    match res {
        Ok(page) => {
            let head = format!("{} {:?}", page.resource_version, page.continue_token);
            assert_eq!(
                announced.as_ref(),
                Some(&head),
                "on_body saw the list's head"
            );
            let echoed = echoed.lock().expect("not poisoned").clone();
            let [echo] = echoed.as_slice() else {
                panic!("the shard was decided once, not {} times", echoed.len());
            };
            Ok((page.items, format!("{head} {echo:?}")))
        }
        Err(e) => Err(discriminant(&e)),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// R3, T6: decoding a LIST body as it arrives, in pieces cut anywhere, inline or on a pool,
    /// gives what decoding it whole, item by item, gives: the same objects in the same order,
    /// the same shard filtering, the same head (the echoed shard selector read before the first
    /// item is the one the whole body holds, S4), and the same kind of error, on real lists of
    /// either format (echoing a selector or not), cut or mutated ones, and arbitrary bytes.
    #[test]
    fn streaming_a_body_equals_decoding_it_whole(
        n in 0usize..60,
        protobuf in any::<bool>(),
        exact in any::<bool>(),
        sharded in any::<bool>(),
        echoing in any::<bool>(),
        cut in any::<usize>(),
        ops in ops(),
        arbitrary in proptest::collection::vec(any::<u8>(), 0..200),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
        threads in 1usize..4,
    ) {
        let pool = DecodePool::new(threads).expect("a pool");
        let shard = sharded.then(|| Shard::of(0, 2, ShardField::Namespace).expect("a shard"));
        let real = match (protobuf, echoing) {
            (true, _) => cm_list_protobuf(n),
            (false, false) => cm_list(n).into_bytes(),
            (false, true) => cm_list_echoing(n).into_bytes(),
        };
        let cut_at = cut % (real.len() + 1);
        for body in [real.clone(), real[..cut_at].to_vec(), mutate(&real, &ops), arbitrary.clone()] {
            let whole = whole_body(body.clone(), protobuf, exact, shard.as_ref());
            let streamed = streamed(body, protobuf, exact, &cuts, &pool, shard.clone());
            prop_assert_eq!(whole, streamed);
        }
        let whole = streamed(real, protobuf, exact, &cuts, &pool, None);
        prop_assert_eq!(whole.map(|(names, _)| names.len()), Ok(n));
    }
}

/// [`cm_list`] whose metadata echoes a shard selector (KEP-5866).
fn cm_list_echoing(n: usize) -> String {
    cm_list(n).replacen(
        r#""metadata":{"resourceVersion":"77"}"#,
        r#""metadata":{"resourceVersion":"77","shardInfo":{"selector":"shardRange(object.metadata.namespace, 0x0, 0x8000000000000000)"}}"#,
        1,
    )
}

/// S4: the echoed selector decides the client shard before any item decodes. Only an echo in
/// the metadata before the items counts (kube-apiserver writes it there): one after them comes
/// too late, so that list is filtered on the client, as is a list echoing none, and a body of
/// another shape read whole is decided by its whole head.
#[test]
fn s4_the_echo_decides_the_shard_before_the_items_decode() {
    let selector = "shardRange(object.metadata.namespace, 0x0, 0x8000000000000000)";
    // Two families of namespaces, which FNV-1a puts in the two halves of the hash space.
    let namespace = |i: usize| format!("{}-{i}", if i.is_multiple_of(2) { "ns" } else { "team" });
    let item = |i: usize| {
        let ns = namespace(i);
        format!(r#"{{"metadata":{{"name":"cm-{i}","namespace":"{ns}"}}}}"#)
    };
    let items = (0..40).map(item).collect::<Vec<_>>().join(",");
    let meta =
        format!(r#""metadata":{{"resourceVersion":"5","shardInfo":{{"selector":"{selector}"}}}}"#);
    let shard = Shard::of(0, 2, ShardField::Namespace).expect("a shard");
    let admitted = (0..40).filter(|&i| shard.admits(&namespace(i))).count();
    assert!(admitted > 0 && admitted < 40, "the shard splits the items");
    let pad = "x".repeat(1 << 20);
    let pool = DecodePool::new(2).expect("a pool");
    for (body, echo) in [
        (
            format!(r#"{{"kind":"ConfigMapList",{meta},"items":[{items}]}}"#),
            Some(selector),
        ),
        (
            format!(r#"{{"kind":"ConfigMapList","items":[{items}],{meta}}}"#),
            None,
        ),
        (
            format!(r#"{{{meta},"items":[{items}],"kind":"ConfigMapList"}}"#),
            Some(selector),
        ),
        // Items that begin past the first MiB: the body is read whole, then decoded in runs.
        (
            format!(r#"{{"kind":"ConfigMapList",{meta},"pad":"{pad}","items":[{items}]}}"#),
            Some(selector),
        ),
        (
            format!(
                r#"{{"kind":"ConfigMapList","metadata":{{"resourceVersion":"5"}},"items":[{items}]}}"#
            ),
            None,
        ),
    ] {
        let cuts = [7, 90, (1 << 20) + 50];
        let got = streamed(
            body.into_bytes(),
            false,
            true,
            &cuts,
            &pool,
            Some(shard.clone()),
        );
        let (names, head) = got.expect("decodes");
        assert_eq!(names.len(), admitted, "filtered by the shard");
        assert!(
            head.ends_with(&format!("{:?}", echo.map(str::to_string))),
            "the echo read first: {head}"
        );
    }
}

/// Bodies of unusual shape stream to what their whole-body read gives: metadata and `kind`
/// after the items, `items: null`, a `Status`, a list of another kind, items twice.
#[test]
fn unusual_bodies_stream_to_what_their_whole_read_gives() {
    let item = r#"{"metadata":{"name":"a","namespace":"ns"}}"#;
    let bodies = [
        format!(
            r#"{{"items":[{item},{item}],"metadata":{{"resourceVersion":"7"}},"kind":"ConfigMapList"}}"#
        ),
        format!(r#"{{"items":[{item}],"kind":"PodList"}}"#),
        r#"{"kind":"ConfigMapList","metadata":{"resourceVersion":"3"},"items":null}"#.to_string(),
        r#"{"kind":"Status","apiVersion":"v1","status":"Failure","code":410,"reason":"Expired"}"#
            .to_string(),
        format!(r#"{{"kind":"PodList","metadata":{{}},"items":[{item}]}}"#),
        format!(
            r#" {{ "kind" : "ConfigMapList" , "metadata" : {{ "resourceVersion" : "9" }} , "items" : [ {item} , {item} ] }} "#
        ),
    ];
    let pool = DecodePool::inline();
    for body in bodies {
        let whole = whole_body(body.clone().into_bytes(), false, true, None);
        for step in [1, 2, 7, 64, usize::MAX] {
            let cuts: Vec<usize> = (step..body.len()).step_by(step.max(1)).collect();
            let got = streamed(body.clone().into_bytes(), false, true, &cuts, &pool, None);
            assert_eq!(got, whole, "{body} in pieces of {step}");
        }
    }
    // `items` twice, which no server writes: the whole-body walk reads both arrays; streaming
    // has decoded the first when it meets the second, and says so.
    let body = format!(r#"{{"kind":"ConfigMapList","items":[{item}],"items":[{item}]}}"#);
    let got = streamed(body.into_bytes(), false, true, &[], &pool, None);
    let not_a_list = super::Error::NotAList {
        what: String::new(),
        expected: String::new(),
    };
    assert_eq!(got, Err(discriminant(&not_a_list)));
    // Metadata after the items: the head comes from the tail.
    let body = format!(r#"{{"items":[{item}],"metadata":{{"resourceVersion":"7"}}}}"#);
    let got = streamed(body.into_bytes(), false, true, &[5, 20], &pool, None);
    assert_eq!(got, Ok((vec!["a".to_string()], "7 None None".to_string())));
}

/// The first bytes of a real body say where its items begin, in both formats; a body whose
/// items have not begun yet asks for more, and one of another shape is read whole.
#[test]
fn the_items_of_a_real_body_are_found_in_its_first_bytes() {
    use super::format::Start;
    let kinds = ["ConfigMapList".to_string()];
    let json = Json {
        exact_capacity: true,
    };
    let body = cm_list(3).into_bytes();
    let open = body
        .windows(9)
        .position(|w| w == b"\"items\":[")
        .expect("items")
        + 9;
    assert!(matches!(
        json.stream_start(&body[..open - 1], &kinds),
        Start::More
    ));
    assert!(
        matches!(json.stream_start(&body[..open], &kinds), Start::Items { at, .. } if at == open)
    );
    let other = ["PodList".to_string()];
    assert!(matches!(json.stream_start(&body, &other), Start::Whole));
    let pb = Protobuf {
        message: informer_proto::for_kind("v1", "ConfigMap").expect("built in"),
        fallback: Fallback::default(),
        newer: Newer::default(),
    };
    let body = cm_list_protobuf(3);
    let Start::Items { at, .. } = pb.stream_start(&body, &kinds) else {
        panic!("a protobuf list streams");
    };
    assert!(matches!(pb.stream_start(&body[..at], &kinds), Start::More));
    assert!(matches!(pb.stream_start(&body, &other), Start::Whole));
    assert!(matches!(pb.stream_start(b"k8", &kinds), Start::More));
    assert!(matches!(
        pb.stream_start(b"{\"kind\"", &kinds),
        Start::Whole
    ));
}

/// R3: the items of a large body are decoded while it arrives, not after its last byte: by
/// the time the last piece is read, most were decoded (what is left is the last 64 KiB read
/// ahead and the run in progress).
#[test]
fn a_large_body_is_decoded_while_it_arrives() {
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Pieces of a body that record how many items were decoded when each was read.
    struct Watched {
        pieces: std::collections::VecDeque<Bytes>,
        decoded: Arc<AtomicUsize>,
        seen: Arc<std::sync::Mutex<Vec<usize>>>,
    }
    impl super::streamed::Chunks for Watched {
        async fn next_chunk(&mut self) -> Option<super::Result<Bytes>> {
            let piece = self.pieces.pop_front()?;
            let decoded = self.decoded.load(Ordering::SeqCst);
            self.seen.lock().expect("not poisoned").push(decoded);
            Some(Ok(piece))
        }
    }

    let n = 4_000;
    for protobuf in [false, true] {
        let body = Bytes::from(if protobuf {
            cm_list_protobuf(n)
        } else {
            cm_list(n).into_bytes()
        });
        let pieces = (0..body.len())
            .step_by(4096)
            .map(|at| body.slice(at..(at + 4096).min(body.len())))
            .collect();
        let decoded = Arc::new(AtomicUsize::new(0));
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let reader = Watched {
            pieces,
            decoded: Arc::clone(&decoded),
            seen: Arc::clone(&seen),
        };
        let page = page_in::<ConfigMap>(Vec::new(), protobuf, true, None);
        let body = super::streamed::Body {
            reader,
            idle: std::time::Duration::from_secs(30),
            max: usize::MAX,
            max_item: usize::MAX,
            total: 0,
            eof: false,
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a runtime");
        let count = Arc::clone(&decoded);
        let listed = rt
            .block_on(super::streamed::decode(
                body,
                page.format.clone(),
                Arc::clone(&page.list_kinds),
                &DecodePool::inline(),
                None,
                move |cm: ConfigMap| {
                    count.fetch_add(1, Ordering::SeqCst);
                    cm.metadata.name
                },
                |_: &str, _: Option<&str>| {},
            ))
            .expect("decodes");
        assert_eq!(listed.items.len(), n);
        let seen = seen.lock().expect("not poisoned");
        let at_last = *seen.last().expect("pieces were read");
        assert!(
            at_last >= n / 2,
            "protobuf {protobuf}: only {at_last} of {n} items decoded when the last piece was read"
        );
    }
}
