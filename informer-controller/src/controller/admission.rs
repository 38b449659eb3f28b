//! Whether a written object will ever reach an informer's store (K3): only then may a
//! reconcile wait for it. An informer that is not running, or that lists another namespace,
//! another label or field selection, or another shard, never stores the write, and a wait for it
//! would only end at the timeout.
//!
//! Selectors are read as kube-apiserver reads them (apimachinery's `labels.Parse` and
//! `fields.ParseSelector`). What cannot be judged on the client (a field selector on a field
//! other than `metadata.name` or `metadata.namespace`, a selector this parser does not read)
//! counts as "not admitted": the write is not recorded and the guard is off for it, which costs
//! at most a stale read, never a wait that cannot end.

use informer_runtime::lister::GroupResource;
use informer_runtime::shard::ShardField;
use informer_runtime::{Meta, SharedInformerFactory};

/// Whether the informers of `factory` for `resource` list and watch `object` (K3): the
/// namespace, label selector and field selector of that resource (its scope, F11, or the
/// factory's) and the factory's shard. `object` is any cached form of its kind (read through
/// the runtime's `Meta`).
pub(crate) fn admits<M: Meta + ?Sized>(
    factory: &SharedInformerFactory,
    resource: &GroupResource,
    object: &M,
) -> bool {
    let selection = factory.selection_of(resource);
    let namespace = object.object_namespace();
    // A cluster-scoped object has no namespace, and the factory's namespace does not apply.
    if let (Some(watched), Some(ns)) = (selection.namespace.as_deref(), namespace)
        && watched != ns
    {
        return false;
    }
    if let Some(selector) = &selection.label_selector
        && labels_match(selector, |key| object.object_label(key)) != Some(true)
    {
        return false;
    }
    if let Some(selector) = &selection.field_selector {
        let name = object.object_name().unwrap_or_default();
        if fields_match(selector, name, namespace.unwrap_or_default()) != Some(true) {
            return false;
        }
    }
    if let Some(shard) = factory.shard() {
        let value = match shard.field() {
            ShardField::Uid => object.object_uid(),
            ShardField::Namespace => Some(namespace.unwrap_or_default()),
        };
        // No UID (a write that returned no object): nothing to judge by.
        if !value.is_some_and(|v| shard.admits(v)) {
            return false;
        }
    }
    true
}

/// One requirement of a label selector.
#[derive(Debug, PartialEq)]
enum Requirement<'a> {
    Exists(&'a str),
    NotExists(&'a str),
    In(&'a str, Vec<&'a str>),
    NotIn(&'a str, Vec<&'a str>),
    Greater(&'a str, i64),
    Less(&'a str, i64),
}

impl Requirement<'_> {
    fn matches<'v>(&self, value: impl Fn(&str) -> Option<&'v str>) -> bool {
        match self {
            Requirement::Exists(k) => value(k).is_some(),
            Requirement::NotExists(k) => value(k).is_none(),
            Requirement::In(k, vs) => value(k).is_some_and(|v| vs.contains(&v)),
            Requirement::NotIn(k, vs) => value(k).is_none_or(|v| !vs.contains(&v)),
            Requirement::Greater(k, n) => value(k)
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v > *n),
            Requirement::Less(k, n) => value(k)
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v < *n),
        }
    }
}

/// Whether the labels `label` looks up match the label selector `selector` (every requirement
/// holds); `None` when the selector cannot be read.
pub(crate) fn labels_match<'v>(
    selector: &str,
    label: impl Fn(&str) -> Option<&'v str> + Copy,
) -> Option<bool> {
    let requirements = parse_labels(selector)?;
    Some(requirements.iter().all(|r| r.matches(label)))
}

/// apimachinery's label selector syntax: requirements joined by `,` (not inside parentheses):
/// `key`, `!key`, `key=v`, `key==v`, `key!=v`, `key in (a,b)`, `key notin (a,b)`, `key>n`, `key<n`.
fn parse_labels(selector: &str) -> Option<Vec<Requirement<'_>>> {
    let mut out = Vec::new();
    let mut depth = 0u32;
    let mut start = 0;
    for (i, c) in selector.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.checked_sub(1)?,
            ',' if depth == 0 => {
                out.push(requirement(&selector[start..i])?);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return None;
    }
    let last = selector[start..].trim();
    if !last.is_empty() || !out.is_empty() {
        out.push(requirement(last)?);
    }
    Some(out)
}

fn requirement(text: &str) -> Option<Requirement<'_>> {
    let text = text.trim();
    if let Some(key) = text.strip_prefix('!') {
        return Some(Requirement::NotExists(key_of(key)?));
    }
    // `key in (…)` / `key notin (…)`: a key, blanks, the word, then the parenthesised set.
    if let Some((key, rest)) = text.split_once(char::is_whitespace) {
        let rest = rest.trim_start();
        for (word, negated) in [("notin", true), ("in", false)] {
            if let Some(set) = rest.strip_prefix(word)
                && let Some(set) = set.trim_start().strip_prefix('(')
                && let Some(set) = set.trim_end().strip_suffix(')')
            {
                let key = key_of(key)?;
                let values: Vec<&str> = set.split(',').map(str::trim).collect();
                return Some(if negated {
                    Requirement::NotIn(key, values)
                } else {
                    Requirement::In(key, values)
                });
            }
        }
    }
    for op in ["!=", "==", "=", ">", "<"] {
        if let Some((key, value)) = text.split_once(op) {
            let key = key_of(key)?;
            let value = value.trim();
            if value.contains(['=', '!', '<', '>', ' ', '(', ')']) {
                return None;
            }
            return Some(match op {
                "!=" => Requirement::NotIn(key, vec![value]),
                ">" => Requirement::Greater(key, value.parse().ok()?),
                "<" => Requirement::Less(key, value.parse().ok()?),
                _ => Requirement::In(key, vec![value]),
            });
        }
    }
    Some(Requirement::Exists(key_of(text)?))
}

