//! Decode only what is new (P8): a shared part whose encoded bytes were decoded before is not
//! decoded again.
//!
//! Each [`Pool`](super::Pool) keeps a small table of the encodings it decoded recently: a digest
//! of the encoding (its format's name and bytes) to a weak reference to the shared value it
//! decoded to. A part whose digest is there, with its value alive, is that value; its bytes are
//! skipped (protobuf: by their length prefix; JSON: the span serde_json already crossed). The
//! table is direct-mapped (a new digest takes its slot from whatever was there), so it costs a
//! fixed, small amount of memory per shared type and holds no value alive; it is allocated on
//! the type's first skippable decode.
//!
//! A weak reference keeps its value's allocation (not what the value owns) until it is
//! dropped, so a slot whose value was freed is cleared when a lookup finds it dead and by the
//! pool's sweeps, the background passes among them (P3): the table registers with them.
//! Until then a slot pins at most `size_of::<T>()` plus 16 bytes, counted in P8's budget.
//! Each slot also keeps the value's hash in its pool, so the pool upgrades the weak reference
//! under the lock of the shard that holds the value, where no sweep can drop it at the same
//! time (`Pool::recalled`).
//!
//! The digest is 128 bits: SipHash-1-3 under a key drawn at random per process (std's
//! `RandomState`, made for input an attacker chooses), and foldhash under its own random seed.
//! Two different encodings get one digest with a probability of about 2^-128; an API client
//! that does not know the keys cannot make them collide.

use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, LazyLock, OnceLock, Weak};

use parking_lot::Mutex;

/// Slots per shared type unless it asks for more ([`Share::RECENT_SLOTS`]): 64 KiB once
/// the type is used. A LIST page's parts repeat within owner groups (the Pods of one ReplicaSet
/// are neighbours in a page), and a table of this size holds a page's worth of distinct parts.
///
/// [`Share::RECENT_SLOTS`]: super::Share::RECENT_SLOTS
pub(crate) const SLOTS: usize = 2048;

/// Slots per lock.
const STRIPE: usize = 64;

/// The digest of an encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Digest(u64, u64);

/// The per-process keys of the digest.
struct Keys {
    sip: std::hash::RandomState,
    fold: foldhash::quality::RandomState,
}

static KEYS: LazyLock<Keys> = LazyLock::new(|| Keys {
    sip: std::hash::RandomState::new(),
    fold: foldhash::quality::RandomState::default(),
});

impl Digest {
    /// The digest of `bytes` in the encoding named `encoding`.
    pub(crate) fn of(encoding: &str, bytes: &[u8]) -> Self {
        let keys = &*KEYS;
        let mut sip = keys.sip.build_hasher();
        let mut fold = keys.fold.build_hasher();
        for h in [&mut sip as &mut dyn Hasher, &mut fold] {
            h.write(encoding.as_bytes());
            h.write_u8(0xff);
            h.write_usize(bytes.len());
            h.write(bytes);
        }
        Digest(sip.finish(), fold.finish())
    }
}

/// One slot: the digest of an encoding, what it decoded to, and that value's hash in its pool.
struct Slot<T> {
    digest: Digest,
    hash: u64,
    value: Weak<T>,
}

/// One lock's slots.
type Stripe<T> = Mutex<Box<[Option<Slot<T>>]>>;

/// The recently decoded encodings of one shared type.
pub(crate) struct Recent<T> {
    stripes: OnceLock<Box<[Stripe<T>]>>,
    /// Slots in all, a multiple of [`STRIPE`].
    slots: usize,
}

impl<T> Recent<T> {
    pub(crate) const fn new() -> Self {
        Recent::with_slots(SLOTS)
    }

    /// A table of at least `slots` slots (rounded up to whole stripes).
    pub(crate) const fn with_slots(slots: usize) -> Self {
        let stripes = if slots < STRIPE {
            1
        } else {
            slots.div_ceil(STRIPE)
        };
        Recent {
            stripes: OnceLock::new(),
            slots: stripes * STRIPE,
        }
    }

