//! The HTTP front end: one dispatcher that authenticates, classifies, applies faults, routes
//! Kubernetes paths by hand (namespaces and resources overlap too much for a static router),
//! logs, and answers every failure with a `Status` body.

pub(crate) mod codec;
mod crud;
mod discovery;
mod gzip;
mod hostile;
mod list;
mod scale;
mod table;
mod watch;

use std::sync::Arc;
use std::time::SystemTime;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderValue, Method, StatusCode, header};

use crate::log::{QueryParams, RequestRecord, Verb};
use crate::resources::ResourceInfo;
use crate::state::Shared;
use crate::status::ApiError;
use crate::store::Stored;

/// Builds the router.
pub(crate) fn router(sh: Arc<Shared>) -> Router {
    Router::new().fallback(dispatch).with_state(sh)
}

/// How objects are rendered, from the Accept header (see `codec::negotiate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Full objects.
    Full,
    /// `meta.k8s.io/v1` PartialObjectMetadata(List).
    Metadata,
    /// `meta.k8s.io/v1` Table (get, list and watch; other verbs answer full objects).
    Table,
}

/// Marks a response whose objects left `metadata.managedFields` out (for the request log).
#[derive(Debug, Clone, Copy)]
struct ManagedFieldsDropped;

/// A parsed resource path.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub(crate) info: Arc<ResourceInfo>,
    /// Objects go out without `metadata.managedFields` (KEP-5958, negotiated from `Accept`).
    pub(crate) drop_managed_fields: bool,
    /// The fields protobuf answers carry (the server's setting, T8).
    pub(crate) schema: crate::protobuf::Schema,
    pub(crate) namespace: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) subresource: Option<String>,
}

/// What a path addresses.
enum Route {
    Version,
    Health,
    OpenApiV2,
    OpenApiV3(String),
    CoreVersions,
    Groups,
    Group(String),
    Resources(String, String),
    Resource(Target),
}

fn route(sh: &Shared, path: &str) -> Result<Route, ApiError> {
    let segs: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    let (group, version, rest) = match segs.as_slice() {
        ["version"] => return Ok(Route::Version),
        ["healthz" | "livez" | "readyz", ..] => return Ok(Route::Health),
        ["openapi", "v2"] | ["swagger.json"] => return Ok(Route::OpenApiV2),
        ["openapi", "v3", rest @ ..] => return Ok(Route::OpenApiV3(rest.join("/"))),
        ["api"] => return Ok(Route::CoreVersions),
        ["apis"] => return Ok(Route::Groups),
        ["apis", g] => return Ok(Route::Group((*g).to_owned())),
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return Err(ApiError::no_route(path)),
    };
    if !sh.registry().has_version(group, version) {
        return Err(ApiError::no_route(path));
    }
    if rest.is_empty() {
        return Ok(Route::Resources(group.to_owned(), version.to_owned()));
    }
    let (namespace, rest) = match rest {
        ["namespaces", ns, plural, more @ ..] if *plural != "status" && *plural != "finalize" => (
            Some((*ns).to_owned()),
            std::iter::once(*plural)
                .chain(more.iter().copied())
                .collect::<Vec<_>>(),
        ),
        other => (None, other.to_vec()),
    };
    let plural = rest[0];
    let info = sh
        .registry()
        .get(group, version, plural)
        .ok_or_else(|| ApiError::no_route(path))?;
    if namespace.is_some() && !info.namespaced {
        return Err(ApiError::no_route(path));
    }
    let (name, subresource) = match rest.as_slice() {
        [_] => (None, None),
        [_, n] => (Some((*n).to_owned()), None),
        [_, n, s] => (Some((*n).to_owned()), Some((*s).to_owned())),
        _ => return Err(ApiError::no_route(path)),
    };
    Ok(Route::Resource(Target {
        info,
        drop_managed_fields: false,
        schema: sh.settings.protobuf_schema,
        namespace,
        name,
        subresource,
    }))
}

fn verb_of(method: &Method, route: &Route, q: &QueryParams) -> Verb {
    match route {
        Route::Resource(t) => match (method, t.name.is_some()) {
            (&Method::GET, false) if q.watch => Verb::Watch,
            (&Method::GET, false) => Verb::List,
            (&Method::GET, true) => Verb::Get,
            (&Method::POST, _) => Verb::Create,
            (&Method::PUT, _) => Verb::Update,
            (&Method::PATCH, _) => Verb::Patch,
            (&Method::DELETE, true) => Verb::Delete,
            (&Method::DELETE, false) => Verb::DeleteCollection,
            _ => Verb::Other,
        },
        _ => Verb::Discovery,
    }
}

fn authorized(sh: &Shared, req: &Request) -> bool {
    let presented = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.strip_prefix("Bearer "))
        .map(str::trim);
    sh.accepts_token(presented)
}

