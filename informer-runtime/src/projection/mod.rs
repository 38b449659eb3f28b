//! Projections: slim structs decoded straight from the wire of a source kind (P4-P7).
//!
//! A projection declares only the fields a controller reads, and `#[derive(Projection)]`
//! (informer-derive, re-exported as `informer_runtime::Projection` with the `derive` feature)
//! makes it a cacheable [`Object`](crate::Object) whose informer lists and watches the source
//! kind's endpoint:
//!
//! ```ignore
//! use informer_runtime::Projection;
//! use informer_runtime::projection::{IStr, SlimMeta};
//! use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
//!
//! #[derive(Projection, Clone, Debug)]
//! #[projection(of = Pod)]
//! pub struct PodView {
//!     pub metadata: SlimMeta,
//!     pub spec: Option<PodSpecView>,
//! }
//!
//! #[derive(Projection, Clone, Debug)]
//! #[projection(of = PodSpec)]
//! pub struct PodSpecView {
//!     pub node_name: Option<IStr>,
//!     pub containers: Box<[ContainerView]>,
//! }
//!
//! #[derive(Projection, Clone, Debug)]
//! #[projection(of = Container)]
//! pub struct ContainerView {
//!     pub name: IStr,
//!     pub image: Option<IStr>,
//! }
//!
//! let pods = factory.informer_for::<PodView>();          // lists and watches /api/v1/pods
//! let lister = informer_runtime::lister::Lister::from_indexer(pods.indexer().clone());
//! ```
//!
//! Rules:
//! - **Decoding (P4).** Fields the projection does not declare are skipped by the decoder
//!   (serde's `IgnoredAny`), never materialised. A JSON key matches a field when both are equal
//!   ignoring case and `_`/`-` (k8s-openapi's `pod_ip` is the wire's `podIP`). An absent or `null`
//!   field is `None` for an `Option` field and the type's default otherwise. A top-level
//!   projection rejects an object whose `kind` is not its source's (R16).
//! - **Checked at compile time (P5).** Each field must exist in the source type under the same
//!   Rust name, with a type that can hold it: [`ProjectFrom`] lists the compatible pairs (the same
//!   scalar, a compact form such as [`IStr`] for `String` or `Box<[T]>` for `Vec<S>`, or a nested
//!   projection of the field's type). A mistake is a compile error at the field.
//! - **Same identity (P6).** A top-level projection has a `metadata` field ([`SlimMeta`], or a
//!   full `ObjectMeta`); its key, UID and resourceVersion are the source object's, so every R*,
//!   D* and H* rule holds for its informer unchanged.

mod intern;
pub(crate) mod map;
mod meta;

pub use intern::{IStr, Interner, InternerStats};
pub use map::StrMap;
pub use meta::{SlimMeta, SlimOwnerReference};

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};

/// `Self` can hold a source field of type `S` in a projection (P5).
///
/// `#[derive(Projection)]` checks every field against its source field with this trait, and
/// implements it for each projection struct from its `of` type, so nested projections compose.
#[diagnostic::on_unimplemented(
    message = "a projection field of type `{Self}` cannot hold the source field of type `{S}`",
    label = "not a compatible projection of `{S}`",
    note = "use the same scalar, a compact form (`IStr`/`Box<str>` for `String`, `Box<[T]>` for `Vec`, `StrMap` for a string map, `SlimMeta` for `ObjectMeta`) or a `#[derive(Projection)]` struct with `#[projection(of = ...)]` of that type; wrap in `Option` exactly where the source does"
)]
pub trait ProjectFrom<S: ?Sized> {}

macro_rules! same {
    ($($t:ty),* $(,)?) => {$( impl ProjectFrom<$t> for $t {} )*};
}
same!(
    bool,
    i32,
    i64,
    f64,
    String,
    Time,
    MicroTime,
    Quantity,
    IntOrString,
    serde_json::Value,
    ObjectMeta,
    BTreeMap<String, String>,
);

impl ProjectFrom<String> for Box<str> {}
impl ProjectFrom<String> for IStr {}
impl ProjectFrom<Quantity> for IStr {}
impl ProjectFrom<BTreeMap<String, String>> for StrMap {}
impl ProjectFrom<ObjectMeta> for SlimMeta {}
impl<P: ProjectFrom<S>, S> ProjectFrom<Option<S>> for Option<P> {}
impl<P: ProjectFrom<S>, S> ProjectFrom<Vec<S>> for Box<[P]> {}
impl<P: ProjectFrom<S>, S> ProjectFrom<Vec<S>> for Vec<P> {}