/// A label key: non-empty, without blanks or operator characters.
fn key_of(text: &str) -> Option<&str> {
    let key = text.trim();
    let bad = |c: char| c.is_whitespace() || "=!<>(),".contains(c);
    (!key.is_empty() && !key.contains(bad)).then_some(key)
}

/// Whether an object `name` in `namespace` matches the field selector `selector`; `None` when
/// it names another field (only kube-apiserver knows a kind's other fields) or uses escapes.
pub(crate) fn fields_match(selector: &str, name: &str, namespace: &str) -> Option<bool> {
    if selector.contains('\\') {
        return None;
    }
    let mut all = true;
    for term in selector.split(',') {
        let term = term.trim();
        if term.is_empty() {
            continue;
        }
        let (field, negated, value) = if let Some((f, v)) = term.split_once("!=") {
            (f, true, v)
        } else if let Some((f, v)) = term.split_once("==") {
            (f, false, v)
        } else {
            let (f, v) = term.split_once('=')?;
            (f, false, v)
        };
        let actual = match field.trim() {
            "metadata.name" => name,
            "metadata.namespace" => namespace,
            _ => return None,
        };
        all &= (actual == value.trim()) != negated;
    }
    Some(all)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[tokio::test]
    async fn a_resource_scope_decides_for_its_own_kind_only() {
        use informer_runtime::factory::CacheScope;
        use k8s_openapi::api::apps::v1::Deployment;
        use k8s_openapi::api::core::v1::ConfigMap;

        // Nothing is started, so nothing connects.
        let config = kube::Config::new("http://127.0.0.1:9".parse().expect("a URI"));
        let client = kube::Client::try_from(config).expect("a client");
        let factory = SharedInformerFactory::builder(client)
            .scope_for::<ConfigMap>(CacheScope::new().namespace("a").label_selector("app=web"))
            .build();
        let mut cm = ConfigMap::default();
        cm.metadata.namespace = Some("b".into());
        cm.metadata.labels = Some(labels(&[("app", "web")]));
        let config_maps = GroupResource::of::<ConfigMap>();
        assert!(
            !admits(&factory, &config_maps, &cm),
            "another namespace (F11)"
        );
        cm.metadata.namespace = Some("a".into());
        assert!(admits(&factory, &config_maps, &cm));
        cm.metadata.labels = None;
        assert!(
            !admits(&factory, &config_maps, &cm),
            "the scope's label selector"
        );
        let mut deployment = Deployment::default();
        deployment.metadata.namespace = Some("b".into());
        let deployments = GroupResource::of::<Deployment>();
        assert!(
            admits(&factory, &deployments, &deployment),
            "the factory's scope: all"
        );
    }

    #[test]
    fn label_selectors_as_apimachinery_reads_them() {
        let map = labels(&[("app", "web"), ("tier", "front"), ("n", "5")]);
        let l = |key: &str| map.get(key).map(String::as_str);
        let cases = [
            ("", Some(true)),
            ("app=web", Some(true)),
            ("app==web", Some(true)),
            ("app = web , tier=front", Some(true)),
            ("app=db", Some(false)),
            ("app!=db", Some(true)),
            ("missing!=x", Some(true)),
            ("app", Some(true)),
            ("!app", Some(false)),
            ("!missing", Some(true)),
            ("app in (db, web)", Some(true)),
            ("app in (db)", Some(false)),
            ("app notin (db,cache)", Some(true)),
            ("missing notin (x)", Some(true)),
            ("tier in (front),app notin (db)", Some(true)),
            ("n>4", Some(true)),
            ("n<5", Some(false)),
            ("app>4", Some(false)),
            ("app in (web", None),
            ("app=web=x", None),
            ("=web", None),
            ("n>x", None),
        ];
        for (selector, want) in cases {
            assert_eq!(labels_match(selector, l), want, "{selector:?}");
        }
    }

    #[test]
    fn field_selectors_on_name_and_namespace_only() {
        assert_eq!(fields_match("metadata.name=a", "a", "ns"), Some(true));
        assert_eq!(fields_match("metadata.name==a", "b", "ns"), Some(false));
        assert_eq!(
            fields_match(
                "metadata.namespace!=kube-system,metadata.name!=x",
                "a",
                "ns"
            ),
            Some(true)
        );
        assert_eq!(
            fields_match("metadata.namespace=kube-system", "a", "ns"),
            Some(false)
        );
        assert_eq!(fields_match("status.phase=Running", "a", "ns"), None);
        assert_eq!(fields_match(r"metadata.name=a\,b", "a,b", "ns"), None);
    }
}
