//! The status-update helper: write the status subresource with the resourceVersion as a
//! precondition and retry on conflict, re-reading the object (client-go's `RetryOnConflict`).

use std::time::Duration;

use informer_runtime::object::Lossless;
use kube::api::{Api, PostParams};
use serde::Serialize;

use crate::WriteRecorder;

/// client-go's `retry.DefaultRetry`: 5 attempts, 10 ms apart (jitter 0.1).
pub const DEFAULT_ATTEMPTS: u32 = 5;
const RETRY_DELAY: Duration = Duration::from_millis(10);

/// Why the status update failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Every attempt met a 409 Conflict. Retryable later (requeue).
    #[error("status of {name}: still conflicting after {attempts} attempts")]
    Conflict {
        /// The object's name.
        name: String,
        /// Attempts made.
        attempts: u32,
    },
    /// Another API error (404 when the object is gone, 403, ...).
    #[error("status of {name}: {source}")]
    Api {
        /// The object's name.
        name: String,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
    /// The object could not be serialized. Not retryable.
    #[error("status of {name}: serializing: {source}")]
    Serialize {
        /// The object's name.
        name: String,
        /// serde's error.
        #[source]
        source: serde_json::Error,
    },
    /// The object has no name. Not retryable.
    #[error("object has no name")]
    UnnamedObject,
}

/// Applies `mutate` to a copy of `current` (typically the cached object) and writes its status
/// with `current`'s resourceVersion. On 409 Conflict it reads the object again and retries
/// `mutate` on the fresh copy, up to [`DEFAULT_ATTEMPTS`] times. If `mutate` leaves the
/// object unchanged, nothing is written and `Ok(None)` is returned; otherwise the stored
/// object, in `current`'s form.
///
/// `current` is the kind itself or its compact form ([`Lossless`]: the status subresource is
/// replaced whole from it, so a projection, which keeps only some fields, does not compile;
/// `&**obj` for the `&Arc<K>` a [`Request`](crate::Request) holds);
/// `api` is the `kube::Api` of its kind (for a compact `Deployment`,
/// `Api<k8s_openapi::...::Deployment>`), and a compact form is converted field by field for the
/// write and back. The stored object is recorded with `recorder` (K2: the next reconcile of
/// the key waits until the cache holds it; [`WriteRecorder::detached`] outside a controller).
pub async fn update_status<K>(
    api: &Api<K::Source>,
    current: &K,
    recorder: &WriteRecorder,
    mut mutate: impl FnMut(&mut K),
) -> Result<Option<K>, Error>
where
    K: Lossless + Serialize,
    K::Source: Serialize,
{
    let name = current
        .object_name()
        .map(str::to_owned)
        .ok_or(Error::UnnamedObject)?;
    let mut base = current.clone();
    for attempt in 1..=DEFAULT_ATTEMPTS {
        let mut desired = base.clone();
        mutate(&mut desired);
        let before = to_json(&name, &base)?;
        let after = to_json(&name, &desired)?;
        if before == after {
            return Ok(None);
        }
        match api
            .replace_status(&name, &PostParams::default(), &desired.to_source())
            .await
        {
            Ok(stored) => {
                recorder.record(&stored);
                return Ok(Some(K::from_source(stored)));
            }
            Err(kube::Error::Api(status)) if status.code == 409 => {
                tracing::debug!(%name, attempt, "status update conflicted; re-reading");
                if attempt < DEFAULT_ATTEMPTS {
                    tokio::time::sleep(RETRY_DELAY).await;
                    // R24: the re-read waits out a 429.
                    let fresh = crate::reads::retrying("status re-read", None, || api.get(&name))
                        .await
                        .map_err(|source| Error::Api {
                            name: name.clone(),
                            source,
                        })?;
                    base = K::from_source(fresh);
                }
            }
            Err(source) => return Err(Error::Api { name, source }),
        }
    }
    Err(Error::Conflict {
        name,
        attempts: DEFAULT_ATTEMPTS,
    })
}

fn to_json<K: Serialize>(name: &str, obj: &K) -> Result<serde_json::Value, Error> {
    serde_json::to_value(obj).map_err(|source| Error::Serialize {
        name: name.to_owned(),
        source,
    })
}
