//! Protobuf answers built from each stored object's cached message bytes: a LIST is the
//! concatenation of its items' messages, a watch event one frame around an object's message.
//! Nothing is transcoded per request but the small parts (list metadata, bookmarks, errors), so
//! protobuf costs the server what JSON does (a benchmark of the two formats needs the server
//! out of the way).

use informer_proto::wire::{LEN, put_key, put_len, put_varint};

use super::MAGIC;

/// The length of `v` as a varint.
fn varint_len(v: u64) -> usize {
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// The length of a length-delimited field of tag < 16 holding `n` bytes.
fn field_len(n: usize) -> usize {
    1 + varint_len(n as u64) + n
}

/// `runtime.TypeMeta` {apiVersion 1, kind 2}.
fn type_meta(api_version: &str, kind: &str) -> Vec<u8> {
    let mut tm = Vec::with_capacity(api_version.len() + kind.len() + 4);
    put_len(&mut tm, 1, api_version.as_bytes());
    put_len(&mut tm, 2, kind.as_bytes());
    tm
}

/// `k8s\0` + `runtime.Unknown` {typeMeta 1, raw 2} around one object's message.
pub(crate) fn envelope(api_version: &str, kind: &str, message: &[u8]) -> Vec<u8> {
    let tm = type_meta(api_version, kind);
    let mut out = Vec::with_capacity(MAGIC.len() + field_len(tm.len()) + field_len(message.len()));
    out.extend_from_slice(MAGIC);
    put_len(&mut out, 1, &tm);
    put_len(&mut out, 2, message);
    out
}

/// What a protobuf LIST answer says besides its items.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ListHead<'a> {
    /// The list's `apiVersion`.
    pub(crate) api_version: &'a str,
    /// The list kind (`PodList`).
    pub(crate) kind: &'a str,
    /// `metadata.resourceVersion`.
    pub(crate) resource_version: &'a str,
    /// `metadata.continue`, when there is a next page.
    pub(crate) continue_token: Option<&'a str>,
    /// `metadata.shardInfo.selector`, when a shard selector was applied (KEP-5866).
    pub(crate) shard_selector: Option<&'a str>,
}

/// A LIST answer: `k8s\0` + `runtime.Unknown` whose `raw` is the list message, `ListMeta` at 1
/// and each item's message at 2, written in one buffer of the exact size.
pub(crate) fn list<B: AsRef<[u8]>>(head: &ListHead<'_>, items: &[B]) -> Vec<u8> {
    let mut meta = Vec::new();
    put_len(&mut meta, 2, head.resource_version.as_bytes());
    if let Some(c) = head.continue_token {
        put_len(&mut meta, 3, c.as_bytes());
    }
    if let Some(selector) = head.shard_selector {
        let mut info = Vec::new();
        put_len(&mut info, 1, selector.as_bytes());
        put_len(&mut meta, 5, &info);
    }
    let raw_len = field_len(meta.len())
        + items
            .iter()
            .map(|i| field_len(i.as_ref().len()))
            .sum::<usize>();
    let tm = type_meta(head.api_version, head.kind);
    let mut out = Vec::with_capacity(MAGIC.len() + field_len(tm.len()) + field_len(raw_len));
    out.extend_from_slice(MAGIC);
    put_len(&mut out, 1, &tm);
    put_key(&mut out, 2, LEN);
    put_varint(&mut out, raw_len as u64);
    put_len(&mut out, 1, &meta);
    for item in items {
        put_len(&mut out, 2, item.as_ref());
    }
    out
}

