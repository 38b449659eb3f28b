//! What a controller reads of an object's metadata beyond the cache's needs: its controller owner
//! reference (C4), its finalizers and its deletion timestamp (C9), borrowed from whichever
//! metadata the cached form keeps (k8s-openapi's `ObjectMeta`, [`SlimMeta`](crate::projection::SlimMeta)
//! or a compact `ObjectMeta`); and [`Lossless`], the cached forms that hold the whole object and
//! so convert to and from their source kind (the kind itself, or its compact form: P1, P2).
//!
//! docs/decisions/23-compact-kinds-in-controllers.md explains why these are the runtime's own
//! traits and not `kube::Resource`.

use std::borrow::Cow;
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

use super::{Object, ScopeKind};
// From the interner itself, not `projection`, which builds on `object` (no module circle).
use crate::projection::intern::IStr;

/// An owner reference, borrowed from an object's metadata (controller-runtime's
/// `metav1.GetControllerOf` gives the one with `controller: true`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OwnerRef<'a> {
    /// The owner's `apiVersion` (`apps/v1`).
    pub api_version: &'a str,
    /// The owner's kind.
    pub kind: &'a str,
    /// The owner's name.
    pub name: &'a str,
    /// The owner's UID.
    pub uid: &'a str,
}

impl<'a> OwnerRef<'a> {
    /// An owner reference of these parts.
    pub fn new(api_version: &'a str, kind: &'a str, name: &'a str, uid: &'a str) -> Self {
        OwnerRef {
            api_version,
            kind,
            name,
            uid,
        }
    }

    /// The group of its `apiVersion` (`apps/v1` -> `apps`, `v1` -> ``).
    pub fn group(&self) -> &'a str {
        match self.api_version.split_once('/') {
            Some((group, _)) => group,
            None => "",
        }
    }

    /// Every owner reference among `refs`, in order.
    pub fn all_of(refs: Option<&'a [OwnerReference]>) -> impl Iterator<Item = Self> + 'a {
        refs.unwrap_or_default()
            .iter()
            .map(|o| OwnerRef::new(&o.api_version, &o.kind, &o.name, &o.uid))
    }

    /// The controller owner reference among `refs` (the first with `controller: true`;
    /// apimachinery's validation allows one).
    pub fn controller_of(refs: Option<&'a [OwnerReference]>) -> Option<Self> {
        refs?
            .iter()
            .find(|o| o.controller == Some(true))
            .map(|o| OwnerRef::new(&o.api_version, &o.kind, &o.name, &o.uid))
    }
}

/// The finalizers of an object, borrowed from its metadata, in order.
#[derive(Clone)]
pub struct Finalizers<'a>(FinalizerSlice<'a>);

#[derive(Clone)]
enum FinalizerSlice<'a> {
    Strings(std::slice::Iter<'a, String>),
    Interned(std::slice::Iter<'a, IStr>),
}

impl<'a> From<&'a [String]> for Finalizers<'a> {
    fn from(names: &'a [String]) -> Self {
        Finalizers(FinalizerSlice::Strings(names.iter()))
    }
}

impl<'a> From<&'a [IStr]> for Finalizers<'a> {
    fn from(names: &'a [IStr]) -> Self {
        Finalizers(FinalizerSlice::Interned(names.iter()))
    }
}

impl<'a, T> From<Option<&'a [T]>> for Finalizers<'a>
where
    Finalizers<'a>: From<&'a [T]>,
{
    fn from(names: Option<&'a [T]>) -> Self {
        names.unwrap_or_default().into()
    }
}

impl<'a> Iterator for Finalizers<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        match &mut self.0 {
            FinalizerSlice::Strings(it) => it.next().map(String::as_str),
            FinalizerSlice::Interned(it) => it.next().map(IStr::as_str),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            FinalizerSlice::Strings(it) => it.size_hint(),
            FinalizerSlice::Interned(it) => it.size_hint(),
        }
    }
}

