//! Kubernetes `Status` errors: every failure the server answers carries one.

use bytes::Bytes;
use http::{HeaderValue, StatusCode};
use serde_json::{Value, json};

use crate::resources::ResourceInfo;

/// An API failure, rendered as a `v1 Status` body with the matching HTTP code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct ApiError {
    /// HTTP status code (also `Status.code`).
    pub code: u16,
    /// `Status.reason` (`NotFound`, `Conflict`, `Expired`...).
    pub reason: String,
    /// Human-readable `Status.message`.
    pub message: String,
    /// `Status.details`, when the real server sends some.
    pub details: Option<Value>,
    /// `Retry-After` header (seconds), also put into `details.retryAfterSeconds`.
    pub retry_after: Option<u64>,
}

impl ApiError {
    /// A failure with the given code, reason and message.
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason: reason.to_owned(),
            message: message.into(),
            details: None,
            retry_after: None,
        }
    }

    /// Adds `details`.
    pub(crate) fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// Adds a `Retry-After`.
    pub(crate) fn with_retry_after(mut self, secs: Option<u64>) -> Self {
        self.retry_after = secs;
        self
    }

    /// 400 BadRequest.
    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 404 NotFound for an object.
    pub(crate) fn not_found(info: &ResourceInfo, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", info.group_resource()),
        )
        .with_details(json!({"name": name, "group": info.group, "kind": info.plural}))
    }

    /// 404 NotFound for a path that serves nothing.
    pub(crate) fn no_route(path: &str) -> Self {
        Self::new(404, "NotFound", format!("the server could not find the requested resource ({path})"))
            .with_details(json!({"causes": [{"reason": "UnexpectedServerResponse", "message": "404 page not found"}]}))
    }

    /// 409 AlreadyExists.
    pub(crate) fn already_exists(info: &ResourceInfo, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", info.group_resource()),
        )
        .with_details(json!({"name": name, "group": info.group, "kind": info.plural}))
    }

    /// 409 Conflict on a stale resourceVersion or failed precondition.
    pub(crate) fn conflict(info: &ResourceInfo, name: &str, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                info.group_resource()
            ),
        )
        .with_details(json!({"name": name, "group": info.group, "kind": info.plural}))
    }

    /// 422 Invalid.
    pub(crate) fn invalid(info: &ResourceInfo, name: &str, why: &str) -> Self {
        Self::new(
            422,
            "Invalid",
            format!("{} \"{name}\" is invalid: {why}", info.kind),
        )
        .with_details(json!({"name": name, "group": info.group, "kind": info.kind}))
    }

    /// 422 Invalid ListOptions, as kube-apiserver's query-parameter validation answers.
    pub(crate) fn invalid_list_options(field: &str, detail: &str) -> Self {
        Self::new(
            422,
            "Invalid",
            format!("ListOptions.meta.k8s.io \"\" is invalid: {field}: {detail}"),
        )
        .with_details(json!({"group": "meta.k8s.io", "kind": "ListOptions", "causes": [{"reason": "FieldValueForbidden", "message": detail, "field": field}]}))
    }

    /// 410 Expired (too old resource version, expired continue token).
    pub(crate) fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// 429 TooManyRequests for a consistent LIST the watch cache could not serve in time, as
    /// kube-apiserver answers it with `ConsistentListFromCacheSkipTimeoutFallback` on: the
    /// message is the watch cache's "Too large resource version" text, without its cause, and
    /// `Retry-After` is 1 s.
    pub(crate) fn consistent_read_too_many_requests(requested: u64, current: u64) -> Self {
        Self::new(
            429,
            "TooManyRequests",
            format!("Too large resource version: {requested}, current: {current}"),
        )
        .with_details(json!({"retryAfterSeconds": 1}))
        .with_retry_after(Some(1))
    }

    /// 504 Timeout "Too large resource version", exactly as the watch cache answers it.
    pub(crate) fn too_large_rv(requested: u64, current: u64) -> Self {
        Self::new(
            504,
            "Timeout",
            format!("Too large resource version: {requested}, current: {current}"),
        )
        .with_details(json!({
            "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
            "retryAfterSeconds": 1
        }))
        .with_retry_after(Some(1))
    }

    /// 405 MethodNotAllowed.
    pub(crate) fn method_not_allowed(what: &str) -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            format!("the server does not allow this method on the requested resource ({what})"),
        )
    }

    /// 415 UnsupportedMediaType.
    pub(crate) fn unsupported_media_type(ct: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got {ct:?})"
            ),
        )
    }

    /// 500 InternalError.
    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message)
    }

    /// A failure chosen by a fault switch, with the reason Kubernetes uses for that code.
    pub(crate) fn injected(code: u16, retry_after: Option<u64>) -> Self {
        let (reason, message) = match code {
            400 => ("BadRequest", "injected bad request"),
            401 => ("Unauthorized", "Unauthorized"),
            403 => ("Forbidden", "injected forbidden"),
            404 => ("NotFound", "injected not found"),
            409 => ("Conflict", "injected conflict"),
            410 => ("Expired", "too old resource version (injected)"),
            429 => (
                "TooManyRequests",
                "the server has received too many requests and has asked us to try again later (injected)",
            ),
            500 => (
                "InternalError",
                "an error on the server (\"injected\") has prevented the request from succeeding",
            ),
            503 => (
                "ServiceUnavailable",
                "the server is currently unable to handle the request (injected)",
            ),
            504 => (
                "Timeout",
                "the server was unable to return a response in the time allotted (injected)",
            ),
            _ => ("Unknown", "injected failure"),
        };
        let mut err = Self::new(code, reason, message).with_retry_after(retry_after);
        if let Some(secs) = retry_after {
            err.details = Some(json!({"retryAfterSeconds": secs}));
        }
        err
    }

    /// The HTTP status code (500 if out of range).
    pub fn status_code(&self) -> StatusCode {
        StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    /// The `Status` object as JSON.
    pub fn to_status(&self) -> Value {
        let mut v = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            v["details"] = d.clone();
        }
        v
    }

    /// The `Status` body bytes.
    pub(crate) fn body(&self) -> Bytes {
        Bytes::from(serde_json::to_vec(&self.to_status()).unwrap_or_default())
    }

    /// The `Retry-After` header value, if any.
    pub(crate) fn retry_after_header(&self) -> Option<HeaderValue> {
        self.retry_after.map(HeaderValue::from)
    }
}
