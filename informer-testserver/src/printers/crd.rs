//! A CRD's `additionalPrinterColumns`: read from the definition, cells by a JSONPath subset.

use serde_json::Value;

use super::{Column, Source, age, age_column, name_column};
use crate::resources::ResourceInfo;
use crate::state::Shared;

/// Name plus the version's printer columns, or Name and Age when it defines none.
pub(super) fn columns(sh: &Shared, info: &ResourceInfo) -> Vec<Column> {
    let key = (String::new(), format!("{}.{}", info.plural, info.group));
    let crd = sh
        .store
        .get("apiextensions.k8s.io/customresourcedefinitions", &key)
        .and_then(|o| o.value().ok());
    let defined: Vec<Value> = crd
        .as_ref()
        .and_then(|v| v.pointer("/spec/versions"))
        .and_then(Value::as_array)
        .and_then(|vs| {
            vs.iter()
                .find(|v| v.get("name").and_then(Value::as_str) == Some(info.version.as_str()))
        })
        .and_then(|v| v.get("additionalPrinterColumns"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut out = vec![name_column()];
    if defined.is_empty() {
        // The CRD default: an Age column from metadata.creationTimestamp.
        out.push(age_column());
        return out;
    }
    for c in defined {
        let s = |k: &str| {
            c.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        out.push(Column {
            name: s("name"),
            ty: s("type"),
            format: s("format"),
            description: s("description"),
            priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
            source: Source::JsonPath(s("jsonPath")),
        });
    }
    out
}

/// A CRD column's cell from the first JSONPath result, typed like kube-apiserver's
/// (`date` becomes an age).
pub(super) fn cell(ty: &str, v: Option<&Value>, now: i64) -> Value {
    let Some(v) = v else { return Value::Null };
    match (ty, v) {
        ("date", v) => Value::String(age(Some(v), now)),
        ("integer", Value::Number(n)) if n.is_i64() => v.clone(),
        ("number", Value::Number(_)) | ("boolean", Value::Bool(_)) => v.clone(),
        ("string", Value::String(_)) => v.clone(),
        ("string", other) => Value::String(other.to_string()),
        _ => Value::Null,
    }
}

/// Evaluates the JSONPath subset CRDs use: `.a.b`, `['a.b']`, `[0]`, `[*]` and
/// `[?(@.key=="value")]`.
pub(super) fn jsonpath<'a>(obj: &'a Value, path: &str) -> Vec<&'a Value> {
    let path = path.trim().trim_start_matches('{').trim_end_matches('}');
    let path = path.strip_prefix('$').unwrap_or(path);
    let mut cur: Vec<&Value> = vec![obj];
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let key = &r[..end];
            if !key.is_empty() {
                cur = cur.into_iter().filter_map(|v| v.get(key)).collect();
            }
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let Some(end) = r.find(']') else {
                return Vec::new();
            };
            // A filter may hold ']' in its value; take up to the closing ")]" then.
            let end = if r.starts_with("?(") {
                r.find(")]").map_or(end, |e| e + 1)
            } else {
                end
            };
            let inner = &r[..end];
            rest = &r[end + 1..];
            cur = step(cur, inner);
        } else {
            return Vec::new();
        }
    }
    cur
}

fn step<'a>(cur: Vec<&'a Value>, inner: &str) -> Vec<&'a Value> {
    let quoted = inner
        .strip_prefix('\'')
        .and_then(|s| s.strip_suffix('\''))
        .or_else(|| inner.strip_prefix('"').and_then(|s| s.strip_suffix('"')));
    if let Some(key) = quoted {
        return cur.into_iter().filter_map(|v| v.get(key)).collect();
    }
    if inner == "*" {
        return cur
            .into_iter()
            .flat_map(|v| match v {
                Value::Array(a) => a.iter().collect::<Vec<_>>(),
                Value::Object(m) => m.values().collect(),
                _ => Vec::new(),
            })
            .collect();
    }
    if let Ok(i) = inner.parse::<i64>() {
        return cur
            .into_iter()
            .filter_map(|v| {
                let a = v.as_array()?;
                let idx = if i < 0 { a.len() as i64 + i } else { i };
                usize::try_from(idx).ok().and_then(|i| a.get(i))
            })
            .collect();
    }
    if let Some(filter) = inner.strip_prefix("?(").and_then(|s| s.strip_suffix(')')) {
        let Some((lhs, rhs)) = filter.split_once("==") else {
            return Vec::new();
        };
        let field = lhs.trim().trim_start_matches("@.");
        let want = rhs.trim().trim_matches(|c| c == '"' || c == '\'');
        return cur
            .into_iter()
            .flat_map(|v| {
                v.as_array()
                    .map(|a| a.iter().collect::<Vec<_>>())
                    .unwrap_or_default()
            })
            .filter(|item| {
                jsonpath(item, &format!(".{field}"))
                    .first()
                    // Strings compare as text, numbers and bools by value (`@.port==80`).
                    .is_some_and(|v| match v.as_str() {
                        Some(s) => s == want,
                        None => want.parse::<Value>().is_ok_and(|w| w == **v),
                    })
            })
            .collect();
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn jsonpath_subset() {
        let obj = json!({"metadata": {"labels": {"a.b/c": "x"}},
                         "spec": {"size": 3, "items": [{"n": 1}, {"n": 2}]},
                         "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Other", "status": "False"}]}});
        assert_eq!(jsonpath(&obj, ".spec.size"), [&json!(3)]);
        assert_eq!(jsonpath(&obj, ".spec.items[1].n"), [&json!(2)]);
        assert_eq!(jsonpath(&obj, ".spec.items[*].n"), [&json!(1), &json!(2)]);
        assert_eq!(jsonpath(&obj, ".metadata.labels['a.b/c']"), [&json!("x")]);
        assert_eq!(
            jsonpath(&obj, r#".status.conditions[?(@.type=="Ready")].status"#),
            [&json!("True")]
        );
        assert!(jsonpath(&obj, ".spec.missing").is_empty());
        assert_eq!(cell("integer", Some(&json!(3)), 0), json!(3));
        assert_eq!(cell("integer", Some(&json!("x")), 0), Value::Null);
    }
}