impl ExactSizeIterator for Finalizers<'_> {}

impl fmt::Debug for Finalizers<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.clone()).finish()
    }
}

/// A cached form that holds the whole object of its kind, so it converts to and from the kind
/// without loss: the kind itself (every `kube::Resource`: k8s-openapi types, kube
/// `CustomResource`s, informer-gen's CRD types), or its compact form (P1, P2; informer-gen
/// implements it for every compact kind). The write helpers of informer-controller
/// (`update_status`) take it: they write the cached form back through `kube::Api` of its source
/// kind. A projection keeps only some fields, so it is not `Lossless`.
///
/// ```
/// use informer_runtime::object::Lossless;
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// let cm = ConfigMap::default();
/// // The kind itself: borrowed, no copy.
/// assert!(matches!(cm.to_source(), std::borrow::Cow::Borrowed(_)));
/// let back: ConfigMap = Lossless::from_source(cm.clone());
/// assert_eq!(back, cm);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not hold the whole object of its kind, so it cannot be written back",
    label = "not `Lossless`",
    note = "pass the cached object itself (`&*obj` for an `Arc` from a cache); a projection keeps only the fields it declares: cache the kind itself or its compact form (`compact()`) to write it back"
)]
pub trait Lossless: Object {
    /// The object as its source kind: borrowed for the kind itself, converted field by field
    /// for a compact form (P2).
    fn to_source(&self) -> Cow<'_, Self::Source>;

    /// The cached form of `source` (itself for the kind, converted for a compact form).
    fn from_source(source: Self::Source) -> Self;
}

// Not offered as a way out when a type is not `Lossless`: the error names `Lossless`.
#[diagnostic::do_not_recommend]
impl<T> Lossless for T
where
    T: kube::Resource<DynamicType = (), Scope: ScopeKind>
        + Clone
        + serde::de::DeserializeOwned
        + fmt::Debug
        + Send
        + Sync
        + 'static,
{
    fn to_source(&self) -> Cow<'_, T> {
        Cow::Borrowed(self)
    }

    fn from_source(source: T) -> T {
        source
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(kind: &str, name: &str, controller: Option<bool>) -> OwnerReference {
        OwnerReference {
            api_version: "apps/v1".into(),
            kind: kind.into(),
            name: name.into(),
            uid: format!("uid-{name}"),
            controller,
            block_owner_deletion: None,
        }
    }

    #[test]
    fn the_controller_reference_is_the_one_with_controller_true() {
        let refs = vec![
            owner("ReplicaSet", "not-controller", None),
            owner("ReplicaSet", "rs", Some(true)),
        ];
        let found = OwnerRef::controller_of(Some(&refs)).expect("a controller reference");
        assert_eq!(
            found,
            OwnerRef::new("apps/v1", "ReplicaSet", "rs", "uid-rs")
        );
        assert_eq!(found.group(), "apps");
        assert_eq!(OwnerRef::new("v1", "Node", "n", "u").group(), "");
        assert_eq!(OwnerRef::controller_of(Some(&refs[..1])), None);
        assert_eq!(OwnerRef::controller_of(None), None);
    }

    #[test]
    fn finalizers_read_strings_and_interned_names_alike() {
        let strings = ["a".to_owned(), "b".to_owned()];
        let interned = [IStr::new("a"), IStr::new("b")];
        let from_strings: Vec<&str> = Finalizers::from(Some(&strings[..])).collect();
        let from_interned: Vec<&str> = Finalizers::from(Some(&interned[..])).collect();
        assert_eq!(from_strings, ["a", "b"]);
        assert_eq!(from_interned, from_strings);
        assert_eq!(Finalizers::from(None::<&[IStr]>).len(), 0);
        assert_eq!(
            format!("{:?}", Finalizers::from(&strings[..])),
            r#"["a", "b"]"#
        );
    }
}
