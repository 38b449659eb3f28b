//! A response body as decoded bytes: identity or gzip (T3), chunk by chunk.
//!
//! Every request sends `Accept-Encoding: gzip`. kube-apiserver gzips a LIST body whose first
//! write passes 128 KiB, and, with `WatchListCompression` (beta, on in 1.37), a watch-list stream
//! as one gzip member per flush: the initial events in one or more members, then each later
//! flush its own member. So the body is decoded incrementally, member after member, and hands on
//! what each network frame decompresses to. A `kube::Client` built with kube's `gzip` feature
//! decompresses on its own and removes the `Content-Encoding` header; then the body is read as is.
//!
//! Decompressed bytes are what the caps count (the LIST body cap of T4, the watch line cap of
//! M16): each step feeds the decoder a piece of compressed input and hands on what it produced,
//! so a small body that inflates to gigabytes is cut at the cap, never held.

use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::{Buf as _, Bytes};
use http_body_util::BodyExt as _;

use super::{Error, Result};

/// How many decompressed bytes a gzip body may produce before its inflation is bounded.
pub(super) const INFLATION_FLOOR: u64 = 16 << 20;

/// Past [`INFLATION_FLOOR`], the most a gzip body may inflate: 64 bytes out per byte in. Real
/// lists and event streams inflate 5- to 30-fold (identical large fields in consecutive
/// objects a little over 100-fold at the most); a gzip bomb, about 1 000-fold.
pub(super) const MAX_INFLATION: u64 = 64;

/// How much compressed input one decoding step is given. Inflate stops when its 32 KiB output
/// buffer is full, so one step yields at most a few times 32 KiB however well the input packs.
const STEP_INPUT: usize = 8 << 10;

/// Whether a list-watcher still offers gzip; shared by its clones. Turned off, for good, by the
/// first body that inflated past [`MAX_INFLATION`] (T3): that request failed, and the next
/// asks for identity bodies, which cost bandwidth, never memory beyond the body caps.
#[derive(Debug, Clone, Default)]
pub(super) struct GzipRefused(Arc<std::sync::atomic::AtomicBool>);

impl GzipRefused {
    /// Whether gzip is refused from now on.
    pub(super) fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    fn set(&self) {
        if !self.0.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "a gzip body inflated more than {MAX_INFLATION}-fold; this list-watcher asks for identity bodies from now on"
            );
        }
    }
}

/// A response body that yields decoded bytes.
pub(super) struct BodyReader {
    body: kube::client::Body,
    gzip: Option<Gunzip>,
    refused: GzipRefused,
    done: bool,
    /// Counts the bytes as they come on the wire.
    received: Arc<AtomicU64>,
}

/// The incremental state of a gzip body.
struct Gunzip {
    /// Decodes member after member into its `Vec`, which each step drains.
    decoder: flate2::write::MultiGzDecoder<Vec<u8>>,
    /// Compressed bytes received and not yet fed to the decoder.
    pending: Bytes,
    /// Whether any compressed byte arrived: an empty body is a valid empty stream.
    started: bool,
    /// Compressed bytes fed to the decoder, and decompressed bytes it produced.
    fed: u64,
    produced: u64,
}

impl BodyReader {
    /// Reads `res`'s body, decoding it when its `Content-Encoding` is gzip. Any other encoding
    /// but identity is an error: the request only offers gzip.
    pub(super) fn new(
        res: http::Response<kube::client::Body>,
        received: Arc<AtomicU64>,
        refused: GzipRefused,
    ) -> Result<Self> {
        let encoding = res.headers().get(http::header::CONTENT_ENCODING).map(|v| {
            v.to_str()
                .unwrap_or("<not text>")
                .trim()
                .to_ascii_lowercase()
        });
        let gzip = match encoding.as_deref() {
            None | Some("" | "identity") => None,
            Some("gzip" | "x-gzip") => Some(Gunzip::new()),
            Some(other) => {
                return Err(Error::ContentEncoding {
                    encoding: other.to_string(),
                });
            }
        };
        Ok(BodyReader {
            body: res.into_body(),
            gzip,
            refused,
            done: false,
            received,
        })
    }

