//! Tests of shards: the hash, selector rendering, ranges that partition the space, and the
//! probes that read an object's shard field before (or instead of) its decode.

use super::*;
use crate::list_watch::chunked::{probe_metadata_field, shard_admits_event};
use proptest::prelude::*;

/// The list decoder's rule for one item: admitted unless its field could be read and hashes
/// outside the shard (an unreadable item is decoded, and the decode reports it).
fn admits_raw(shard: &Shard, raw: &[u8]) -> bool {
    probe_metadata_field(raw, shard.field().metadata_key()).is_none_or(|v| shard.admits_bytes(&v))
}

#[test]
fn fnv1a64_is_the_reference_hash() {
    // The FNV-1a 64 offset basis, and the published vector for "foobar".
    assert_eq!(
        (fnv1a64(""), fnv1a64("foobar")),
        (0xcbf2_9ce4_8422_2325, 0x8594_4171_f739_67e8)
    );
}

#[test]
fn selectors_render_the_apiserver_grammar() {
    let half = Shard::of(0, 2, ShardField::Uid).unwrap();
    assert_eq!(
        half.selector(),
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
    );
    let top = Shard::of(1, 2, ShardField::Namespace).unwrap();
    assert_eq!(
        top.selector(),
        "shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')"
    );
    let both = half
        .clone()
        .union(&Shard::of(1, 2, ShardField::Uid).unwrap())
        .unwrap();
    assert_eq!(
        both.selector(),
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || \
         shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"
    );
    assert!(half.union(&top).is_none(), "one field per selector");
    assert_eq!(
        Shard::of(4, 4, ShardField::Uid),
        Err(ShardError::NoSuchShard { index: 4, count: 4 })
    );
    assert!(Shard::of(0, 0, ShardField::Uid).is_err());
    assert!(Shard::range(ShardField::Uid, 5, 5).is_err());
    assert!(Shard::range(ShardField::Uid, 0, SPACE + 1).is_err());
}

#[test]
fn the_probe_reads_only_up_to_the_field_and_admits_what_it_cannot_read() {
    let shard = Shard::of(0, 2, ShardField::Uid).unwrap();
    let inside = (0..)
        .map(|i| format!("u{i}"))
        .find(|u| shard.admits(u))
        .unwrap();
    let outside = (0..)
        .map(|i| format!("u{i}"))
        .find(|u| !shard.admits(u))
        .unwrap();
    // Garbage after the metadata is never read.
    let raw =
        format!(r#"{{"kind":"Pod","metadata":{{"name":"a","uid":"{outside}"}},"spec":{{not json"#);
    assert!(!admits_raw(&shard, raw.as_bytes()));
    let raw = format!(r#"{{"spec":{{}},"metadata":{{"uid":"{inside}","name":"a"}}}}"#);
    assert!(admits_raw(&shard, raw.as_bytes()));
    assert!(
        admits_raw(&shard, b"{not json"),
        "the full decode reports it"
    );
    // A missing field hashes as empty, as on the server.
    assert_eq!(
        admits_raw(&shard, br#"{"metadata":{"name":"a"}}"#),
        shard.admits("")
    );

    let ev = |t: &str, uid: &str| {
        format!(
            r#"{{"type":"{t}","object":{{"kind":"Pod","metadata":{{"uid":"{uid}"}},"spec":{{}}}}}}"#
        )
    };
    assert!(shard_admits_event(&shard, ev("ADDED", &inside).as_bytes()));
    assert!(!shard_admits_event(
        &shard,
        ev("MODIFIED", &outside).as_bytes()
    ));
    assert!(
        shard_admits_event(&shard, ev("BOOKMARK", &outside).as_bytes()),
        "bookmarks always pass"
    );
    assert!(shard_admits_event(&shard, ev("ERROR", &outside).as_bytes()));
    // `object` before `type`: still right.
    let late = format!(r#"{{"object":{{"metadata":{{"uid":"{outside}"}}}},"type":"BOOKMARK"}}"#);
    assert!(shard_admits_event(&shard, late.as_bytes()));
    let late = format!(r#"{{"object":{{"metadata":{{"uid":"{outside}"}}}},"type":"DELETED"}}"#);
    assert!(!shard_admits_event(&shard, late.as_bytes()));
    assert!(shard_admits_event(&shard, b"garbage"));
}

proptest! {
    /// `of(i, n)` for every i partitions the hash space: contiguous, from 0 to 2^64.
    #[test]
    fn shards_of_n_partition_the_space(n in 1u32..200) {
        let mut next: u128 = 0;
        for i in 0..n {
            let s = Shard::of(i, n, ShardField::Uid).unwrap();
            let &[(start, end)] = s.ranges() else { panic!("one range") };
            prop_assert_eq!(u128::from(start), next);
            prop_assert!(end > u128::from(start));
            next = end;
        }
        prop_assert_eq!(next, SPACE);
    }

    /// Every value is admitted by exactly one of n shards, and the probe agrees with the
    /// value on any object layout.
    #[test]
    fn exactly_one_shard_admits_each_value(n in 1u32..17, uid in "[a-z0-9-]{0,40}", before in any::<bool>()) {
        let shards: Vec<Shard> = (0..n).map(|i| Shard::of(i, n, ShardField::Uid).unwrap()).collect();
        prop_assert_eq!(shards.iter().filter(|s| s.admits(&uid)).count(), 1);
        // The API server's order (the UID early in the metadata, more after it), and others.
        let raw = if before {
            format!(r#"{{"kind":"Pod","metadata":{{"name":"p","uid":"{uid}","labels":{{"a":"b"}},"managedFields":[{{"f":1}}]}},"spec":{{"x":[1,2,{{"y":"z"}}]}}}}"#)
        } else {
            format!(r#"{{"spec":{{"x":[1,2,{{"y":"z"}}]}},"metadata":{{"labels":{{"a":"b"}},"uid":"{uid}"}}}}"#)
        };
        let event = format!(r#"{{"type":"MODIFIED","object":{raw}}}"#);
        let late = format!(r#"{{"object":{raw},"type":"MODIFIED"}}"#);
        for s in &shards {
            prop_assert_eq!(admits_raw(s, raw.as_bytes()), s.admits(&uid));
            prop_assert_eq!(shard_admits_event(s, event.as_bytes()), s.admits(&uid));
            prop_assert_eq!(shard_admits_event(s, late.as_bytes()), s.admits(&uid));
        }
    }

    /// `index_of` names the one shard of n that admits the value, for any n (the hash space's
    /// bounds floor unevenly when n does not divide 2^64).
    #[test]
    fn index_of_names_the_shard_that_admits_the_value(n in 1u32..100_000, value in ".{0,40}") {
        let index = Shard::index_of(&value, n).unwrap();
        prop_assert!(index < n);
        prop_assert!(Shard::of(index, n, ShardField::Uid).unwrap().admits(&value));
    }
}

#[test]
fn index_of_zero_shards_is_none() {
    assert_eq!(Shard::index_of("a", 0), None);
    assert_eq!(Shard::index_of("a", 1), Some(0));
}
