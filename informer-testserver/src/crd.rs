//! CustomResourceDefinitions: validation, the status the real server sets, and the resources a
//! CRD makes served.

use serde_json::{Value, json};

use crate::resources::ResourceInfo;
use crate::status::ApiError;

fn invalid(name: &str, why: &str) -> ApiError {
    ApiError::new(
        422,
        "Invalid",
        format!("CustomResourceDefinition.apiextensions.k8s.io \"{name}\" is invalid: {why}"),
    )
    .with_details(
        json!({"name": name, "group": "apiextensions.k8s.io", "kind": "CustomResourceDefinition"}),
    )
}

fn text<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    let mut cur = v;
    for p in path {
        match cur.get(*p) {
            Some(n) => cur = n,
            None => return "",
        }
    }
    cur.as_str().unwrap_or_default()
}

/// Validates a CRD and fills in the status an established CRD has.
pub(crate) fn prepare(v: &mut Value) -> Result<(), ApiError> {
    let name = text(v, &["metadata", "name"]).to_owned();
    let group = text(v, &["spec", "group"]).to_owned();
    let plural = text(v, &["spec", "names", "plural"]).to_owned();
    let kind = text(v, &["spec", "names", "kind"]).to_owned();
    let scope = text(v, &["spec", "scope"]).to_owned();
    if group.is_empty() || plural.is_empty() || kind.is_empty() {
        return Err(invalid(
            &name,
            "spec.group, spec.names.plural and spec.names.kind are required",
        ));
    }
    if name != format!("{plural}.{group}") {
        return Err(invalid(
            &name,
            &format!(
                "metadata.name: Invalid value: {name:?}: must be spec.names.plural+\".\"+spec.group"
            ),
        ));
    }
    if scope != "Namespaced" && scope != "Cluster" {
        return Err(invalid(
            &name,
            "spec.scope: Unsupported value: must be Namespaced or Cluster",
        ));
    }
    let versions = v
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if versions.is_empty() {
        return Err(invalid(
            &name,
            "spec.versions: Invalid value: must have exactly one version marked as storage version",
        ));
    }
    // apiextensions.k8s.io/v1: every version carries its structural schema, served or not.
    if let Some(i) = versions
        .iter()
        .position(|ver| ver.pointer("/schema/openAPIV3Schema").is_none())
    {
        return Err(invalid(
            &name,
            &format!("spec.versions[{i}].schema.openAPIV3Schema: Required value"),
        ));
    }
    let storage: Vec<&str> = versions
        .iter()
        .filter(|ver| ver.get("storage").and_then(Value::as_bool) == Some(true))
        .map(|ver| text(ver, &["name"]))
        .collect();
    if storage.len() != 1 {
        return Err(invalid(
            &name,
            "spec.versions: Invalid value: must have exactly one version marked as storage version",
        ));
    }
    let mut names = v
        .pointer("/spec/names")
        .cloned()
        .unwrap_or_else(|| json!({}));
    if names.get("singular").is_none() {
        names["singular"] = Value::String(kind.to_lowercase());
    }
    if names.get("listKind").is_none() {
        names["listKind"] = Value::String(format!("{kind}List"));
    }
    let now = crate::clock::now();
    let cond = |t: &str, reason: &str, msg: &str| json!({"type": t, "status": "True", "lastTransitionTime": now, "reason": reason, "message": msg});
    v["status"] = json!({
        "acceptedNames": names,
        "conditions": [
            cond("NamesAccepted", "NoConflicts", "no conflicts found"),
            cond("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        ],
        "storedVersions": [storage[0]],
    });
    Ok(())
}

/// The resources a (prepared) CRD serves, one per served version.
pub(crate) fn resources(v: &Value) -> Vec<ResourceInfo> {
    let group = text(v, &["spec", "group"]).to_owned();
    let plural = text(v, &["spec", "names", "plural"]).to_owned();
    let kind = text(v, &["spec", "names", "kind"]).to_owned();
    let singular = match text(v, &["spec", "names", "singular"]) {
        "" => kind.to_lowercase(),
        s => s.to_owned(),
    };
    let strings = |p: &str| -> Vec<String> {
        v.pointer(p)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let short_names = strings("/spec/names/shortNames");
    let categories = strings("/spec/names/categories");
    let namespaced = text(v, &["spec", "scope"]) == "Namespaced";
    let versions = v
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    versions
        .iter()
        .filter(|ver| ver.get("served").and_then(Value::as_bool) != Some(false))
        .map(|ver| ResourceInfo {
            group: group.clone(),
            version: text(ver, &["name"]).to_owned(),
            kind: kind.clone(),
            plural: plural.clone(),
            singular: singular.clone(),
            namespaced,
            status_subresource: ver.pointer("/subresources/status").is_some(),
            short_names: short_names.clone(),
            categories: categories.clone(),
            verbs: crate::resources::ALL_VERBS
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
            custom: true,
        })
        .collect()
}

/// (group, plural) of a CRD.
pub(crate) fn group_plural(v: &Value) -> (String, String) {
    (
        text(v, &["spec", "group"]).to_owned(),
        text(v, &["spec", "names", "plural"]).to_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepares_and_serves() {
        let mut crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
                     "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                                   "schema": {"openAPIV3Schema": {"type": "object"}}},
                                  {"name": "v1beta1", "served": false, "storage": false}]}
        });
        // As kube-apiserver: every version needs its schema, served or not.
        let err = prepare(&mut crd.clone()).expect_err("no schema");
        assert_eq!(err.code, 422);
        assert!(
            err.message
                .contains("spec.versions[1].schema.openAPIV3Schema: Required value"),
            "{}",
            err.message
        );
        crd["spec"]["versions"][1]["schema"] = json!({"openAPIV3Schema": {"type": "object"}});
        prepare(&mut crd).expect("valid");
        assert_eq!(
            crd.pointer("/status/conditions/1/type"),
            Some(&json!("Established"))
        );
        let res = resources(&crd);
        assert_eq!(res.len(), 1);
        assert!(res[0].status_subresource && res[0].namespaced);
        crd["metadata"]["name"] = json!("wrong");
        assert_eq!(prepare(&mut crd).expect_err("name").code, 422);
    }
}
