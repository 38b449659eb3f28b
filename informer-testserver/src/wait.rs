//! Waits on the stored state for tests: [`TestServer::wait_until`] and
//! [`TestServer::wait_until_all`] re-check a condition after every write the server stores (from
//! HTTP or the handle), so a test waits for what a controller did without sleeping or polling.

use std::time::Duration;

use kube::Resource;
use serde::de::DeserializeOwned;
use tokio::sync::broadcast::error::RecvError;

use crate::error::Error;
use crate::server::TestServer;

impl TestServer {
    /// Waits until `cond` holds for the object `name` of kind `K` (in `namespace`, `default` when
    /// `None` for a namespaced kind), `None` while it does not exist; re-checks after every write
    /// to the server. Returns the object as it was when `cond` held, or [`Error::Timeout`] after
    /// `timeout`.
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testserver::TestServer) -> Result<(), informer_testserver::Error> {
    /// use std::time::Duration;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// // A controller under test creates the ConfigMap `default/w1`; wait for its data.
    /// let cm = server
    ///     .wait_until::<ConfigMap>(Some("default"), "w1", Duration::from_secs(10), |cm| {
    ///         cm.and_then(|cm| cm.data.as_ref()?.get("message")).is_some_and(|m| m == "hello")
    ///     })
    ///     .await?;
    /// # let _ = cm;
    /// // And until it is gone (with `None` passed to the condition).
    /// server
    ///     .wait_until::<ConfigMap>(Some("default"), "w1", Duration::from_secs(10), |cm| cm.is_none())
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub async fn wait_until<K>(
        &self,
        namespace: Option<&str>,
        name: &str,
        timeout: Duration,
        cond: impl Fn(Option<&K>) -> bool,
    ) -> Result<Option<K>, Error>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned,
    {
        let what = format!(
            "the condition on {} {}{name} held",
            K::plural(&()),
            namespace.map_or(String::new(), |ns| format!("{ns}/"))
        );
        self.wait_for_state(timeout, what, || {
            let obj = match self.get::<K>(namespace, name) {
                Ok(obj) => Some(obj),
                Err(e) if e.code() == Some(404) => None,
                Err(e) => return Err(e),
            };
            Ok(cond(obj.as_ref()).then_some(obj))
        })
        .await
    }

    /// Waits until `cond` holds for every object of kind `K` (in `namespace`, or all namespaces
    /// with `None`), in name order; re-checks after every write to the server. Returns the
    /// objects as they were when `cond` held, or [`Error::Timeout`] after `timeout`.
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testserver::TestServer) -> Result<(), informer_testserver::Error> {
    /// use std::time::Duration;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// let all = server
    ///     .wait_until_all::<ConfigMap>(Some("default"), Duration::from_secs(10), |cms| cms.len() == 3)
    ///     .await?;
    /// # let _ = all;
    /// # Ok(()) }
    /// ```
    pub async fn wait_until_all<K>(
        &self,
        namespace: Option<&str>,
        timeout: Duration,
        cond: impl Fn(&[K]) -> bool,
    ) -> Result<Vec<K>, Error>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned,
    {
        let what = format!(
            "the condition on all {}{} held",
            K::plural(&()),
            namespace.map_or(String::new(), |ns| format!(" in {ns}"))
        );
        self.wait_for_state(timeout, what, || {
            let all = self.list::<K>(namespace)?;
            Ok(cond(&all).then_some(all))
        })
        .await
    }

    /// Every object of kind `K` in `namespace` (all namespaces with `None`), in key order.
    pub fn list<K>(&self, namespace: Option<&str>) -> Result<Vec<K>, Error>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned,
    {
        let info = self.typed_info::<K>()?;
        let namespace = namespace.filter(|_| info.namespaced);
        self.sh
            .store
            .all(&info.storage_key(), namespace)
            .iter()
            .map(|o| Ok(serde_json::from_value(o.value()?)?))
            .collect()
    }

    /// Runs `check` now and after every stored write until it returns a value, or `timeout`
    /// passes. Subscribes before the first check, so a write between check and wait is seen.
    async fn wait_for_state<T>(
        &self,
        timeout: Duration,
        what: String,
        mut check: impl FnMut() -> Result<Option<T>, Error>,
    ) -> Result<T, Error> {
        let mut writes = self.sh.store.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(found) = check()? {
                return Ok(found);
            }
            match tokio::time::timeout_at(deadline, writes.recv()).await {
                // A write, or several we were too slow for: check again.
                Ok(Ok(_) | Err(RecvError::Lagged(_))) => {}
                // The store is gone: nothing will change any more.
                Ok(Err(RecvError::Closed)) | Err(_) => {
                    return Err(Error::Timeout {
                        what,
                        after: timeout,
                    });
                }
            }
        }
    }
}
