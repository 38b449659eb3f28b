//! The delta FIFO tests' objects and store: versioned ConfigMaps, and a popped key's deltas
//! applied to an indexer as the informer applies them.

use informer_runtime::delta_fifo::{DeletedObject, Delta, DeltaType};
use informer_runtime::indexer::Indexer;
use k8s_openapi::api::core::v1::ConfigMap;

/// A ConfigMap whose resourceVersion marks its version.
pub(crate) fn cm(name: &str, rv: &str) -> ConfigMap {
    informer_test_support::cm_at("ns", name, rv)
}

pub(crate) fn rv(obj: &ConfigMap) -> &str {
    obj.metadata.resource_version.as_deref().unwrap_or("")
}

/// The informer's processing (H2): applies `deltas` of `key` to `store`, oldest first.
pub(crate) fn apply(store: &Indexer<ConfigMap>, key: &str, deltas: &[Delta<ConfigMap>]) {
    for delta in deltas {
        match delta {
            Delta::Deleted(_) => drop(store.delete_key(key)),
            other => drop(
                store
                    .add(other.object().expect("test fixture").clone())
                    .expect("test fixture"),
            ),
        }
    }
}

/// A delta as `(type, rv)`, with `~` for a tombstone's rv and `-` for a tombstone without state.
pub(crate) fn show(delta: &Delta<ConfigMap>) -> (DeltaType, String) {
    let rv = match delta {
        Delta::Deleted(DeletedObject::Unknown(t)) => match &t.last_known {
            Some(o) => format!("~{}", rv(o)),
            None => "-".into(),
        },
        other => rv(other.object().expect("test fixture")).to_owned(),
    };
    (delta.kind(), rv)
}

/// A delta as `show` writes it.
pub(crate) fn d(kind: DeltaType, rv: &str) -> (DeltaType, String) {
    (kind, rv.to_owned())
}