    /// A body held whole (a [`RawListPage`](super::RawListPage)'s), read as one chunk.
    pub(super) fn whole(body: Bytes) -> Self {
        BodyReader {
            body: kube::client::Body::from(body),
            gzip: None,
            refused: GzipRefused::default(),
            done: false,
            received: Arc::default(),
        }
    }

    /// The next decoded bytes; `None` at the end of the body. An `Err` ends the body.
    pub(super) async fn next(&mut self) -> Option<Result<Bytes>> {
        loop {
            if let Some(gz) = &mut self.gzip
                && !gz.pending.is_empty()
            {
                match gz.step() {
                    Ok(_) if gz.over_inflated() => return Some(Err(self.over_inflated())),
                    Ok(out) if out.is_empty() => continue,
                    Ok(out) => return Some(Ok(out)),
                    Err(e) => return Some(Err(self.fail(e))),
                }
            }
            if self.done {
                return None;
            }
            match self.body.frame().await {
                Some(Ok(frame)) => {
                    let Ok(data) = frame.into_data() else {
                        continue;
                    };
                    self.received
                        .fetch_add(data.len() as u64, Ordering::Relaxed);
                    match &mut self.gzip {
                        None if data.is_empty() => {}
                        None => return Some(Ok(data)),
                        Some(gz) => {
                            gz.started |= !data.is_empty();
                            gz.pending = data;
                        }
                    }
                }
                Some(Err(e)) => {
                    self.done = true;
                    return Some(Err(Error::Transport(e)));
                }
                None => {
                    self.done = true;
                    if let Some(gz) = &mut self.gzip {
                        match gz.finish() {
                            Ok(_) if gz.over_inflated() => {
                                return Some(Err(self.over_inflated()));
                            }
                            Ok(out) if out.is_empty() => {}
                            Ok(out) => return Some(Ok(out)),
                            Err(e) => return Some(Err(self.fail(e))),
                        }
                    }
                    return None;
                }
            }
        }
    }

    fn fail(&mut self, source: std::io::Error) -> Error {
        self.done = true;
        self.gzip = None;
        Error::Gzip { source }
    }

    /// Ends a body that inflated past [`MAX_INFLATION`] and refuses gzip from now on (T3).
    fn over_inflated(&mut self) -> Error {
        let (fed, produced) = self
            .gzip
            .as_ref()
            .map_or((0, 0), |gz| (gz.fed, gz.produced));
        self.done = true;
        self.gzip = None;
        self.refused.set();
        Error::GzipInflation { fed, produced }
    }
}

impl Gunzip {
    fn new() -> Self {
        Gunzip {
            decoder: flate2::write::MultiGzDecoder::new(Vec::new()),
            pending: Bytes::new(),
            started: false,
            fed: 0,
            produced: 0,
        }
    }

    /// Whether the body has inflated past [`MAX_INFLATION`] beyond its first
    /// [`INFLATION_FLOOR`] bytes.
    fn over_inflated(&self) -> bool {
        self.produced > INFLATION_FLOOR && self.produced > self.fed.saturating_mul(MAX_INFLATION)
    }