async fn dispatch(State(sh): State<Arc<Shared>>, req: Request) -> Response {
    let time = SystemTime::now();
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let query = QueryParams::parse(req.uri().query().unwrap_or_default());
    let routed = route(&sh, &path);
    let verb = match &routed {
        Ok(r) => verb_of(&method, r, &query),
        Err(_) => Verb::Other,
    };
    let public = matches!(routed, Ok(Route::Version | Route::Health));
    let user_agent = req
        .headers()
        .get(header::USER_AGENT)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned);
    let user_agent = user_agent.as_deref();
    let hung = sh.faults.is_hung_user_agent(user_agent);
    if hung {
        sh.faults
            .hold_hung_user_agent(user_agent, &sh.shutdown)
            .await;
    }
    let resp = if hung || sh.faults.is_refused_user_agent(user_agent) {
        error_response(&ApiError::new(
            503,
            "ServiceUnavailable",
            "this client is cut off (Faults::refuse_user_agent)",
        ))
    } else if !public && !authorized(&sh, &req) {
        error_response(&ApiError::new(401, "Unauthorized", "Unauthorized"))
    } else {
        match routed {
            Ok(r) => match serve(&sh, r, verb, &query, req).await {
                Ok(resp) => resp,
                Err(e) => error_response(&e),
            },
            Err(e) => error_response(&e),
        }
    };
    sh.log.push(RequestRecord {
        method,
        path,
        query,
        verb,
        status: resp.status(),
        gzip: resp
            .headers()
            .get(header::CONTENT_ENCODING)
            .is_some_and(|v| v == "gzip"),
        protobuf: resp
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with(crate::protobuf::MEDIA_TYPE)),
        managed_fields_dropped: resp.extensions().get::<ManagedFieldsDropped>().is_some(),
        time,
    });
    sh.notify();
    resp
}

async fn serve(
    sh: &Arc<Shared>,
    route: Route,
    verb: Verb,
    q: &QueryParams,
    req: Request,
) -> Result<Response, ApiError> {
    let accept = header_text(&req, header::ACCEPT);
    let gzip_ok = gzip::accepted(&header_text(&req, header::ACCEPT_ENCODING));
    match route {
        Route::Version => Ok(json_response(StatusCode::OK, discovery::version())),
        Route::Health => Ok(Response::new(Body::from("ok"))),
        Route::OpenApiV2 => Ok(discovery::openapi_v2(&accept)),
        Route::OpenApiV3(rest) => {
            discovery::openapi_v3(sh, &rest).map(|b| json_response(StatusCode::OK, b))
        }
        Route::CoreVersions => Ok(discovery::core_versions(
            sh,
            &accept,
            req.headers().get(header::HOST),
        )),
        Route::Groups => Ok(discovery::groups(sh, &accept)),
        Route::Group(g) => discovery::group(sh, &g).map(|b| json_response(StatusCode::OK, b)),
        Route::Resources(g, v) => Ok(json_response(
            StatusCode::OK,
            discovery::resources(sh, &g, &v),
        )),
        Route::Resource(t) => {
            // T5: kube-apiserver encodes an error's Status as the request's Accept negotiates.
            let error_wire = codec::error_wire(&accept);
            match resource(sh, t, verb, q, req, &accept, gzip_ok).await {
                Ok(resp) => Ok(resp),
                Err(e) => Ok(codec::negotiated_error(&e, error_wire)),
            }
        }
    }
}

/// Serves a resource request (every verb but discovery).
async fn resource(
    sh: &Arc<Shared>,
    mut t: Target,
    verb: Verb,
    q: &QueryParams,
    req: Request,
    accept: &str,
    gzip_ok: bool,
) -> Result<Response, ApiError> {
    apply_faults(sh, &t, verb, q).await?;
    let neg = codec::negotiate(
        accept,
        sh.managed_fields_opt_out
            .load(std::sync::atomic::Ordering::Relaxed),
    )?;
    t.drop_managed_fields = neg.drop_managed_fields;
    let (wire, mode) = match (neg.wire, verb) {
        // A watch of a custom resource has no protobuf form.
        (codec::Wire::Protobuf, Verb::Watch) if !codec::protobuf_watchable(&t.info) => {
            if !neg.json_ok {
                return Err(codec::watch_not_acceptable());
            }
            (codec::Wire::Json, Mode::Full)
        }
        (wire, _) => (wire, neg.mode),
    };
    if let Some(response) = sh.faults.take_hostile(verb) {
        return hostile::respond(sh, &t, q, mode, response);
    }
    let resp = match verb {
        Verb::List => list::list(sh, &t, q, mode, wire),
        Verb::Watch => watch::watch(sh, &t, q, mode, wire),
        _ => crud::handle(sh, &t, verb, q, mode, req).await,
    }?;
    let mut resp = match (wire, verb) {
        // Watches are framed by `watch::watch` itself.
        (codec::Wire::Protobuf, Verb::Watch) | (codec::Wire::Json, _) => resp,
        (codec::Wire::Protobuf, _) => codec::to_protobuf(resp, neg.json_ok, t.schema).await,
    };
    if t.drop_managed_fields && resp.status().is_success() {
        resp.extensions_mut().insert(ManagedFieldsDropped);
    }
    Ok(match verb {
        _ if !gzip_ok || !resp.status().is_success() => resp,
        Verb::Watch
            if q.send_initial_events == Some(true) && sh.settings.watch_list_compression =>
        {
            gzip::per_flush(resp)
        }
        Verb::Watch => resp,
        _ => gzip::whole_body(resp).await,
    })
}

