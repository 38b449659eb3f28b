//! Unit tests of the list-watcher: request building, error classification, timeouts.
use super::error::classify_status;
use super::*;
use bytes::Bytes;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::core::Status;

#[test]
fn read_timeout_must_exceed_the_longest_watch() {
    let mut config = kube::Config::new(http::Uri::from_static("http://127.0.0.1:9"));
    config.read_timeout = None;
    assert!(read_timeout_fits(&config, Duration::ZERO));
    config.read_timeout = Some(Duration::from_secs(295));
    assert!(
        !read_timeout_fits(&config, Duration::ZERO),
        "kube's old 295 s default is too short"
    );
    config.read_timeout = Some(Duration::from_secs(12 * 60));
    assert!(read_timeout_fits(&config, Duration::from_secs(300)));
    assert!(!read_timeout_fits(&config, Duration::from_secs(400)));
}

#[tokio::test]
async fn connection_refused_is_classified_for_r13() {
    // Bind and drop a listener to get a local port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let uri: http::Uri = format!("http://127.0.0.1:{port}").parse().unwrap();
    let mut config = kube::Config::new(uri);
    config.default_retry = false;
    let client = kube::Client::try_from(config).unwrap();
    let lw = ListWatch::new(Api::<ConfigMap>::all(client));
    let req = WatchRequest {
        timeout: Duration::from_secs(300),
        ..Default::default()
    };
    let err = match lw.watch(&req).await {
        Ok(_) => panic!("nothing listens on {port}"),
        Err(e) => e,
    };
    assert_eq!(err.class(), ErrorClass::ConnectionRefused, "{err:?}");
}

#[test]
fn query_values_are_percent_encoded() {
    let mut q = String::new();
    push_pair(&mut q, "labelSelector", "app in (a,b),!x");
    push_pair(&mut q, "resourceVersion", "0");
    assert_eq!(
        q,
        "labelSelector=app%20in%20%28a%2Cb%29%2C%21x&resourceVersion=0"
    );
}

#[test]
fn r11_too_large_rv_is_classified() {
    let status =
        Status::failure("Too large resource version: 99, current: 5", "Timeout").with_code(504);
    assert_eq!(
        classify_status(&status),
        ErrorClass::TooLargeResourceVersion
    );
}

#[test]
fn r11_r13_too_large_by_cause_or_on_a_504_only() {
    // ConsistentListFromCacheSkipTimeoutFallback's 429 quotes the watch cache's text.
    let mut status = Status::failure(
        "Too large resource version: 12, current: 11",
        "TooManyRequests",
    )
    .with_code(429);
    assert_eq!(classify_status(&status), ErrorClass::TooManyRequests);
    status.code = 504;
    assert_eq!(
        classify_status(&status),
        ErrorClass::TooLargeResourceVersion
    );
    let mut caused = Status::failure("whatever", "Timeout").with_code(504);
    caused.details = Some(kube::core::response::StatusDetails {
        name: String::new(),
        group: String::new(),
        kind: String::new(),
        uid: String::new(),
        causes: vec![kube::core::response::StatusCause {
            reason: "ResourceVersionTooLarge".into(),
            message: "Too large resource version".into(),
            field: String::new(),
        }],
        retry_after_seconds: 1,
    });
    assert_eq!(
        classify_status(&caused),
        ErrorClass::TooLargeResourceVersion
    );
}

#[test]
fn t5_error_bodies_in_either_encoding() {
    let json = br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"no","reason":"NotFound","code":404}"#;
    let s = error::status_of_body(json, false, 404);
    assert_eq!((s.code, s.reason.as_str()), (404, "NotFound"));
    let text = error::status_of_body(b"<html>bad gateway</html>", false, 502);
    assert_eq!(text.code, 502);
    assert!(text.message.contains("bad gateway"));
    // A protobuf body that is no Status keeps the code, not the bytes.
    let garbage = error::status_of_body(b"k8s\0\xff", true, 503);
    assert_eq!(garbage.code, 503);
    assert!(!garbage.message.contains('\u{fffd}'));
}

