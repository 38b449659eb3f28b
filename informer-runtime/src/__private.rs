//! Re-exports for derived and generated code only; not covered by semver.
//!
//! Code emitted by `informer-derive` and `informer-gen` names everything through this module, so the
//! runtime owns the import surface of generated code (like `tonic::codegen`). Add a line here when a
//! runtime item generated code needs lands; never rename without regenerating.

pub use core::clone::Clone;
pub use core::cmp::PartialEq;
pub use core::convert::From;
pub use core::option::Option;
pub use core::result::Result;
pub use std::string::String;
pub use std::sync::Arc;
pub use std::vec::Vec;

pub use crate::compact::decode;
pub use crate::compact::{
    ApiVersionTag, CMap, FromFull, IStr, JsonNumber, KindTag, Pool, RawJson, Share, ShareHash,
    Shared, StrMap, ToFull, null_default, nullable, quantity, quantity_nullable,
    quantity_or_default,
};
pub use crate::conditions::Condition;

mod condition;
pub use crate::__impl_condition as impl_condition;
pub use crate::projection::{JsonNames, ProjectFrom, ProjectedMeta, ProjectionSource};
pub use condition::{ConditionGeneration, ConditionText, ConditionTime};
pub use core::default::Default;
pub use core::fmt;
pub use core::hash::{Hash, Hasher};
pub use core::mem;
pub use k8s_openapi::ByteString;
pub use k8s_openapi::{
    ListableResource as K8sListableResource, Metadata as K8sMetadata, Resource as K8sResource,
};
pub use kube::Resource;
pub use kube::api::ObjectMeta;
pub use kube::core::object::{HasSpec, HasStatus};
pub use serde;
pub use std::boxed::Box;
pub use std::sync::LazyLock;

pub use crate::factory::Projected;
pub use crate::object::StaticIndexer;
pub use crate::object::{Finalizers, HasScope, Lossless, Meta, OwnerRef};
pub use crate::projection::__derive as projection;
pub use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
pub use kube::core::{ClusterResourceScope, NamespaceResourceScope, Selector};
pub use std::borrow::Cow;

pub use kube::core::GroupVersionResource;

pub use crate::factory::{GenericInformer, SharedInformerFactory};
pub use crate::indexer::Indexer;
pub use crate::informer::SharedIndexInformer;
pub use crate::lister::{Error as ListerError, Lister, NamespacedLister};
pub use crate::object::Object;

/// Values of a field-path index (`#[informer(index(name = "…", path = a.b))]`): a string field gives
/// itself, `Option` gives zero or one value, collections give one value per element (X2).
pub trait IndexValues {
    /// Appends this field's index values to `out`.
    fn push_index_values(&self, out: &mut Vec<String>);
}

impl IndexValues for str {
    fn push_index_values(&self, out: &mut Vec<String>) {
        out.push(self.to_owned());
    }
}

impl IndexValues for String {
    fn push_index_values(&self, out: &mut Vec<String>) {
        out.push(self.clone());
    }
}

impl IndexValues for crate::projection::IStr {
    fn push_index_values(&self, out: &mut Vec<String>) {
        out.push(self.as_str().to_owned());
    }
}

impl<T: IndexValues + ?Sized> IndexValues for Box<T> {
    fn push_index_values(&self, out: &mut Vec<String>) {
        (**self).push_index_values(out);
    }
}

impl<T: IndexValues + ?Sized> IndexValues for &T {
    fn push_index_values(&self, out: &mut Vec<String>) {
        (**self).push_index_values(out);
    }
}

impl<T: IndexValues> IndexValues for Option<T> {
    fn push_index_values(&self, out: &mut Vec<String>) {
        if let Some(v) = self {
            v.push_index_values(out);
        }
    }
}

impl<T: IndexValues> IndexValues for [T] {
    fn push_index_values(&self, out: &mut Vec<String>) {
        for v in self {
            v.push_index_values(out);
        }
    }
}

impl<T: IndexValues> IndexValues for Vec<T> {
    fn push_index_values(&self, out: &mut Vec<String>) {
        self.as_slice().push_index_values(out);
    }
}

impl<T: IndexValues> IndexValues for std::collections::BTreeSet<T> {
    fn push_index_values(&self, out: &mut Vec<String>) {
        for v in self {
            v.push_index_values(out);
        }
    }
}

macro_rules! display_index_values {
    ($($t:ty),*) => {$(
        impl IndexValues for $t {
            fn push_index_values(&self, out: &mut Vec<String>) {
                out.push(self.to_string());
            }
        }
    )*};
}
display_index_values!(bool, i32, i64, u32, u64);

/// The index values of a field (see [`IndexValues`]).
pub fn index_values<T: IndexValues + ?Sized>(field: &T) -> Vec<String> {
    let mut out = Vec::new();
    field.push_index_values(&mut out);
    out
}

/// The names of `obj`'s owner references whose kind is `kind` (`index(owner = "Kind")`).
pub fn owner_index_values<K: kube::Resource>(obj: &K, kind: &str) -> Vec<String> {
    obj.meta()
        .owner_references
        .iter()
        .flatten()
        .filter(|o| o.kind == kind)
        .map(|o| o.name.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_values_flatten_options_and_collections() {
        assert_eq!(index_values("a"), vec!["a"]);
        assert_eq!(index_values(&Some(String::from("n1"))), vec!["n1"]);
        assert!(index_values(&None::<String>).is_empty());
        assert_eq!(
            index_values(&Some(vec![String::from("x"), String::from("y")])),
            vec!["x", "y"]
        );
        assert_eq!(index_values(&3_i32), vec!["3"]);
    }

    #[test]
    fn owner_index_values_filter_by_kind() {
        use k8s_openapi::api::core::v1::Pod;
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
        let owner = |kind: &str, name: &str| OwnerReference {
            kind: kind.into(),
            name: name.into(),
            ..Default::default()
        };
        let mut pod = Pod::default();
        pod.metadata.owner_references = Some(vec![owner("ReplicaSet", "rs1"), owner("Job", "j1")]);
        assert_eq!(owner_index_values(&pod, "ReplicaSet"), vec!["rs1"]);
        assert!(owner_index_values(&pod, "Deployment").is_empty());
    }
}
