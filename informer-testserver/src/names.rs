//! Object names, validated as kube-apiserver validates them on create: most kinds take a
//! lowercase RFC 1123 subdomain, Namespaces and Services an RFC 1123 label, RBAC's roles and
//! bindings any path segment. The messages and the `Status` (422 Invalid, one cause per error
//! on `metadata.name`) are kube-apiserver's, checked by the conformance scenario
//! `object_names_are_validated_per_kind` against a real kube-apiserver.

use serde_json::{Value, json};

use crate::resources::ResourceInfo;
use crate::status::ApiError;

const SUBDOMAIN_MAX: usize = 253;
const LABEL_MAX: usize = 63;

/// How a kind's names are validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rule {
    /// `NameIsDNSSubdomain`: most kinds, custom resources included.
    Subdomain,
    /// `NameIsDNSLabel`: Namespaces and Services.
    Label,
    /// `ValidatePathSegmentName`: RBAC roles and bindings (`system:controller:...`).
    PathSegment,
}

fn rule(info: &ResourceInfo) -> Rule {
    match (info.group.as_str(), info.kind.as_str()) {
        ("", "Namespace" | "Service") => Rule::Label,
        (
            "rbac.authorization.k8s.io",
            "Role" | "ClusterRole" | "RoleBinding" | "ClusterRoleBinding",
        ) => Rule::PathSegment,
        _ => Rule::Subdomain,
    }
}

/// A lowercase RFC 1123 label without the length check: `[a-z0-9]([-a-z0-9]*[a-z0-9])?`.
fn is_label_shape(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty()
        && b.first().is_some_and(alnum)
        && b.last().is_some_and(alnum)
        && b.iter().all(|c| alnum(c) || *c == b'-')
}

/// A lowercase RFC 1123 subdomain without the length check: labels joined by dots.
fn is_subdomain_shape(s: &str) -> bool {
    s.split('.').all(is_label_shape)
}

const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', \
and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is \
'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must \
start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is \
'[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

/// apimachinery's `IsDNS1123Subdomain`, `IsDNS1123Label` and `IsValidPathSegmentName`: every
/// error of `name` under the kind's rule.
fn errors(rule: Rule, name: &str) -> Vec<String> {
    let mut out = Vec::new();
    match rule {
        Rule::Subdomain => {
            if name.len() > SUBDOMAIN_MAX {
                out.push(format!("must be no more than {SUBDOMAIN_MAX} characters"));
            }
            if !is_subdomain_shape(name) {
                out.push(SUBDOMAIN_MSG.to_owned());
            }
        }
        Rule::Label => {
            if name.len() > LABEL_MAX {
                out.push(format!("must be no more than {LABEL_MAX} characters"));
            }
            if !is_label_shape(name) {
                // A valid subdomain that is no label can only have dots.
                out.push(if is_subdomain_shape(name) {
                    "must not contain dots".to_owned()
                } else {
                    LABEL_MSG.to_owned()
                });
            }
        }
        Rule::PathSegment => {
            for illegal in [".", ".."] {
                if name == illegal {
                    return vec![format!("may not be '{illegal}'")];
                }
            }
            for illegal in ["/", "%"] {
                if name.contains(illegal) {
                    out.push(format!("may not contain '{illegal}'"));
                }
            }
        }
    }
    out
}

/// The kind as kube-apiserver names it in messages: `Kind.group`, or `Kind` for the core group.
fn qualified_kind(info: &ResourceInfo) -> String {
    if info.group.is_empty() {
        info.kind.clone()
    } else {
        format!("{}.{}", info.kind, info.group)
    }
}

/// Checks the name of an object being created; a 422 Invalid as kube-apiserver's otherwise.
pub(crate) fn check(info: &ResourceInfo, name: &str) -> Result<(), ApiError> {
    let found = errors(rule(info), name);
    if found.is_empty() {
        return Ok(());
    }
    let quoted = serde_json::to_string(name).unwrap_or_default();
    let each: Vec<String> = found
        .iter()
        .map(|e| format!("metadata.name: Invalid value: {quoted}: {e}"))
        .collect();
    let summary = match each.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    };
    let causes: Vec<Value> = found
        .iter()
        .map(|e| {
            json!({
                "reason": "FieldValueInvalid",
                "message": format!("Invalid value: {quoted}: {e}"),
                "field": "metadata.name",
            })
        })
        .collect();
    let mut details = json!({"name": name, "kind": info.kind, "causes": causes});
    if !info.group.is_empty() {
        details["group"] = json!(info.group);
    }
    Err(ApiError::new(
        422,
        "Invalid",
        format!("{} {quoted} is invalid: {summary}", qualified_kind(info)),
    )
    .with_details(details))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_per_rule_as_apimachinery_judges_them() {
        let long = "x".repeat(254);
        for (rule, name, want) in [
            (Rule::Subdomain, "plain-name", 0),
            (Rule::Subdomain, "dots.in.name", 0),
            (Rule::Subdomain, "9-starts-with-digit", 0),
            (Rule::Subdomain, "Upper-Case", 1),
            (Rule::Subdomain, "under_score", 1),
            (Rule::Subdomain, "-leading-dash", 1),
            (Rule::Subdomain, "..", 1),
            (Rule::Subdomain, "a..b", 1),
            (Rule::Subdomain, long.as_str(), 1),
            (Rule::Label, "dots.in.name", 1),
            (Rule::Label, "9-starts-with-digit", 0),
            (Rule::Label, &"y".repeat(64), 1),
            (Rule::PathSegment, "system:Mixed_Case", 0),
            (Rule::PathSegment, long.as_str(), 0),
            (Rule::PathSegment, "..", 1),
            (Rule::PathSegment, "a/b%c", 2),
        ] {
            assert_eq!(errors(rule, name).len(), want, "{rule:?} {name}");
        }
        assert_eq!(
            errors(Rule::Label, "dots.in.name"),
            ["must not contain dots"]
        );
    }
}
