//! Unit tests of the list-watcher: request building, error classification, timeouts.
use super::error::classify_status;
use super::*;
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
