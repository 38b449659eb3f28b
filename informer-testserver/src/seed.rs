//! Seeding and mutation helpers on [`TestServer`]: they take the same store path as HTTP writes,
//! so every change gets a resourceVersion and a watch event.

use std::path::Path;
use std::sync::Arc;

use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::Error;
use crate::ops::{self, DeleteOptions, Part};
use crate::patch::PatchKind;
use crate::resources::ResourceInfo;
use crate::server::TestServer;
use crate::status::ApiError;

fn type_meta(obj: &Value) -> Result<(String, String), Error> {
    let av = obj
        .get("apiVersion")
        .and_then(Value::as_str)
        .ok_or(Error::MissingTypeMeta)?;
    let kind = obj
        .get("kind")
        .and_then(Value::as_str)
        .ok_or(Error::MissingTypeMeta)?;
    Ok((av.to_owned(), kind.to_owned()))
}

fn namespace_of(info: &ResourceInfo, obj: &Value) -> Option<String> {
    info.namespaced.then(|| {
        obj.pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .unwrap_or("default")
            .to_owned()
    })
}

fn name_of(obj: &Value) -> String {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

impl TestServer {
    pub(crate) fn typed_info<K: Resource<DynamicType = ()>>(
        &self,
    ) -> Result<Arc<ResourceInfo>, Error> {
        let (group, version, plural) = (K::group(&()), K::version(&()), K::plural(&()));
        self.sh.registry().get(&group, &version, &plural).ok_or_else(|| {
            Error::Api(ApiError::new(
                404,
                "NotFound",
                format!("the server could not find the requested resource ({plural}.{group}/{version})"),
            ))
        })
    }

    /// What a typed write needs: the resource, the object as JSON and its namespace.
    fn typed_write<K: Resource<DynamicType = ()> + Serialize>(
        &self,
        obj: &K,
    ) -> Result<(Arc<ResourceInfo>, Value, Option<String>), Error> {
        let info = self.typed_info::<K>()?;
        let v = Self::to_value(obj)?;
        let ns = namespace_of(&info, &v);
        Ok((info, v, ns))
    }

    fn to_value<K: Resource<DynamicType = ()> + Serialize>(obj: &K) -> Result<Value, Error> {
        let mut v = serde_json::to_value(obj)?;
        if let Some(o) = v.as_object_mut() {
            o.insert(
                "apiVersion".into(),
                Value::String(K::api_version(&()).into_owned()),
            );
            o.insert("kind".into(), Value::String(K::kind(&()).into_owned()));
        }
        Ok(v)
    }

    /// Creates a typed object (namespace `default` when a namespaced object has none).
    pub fn create<K: Resource<DynamicType = ()> + Serialize>(
        &self,
        obj: &K,
    ) -> Result<Value, Error> {
        let (info, v, ns) = self.typed_write(obj)?;
        Ok(ops::create(&self.sh, &info, ns.as_deref(), v, false)?.value()?)
    }

    /// Replaces a typed object; a set `metadata.resourceVersion` must be current (409 otherwise).
    pub fn update<K: Resource<DynamicType = ()> + Serialize>(
        &self,
        obj: &K,
    ) -> Result<Value, Error> {
        let (info, v, ns) = self.typed_write(obj)?;
        let name = name_of(&v);
        Ok(ops::update(&self.sh, &info, ns.as_deref(), &name, v, Part::Main)?.value()?)
    }

    /// Replaces the status of a typed object (the `status` subresource).
    pub fn update_status<K: Resource<DynamicType = ()> + Serialize>(
        &self,
        obj: &K,
    ) -> Result<Value, Error> {
        let (info, v, ns) = self.typed_write(obj)?;
        let name = name_of(&v);
        let part = if info.status_subresource {
            Part::Status
        } else {
            Part::Main
        };
        Ok(ops::update(&self.sh, &info, ns.as_deref(), &name, v, part)?.value()?)
    }

    /// Deletes a typed object (with finalizers it only gets a deletionTimestamp).
    pub fn delete<K: Resource<DynamicType = ()>>(
        &self,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Value, Error> {
        let info = self.typed_info::<K>()?;
        Ok(
            ops::delete(&self.sh, &info, namespace, name, &DeleteOptions::default())?
                .0
                .value()?,
        )
    }

    /// Reads a typed object (`Error::Api` with code 404 when missing).
    pub fn get<K: Resource<DynamicType = ()> + DeserializeOwned>(
        &self,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<K, Error> {
        let info = self.typed_info::<K>()?;
        let v = self.get_info(&info, namespace, name)?;
        Ok(serde_json::from_value(v)?)
    }

    fn get_info(
        &self,
        info: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Value, Error> {
        let ns = if info.namespaced {
            namespace.unwrap_or("default")
        } else {
            ""
        };
        let obj = self
            .sh
            .store
            .get(&info.storage_key(), &(ns.to_owned(), name.to_owned()))
            .ok_or_else(|| ApiError::not_found(info, name))?;
        Ok(obj.value()?)
    }

    /// Creates an object given as JSON; its `apiVersion` and `kind` pick the resource (built-in
    /// or served by a CRD). Creating a CustomResourceDefinition serves its resource at once.
    pub fn create_json(&self, obj: Value) -> Result<Value, Error> {
        let (av, kind) = type_meta(&obj)?;
        let info = self.sh.resolve_kind(&av, &kind)?;
        let ns = namespace_of(&info, &obj);
        Ok(ops::create(&self.sh, &info, ns.as_deref(), obj, false)?.value()?)
    }

    /// Replaces an object given as JSON.
    pub fn update_json(&self, obj: Value) -> Result<Value, Error> {
        let (av, kind) = type_meta(&obj)?;
        let info = self.sh.resolve_kind(&av, &kind)?;
        let ns = namespace_of(&info, &obj);
        let name = name_of(&obj);
        Ok(ops::update(&self.sh, &info, ns.as_deref(), &name, obj, Part::Main)?.value()?)
    }

    /// Applies a JSON merge patch to an object.
    pub fn patch_json(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
        merge_patch: &Value,
    ) -> Result<Value, Error> {
        let info = self.sh.resolve_kind(api_version, kind)?;
        let body = serde_json::to_vec(merge_patch)?;
        Ok(ops::patch(
            &self.sh,
            &info,
            namespace,
            name,
            PatchKind::Merge,
            &body,
            Part::Main,
        )?
        .value()?)
    }

    /// Reads an object as JSON.
    pub fn get_json(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Value, Error> {
        let info = self.sh.resolve_kind(api_version, kind)?;
        self.get_info(&info, namespace, name)
    }

    /// Deletes an object.
    pub fn delete_json(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Value, Error> {
        let info = self.sh.resolve_kind(api_version, kind)?;
        Ok(
            ops::delete(&self.sh, &info, namespace, name, &DeleteOptions::default())?
                .0
                .value()?,
        )
    }

    /// Creates the object, or merges it into the existing one (like `kubectl apply` without
    /// the three-way part). CRDs work too.
    pub fn apply_json(&self, obj: Value) -> Result<Value, Error> {
        let (av, kind) = type_meta(&obj)?;
        let info = self.sh.resolve_kind(&av, &kind)?;
        let ns = namespace_of(&info, &obj);
        let name = name_of(&obj);
        let body = serde_json::to_vec(&obj)?;
        Ok(ops::patch(
            &self.sh,
            &info,
            ns.as_deref(),
            &name,
            PatchKind::Apply,
            &body,
            Part::Main,
        )?
        .value()?)
    }

    /// Applies every document of a (multi-document) YAML text; returns the stored objects.
    pub fn apply_yaml(&self, yaml: &str) -> Result<Vec<Value>, Error> {
        let docs = parse_yaml_docs(yaml, Path::new(""))?;
        docs.into_iter().map(|d| self.apply_json(d)).collect()
    }

    /// Applies every `.yaml`/`.yml`/`.json` file of `dir` (sorted by name; CRDs first so their
    /// objects can follow). Returns the number of objects applied.
    pub fn seed_dir(&self, dir: &Path) -> Result<usize, Error> {
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .map_err(|source| Error::Io {
                path: dir.to_owned(),
                source,
            })?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                p.extension()
                    .is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
            })
            .collect();
        files.sort();
        let mut docs = Vec::new();
        for f in &files {
            let text = std::fs::read_to_string(f).map_err(|source| Error::Io {
                path: f.clone(),
                source,
            })?;
            docs.extend(parse_yaml_docs(&text, f)?);
        }
        let is_crd =
            |d: &Value| d.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition");
        docs.sort_by_key(|d| !is_crd(d));
        let n = docs.len();
        for d in docs {
            self.apply_json(d)?;
        }
        Ok(n)
    }
}

/// Splits YAML into documents, flattening `kind: List`.
fn parse_yaml_docs(text: &str, path: &Path) -> Result<Vec<Value>, Error> {
    let docs: Vec<Value> = serde_saphyr::from_multiple::<Value>(text).map_err(|e| Error::Yaml {
        path: path.to_owned(),
        message: e.to_string(),
    })?;
    let mut out = Vec::new();
    for d in docs {
        if d.is_null() {
            continue;
        }
        if d.get("kind").and_then(Value::as_str) == Some("List") {
            if let Some(items) = d.get("items").and_then(Value::as_array) {
                out.extend(items.iter().cloned());
            }
            continue;
        }
        out.push(d);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_documents_and_lists() {
        let docs = parse_yaml_docs(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n---\nkind: List\nitems:\n- kind: A\n  metadata: {name: a}\n- kind: B\n",
            Path::new(""),
        )
        .expect("yaml");
        let names: Vec<_> = docs
            .iter()
            .map(|d| d["kind"].as_str().unwrap_or_default().to_owned())
            .collect();
        assert_eq!(names, ["ConfigMap", "A", "B"]);
        assert_eq!(docs[0]["metadata"]["name"], "cfg");
    }
}