    fn stripes(&self) -> &[Stripe<T>] {
        self.stripes.get_or_init(|| {
            (0..self.slots / STRIPE)
                .map(|_| Mutex::new((0..STRIPE).map(|_| None).collect()))
                .collect()
        })
    }

    /// The stripe and slot of `digest`.
    fn place(&self, digest: Digest) -> (usize, usize) {
        let slot = (digest.0 as usize) % self.slots;
        (slot / STRIPE, slot % STRIPE)
    }

    /// The value an encoding with this digest decoded to, as its pool hash and a weak
    /// reference, if the table still has it and it was alive when looked up; a slot found dead
    /// is cleared. The caller upgrades under its pool's shard lock (`Pool::recalled`).
    pub(crate) fn get(&self, digest: Digest) -> Option<(u64, Weak<T>)> {
        let (stripe, slot) = self.place(digest);
        let mut slots = self.stripes.get()?.get(stripe)?.lock();
        let s = slots.get_mut(slot)?;
        let found = s.as_ref().filter(|s| s.digest == digest)?;
        if found.value.strong_count() == 0 {
            *s = None;
            return None;
        }
        Some((found.hash, found.value.clone()))
    }

    /// Records that an encoding with this digest decoded to `value`, whose pool hash is `hash`.
    pub(crate) fn put(&self, digest: Digest, hash: u64, value: &Arc<T>) {
        let (stripe, slot) = self.place(digest);
        if let Some(slots) = self.stripes().get(stripe)
            && let Some(s) = slots.lock().get_mut(slot)
        {
            *s = Some(Slot {
                digest,
                hash,
                value: Arc::downgrade(value),
            });
        }
    }

    /// Clears the slots of stripe `i` whose value was freed; returns how many. A strong count
    /// of zero is final, so this needs no pool lock.
    fn sweep_stripe(&self, i: usize) -> usize {
        let Some(stripe) = self.stripes.get().and_then(|s| s.get(i)) else {
            return 0;
        };
        let mut cleared = 0;
        for s in stripe.lock().iter_mut() {
            if s.as_ref().is_some_and(|s| s.value.strong_count() == 0) {
                *s = None;
                cleared += 1;
            }
        }
        cleared
    }

    /// Clears every slot whose value was freed; returns how many.
    pub(crate) fn sweep(&self) -> usize {
        (0..self.stripe_count()).map(|i| self.sweep_stripe(i)).sum()
    }

    fn stripe_count(&self) -> usize {
        self.stripes.get().map_or(0, |s| s.len())
    }

    /// Slots holding a weak reference, its value alive or not.
    pub(crate) fn held(&self) -> usize {
        self.stripes.get().map_or(0, |stripes| {
            stripes
                .iter()
                .map(|s| s.lock().iter().filter(|s| s.is_some()).count())
                .sum()
        })
    }
}

/// The background passes clear dead slots too (P3); a stripe is a shard.
impl<T: Send + Sync> crate::pool::Sweep for Recent<T> {
    fn shard_count(&self) -> usize {
        self.stripe_count()
    }

    fn sweep_shard(&self, i: usize) -> usize {
        self.sweep_stripe(i)
    }

    fn held(&self) -> usize {
        Recent::held(self)
    }
}

impl<T> Default for Recent<T> {
    fn default() -> Self {
        Recent::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::{Pool, Share, ShareHash, Shared};
    use crate::projection::IStr;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Decodes of [`Counted`] so far.
    static DECODES: AtomicUsize = AtomicUsize::new(0);

    /// A shared part whose decodes are counted.
    #[derive(Debug, Clone, PartialEq, serde::Serialize)]
    struct Counted {
        name: IStr,
        ports: Vec<i64>,
    }

    impl<'de> serde::Deserialize<'de> for Counted {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            #[derive(serde::Deserialize)]
            struct Plain {
                name: IStr,
                ports: Vec<i64>,
            }
            DECODES.fetch_add(1, Ordering::SeqCst);
            let p = Plain::deserialize(d)?;
            Ok(Counted {
                name: p.name,
                ports: p.ports,
            })
        }
    }