/// One watch frame: a 4-byte big-endian length, then `metav1.WatchEvent` {type 1, object 2 (a
/// `runtime.RawExtension` whose `raw` (1) is `enveloped`)}. `cut` keeps half of the frame (the
/// cut-chunk fault).
pub(crate) fn watch_frame(out: &mut Vec<u8>, event_type: &str, enveloped: &[u8], cut: bool) {
    let ext_len = field_len(enveloped.len());
    let msg_len = field_len(event_type.len()) + field_len(ext_len);
    let len = u32::try_from(msg_len).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    let start = out.len();
    put_len(out, 1, event_type.as_bytes());
    put_key(out, 2, LEN);
    put_varint(out, ext_len as u64);
    put_len(out, 1, enveloped);
    if cut {
        out.truncate(start + msg_len / 2);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::protobuf::{Schema, encode_message, encode_object};

    fn deployment(name: &str, rv: u32) -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv.to_string(),
                         "labels": {"app": name}, "uid": format!("uid-{name}")},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx",
                                           "ports": [{"containerPort": 80}]}]}}},
        })
    }

    fn message(v: &Value) -> Vec<u8> {
        encode_message("apps/v1", "Deployment", v, Schema::Built).expect("a deployment encodes")
    }

    /// The fast LIST (cached items concatenated) and the transcoder's encoding of the same JSON
    /// LIST are the same bytes, with and without continue and shard selector.
    #[test]
    fn a_list_of_cached_items_is_the_transcoded_list() {
        let items: Vec<Value> = (0..3)
            .map(|i| deployment(&format!("d{i}"), 10 + i))
            .collect();
        let messages: Vec<Vec<u8>> = items.iter().map(message).collect();
        for cont in [None, Some("tok")] {
            let mut meta = json!({"resourceVersion": "42"});
            if let Some(c) = cont {
                meta["continue"] = json!(c);
            }
            let whole = json!({"apiVersion": "apps/v1", "kind": "DeploymentList",
                               "metadata": meta, "items": items});
            let head = ListHead {
                api_version: "apps/v1",
                kind: "DeploymentList",
                resource_version: "42",
                continue_token: cont,
                shard_selector: None,
            };
            assert_eq!(
                list(&head, &messages),
                encode_object(&whole, Schema::Built).expect("the list encodes"),
                "continue {cont:?}"
            );
        }
        // The schema (k8s-pb) predates `shardInfo` (KEP-5866, ListMeta field 5), so the
        // transcoder cannot write it; the list reader finds it, and the items unchanged.
        for selector in ["shardRange(object.metadata.uid, '0x0', '0x8')", ""] {
            let head = ListHead {
                api_version: "apps/v1",
                kind: "DeploymentList",
                resource_version: "42",
                continue_token: Some("tok"),
                shard_selector: Some(selector),
            };
            let body = list(&head, &messages);
            let env = informer_proto::frame::Envelope::read(&body).expect("an envelope");
            let read = informer_proto::frame::List::read(env.raw).expect("a list");
            assert_eq!(read.meta.shard_selector, Some(selector));
            assert_eq!(
                (read.meta.resource_version, read.meta.continue_token),
                ("42", "tok")
            );
            let ranges: Vec<_> = read.items().collect::<Result<_, _>>().expect("items");
            let got: Vec<&[u8]> = ranges.into_iter().map(|r| &read.raw()[r]).collect();
            let want: Vec<&[u8]> = messages.iter().map(Vec::as_slice).collect();
            assert_eq!(got, want);
        }
        let empty: [Vec<u8>; 0] = [];
        let head = ListHead {
            api_version: "apps/v1",
            kind: "DeploymentList",
            resource_version: "7",
            continue_token: None,
            shard_selector: None,
        };
        let whole = json!({"apiVersion": "apps/v1", "kind": "DeploymentList",
                           "metadata": {"resourceVersion": "7"}, "items": []});
        assert_eq!(
            list(&head, &empty),
            encode_object(&whole, Schema::Built).expect("encodes")
        );
    }

    /// A frame from the cached message is the frame the JSON event line re-frames to; a cut
    /// frame is the same cut.
    #[test]
    fn a_watch_frame_of_a_cached_item_is_the_reframed_line() {
        let d = deployment("d", 5);
        let enveloped = envelope("apps/v1", "Deployment", &message(&d));
        assert_eq!(
            enveloped,
            encode_object(&d, Schema::Built).expect("encodes")
        );
        let line = format!("{}\n", json!({"type": "MODIFIED", "object": d}));
        let mut frame = Vec::new();
        watch_frame(&mut frame, "MODIFIED", &enveloped, false);
        assert_eq!(
            frame,
            crate::http::codec::reframe(line.as_bytes(), Schema::Built)
        );
        let mut cut = Vec::new();
        watch_frame(&mut cut, "MODIFIED", &enveloped, true);
        assert_eq!(cut.len(), 4 + (frame.len() - 4) / 2);
        assert_eq!(cut[..], frame[..cut.len()]);
        let (len, _) = frame.split_at(4);
        assert_eq!(
            u32::from_be_bytes(len.try_into().expect("4 bytes")) as usize,
            frame.len() - 4
        );
    }

    #[test]
    fn varint_lengths_match_the_writer() {
        for v in [0u64, 1, 127, 128, 16_383, 16_384, 1 << 35, u64::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(varint_len(v), out.len(), "{v}");
        }
    }
}