/// Forbidden resources, injected failures, delays, stalls, too-large-RV and a lagging watch
/// cache, in that order.
async fn apply_faults(
    sh: &Arc<Shared>,
    t: &Target,
    verb: Verb,
    q: &QueryParams,
) -> Result<(), ApiError> {
    let faults = &sh.faults;
    if faults.is_forbidden(&t.info.group, &t.info.plural) {
        let verb_name = format!("{verb:?}").to_lowercase();
        let scope = match &t.namespace {
            Some(ns) => format!(" in the namespace \"{ns}\""),
            None => " at the cluster scope".to_owned(),
        };
        return Err(ApiError::new(
            403,
            "Forbidden",
            format!(
                "{} is forbidden: User \"system:anonymous\" cannot {verb_name} resource \"{}\" in API group \"{}\"{scope}",
                t.info.group_resource(),
                t.info.plural,
                t.info.group
            ),
        )
        .with_details(serde_json::json!({"group": t.info.group, "kind": t.info.plural})));
    }
    faults.sleep_delay(verb).await;
    if let Some((code, retry_after)) = faults.take_failure(verb) {
        return Err(ApiError::injected(code.as_u16(), retry_after));
    }
    if verb == Verb::List {
        let mut stall = faults.stall_rx();
        while *stall.borrow_and_update() {
            tokio::select! {
                changed = stall.changed() => if changed.is_err() { break },
                () = sh.shutdown.cancelled() => return Err(ApiError::new(503, "ServiceUnavailable", "server shutting down")),
            }
        }
        if faults.take_too_large() {
            let cur = sh.store.current_rv();
            return Err(ApiError::too_large_rv(cur + 1000, cur));
        }
        let consistent =
            q.continue_token.is_none() && q.resource_version.as_deref().is_none_or(str::is_empty);
        if consistent
            && faults.watch_cache_lags()
            && sh
                .consistent_list_skip_fallback
                .load(std::sync::atomic::Ordering::Relaxed)
        {
            let cur = sh.store.current_rv();
            return Err(ApiError::consistent_read_too_many_requests(
                cur,
                cur.saturating_sub(1),
            ));
        }
    }
    Ok(())
}

/// A JSON response.
/// A request header as text; empty when absent or not visible ASCII.
pub(super) fn header_text(req: &Request, name: header::HeaderName) -> String {
    req.headers()
        .get(name)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

pub(crate) fn json_response(status: StatusCode, body: Bytes) -> Response {
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// A Status response for an error.
pub(crate) fn error_response(err: &ApiError) -> Response {
    let mut resp = json_response(err.status_code(), err.body());
    if let Some(v) = err.retry_after_header() {
        resp.headers_mut().insert(header::RETRY_AFTER, v);
    }
    resp
}

/// The bytes of an object as served through `t` in `mode` (without managedFields where the
/// request asked for that, KEP-5958).
pub(crate) fn object_bytes(obj: &Stored, t: &Target, mode: Mode) -> Bytes {
    object_bytes_of(obj, &t.info, mode, t.drop_managed_fields)
}

/// The bytes of an object as served through `info` in `mode`, without managedFields when
/// `drop` (KEP-5958).
pub(crate) fn object_bytes_of(obj: &Stored, info: &ResourceInfo, mode: Mode, drop: bool) -> Bytes {
    if mode == Mode::Metadata {
        return if drop {
            obj.metadata_json_without_managed_fields()
        } else {
            obj.metadata_json()
        };
    }
    if obj.api_version == info.api_version() || obj.api_version.is_empty() {
        return if drop {
            obj.json_without_managed_fields()
        } else {
            obj.json()
        };
    }
    // Served through another version of the same group: relabel (no schema conversion).
    let value = if drop {
        obj.value_without_managed_fields()
    } else {
        obj.value()
    };
    match value {
        Ok(mut v) => {
            v["apiVersion"] = serde_json::Value::String(info.api_version());
            Bytes::from(serde_json::to_vec(&v).unwrap_or_default())
        }
        Err(_) => obj.json(),
    }
}
