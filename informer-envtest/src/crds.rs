//! Installing CustomResourceDefinitions and waiting until they are served, as
//! controller-runtime's envtest does with `CRDDirectoryPaths` and `WaitForCRDs`.

use std::path::Path;
use std::time::{Duration, Instant};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt;
use kube::api::{Api, PostParams};

use crate::wait::wait_until;
use crate::{Envtest, Error};

/// How long [`Envtest::install_crds`] waits for the CRDs to be served.
pub const CRD_TIMEOUT: Duration = Duration::from_secs(60);

/// Every CustomResourceDefinition in a manifest: one YAML stream of any number of documents
/// (`---`), or JSON; documents of other kinds are skipped.
pub fn crds_from_yaml(text: &str) -> Result<Vec<CustomResourceDefinition>, Error> {
    let docs: Vec<serde_json::Value> = serde_saphyr::from_multiple(text)
        .map_err(|e| Error::Manifest(format!("not a YAML manifest: {e}")))?;
    let mut crds = Vec::new();
    for (i, doc) in docs.into_iter().enumerate() {
        let kind = doc.get("kind").and_then(serde_json::Value::as_str);
        let api_version = doc.get("apiVersion").and_then(serde_json::Value::as_str);
        if kind != Some("CustomResourceDefinition") {
            continue;
        }
        if api_version != Some("apiextensions.k8s.io/v1") {
            return Err(Error::Manifest(format!(
                "document {}: a CustomResourceDefinition of {api_version:?}; only \
                 apiextensions.k8s.io/v1 is served",
                i + 1
            )));
        }
        let crd = serde_json::from_value(doc)
            .map_err(|e| Error::Manifest(format!("document {}: {e}", i + 1)))?;
        crds.push(crd);
    }
    Ok(crds)
}

/// Every CustomResourceDefinition in the file `path`, or in the `.yaml`, `.yml` and `.json` files
/// of the directory `path` (not its subdirectories), in name order.
pub fn crds_from_path(path: &Path) -> Result<Vec<CustomResourceDefinition>, Error> {
    let read = |file: &Path| {
        let text = std::fs::read_to_string(file)
            .map_err(Error::io(format!("reading {}", file.display())))?;
        crds_from_yaml(&text).map_err(|e| Error::Manifest(format!("{}: {e}", file.display())))
    };
    if !path.is_dir() {
        return read(path);
    }
    let mut files: Vec<_> = std::fs::read_dir(path)
        .map_err(Error::io(format!("reading {}", path.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file()
                && p.extension()
                    .is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
        })
        .collect();
    files.sort();
    let mut crds = Vec::new();
    for file in files {
        crds.extend(read(&file)?);
    }
    Ok(crds)
}

/// Creates each CRD (or replaces the one of that name, so that tests sharing a server may install
/// the same CRD), then waits until every one is served ([`wait_for_crds`]).
pub async fn install_crds(
    client: &kube::Client,
    crds: &[CustomResourceDefinition],
    timeout: Duration,
) -> Result<Vec<CustomResourceDefinition>, Error> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut installed = Vec::new();
    for crd in crds {
        let mut crd = crd.clone();
        crd.metadata.resource_version = None;
        crd.status = None;
        let written = match api.create(&PostParams::default(), &crd).await {
            Err(kube::Error::Api(s)) if s.code == 409 => {
                let name = crd.name_any();
                let existing = api.get(&name).await?;
                crd.metadata.resource_version = existing.resource_version();
                api.replace(&name, &PostParams::default(), &crd).await?
            }
            other => other?,
        };
        installed.push(written);
    }
    wait_for_crds(client, &installed, timeout).await?;
    Ok(installed)
}

/// Waits until each CRD is served: its `Established` condition is `True` (watched) and every
/// served version lists its plural in discovery (`/apis/GROUP/VERSION`, asked every 100 ms, as
/// controller-runtime's `WaitForCRDs` polls it). Only then can clients, and informers that
/// discover, use the new kind.
pub async fn wait_for_crds(
    client: &kube::Client,
    crds: &[CustomResourceDefinition],
    timeout: Duration,
) -> Result<(), Error> {
    let deadline = Instant::now() + timeout;
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in crds {
        let name = crd.name_any();
        let left = deadline.saturating_duration_since(Instant::now());
        wait_until(&api, &name, left, |crd| {
            crd.and_then(|c| c.status.as_ref()?.conditions.as_ref())
                .is_some_and(|conditions| {
                    conditions
                        .iter()
                        .any(|c| c.type_ == "Established" && c.status == "True")
                })
        })
        .await?;
        let group = &crd.spec.group;
        let plural = &crd.spec.names.plural;
        for version in crd.spec.versions.iter().filter(|v| v.served) {
            let group_version = format!("{group}/{}", version.name);
            loop {
                let served = match client.list_api_group_resources(&group_version).await {
                    Ok(list) => list.resources.iter().any(|r| &r.name == plural),
                    Err(kube::Error::Api(s)) if s.code == 404 => false,
                    Err(e) => return Err(e.into()),
                };
                if served {
                    break;
                }
                if Instant::now() >= deadline {
                    return Err(Error::Timeout {
                        what: format!("{plural} in the discovery of {group_version}"),
                    });
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    Ok(())
}

impl Envtest {
    /// Installs every CustomResourceDefinition in `yaml` (a manifest of any number of
    /// documents; other kinds are skipped) and waits until each is served ([`wait_for_crds`],
    /// up to [`CRD_TIMEOUT`]). Returns the CRDs as the server stored them.
    ///
    /// ```no_run
    /// # async fn demo(env: &informer_envtest::Envtest) -> Result<(), informer_envtest::Error> {
    /// let manifest = std::fs::read_to_string("crds/widgets.yaml").expect("the manifest");
    /// env.install_crds_from_yaml(&manifest).await?;
    /// # Ok(()) }
    /// ```
    pub async fn install_crds_from_yaml(
        &self,
        yaml: &str,
    ) -> Result<Vec<CustomResourceDefinition>, Error> {
        self.install_crds(&crds_from_yaml(yaml)?).await
    }

    /// Installs the CRDs of a manifest file, or of every `.yaml`, `.yml` and `.json` file in a
    /// directory ([`crds_from_path`]; controller-runtime's `CRDDirectoryPaths`), and waits until
    /// each is served.
    pub async fn install_crds_from_path(
        &self,
        path: impl AsRef<Path>,
    ) -> Result<Vec<CustomResourceDefinition>, Error> {
        self.install_crds(&crds_from_path(path.as_ref())?).await
    }

    /// Installs `crds` (for example kube's `Widget::crd()`; one already there is replaced) and
    /// waits until each is served.
    ///
    /// ```no_run
    /// # use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    /// # async fn demo(
    /// #     env: &informer_envtest::Envtest,
    /// #     widget_crd: CustomResourceDefinition,
    /// # ) -> Result<(), informer_envtest::Error> {
    /// // With kube's `#[derive(CustomResource)]`: `env.install_crds(&[Widget::crd()])`.
    /// env.install_crds(&[widget_crd]).await?;
    /// # Ok(()) }
    /// ```
    pub async fn install_crds(
        &self,
        crds: &[CustomResourceDefinition],
    ) -> Result<Vec<CustomResourceDefinition>, Error> {
        install_crds(&self.client().await?, crds, CRD_TIMEOUT).await
    }
}
