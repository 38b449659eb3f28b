//! `Content-Encoding: gzip` exactly where kube-apiserver 1.37 uses it (T3).
//!
//! - A client asks with `Accept-Encoding` holding the token `gzip` (other tokens and q-values
//!   are ignored, as in kube-apiserver's `ContentEncodingSupported`).
//! - A response to any verb but watch is gzipped when its body is larger than 128 KiB (the
//!   apiserver's `defaultGzipThresholdBytes`, compared to the first write, which for these
//!   bodies is the whole body), at compression level 1.
//! - A watch is gzipped only when it is a watch-list (`sendInitialEvents=true`) and the
//!   `WatchListCompression` gate is on (beta, on by default): every flush closes one gzip member,
//!   so the stream is many members, one per chunk this server sends. As kube-apiserver's
//!   `perFlushGzipWriter` (a `Flush` then a `Close` of Go's `gzip.Writer`), a member's data ends
//!   in a sync flush and its final deflate block is empty: a reader that holds back a member's
//!   last bytes until the next member's header arrives (Go's `gzip.Reader`) still hands out every
//!   event of the member at once, the initial-events-end bookmark above all (T3). Other watches
//!   stay plain.

use axum::body::{Body, to_bytes};
use axum::response::Response;
use bytes::Bytes;
use futures::StreamExt as _;
use http::{HeaderValue, header};
use std::io::Write as _;

/// kube-apiserver's `defaultGzipThresholdBytes`.
pub(crate) const THRESHOLD: usize = 128 * 1024;

/// The largest body this server collects to compress (a LIST of the scale benchmarks).
const MAX_BODY: usize = 1 << 31;

/// Whether the request's `Accept-Encoding` offers gzip.
pub(crate) fn accepted(accept_encoding: &str) -> bool {
    accept_encoding.split(',').any(|t| t.trim() == "gzip")
}

/// One gzip member holding `data`, at kube-apiserver's level (1).
pub(crate) fn member(data: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut enc = flate2::write::GzEncoder::new(
        Vec::with_capacity(data.len() / 4 + 64),
        flate2::Compression::fast(),
    );
    enc.write_all(data)?;
    enc.finish()
}

fn mark(resp: &mut Response) {
    let headers = resp.headers_mut();
    headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    headers.append(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    headers.remove(header::CONTENT_LENGTH);
}

/// Gzips a whole (non-watch) response body when it is larger than [`THRESHOLD`].
pub(crate) async fn whole_body(resp: Response) -> Response {
    let (parts, body) = resp.into_parts();
    let bytes = match to_bytes(body, MAX_BODY).await {
        Ok(b) => b,
        Err(e) => {
            return super::error_response(&crate::status::ApiError::internal(e.to_string()));
        }
    };
    if bytes.len() <= THRESHOLD {
        return Response::from_parts(parts, Body::from(bytes));
    }
    match member(&bytes) {
        Ok(gz) => {
            let mut resp = Response::from_parts(parts, Body::from(gz));
            mark(&mut resp);
            resp
        }
        Err(e) => super::error_response(&crate::status::ApiError::internal(e.to_string())),
    }
}

/// One gzip member holding `data` in a sync-flushed block, closed by an empty final block: what
/// Go's `gzip.Writer` writes for a `Flush` then a `Close`, kube-apiserver's watch-list flush.
pub(crate) fn flushed_member(data: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut enc = flate2::write::GzEncoder::new(
        Vec::with_capacity(data.len() / 4 + 64),
        flate2::Compression::fast(),
    );
    enc.write_all(data)?;
    // A sync flush: the data's blocks end, byte-aligned, before the final block starts.
    enc.flush()?;
    enc.finish()
}

/// Gzips a watch-list stream one member per chunk (each chunk is one flush).
pub(crate) fn per_flush(resp: Response) -> Response {
    let (parts, body) = resp.into_parts();
    let members = body.into_data_stream().map(|chunk| match chunk {
        Ok(data) if data.is_empty() => Ok(data),
        Ok(data) => flushed_member(&data)
            .map(Bytes::from)
            .map_err(axum::Error::new),
        Err(e) => Err(e),
    });
    let mut resp = Response::from_parts(parts, Body::from_stream(members));
    mark(&mut resp);
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_gzip_token_counts() {
        assert!(accepted("gzip"));
        assert!(accepted("deflate, gzip"));
        assert!(accepted(" gzip ,br"));
        assert!(!accepted("identity"));
        assert!(
            !accepted("gzip;q=1.0"),
            "kube-apiserver compares whole tokens"
        );
        assert!(!accepted("x-gzip"));
        assert!(!accepted(""));
    }

    /// T3: a flushed member's data decodes from the blocks before its final one, which is empty,
    /// so a reader that stops at the final block (Go's `gzip.Reader`, waiting for the next
    /// member's header) has the whole chunk already; a plain member has it in the final block.
    #[test]
    fn a_flushed_member_holds_its_data_before_its_empty_final_block() {
        let data = br#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"7"}}}"#;
        let flushed = flushed_member(data).expect("gzip");
        let deflate = &flushed[10..flushed.len() - 8];
        let (body, last) = deflate.split_at(deflate.len() - 2);
        assert_eq!(last, [0x03, 0x00], "an empty final fixed-Huffman block");
        assert!(body.ends_with(&[0x00, 0x00, 0xff, 0xff]), "a sync flush");
        let mut out = Vec::with_capacity(data.len() * 2);
        flate2::Decompress::new(false)
            .decompress_vec(body, &mut out, flate2::FlushDecompress::Sync)
            .expect("inflate");
        assert_eq!(out, data);
        let plain = member(data).expect("gzip");
        assert!(
            !plain[..plain.len() - 8].ends_with(&[0x00, 0x00, 0xff, 0xff, 0x03, 0x00]),
            "an unflushed member keeps its data in the final block"
        );
    }

    #[tokio::test]
    async fn small_bodies_stay_plain_and_large_ones_are_one_member() {
        let small = whole_body(Response::new(Body::from(vec![b'a'; THRESHOLD]))).await;
        assert!(small.headers().get(header::CONTENT_ENCODING).is_none());
        let large = whole_body(Response::new(Body::from(vec![b'a'; THRESHOLD + 1]))).await;
        assert_eq!(large.headers()[header::CONTENT_ENCODING], "gzip");
        let gz = to_bytes(large.into_body(), MAX_BODY).await.expect("body");
        let mut out = Vec::new();
        let mut dec = flate2::write::GzDecoder::new(&mut out);
        dec.write_all(&gz).expect("one member");
        dec.finish().expect("complete");
        assert_eq!(out.len(), THRESHOLD + 1);
    }
}
