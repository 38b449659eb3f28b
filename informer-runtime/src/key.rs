//! Object keys (`namespace/name`, or `name` for cluster-scoped objects): the only place keys are built (X1).

use std::fmt;
use std::sync::Arc;

/// Why an object or a string could not be turned into an [`ObjectKey`].
///
/// None of these are retryable: the input itself is malformed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The object has no `metadata.name` (for example, only `generateName` was set).
    #[error("object has no `metadata.name`")]
    MissingName,
    /// The key string has more than one `/` (X1).
    #[error("unexpected key format: `{0}` has more than one `/`")]
    TooManySlashes(String),
    /// The key string, its namespace or its name is empty.
    #[error("unexpected key format: `{0}` has an empty namespace or name")]
    Empty(String),
}

/// The cache key of an object: `namespace/name`, or `name` for cluster-scoped objects (X1).
///
/// The key is one shared allocation, so cloning it is a reference-count increment. It does not
/// contain the UID (H13): a delete and re-create under the same name keeps the same key.
///
/// Also at the crate root (`informer_runtime::ObjectKey`) and in informer-controller
/// (`informer_controller::ObjectKey`), where a `watches` mapper returns it.
///
/// ```
/// use informer_runtime::ObjectKey;
/// let key = ObjectKey::new(Some("prod"), "web");
/// assert_eq!(key.as_str(), "prod/web");
/// assert_eq!(key.namespace(), Some("prod"));
/// assert_eq!(key.name(), "web");
/// assert_eq!(ObjectKey::parse("prod/web").unwrap(), key);
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey(Arc<str>);

impl ObjectKey {
    /// Builds a key from an optional namespace (`None` or `""` for cluster-scoped objects) and a name.
    pub fn new(namespace: Option<&str>, name: &str) -> Self {
        match namespace {
            Some(ns) if !ns.is_empty() => {
                // One allocation, the `Arc`'s own: the joined text is built on the stack (a
                // namespace is at most 63 bytes and a name 253, so every valid key fits).
                let len = ns.len() + 1 + name.len();
                let mut buf = [0u8; 320];
                if let Some(joined) = buf.get_mut(..len) {
                    joined[..ns.len()].copy_from_slice(ns.as_bytes());
                    joined[ns.len()] = b'/';
                    joined[ns.len() + 1..].copy_from_slice(name.as_bytes());
                    if let Ok(text) = std::str::from_utf8(joined) {
                        return ObjectKey(Arc::from(text));
                    }
                }
                let mut s = String::with_capacity(len);
                s.push_str(ns);
                s.push('/');
                s.push_str(name);
                ObjectKey(Arc::from(s))
            }
            _ => ObjectKey(Arc::from(name)),
        }
    }

    /// The key of a Kubernetes object, from its `metadata.namespace` and `metadata.name`.
    pub fn from_resource<K: crate::object::Meta>(obj: &K) -> Result<Self, KeyError> {
        match obj.object_name() {
            Some(name) if !name.is_empty() => Ok(Self::new(obj.object_namespace(), name)),
            _ => Err(KeyError::MissingName),
        }
    }

    /// Parses `namespace/name` or `name`; more than one `/` is an error (X1).
    pub fn parse(key: &str) -> Result<Self, KeyError> {
        let mut parts = key.split('/');
        match (parts.next(), parts.next(), parts.next()) {
            (Some(name), None, _) if !name.is_empty() => Ok(ObjectKey(Arc::from(key))),
            (Some(ns), Some(name), None) if !ns.is_empty() && !name.is_empty() => {
                Ok(ObjectKey(Arc::from(key)))
            }
            (_, _, Some(_)) => Err(KeyError::TooManySlashes(key.to_string())),
            _ => Err(KeyError::Empty(key.to_string())),
        }
    }

    /// The namespace, or `None` for a cluster-scoped key.
    pub fn namespace(&self) -> Option<&str> {
        self.0.split_once('/').map(|(ns, _)| ns)
    }

    /// The name.
    pub fn name(&self) -> &str {
        match self.0.split_once('/') {
            Some((_, name)) => name,
            None => &self.0,
        }
    }

    /// The key as `namespace/name` or `name`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectKey({:?})", &*self.0)
    }
}

impl std::borrow::Borrow<str> for ObjectKey {
    fn borrow(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ConfigMap, Node};
    use kube::api::ObjectMeta;

    #[test]
    fn x1_namespaced_and_cluster_keys() {
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some("a".into()),
                namespace: Some("ns".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(ObjectKey::from_resource(&cm).unwrap().as_str(), "ns/a");
        let node = Node {
            metadata: ObjectMeta {
                name: Some("n1".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let key = ObjectKey::from_resource(&node).unwrap();
        assert_eq!(
            (key.as_str(), key.namespace(), key.name()),
            ("n1", None, "n1")
        );
    }

    proptest::proptest! {
        /// The stack-built key and the long-key fallback give `namespace/name` for any lengths.
        #[test]
        fn x1_keys_join_namespace_and_name(ns in "[a-zé]{1,80}", name in "[a-z0-9.-]{1,400}") {
            let key = ObjectKey::new(Some(&ns), &name);
            proptest::prop_assert_eq!(key.as_str(), format!("{ns}/{name}"));
            proptest::prop_assert_eq!((key.namespace(), key.name()), (Some(ns.as_str()), name.as_str()));
        }
    }

    #[test]
    fn x1_missing_name_is_an_error() {
        let cm = ConfigMap {
            metadata: ObjectMeta {
                generate_name: Some("x-".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(ObjectKey::from_resource(&cm), Err(KeyError::MissingName));
    }

    #[test]
    fn x1_parse_rejects_more_than_one_slash() {
        assert_eq!(
            ObjectKey::parse("a/b/c"),
            Err(KeyError::TooManySlashes("a/b/c".into()))
        );
        assert!(matches!(ObjectKey::parse("/b"), Err(KeyError::Empty(_))));
        assert!(matches!(ObjectKey::parse(""), Err(KeyError::Empty(_))));
        assert_eq!(ObjectKey::parse("n1").unwrap().name(), "n1");
    }
}