#[test]
fn t3_a_cut_gzip_body_is_a_cut_chunk_and_a_corrupt_one_a_malformed_stream() {
    use std::io::{Error as IoError, ErrorKind};
    let cut = Error::Gzip {
        source: IoError::new(ErrorKind::UnexpectedEof, "the body ended inside a member"),
    };
    assert_eq!(cut.class(), ErrorClass::CutChunk);
    let corrupt = Error::Gzip {
        source: IoError::new(ErrorKind::InvalidInput, "corrupt deflate stream"),
    };
    assert_eq!(corrupt.class(), ErrorClass::InternalError);
    let other = Error::ContentEncoding {
        encoding: "br".into(),
    };
    assert_eq!(other.class(), ErrorClass::Other);
}

#[test]
fn retry_after_from_details() {
    let mut status = Status::failure("slow down", "TooManyRequests").with_code(429);
    status.details = Some(kube::core::response::StatusDetails {
        name: String::new(),
        group: String::new(),
        kind: String::new(),
        uid: String::new(),
        causes: Vec::new(),
        retry_after_seconds: 3,
    });
    let err = api_error(status, None);
    assert_eq!(err.retry_after(), Some(Duration::from_secs(3)));
    assert_eq!(err.class(), ErrorClass::TooManyRequests);
}

/// A `kube::Client` whose every answer is `body` (JSON), handed on in pieces of `piece` bytes,
/// each as soon as it is asked for: a connection that is never the bottleneck.
fn client_answering(body: Bytes, piece: usize) -> kube::Client {
    let service = tower::service_fn(move |_req: http::Request<kube::client::Body>| {
        let body = body.clone();
        let pieces = (0..body.len()).step_by(piece).map(move |at| {
            let piece = body.slice(at..(at + piece).min(body.len()));
            Ok::<_, std::convert::Infallible>(hyper::body::Frame::data(piece))
        });
        let body = http_body_util::StreamBody::new(futures::stream::iter(pieces));
        let res = http::Response::builder()
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(body);
        async move { res }
    });
    kube::Client::new(service, "default")
}

/// A ConfigMap named `name` whose one value is `size` bytes long.
fn large_config_map(name: &str, rv: u64, size: usize) -> String {
    format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","namespace":"ns","resourceVersion":"{rv}"}},"data":{{"big":"{}"}}}}"#,
        "x".repeat(size)
    )
}