    impl ShareHash for Counted {
        fn share_hash<H: Hasher>(&self, state: &mut H) {
            self.name.share_hash(state);
            self.ports.share_hash(state);
        }
    }

    impl Share for Counted {
        fn pool() -> &'static Pool<Self> {
            static POOL: LazyLock<Pool<Counted>> = LazyLock::new(Pool::new);
            &POOL
        }
    }

    /// An object holding shared parts between arrays of its own.
    #[derive(Debug, PartialEq, serde::Deserialize)]
    struct Holder {
        before: Vec<Vec<i64>>,
        parts: Vec<Shared<Counted>>,
        after: Vec<i64>,
    }

    /// P8 on JSON: the second object's parts, whose JSON the first one decoded, are the first
    /// one's values without a decode; everything else decodes as serde_json decodes it, and
    /// the arrays after a skipped part keep their exact capacities (the counts stay in step).
    #[test]
    fn json_parts_decoded_before_are_not_decoded_again() {
        let a = r#"{"before":[[1],[2,3]],"parts":[{"name":"web","ports":[80,443]},{"name":"db","ports":[]}],"after":[7,8,9]}"#;
        let b = r#"{"before":[[4,5,6]],"parts":[{"name":"db","ports":[]},{"name":"web","ports":[80,443]},{"name":"new","ports":[1]}],"after":[1,2,3,4,5]}"#;
        let first: Holder = crate::list_watch::sized::from_slice(a.as_bytes()).expect("a");
        let decoded = DECODES.load(Ordering::SeqCst);
        let second: Holder = crate::list_watch::sized::from_slice(b.as_bytes()).expect("b");
        assert_eq!(
            DECODES.load(Ordering::SeqCst) - decoded,
            1,
            "only the new part is decoded"
        );
        assert!(Shared::ptr_eq(&first.parts[0], &second.parts[1]));
        assert!(Shared::ptr_eq(&first.parts[1], &second.parts[0]));
        let plain: Holder = serde_json::from_str(b).expect("plain");
        assert_eq!(second, plain);
        assert_eq!(
            second.after.capacity(),
            5,
            "counts in step after skipped parts"
        );
        assert_eq!(second.parts[2].ports.capacity(), 1);
        assert_eq!(second.before[0].capacity(), 3);
    }

    #[test]
    fn digests_tell_encodings_and_formats_apart() {
        let a = Digest::of("json", br#"{"name":"a"}"#);
        assert_eq!(a, Digest::of("json", br#"{"name":"a"}"#));
        assert_ne!(a, Digest::of("json", br#"{"name":"b"}"#));
        assert_ne!(a, Digest::of("api.core.v1.Container", br#"{"name":"a"}"#));
        // The name and the bytes are not one string run together.
        assert_ne!(Digest::of("ab", b"c"), Digest::of("a", b"bc"));
    }

    #[test]
    fn a_slot_holds_the_latest_value_and_never_keeps_one_alive() {
        let recent = Recent::<String>::new();
        let d = Digest::of("json", b"\"x\"");
        assert!(recent.get(d).is_none(), "empty before the first put");
        let value = Arc::new("x".to_string());
        recent.put(d, 7, &value);
        let (hash, weak) = recent.get(d).expect("remembered");
        assert_eq!(hash, 7);
        assert!(Arc::ptr_eq(&weak.upgrade().expect("alive"), &value));
        drop((weak, value));
        assert!(recent.get(d).is_none(), "a dropped value is gone");
    }

    /// P8: a slot whose value was freed no longer pins its allocation once a lookup finds it
    /// dead, or a sweep runs.
    #[test]
    fn p8_dead_slots_are_cleared_by_a_lookup_and_by_a_sweep() {
        let recent = Recent::<String>::new();
        let digests: Vec<Digest> = (0..3)
            .map(|i| Digest::of("json", format!("{i}").as_bytes()))
            .collect();
        let values: Vec<Arc<String>> = (0..3).map(|i| Arc::new(i.to_string())).collect();
        for (d, v) in digests.iter().zip(&values) {
            recent.put(*d, 0, v);
        }
        assert_eq!(recent.held(), 3);
        drop(values);
        assert!(recent.get(digests[0]).is_none());
        assert_eq!(recent.held(), 2, "the lookup cleared the dead slot");
        assert_eq!(recent.sweep(), 2);
        assert_eq!(recent.held(), 0, "the sweep cleared the rest");
    }
}

#[cfg(test)]
mod protobuf_tests {
    use std::hash::Hasher;
    use std::sync::LazyLock;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use crate::compact::{Pool, Share, ShareHash, Shared};
    use crate::projection::IStr;

    static DECODES: AtomicUsize = AtomicUsize::new(0);

    /// A container, decoded (and counted) from `api.core.v1.Container`.
    #[derive(Debug, Clone, PartialEq)]
    struct Container {
        name: IStr,
        image: Option<IStr>,
    }

    impl<'de> serde::Deserialize<'de> for Container {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            #[derive(serde::Deserialize)]
            struct Plain {
                name: IStr,
                image: Option<IStr>,
            }
            DECODES.fetch_add(1, Ordering::SeqCst);
            let p = Plain::deserialize(d)?;
            Ok(Container {
                name: p.name,
                image: p.image,
            })
        }
    }

    impl ShareHash for Container {
        fn share_hash<H: Hasher>(&self, state: &mut H) {
            self.name.share_hash(state);
            self.image.share_hash(state);
        }
    }

    impl Share for Container {
        fn pool() -> &'static Pool<Self> {
            static POOL: LazyLock<Pool<Container>> = LazyLock::new(Pool::new);
            &POOL
        }
    }

    #[derive(Debug, serde::Deserialize)]
    struct Spec {
        containers: Vec<Shared<Container>>,
    }

    #[derive(Debug, serde::Deserialize)]
    struct PodView {
        spec: Spec,
    }

    fn pod(containers: &[(&str, &str)]) -> Vec<u8> {
        let containers: Vec<_> = containers
            .iter()
            .map(|(n, i)| serde_json::json!({"name": n, "image": i}))
            .collect();
        let v = serde_json::json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": containers}});
        let body = informer_testserver::encode_protobuf(&v).expect("encode");
        let env = informer_proto::frame::Envelope::read(&body).expect("envelope");
        env.raw.to_vec()
    }

    /// P8 on protobuf: a container message whose bytes were decoded before is the same shared
    /// value, taken without a decode.
    #[test]
    fn protobuf_parts_decoded_before_are_not_decoded_again() {
        let message = informer_proto::for_kind("v1", "Pod").expect("built in");
        let a = pod(&[("web", "nginx:1"), ("sidecar", "envoy:2")]);
        let b = pod(&[("sidecar", "envoy:2"), ("web", "nginx:2")]);
        let first: PodView = informer_proto::from_slice(message, &a).expect("a");
        let decoded = DECODES.load(Ordering::SeqCst);
        let second: PodView = informer_proto::from_slice(message, &b).expect("b");
        assert_eq!(
            DECODES.load(Ordering::SeqCst) - decoded,
            1,
            "only web:nginx:2"
        );
        assert!(Shared::ptr_eq(
            &first.spec.containers[1],
            &second.spec.containers[0]
        ));
        assert_eq!(second.spec.containers[1].image.as_deref(), Some("nginx:2"));
    }
}
