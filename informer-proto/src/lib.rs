//! Kubernetes protobuf (`application/vnd.kubernetes.protobuf`) for informer-rs.
//!
//! kube-apiserver serves every built-in kind as protobuf too (behaviour T1 in
//! `docs/behaviour.md`); this crate reads it without Go types and without an intermediate value:
//!
//! - [`schema`]: the generated table of every message of the built-in groups: field numbers,
//!   JSON names, types and, from the Go struct tags, which zeros on the wire mean "absent";
//! - [`Deserializer`] and [`from_slice`]: a serde `Deserializer` over a message's bytes, so that
//!   k8s-openapi types, informer-gen's compact types and projections decode straight from
//!   protobuf into the same values as from the object's JSON (T2);
//! - [`frame`]: the `k8s\0` + `runtime.Unknown` envelope ([`frame::from_envelope`] decodes a
//!   whole body), LIST bodies (their `ListMeta` and each item's bytes), WATCH frames and events,
//!   [`frame::probe_meta`] and `Status` errors;
//! - [`wire`] and [`time`]: the protobuf wire format, and Go's JSON forms of times and durations;
//! - [`Skipped`]: fields of a newer Kubernetes version, which every reader passes over and counts
//!   (T8).
//!
//! ```
//! use informer_proto::{frame, from_slice, for_kind};
//! # fn pod_bytes() -> Vec<u8> {
//! #     // ObjectMeta { name: "web", namespace: "default" } in a Pod.
//! #     let meta = [&[0x0a, 3][..], b"web", &[0x1a, 7], b"default"].concat();
//! #     let mut pod = vec![0x0a, meta.len() as u8];
//! #     pod.extend(meta);
//! #     pod
//! # }
//! #[derive(serde::Deserialize, Debug, PartialEq)]
//! struct Meta { name: String, namespace: String }
//! #[derive(serde::Deserialize, Debug, PartialEq)]
//! struct PodName { metadata: Meta }
//!
//! let bytes = pod_bytes();
//! let pod: PodName = from_slice(for_kind("v1", "Pod").expect("built in"), &bytes)?;
//! assert_eq!(pod.metadata.name, "web");
//! // Only `metadata` is read, for shard filtering before decoding.
//! assert_eq!(frame::probe_meta(&bytes)?.namespace, "default");
//! # Ok::<(), informer_proto::Error>(())
//! ```

mod de;
mod error;
pub mod frame;
#[rustfmt::skip]
#[allow(clippy::all, missing_docs)]
mod generated;
pub mod schema;
mod skipped;
pub mod time;
pub mod wire;

pub use de::{Deserializer, MAX_DEPTH, RAW_PART, from_slice};
pub use error::Error;
pub use schema::{Message, for_kind};
pub use skipped::{Skipped, SkippedFields};

/// The media type of Kubernetes protobuf.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The prefix of every protobuf-encoded object (not of watch frames, whose events carry it
/// inside).
pub const MAGIC: &[u8] = b"k8s\0";