/// T6: a watch decodes ahead of its consumer within a byte bound, not a count of events: 1 MiB
/// events on a pool of 16 threads (32 runs of up to 32 events by count alone) are read at most
/// 16 MiB (`framing::AHEAD_BYTES`, shared by the task that reads and the decoder) plus the
/// event waiting for room in each and the piece the framer cuts it from ahead of what the
/// consumer has taken, and every event arrives, in order.
#[tokio::test]
async fn t6_watch_reads_ahead_within_a_byte_bound() {
    const EVENT: usize = 1 << 20;
    const PIECE: usize = 64 << 10;
    const BOUND: u64 = 16 << 20;
    let n = 40;
    let lines: Vec<String> = (0..n)
        .map(|i| {
            let object = large_config_map(&format!("cm-{i}"), i + 2, EVENT);
            format!(r#"{{"type":"ADDED","object":{object}}}"#) + "\n"
        })
        .collect();
    let client = client_answering(Bytes::from(lines.concat()), PIECE);
    let lw = ListWatch::<ConfigMap>::new(Api::all(client))
        .decode_pool(DecodePool::new(16).expect("a pool"));
    let req = WatchRequest {
        resource_version: "1".into(),
        timeout: Duration::from_secs(300),
        ..Default::default()
    };
    let mut events = lw.watch(&req).await.expect("the watch starts");
    let (mut consumed, mut most_ahead) = (0u64, 0u64);
    for (i, line) in lines.iter().enumerate() {
        let event = events.next().await.expect("an event").expect("decodes");
        let WatchEvent::Added(cm) = event else {
            panic!("event {i} is not ADDED");
        };
        assert_eq!(
            cm.metadata.name.as_deref(),
            Some(format!("cm-{i}").as_str())
        );
        consumed += line.len() as u64;
        most_ahead = most_ahead.max(lw.bytes_received() - consumed);
    }
    assert!(events.next().await.is_none(), "the body has ended");
    let limit = BOUND + (2 * (EVENT + 200) + PIECE) as u64;
    assert!(
        most_ahead <= limit,
        "{most_ahead} bytes read ahead of the consumer, more than {limit}"
    );
    assert!(
        most_ahead >= (8 << 20),
        "the watch still decodes ahead ({most_ahead} bytes)"
    );
}

/// What streaming a LIST of ConfigMaps gave: the names decoded in wire order, the result,
/// and the bytes the body had, the list-watcher received and the item scans looked at.
struct Streamed {
    names: Vec<String>,
    listed: Result<usize>,
    body: usize,
    received: u64,
    scanned: usize,
}

/// Streams a JSON ConfigMapList, as kube-apiserver writes it (kind and metadata first), of one
/// ConfigMap per `(name, value size)`, answered in pieces of `piece` bytes, decoded inline.
async fn stream_list(items: &[(&str, usize)], piece: usize) -> Streamed {
    let items: Vec<String> = (2..)
        .zip(items)
        .map(|(rv, (name, size))| large_config_map(name, rv, *size))
        .collect();
    let body = Bytes::from(format!(
        r#"{{"kind":"ConfigMapList","apiVersion":"v1","metadata":{{"resourceVersion":"9"}},"items":[{}]}}"#,
        items.join(",")
    ));
    let lw = ListWatch::<ConfigMap>::new(Api::all(client_answering(body.clone(), piece)));
    let names = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&names);
    let before = super::format::json::scanned();
    let listed = match lw.list_streamed(&ListRequest::default()).await {
        Ok(list) => {
            list.decode_on(
                &DecodePool::inline(),
                move |cm: ConfigMap| {
                    let name = cm.metadata.name.unwrap_or_default();
                    seen.lock().expect("not poisoned").push(name);
                    Some(())
                },
                |_: &str, _: Option<&str>| {},
            )
            .await
        }
        Err(e) => Err(e),
    };
    let names = names.lock().expect("not poisoned").clone();
    Streamed {
        names,
        listed: listed.map(|page| page.items.len()),
        body: body.len(),
        received: lw.bytes_received(),
        scanned: super::format::json::scanned() - before,
    }
}

/// R3, T4: a large item of a streamed JSON LIST arriving in small pieces is scanned for its
/// end a few times over its length in all, not once per 64 KiB read (quadratic in its size).
#[tokio::test]
async fn r3_a_large_streamed_item_is_scanned_in_linear_time() {
    let got = stream_list(&[("a", 10), ("big", 4 << 20), ("c", 10)], 4 << 10).await;
    assert_eq!(got.listed.expect("lists"), 3);
    assert_eq!(got.names, ["a", "big", "c"]);
    assert!(
        got.scanned <= 4 * got.body,
        "{} bytes scanned for a body of {}",
        got.scanned,
        got.body
    );
}

/// T4: an item of a streamed LIST longer than `max_list_item_bytes` (M16's line cap by default)
/// fails the list with a clear error of a malformed answer (retried, R14/R15) once the cap is
/// passed: the rest is not read, the hostile item is scanned a few times its cap at most, and
/// the items before it were decoded (the error is the item's, not theirs).
#[tokio::test]
async fn t4_a_streamed_list_item_over_its_cap_fails_the_list_clearly() {
    const CAP: usize = 16 << 20;
    let items = [("a", 10), ("b", 10), ("huge", CAP + (1 << 20)), ("c", 10)];
    let got = stream_list(&items, 64 << 10).await;
    let err = got.listed.expect_err("an item over the cap fails the list");
    assert_eq!(err.class(), ErrorClass::InternalError, "{err:?}");
    assert!(
        err.to_string()
            .contains(&format!("item longer than {CAP} bytes")),
        "{err}"
    );
    assert_eq!(got.names, ["a", "b"], "the items before it decoded");
    assert!(
        got.received < (CAP + (256 << 10)) as u64,
        "{} of {} bytes read",
        got.received,
        got.body
    );
    assert!(got.scanned <= 4 * CAP, "{} bytes scanned", got.scanned);
}
