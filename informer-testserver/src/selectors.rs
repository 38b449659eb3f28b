//! Label selectors (equality- and set-based) and field selectors, parsed like kube-apiserver does.

use std::collections::BTreeMap;

use crate::status::ApiError;
use crate::store::Stored;

/// One label requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Req {
    /// `k=v`, `k==v`, `k in (a,b)`.
    In(String, Vec<String>),
    /// `k!=v`, `k notin (a,b)`.
    NotIn(String, Vec<String>),
    /// `k`.
    Exists(String),
    /// `!k`.
    DoesNotExist(String),
    /// `k>n` / `k<n`.
    Gt(String, i64),
    Lt(String, i64),
}

/// A parsed label selector (all requirements must hold).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LabelSelector(Vec<Req>);

impl LabelSelector {
    /// Parses the `labelSelector` query value.
    pub(crate) fn parse(s: &str) -> Result<Self, ApiError> {
        let mut reqs = Vec::new();
        for part in split_top(s) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            reqs.push(parse_req(part).map_err(|why| {
                ApiError::bad_request(format!("unable to parse requirement: {why}"))
            })?);
        }
        Ok(LabelSelector(reqs))
    }

    /// Whether no requirement is set.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `labels` satisfy every requirement.
    pub(crate) fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.iter().all(|r| match r {
            Req::In(k, vs) => labels.get(k).is_some_and(|v| vs.contains(v)),
            Req::NotIn(k, vs) => labels.get(k).is_none_or(|v| !vs.contains(v)),
            Req::Exists(k) => labels.contains_key(k),
            Req::DoesNotExist(k) => !labels.contains_key(k),
            Req::Gt(k, n) => labels
                .get(k)
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v > *n),
            Req::Lt(k, n) => labels
                .get(k)
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v < *n),
        })
    }
}

/// Splits on commas outside parentheses.
fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn parse_req(part: &str) -> Result<Req, String> {
    if let Some(key) = part.strip_prefix('!') {
        let key = key.trim();
        check_key(key)?;
        return Ok(Req::DoesNotExist(key.to_owned()));
    }
    for (op, neg) in [("!=", true), ("==", false), ("=", false)] {
        if let Some((k, v)) = part.split_once(op) {
            let (k, v) = (k.trim(), v.trim());
            check_key(k)?;
            check_value(v)?;
            let vals = vec![v.to_owned()];
            return Ok(if neg {
                Req::NotIn(k.to_owned(), vals)
            } else {
                Req::In(k.to_owned(), vals)
            });
        }
    }
    for (op, gt) in [(">", true), ("<", false)] {
        if let Some((k, v)) = part.split_once(op) {
            let k = k.trim();
            check_key(k)?;
            let n = v.trim().parse::<i64>().map_err(|_| {
                format!("for 'Gt', 'Lt' operators, the value must be an integer: {v:?}")
            })?;
            return Ok(if gt {
                Req::Gt(k.to_owned(), n)
            } else {
                Req::Lt(k.to_owned(), n)
            });
        }
    }
    let words: Vec<&str> = part.splitn(2, char::is_whitespace).collect();
    if words.len() == 2 {
        let key = words[0].trim();
        let rest = words[1].trim_start();
        let (neg, list) = if let Some(l) = rest.strip_prefix("notin") {
            (true, l)
        } else if let Some(l) = rest.strip_prefix("in") {
            (false, l)
        } else {
            return Err(format!(
                "found '{rest}', expected: in, notin, =, ==, !=, gt, lt"
            ));
        };
        check_key(key)?;
        let list = list.trim();
        let inner = list
            .strip_prefix('(')
            .and_then(|l| l.strip_suffix(')'))
            .ok_or_else(|| format!("found '{list}', expected: '(' ... ')'"))?;
        let vals: Vec<String> = inner.split(',').map(|v| v.trim().to_owned()).collect();
        for v in &vals {
            check_value(v)?;
        }
        return Ok(if neg {
            Req::NotIn(key.to_owned(), vals)
        } else {
            Req::In(key.to_owned(), vals)
        });
    }
    check_key(part)?;
    Ok(Req::Exists(part.to_owned()))
}

/// Validates a label key: optional DNS prefix, `/`, and a name of up to 63 characters.
fn check_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix {
        let ok = !p.is_empty()
            && p.len() <= 253
            && p.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.');
        if !ok {
            return Err(format!(
                "invalid label key {key:?}: prefix part must be a DNS subdomain"
            ));
        }
    }
    if name.is_empty() || name.len() > 63 || !name_chars_ok(name) {
        return Err(format!(
            "invalid label key {key:?}: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        ));
    }
    Ok(())
}

/// Validates a label value (may be empty).
fn check_value(v: &str) -> Result<(), String> {
    if v.is_empty() {
        return Ok(());
    }
    if v.len() > 63 || !name_chars_ok(v) {
        return Err(format!(
            "invalid label value: {v:?}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        ));
    }
    Ok(())
}

fn name_chars_ok(s: &str) -> bool {
    let alnum = |c: char| c.is_ascii_alphanumeric();
    s.chars()
        .all(|c| alnum(c) || c == '-' || c == '_' || c == '.')
        && s.chars().next().is_some_and(alnum)
        && s.chars().last().is_some_and(alnum)
}

/// A parsed field selector.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FieldSelector(Vec<(String, bool, String)>);

impl FieldSelector {
    /// Parses the `fieldSelector` value; only the fields of `supported` (plus metadata.name and
    /// metadata.namespace) are accepted, like the real per-resource field label conversion.
    pub(crate) fn parse(s: &str, supported: &[&str]) -> Result<Self, ApiError> {
        let mut out = Vec::new();
        for part in s.split(',') {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let (field, neg, value) = if let Some((f, v)) = part.split_once("!=") {
                (f, true, v)
            } else if let Some((f, v)) = part.split_once("==") {
                (f, false, v)
            } else if let Some((f, v)) = part.split_once('=') {
                (f, false, v)
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid selector: '{s}'; can't understand '{part}'"
                )));
            };
            let field = field.trim();
            if field != "metadata.name"
                && field != "metadata.namespace"
                && !supported.contains(&field)
            {
                return Err(ApiError::bad_request(format!(
                    "field label not supported: {field}"
                )));
            }
            out.push((field.to_owned(), neg, value.trim().to_owned()));
        }
        Ok(FieldSelector(out))
    }

    /// Whether no requirement is set.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether the object satisfies every requirement.
    pub(crate) fn matches(&self, obj: &Stored) -> bool {
        self.0
            .iter()
            .all(|(f, neg, v)| (obj.field(f).unwrap_or_default() == v) != *neg)
    }
}