/// How a projection reads its identity from its `metadata` field (P6): implemented by
/// [`SlimMeta`] and by the full `ObjectMeta`.
pub trait ProjectedMeta: Send + Sync + 'static {
    /// `metadata.name`.
    fn name(&self) -> Option<&str>;
    /// `metadata.namespace`.
    fn namespace(&self) -> Option<&str>;
    /// `metadata.uid`.
    fn uid(&self) -> Option<&str>;
    /// `metadata.resourceVersion`.
    fn resource_version(&self) -> Option<&str>;
    /// A label's value.
    fn label(&self, key: &str) -> Option<&str>;
    /// The full `ObjectMeta`, when that is what the projection keeps.
    fn full(&self) -> Option<&ObjectMeta> {
        None
    }
    /// The full `ObjectMeta`, mutably.
    fn full_mut(&mut self) -> Option<&mut ObjectMeta> {
        None
    }
}

impl ProjectedMeta for SlimMeta {
    fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }
    fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }
    fn uid(&self) -> Option<&str> {
        self.uid.as_deref()
    }
    fn resource_version(&self) -> Option<&str> {
        self.resource_version.as_deref()
    }
    fn label(&self, key: &str) -> Option<&str> {
        self.labels.get(key)
    }
}

impl ProjectedMeta for ObjectMeta {
    fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }
    fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }
    fn uid(&self) -> Option<&str> {
        self.uid.as_deref()
    }
    fn resource_version(&self) -> Option<&str> {
        self.resource_version.as_deref()
    }
    fn label(&self, key: &str) -> Option<&str> {
        self.labels.as_ref()?.get(key).map(String::as_str)
    }
    fn full(&self) -> Option<&ObjectMeta> {
        Some(self)
    }
    fn full_mut(&mut self) -> Option<&mut ObjectMeta> {
        Some(self)
    }
}

/// Support for the code `#[derive(Projection)]` emits; not covered by semver.
#[doc(hidden)]
pub mod __derive {
    pub use super::*;

    /// A source field, its type fixed by the argument, so that [`SourceField::holds`] reports an
    /// incompatible projection type through [`ProjectFrom`]'s message (P5).
    pub struct SourceField<'a, S>(pub &'a S);

    impl<S> SourceField<'_, S> {
        /// Compiles only if `P` can hold this source field.
        pub fn holds<P: ProjectFrom<S>>(self) {}
    }

    /// What a JSON key of a projected object is.
    pub enum Key {
        /// The declared field with this index.
        Field(usize),
        /// `kind`, checked against the source kind (R16).
        Kind,
        /// Anything else: skipped.
        Other,
    }

    /// Reads one key of a projected object: `names` are the declared fields' normalized names
    /// (lowercase, without `_`), compared with the key normalized the same way.
    pub struct KeySeed {
        /// The declared fields, normalized.
        pub names: &'static [&'static str],
        /// Whether `kind` is checked (top-level projections).
        pub check_kind: bool,
    }

    impl<'de> DeserializeSeed<'de> for KeySeed {
        type Value = Key;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Key, D::Error> {
            d.deserialize_identifier(self)
        }
    }

    impl Visitor<'_> for KeySeed {
        type Value = Key;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a field name")
        }
        fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
            if self.check_kind && key == "kind" {
                return Ok(Key::Kind);
            }
            Ok(self
                .names
                .iter()
                .position(|n| normalized_eq(key, n))
                .map_or(Key::Other, Key::Field))
        }
    }

    /// Whether `key` equals the normalized name `normalized` ignoring ASCII case, `_` and `-`.
    pub fn normalized_eq(key: &str, normalized: &str) -> bool {
        let mut k = key.bytes().filter(|b| *b != b'_' && *b != b'-');
        let mut n = normalized.bytes();
        loop {
            match (k.next(), n.next()) {
                (None, None) => return true,
                (Some(a), Some(b)) if a.eq_ignore_ascii_case(&b) => {}
                _ => return false,
            }
        }
    }

    /// Reads the value of `kind` and fails unless it is `expected` (R16).
    pub fn check_kind<'de, A: MapAccess<'de>>(map: &mut A, expected: &str) -> Result<(), A::Error> {
        let kind: std::borrow::Cow<'de, str> = map.next_value::<BorrowedOrOwned<'de>>()?.0;
        if kind != expected {
            return Err(de::Error::custom(format_args!(
                "expected an object of kind `{expected}`, got kind `{kind}`"
            )));
        }
        Ok(())
    }

    /// A string that borrows from the input when it can.
    struct BorrowedOrOwned<'de>(std::borrow::Cow<'de, str>);

    impl<'de> serde::Deserialize<'de> for BorrowedOrOwned<'de> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = BorrowedOrOwned<'de>;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("a string")
                }
                fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
                    Ok(BorrowedOrOwned(std::borrow::Cow::Borrowed(s)))
                }
                fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
                    Ok(BorrowedOrOwned(std::borrow::Cow::Owned(s.to_owned())))
                }
            }
            d.deserialize_str(V)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::__derive::normalized_eq;

    #[test]
    fn p5_json_keys_match_rust_names_ignoring_case_and_underscores() {
        assert!(normalized_eq("podIP", "podip"));
        assert!(normalized_eq("nodeName", "nodename"));
        assert!(normalized_eq("type", "type"));
        assert!(!normalized_eq("nodeNames", "nodename"));
        assert!(!normalized_eq("node", "nodename"));
    }
}