    /// Feeds the decoder one piece of the pending input and takes what it produced.
    fn step(&mut self) -> std::io::Result<Bytes> {
        let piece = self.pending.len().min(STEP_INPUT);
        let used = self.decoder.write(&self.pending[..piece])?;
        if used == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "the gzip decoder accepts no more input",
            ));
        }
        self.pending.advance(used);
        self.fed += used as u64;
        self.decoder.flush()?;
        Ok(self.take_output())
    }

    /// What the decoder produced since the last call, counted.
    fn take_output(&mut self) -> Bytes {
        let out = std::mem::take(self.decoder.get_mut());
        self.produced += out.len() as u64;
        Bytes::from(out)
    }

    /// At the end of the body: the last member must be complete (its trailer checks the CRC).
    /// Whatever is missing, the body ended inside a member: a cut connection.
    fn finish(&mut self) -> std::io::Result<Bytes> {
        if self.started {
            self.decoder.try_finish().map_err(|e| {
                std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!("the body ended inside a gzip member ({e})"),
                )
            })?;
        }
        Ok(self.take_output())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::Compression;
    use flate2::write::GzEncoder;
    use proptest::prelude::*;

    fn member(data: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), Compression::fast());
        e.write_all(data).expect("write to a Vec");
        e.finish().expect("finish into a Vec")
    }

    /// Decodes `wire` fed in the given frame sizes through the same steps as a body.
    fn decode(wire: &[u8], cuts: &[usize]) -> std::io::Result<(Vec<u8>, usize)> {
        let mut gz = Gunzip::new();
        let (mut out, mut largest, mut at) = (Vec::new(), 0, 0);
        let mut sizes = cuts.iter().copied().cycle();
        while at < wire.len() {
            let n = sizes
                .next()
                .unwrap_or(wire.len())
                .max(1)
                .min(wire.len() - at);
            gz.pending = Bytes::copy_from_slice(&wire[at..at + n]);
            gz.started = true;
            at += n;
            while !gz.pending.is_empty() {
                let chunk = gz.step()?;
                largest = largest.max(chunk.len());
                out.extend_from_slice(&chunk);
            }
        }
        out.extend_from_slice(&gz.finish()?);
        Ok((out, largest))
    }

    proptest! {
        /// T3: a multi-member stream cut into frames anywhere decodes to the members' bytes.
        #[test]
        fn members_cut_anywhere_decode_to_their_concatenation(
            members in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..3000), 1..6),
            cuts in prop::collection::vec(1usize..700, 1..8),
        ) {
            let wire: Vec<u8> = members.iter().flat_map(|m| member(m)).collect();
            let (out, _) = decode(&wire, &cuts).expect("valid stream");
            prop_assert_eq!(out, members.concat());
        }
    }

    #[test]
    fn a_bomb_is_handed_on_in_small_steps() {
        let zeros = vec![0u8; 8 << 20];
        let wire = member(&zeros);
        assert!(wire.len() < 64 << 10, "{} bytes packed", wire.len());
        let (out, largest) = decode(&wire, &[wire.len()]).expect("valid stream");
        assert_eq!(out.len(), zeros.len());
        assert!(largest <= 256 << 10, "one step produced {largest} bytes");
    }

    #[test]
    fn t3_inflation_is_bounded_past_the_floor() {
        let mut gz = Gunzip::new();
        gz.pending = Bytes::from(member(&vec![b' '; 64 << 20]));
        gz.started = true;
        let mut steps = 0;
        while !gz.pending.is_empty() && !gz.over_inflated() {
            gz.step().expect("valid gzip");
            steps += 1;
        }
        assert!(gz.over_inflated(), "a thousandfold member trips the bound");
        assert!(gz.produced > INFLATION_FLOOR && gz.produced < 2 * INFLATION_FLOOR);
        assert!(steps > 1);
        // Real lists inflate far less: 32 MiB of varied JSON-like text passes.
        let text: Vec<u8> = (0..(32u32 << 20) / 16)
            .flat_map(|i| {
                format!("{{\"n\":\"{:08x}\"}}", i.wrapping_mul(2_654_435_761)).into_bytes()
            })
            .collect();
        let (out, _) = decode(&member(&text), &[64 << 10]).expect("valid stream");
        assert_eq!(out.len(), text.len());
        let mut gz = Gunzip::new();
        gz.pending = Bytes::from(member(&text));
        gz.started = true;
        while !gz.pending.is_empty() {
            gz.step().expect("valid gzip");
            assert!(!gz.over_inflated(), "{} from {}", gz.produced, gz.fed);
        }
    }

    #[test]
    fn a_cut_member_and_garbage_are_errors() {
        let wire = member(b"{\"type\":\"ADDED\"}\n");
        for cut in [3, 10, wire.len() - 12] {
            let err = decode(&wire[..wire.len() - cut], &[5]).expect_err("member cut");
            assert_eq!(
                err.kind(),
                std::io::ErrorKind::UnexpectedEof,
                "cut {cut}: {err}"
            );
        }
        let mut bad = wire.clone();
        bad.extend_from_slice(b"not gzip at all");
        assert!(decode(&bad, &[7]).is_err());
    }
}