/// Both selectors of a request.
#[derive(Debug, Clone, Default)]
pub(crate) struct Selectors {
    /// The label selector.
    pub(crate) labels: LabelSelector,
    /// The field selector.
    pub(crate) fields: FieldSelector,
    /// The shard selector (KEP-5866), when given and the feature is on.
    pub(crate) shard: Option<crate::shard::ShardSelector>,
}

impl Selectors {
    /// Whether the object matches all of them.
    pub(crate) fn matches(&self, obj: &Stored) -> bool {
        self.labels.matches(&obj.labels)
            && self.fields.matches(obj)
            && self
                .shard
                .as_ref()
                .is_none_or(|s| s.matches(obj.uid_hash, &obj.namespace))
    }

    /// Whether all are empty.
    pub(crate) fn is_empty(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty() && self.shard.is_none()
    }
}

/// A JSON map of strings as an equality selector, `k1=v1,k2=v2` (a Scale's `selector`, a
/// DaemonSet's `NODE SELECTOR` column); not a map, or no strings in it, is empty.
pub(crate) fn equality_selector(map: Option<&serde_json::Value>) -> String {
    map.and_then(serde_json::Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| format!("{k}={v}")))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default()
}

/// Extra field-selector paths per kind (beyond metadata.name and metadata.namespace), as
/// kube-apiserver registers them.
pub(crate) fn field_paths(group: &str, kind: &str) -> &'static [&'static str] {
    match (group, kind) {
        ("", "Pod") => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ],
        ("", "Secret") => &["type"],
        ("", "Node") => &["spec.unschedulable"],
        ("", "Namespace") => &["status.phase"],
        ("", "Service") => &["spec.clusterIP", "spec.type"],
        ("", "ReplicationController") | ("apps", "ReplicaSet") => &["status.replicas"],
        ("batch", "Job") => &["status.successful"],
        ("certificates.k8s.io", "CertificateSigningRequest") => &["spec.signerName"],
        ("", "Event") => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn equality_and_set_based() {
        let l = labels(&[("app", "web"), ("tier", "front")]);
        let ok = |s: &str| LabelSelector::parse(s).expect(s).matches(&l);
        assert!(ok("app=web"));
        assert!(ok("app==web,tier!=back"));
        assert!(ok("app in (web, api),!missing"));
        assert!(ok("tier notin (back),app"));
        assert!(!ok("app=api"));
        assert!(!ok("missing"));
        assert!(!ok("tier in (back)"));
        assert!(ok(""));
    }

    #[test]
    fn bad_selectors_are_rejected() {
        for s in [
            "app=we b",
            "app in web",
            "-bad=x",
            "a=b=c=",
            "app in (x",
            "Bad/key=x",
        ] {
            let err = LabelSelector::parse(s).expect_err(s);
            assert_eq!(err.code, 400, "{s}");
        }
        assert_eq!(
            FieldSelector::parse("spec.foo=x", &[]).expect_err("f").code,
            400
        );
        assert_eq!(
            FieldSelector::parse("metadata.name", &[])
                .expect_err("f")
                .code,
            400
        );
        assert!(FieldSelector::parse("metadata.name=x,metadata.namespace!=y", &[]).is_ok());
    }

    proptest::proptest! {
        /// Hostile input: arbitrary text, and text assembled from selector tokens, parses or
        /// is a 400; never a panic, and a parsed selector matches any label set without one.
        #[test]
        fn selector_parsing_never_panics(
            arbitrary in ".{0,60}",
            tokens in proptest::collection::vec(
                proptest::sample::select(vec![
                    "app", "x.io/k", "=", "==", "!=", "!", " in ", " notin ", "(", ")", ",",
                    "web", "", " ", "<", ">", "12", "-1", "a-b", "\u{e9}", "/", "exists",
                ]),
                0..12,
            ),
            keys in proptest::collection::btree_map("[a-z]{1,3}", "[a-z0-9]{0,3}", 0..4),
        ) {
            let assembled: String = tokens.concat();
            for text in [arbitrary.as_str(), assembled.as_str()] {
                match LabelSelector::parse(text) {
                    Ok(sel) => {
                        let _ = sel.matches(&keys);
                    }
                    Err(e) => proptest::prop_assert_eq!(e.code, 400),
                }
                if let Err(e) = FieldSelector::parse(text, &["spec.nodeName"]) {
                    proptest::prop_assert_eq!(e.code, 400);
                }
            }
        }
    }
}
