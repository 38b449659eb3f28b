//! Waiting for a condition on an object, by watching it: no sleeps, no polling.

use std::fmt::Debug;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use kube::api::{ListParams, WatchEvent, WatchParams};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;

use crate::{Envtest, Error};

/// Waits until `condition` holds for the object `name` that `api` reaches (`None` while it does
/// not exist), re-checking at every change the API server reports: a LIST of that one object, then
/// a WATCH from its resourceVersion, listed again whenever the watch ends or fails (410 Gone). Returns the object as
/// it was when `condition` held, or [`Error::Timeout`] after `timeout`.
///
/// It works against any API server, not only an [`Envtest`]'s; [`Envtest::wait_until`] builds the
/// `Api` for a typed kind.
pub async fn wait_until<K>(
    api: &Api<K>,
    name: &str,
    timeout: Duration,
    condition: impl FnMut(Option<&K>) -> bool,
) -> Result<Option<K>, Error>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    let what = format!("{} {name}", api.resource_url());
    watch_until(
        api,
        &format!("metadata.name={name}"),
        &what,
        timeout,
        condition,
    )
    .await
}

/// [`wait_until`] on the one object `fields` selects.
async fn watch_until<K>(
    api: &Api<K>,
    fields: &str,
    what: &str,
    timeout: Duration,
    mut condition: impl FnMut(Option<&K>) -> bool,
) -> Result<Option<K>, Error>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    let watch = async {
        loop {
            let list = api.list(&ListParams::default().fields(fields)).await?;
            let mut current = list.items.into_iter().next();
            if condition(current.as_ref()) {
                return Ok::<_, Error>(current);
            }
            let version = list.metadata.resource_version.unwrap_or_default();
            let params = WatchParams::default().fields(fields).timeout(290);
            let mut events = api.watch(&params, &version).await?.boxed();
            while let Some(event) = events.try_next().await? {
                match event {
                    WatchEvent::Added(obj) | WatchEvent::Modified(obj) => current = Some(obj),
                    WatchEvent::Deleted(_) => current = None,
                    WatchEvent::Bookmark(_) => continue,
                    // 410 Gone and other errors: list again.
                    WatchEvent::Error(_) => break,
                }
                if condition(current.as_ref()) {
                    return Ok(current);
                }
            }
        }
    };
    tokio::time::timeout(timeout, watch)
        .await
        .map_err(|_| Error::Timeout {
            what: format!(
                "the condition on {what} (waited {} s)",
                timeout.as_secs_f64()
            ),
        })?
}

impl Envtest {
    /// Waits until `condition` holds for the object `name` of kind `K` (in `namespace`,
    /// `default` when `None` for a namespaced kind), `None` while it does not exist; re-checks at
    /// every change the server reports ([`wait_until`]). Returns the object as it was when
    /// `condition` held, or [`Error::Timeout`] after `timeout`. The same call as
    /// informer-testserver's `TestServer::wait_until`, so a test reads the same on both.
    ///
    /// ```no_run
    /// # async fn demo(env: &informer_envtest::Envtest) -> Result<(), informer_envtest::Error> {
    /// use std::time::Duration;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// // A controller under test creates the ConfigMap `default/w1`; wait for its data.
    /// let cm = env
    ///     .wait_until::<ConfigMap>(Some("default"), "w1", Duration::from_secs(30), |cm| {
    ///         cm.and_then(|cm| cm.data.as_ref()?.get("message")).is_some_and(|m| m == "hello")
    ///     })
    ///     .await?;
    /// # let _ = cm;
    /// # Ok(()) }
    /// ```
    pub async fn wait_until<K>(
        &self,
        namespace: Option<&str>,
        name: &str,
        timeout: Duration,
        condition: impl FnMut(Option<&K>) -> bool,
    ) -> Result<Option<K>, Error>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
        K::Scope: 'static,
    {
        let api = Api::<K>::all(self.client().await?);
        let namespaced = std::any::TypeId::of::<K::Scope>()
            == std::any::TypeId::of::<k8s_openapi::NamespaceResourceScope>();
        let (fields, what) = if namespaced {
            let ns = namespace.unwrap_or("default");
            (
                format!("metadata.name={name},metadata.namespace={ns}"),
                format!("{} {ns}/{name}", K::plural(&())),
            )
        } else {
            (
                format!("metadata.name={name}"),
                format!("{} {name}", K::plural(&())),
            )
        };
        watch_until(&api, &fields, &what, timeout, condition).await
    }
}
