//! The tower layer that checks bearer tokens in front of the MCP endpoint.
//!
//! Tokens come from the `Authorization` header only. Invariant: the audience is checked by
//! the layer itself, after whatever verifier, against the configured resource URI; nothing
//! can turn it off. Per-operation scopes read the POST body (bounded) to find the
//! `tools/call`, `resources/read` and `prompts/get` targets, each message of a batch on its
//! own. The verified `AuthInfo` goes into the request's `modelctx_transport::Extensions`.
//!
//! With `Listing::Permitted` the layer also inserts a `modelctx_types::Permissions`
//! built from the token's scopes; the server's built-in `*/list` answers filter by it
//! *before* paging, so a cursor's offset is into what that caller sees, and in the
//! 2026-07-28 era such a list's `cacheScope` is `private` whatever the caching hints say.
//! Calls are checked by the layer either way; the filter only shapes what is shown.
//!
//! DPoP (RFC 9449): a token with `cnf.jkt` passes only as `Authorization: DPoP` with a
//! proof for this method and the resource URI, bound to the token (`ath`), fresh, signed by
//! the bound key, and with an unseen `jti`: in this process by default, or through
//! `ResourceServerConfig::replay_store` in a store every instance shares (a store that does
//! not answer: 503, as for an unverifiable token). As a bearer token it is refused. The
//! resource server's ids are the SHA-256 of `resource-dpop <jkt>.<jti>`, apart from the
//! authorization server's by the tag, so one store serves both.

use std::collections::BTreeSet;
use std::convert::Infallible;
use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::response::Response;
use futures::future::BoxFuture;
use http::{HeaderValue, Method, Request, StatusCode, header};
use modelctx_transport::Extensions;
use modelctx_types::{Offering, Permissions};
use serde_json::Value;

use super::{AuthInfo, Inner, Listing, Operation, TokenError, check_audience};
use crate::jose;

/// The streamable HTTP session header.
const MCP_SESSION_ID: &str = "mcp-session-id";

/// The layer of a [`ResourceServer`](super::ResourceServer): wraps a service with
/// [`RequireBearer`].
#[derive(Clone)]
pub struct RequireBearerLayer {
    rs: Arc<Inner>,
}

modelctx_types::__debug_shows!(RequireBearerLayer, |v| { resource: &v.rs.config.resource });

impl RequireBearerLayer {
    pub(crate) fn new(rs: Arc<Inner>) -> Self {
        Self { rs }
    }
}

impl<S> tower::Layer<S> for RequireBearerLayer {
    type Service = RequireBearer<S>;

    fn layer(&self, service: S) -> RequireBearer<S> {
        RequireBearer {
            rs: self.rs.clone(),
            service,
        }
    }
}

/// A service that lets a request through to the wrapped one only with a bearer token
/// that verifies, names this resource in its audience and carries the scopes needed
/// (see [`ResourceServer`](super::ResourceServer)); CORS preflights (`OPTIONS`) pass
/// unchecked.
#[derive(Clone)]
pub struct RequireBearer<S> {
    rs: Arc<Inner>,
    service: S,
}

impl<S> fmt::Debug for RequireBearer<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequireBearer")
            .field("resource", &self.rs.config.resource)
            .finish_non_exhaustive()
    }
}

impl<S> tower::Service<Request<Body>> for RequireBearer<S>
where
    S: tower::Service<Request<Body>, Response = Response, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.service.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        // The clone that was not polled ready stays; the ready one serves this request.
        let fresh = self.service.clone();
        let mut service = std::mem::replace(&mut self.service, fresh);
        let rs = self.rs.clone();
        Box::pin(async move {
            if request.method() == Method::OPTIONS {
                return service.call(request).await;
            }
            // The session a request names is read once: sent twice (or as a list) it
            // names none, and is refused before anything is checked against it.
            if one_value(request.headers(), MCP_SESSION_ID).is_err() {
                return Ok(plain(
                    StatusCode::BAD_REQUEST,
                    "Bad Request: the Mcp-Session-Id header is sent more than once",
                ));
            }
            let request = match admit(&rs, request).await {
                Ok(request) => request,
                Err(refusal) => return Ok(refusal),
            };
            // Which caller a session belongs to is the endpoint's to enforce: the
            // `Principal` attached here binds each session of modelctx-http's
            // streamable HTTP service to the caller of its `initialize`, for as long as
            // the session lives and on every service sharing it.
            service.call(request).await
        })
    }
}

/// The one value of header `name`: `Ok(None)` without one, `Err` when it is sent on
/// more than one line or as a comma-separated list (no header this layer reads holds a
/// comma: a session id, a DPoP proof, a bearer token).
fn one_value<'h>(headers: &'h http::HeaderMap, name: &str) -> Result<Option<&'h HeaderValue>, ()> {
    let mut values = headers.get_all(name).iter();
    let first = values.next();
    if values.next().is_some() || first.is_some_and(|v| v.as_bytes().contains(&b',')) {
        return Err(());
    }
    Ok(first)
}

/// The request, with the caller's [`AuthInfo`] attached, or the answer refusing it.
async fn admit(rs: &Arc<Inner>, request: Request<Body>) -> Result<Request<Body>, Response> {
    let config = &rs.config;
    // A DPoP proof sent twice is refused whatever the token (RFC 9449 §4.3: "there is
    // not more than one DPoP HTTP request header field"), before the token is checked.
    if one_value(request.headers(), "dpop").is_err() {
        return Err(dpop_challenge(
            rs,
            "invalid_dpop_proof",
            "exactly one DPoP header is needed",
        ));
    }
    let (token, dpop) = match bearer_token(request.headers()) {
        Bearer::Missing => {
            return Err(challenge(
                rs,
                StatusCode::UNAUTHORIZED,
                None,
                "authentication required",
            ));
        }
        // RFC 6750 §3.1: a request that repeats its credentials is malformed as a
        // request (`invalid_request`, 400), whatever the tokens say.
        Bearer::Repeated => {
            return Err(challenge(
                rs,
                StatusCode::BAD_REQUEST,
                Some("invalid_request"),
                "the request carries more than one Authorization header",
            ));
        }
        Bearer::Malformed => {
            return Err(challenge(
                rs,
                StatusCode::UNAUTHORIZED,
                Some("invalid_token"),
                "the Authorization header is not a valid bearer token",
            ));
        }
        Bearer::Token(token) => (token, false),
        Bearer::Dpop(token) => (token, true),
    };
    let info = match rs.verifier.verify(&token).await {
        Ok(info) => info,
        Err(e) => return Err(refused(rs, &e)),
    };
    let binding = check_binding(
        rs,
        (request.method(), request.headers()),
        &token,
        dpop,
        &info,
    );
    if let Some(refusal) = binding.await {
        return Err(refusal);
    }
    drop(token);
    if let Err(e) = check_audience(&info, &config.resource) {
        return Err(refused(rs, &e));
    }
    let (mut parts, body) = request.into_parts();
    let mut needed: BTreeSet<&str> = config.required_scopes.iter().map(String::as_str).collect();
    let body = if config.operation_scopes.is_empty() || parts.method != Method::POST {
        body
    } else {
        let bytes = match axum::body::to_bytes(body, config.max_body_bytes).await {
            Ok(bytes) => bytes,
            Err(_) => {
                return Err(plain(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "the request body is too large or could not be read",
                ));
            }
        };
        for op in operations(&bytes) {
            if let Some(scopes) = config.operation_scopes.get(&op) {
                needed.extend(scopes.iter().map(String::as_str));
            }
        }
        Body::from(bytes)
    };
    if !info.has_scopes(needed.iter().copied()) {
        let scope = needed.into_iter().collect::<Vec<_>>().join(" ");
        return Err(insufficient_scope(rs, &scope));
    }
    let mut extensions = parts.extensions.remove::<Extensions>().unwrap_or_default();
    extensions.insert(info.clone());
    if let Some(principal) = info.principal() {
        extensions.insert(principal);
    }
    if config.listing == Listing::Permitted {
        extensions.insert(permissions(rs.clone(), info.scopes.clone()));
    }
    parts.extensions.insert(extensions);
    parts.extensions.insert(info);
    Ok(Request::from_parts(parts, body))
}

/// What a caller granted `scopes` may use: every operation whose configured scopes it
/// has (resource templates always: scopes are per concrete URI).
fn permissions(rs: Arc<Inner>, scopes: BTreeSet<String>) -> Permissions {
    Permissions::new(move |offering| {
        let operation = match offering {
            Offering::Tool(name) => Operation::Tool(name.to_owned()),
            Offering::Resource(uri) => Operation::Resource(uri.to_owned()),
            Offering::Prompt(name) => Operation::Prompt(name.to_owned()),
            _ => return true,
        };
        rs.config
            .operation_scopes
            .get(&operation)
            .is_none_or(|needed| needed.iter().all(|s| scopes.contains(s)))
    })
}

#[cfg_attr(test, derive(Debug, PartialEq))]
enum Bearer {
    Missing,
    /// More than one `Authorization` header: a malformed request.
    Repeated,
    Malformed,
    Token(String),
    /// `Authorization: DPoP` (RFC 9449 §7.1).
    Dpop(String),
}

/// The key binding of a token (`cnf.jkt`, RFC 9449 §6), checked against the request's
/// DPoP proof; an unbound token must come as `Bearer`, a bound one as `DPoP`. `Some`
/// refuses the request.
async fn check_binding(
    rs: &Inner,
    request: (&Method, &http::HeaderMap),
    token: &str,
    dpop: bool,
    info: &AuthInfo,
) -> Option<Response> {
    let jkt = info
        .claims
        .get("cnf")
        .and_then(|c| c.get("jkt"))
        .and_then(Value::as_str);
    match (jkt, dpop) {
        (None, false) => None,
        (Some(_), false) => Some(challenge(
            rs,
            StatusCode::UNAUTHORIZED,
            Some("invalid_token"),
            "the token is bound to a DPoP key; present it with a DPoP proof",
        )),
        (None, true) => Some(dpop_challenge(
            rs,
            "invalid_token",
            "the token is not bound to a DPoP key",
        )),
        (Some(jkt), true) => match check_proof(rs, request, token, jkt).await {
            Ok(()) => None,
            Err(ProofRefused::Invalid(why)) => Some(dpop_challenge(rs, "invalid_dpop_proof", why)),
            // As when the token itself could not be checked: 503, the client keeps it.
            Err(ProofRefused::Unchecked) => Some(refused(
                rs,
                &TokenError::unavailable("the DPoP proofs used before could not be read"),
            )),
        },
    }
}

/// Why a DPoP proof was not taken.
enum ProofRefused {
    /// It is not acceptable (malformed, for another request or key, used before).
    Invalid(&'static str),
    /// The shared store of the proofs used before did not answer.
    Unchecked,
}

impl From<&'static str> for ProofRefused {
    fn from(why: &'static str) -> Self {
        Self::Invalid(why)
    }
}

/// The request's one DPoP proof, for this request and `token`, by the key `jkt`, and
/// not seen before.
async fn check_proof(
    rs: &Inner,
    (method, headers): (&Method, &http::HeaderMap),
    token: &str,
    jkt: &str,
) -> Result<(), ProofRefused> {
    let mut proofs = headers.get_all("dpop").iter();
    let (Some(proof), None) = (proofs.next(), proofs.next()) else {
        return Err("exactly one DPoP header is needed".into());
    };
    let proof = proof
        .to_str()
        .map_err(|_| ProofRefused::Invalid("the DPoP proof is malformed"))?;
    let checked = jose::check_dpop(proof, method.as_str(), &rs.config.resource, Some(token))?;
    if checked.jkt != jkt {
        return Err("the proof's key is not the one the token is bound to".into());
    }
    let until = jose::dpop_replay_until();
    let first = match &rs.config.replay_store {
        // The id the store keeps: a SHA-256 of the proof's key and `jti`, tagged so no
        // other single-use id of a shared store can name it.
        Some(store) => {
            let id = jose::single_use_id(&format!("resource-dpop {}", checked.replay_key));
            store
                .0
                .first_use(&id, until)
                .await
                .map_err(|_| ProofRefused::Unchecked)?
        }
        None => rs.replay.first_use(&checked.replay_key, until),
    };
    if !first {
        return Err("the proof was used before".into());
    }
    Ok(())
}

/// The token of the one `Authorization: Bearer` header (RFC 6750 §2.1). Another
/// scheme counts as no token; the query string is never looked at.
fn bearer_token(headers: &http::HeaderMap) -> Bearer {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let Some(value) = values.next() else {
        return Bearer::Missing;
    };
    if values.next().is_some() {
        return Bearer::Repeated;
    }
    let Ok(value) = value.to_str() else {
        return Bearer::Malformed;
    };
    let Some((scheme, token)) = value.split_once(' ') else {
        return if value.eq_ignore_ascii_case("bearer") {
            Bearer::Malformed
        } else {
            Bearer::Missing
        };
    };
    let dpop = scheme.eq_ignore_ascii_case("dpop");
    if !dpop && !scheme.eq_ignore_ascii_case("bearer") {
        return Bearer::Missing;
    }
    let token = token.trim_matches(' ');
    let token68 = |c: char| c.is_ascii_alphanumeric() || "-._~+/=".contains(c);
    if token.is_empty() || !token.chars().all(token68) {
        return Bearer::Malformed;
    }
    if dpop {
        Bearer::Dpop(token.to_owned())
    } else {
        Bearer::Token(token.to_owned())
    }
}

/// The operations a POST body asks for, message by message (none when it is not JSON:
/// the endpoint then refuses it without running anything).
fn operations(body: &[u8]) -> Vec<Operation> {
    let messages = match serde_json::from_slice::<Value>(body) {
        Ok(Value::Array(many)) => many,
        Ok(one) => vec![one],
        Err(_) => return Vec::new(),
    };
    messages
        .iter()
        .filter_map(|m| {
            let params = &m["params"];
            let text = |v: &Value| v.as_str().map(str::to_owned);
            Some(match m["method"].as_str()? {
                "tools/call" => Operation::Tool(text(&params["name"])?),
                "prompts/get" => Operation::Prompt(text(&params["name"])?),
                "resources/read" | "resources/subscribe" => {
                    Operation::Resource(text(&params["uri"])?)
                }
                _ => return None,
            })
        })
        .collect()
}

/// A 401 with a `WWW-Authenticate: DPoP` challenge (RFC 9449 §7.1).
fn dpop_challenge(rs: &Inner, error: &str, description: &str) -> Response {
    let mut response = challenge(rs, StatusCode::UNAUTHORIZED, Some(error), description);
    let value = format!(
        "DPoP algs=\"ES256\", error=\"{}\", error_description=\"{}\", resource_metadata=\"{}\"",
        quoted(error),
        quoted(description),
        quoted(&rs.metadata_url)
    );
    if let Ok(v) = HeaderValue::from_str(&value) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
    response
}

fn refused(rs: &Inner, error: &TokenError) -> Response {
    if error.is_unavailable() {
        return plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "the access token cannot be checked now",
        );
    }
    challenge(
        rs,
        StatusCode::UNAUTHORIZED,
        Some("invalid_token"),
        error.message(),
    )
}

fn insufficient_scope(rs: &Inner, scope: &str) -> Response {
    let description = "the access token lacks a scope this request needs";
    let mut response = challenge_with(
        rs,
        StatusCode::FORBIDDEN,
        Some("insufficient_scope"),
        description,
        Some(scope),
    );
    *response.body_mut() = json_body("insufficient_scope", description, Some(scope));
    response
}

fn challenge(rs: &Inner, status: StatusCode, error: Option<&str>, description: &str) -> Response {
    let scope = rs.config.required_scopes.join(" ");
    challenge_with(
        rs,
        status,
        error,
        description,
        (!scope.is_empty()).then_some(scope.as_str()),
    )
}

/// A 401/403 with its `WWW-Authenticate: Bearer` challenge and a JSON body.
fn challenge_with(
    rs: &Inner,
    status: StatusCode,
    error: Option<&str>,
    description: &str,
    scope: Option<&str>,
) -> Response {
    let mut params = Vec::new();
    if let Some(error) = error {
        params.push(format!("error=\"{}\"", quoted(error)));
        params.push(format!("error_description=\"{}\"", quoted(description)));
    }
    if let Some(scope) = scope {
        params.push(format!("scope=\"{}\"", quoted(scope)));
    }
    params.push(format!(
        "resource_metadata=\"{}\"",
        quoted(&rs.metadata_url)
    ));
    let value = format!("Bearer {}", params.join(", "));
    let value = HeaderValue::from_str(&value).unwrap_or_else(|_| {
        HeaderValue::from_str(&format!(
            "Bearer resource_metadata=\"{}\"",
            quoted(&rs.metadata_url)
        ))
        .unwrap_or(HeaderValue::from_static("Bearer"))
    });
    let mut response = Response::new(match error {
        Some(error) => json_body(error, description, scope),
        None => Body::from(serde_json::json!({"error_description": description}).to_string()),
    });
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::WWW_AUTHENTICATE, value);
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn json_body(error: &str, description: &str, scope: Option<&str>) -> Body {
    let mut body = serde_json::json!({"error": error, "error_description": description});
    if let Some(scope) = scope {
        body["scope"] = scope.into();
    }
    Body::from(body.to_string())
}

fn plain(status: StatusCode, message: &str) -> Response {
    let mut response = Response::new(Body::from(
        serde_json::json!({"error_description": message}).to_string(),
    ));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// `text` as the inside of a quoted-string (RFC 9110 §5.6.4): `"` and `\` escaped,
/// control characters dropped.
fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars().filter(|c| !c.is_control()) {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(values: &[&str]) -> http::HeaderMap {
        let mut h = http::HeaderMap::new();
        for v in values {
            h.append(header::AUTHORIZATION, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn bearer_tokens_come_from_one_authorization_header() {
        let cases: [(&[&str], Bearer); 7] = [
            (&[], Bearer::Missing),
            (&["Basic dXNlcjpwdw=="], Bearer::Missing),
            (&["Bearer"], Bearer::Malformed),
            (&["Bearer "], Bearer::Malformed),
            (&["Bearer a b"], Bearer::Malformed),
            (&["Bearer a", "Bearer b"], Bearer::Repeated),
            // A well-formed token.
            (
                &["bearer abc.DEF-_~+/="],
                Bearer::Token("abc.DEF-_~+/=".into()),
            ),
        ];
        for (lines, want) in cases {
            assert_eq!(bearer_token(&headers(lines)), want, "{lines:?}");
        }
    }

    #[test]
    fn operations_are_read_from_requests_and_batches() {
        let one = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add"}}"#;
        assert_eq!(operations(one), vec![Operation::Tool("add".into())]);
        let batch =
            br#"[{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"a://b"}},
            {"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"p"}},
            {"jsonrpc":"2.0","method":"notifications/initialized"}]"#;
        assert_eq!(
            operations(batch),
            vec![
                Operation::Resource("a://b".into()),
                Operation::Prompt("p".into())
            ]
        );
        assert!(operations(b"not json").is_empty());
        assert!(operations(br#"{"method":"tools/call","params":{"name":7}}"#).is_empty());
        // One odd message does not hide the others.
        let mixed = br#"[{"method":"tools/call","params":{"name":7}},
            {"method":"tools/call","params":{"name":"secret"}}]"#;
        assert_eq!(operations(mixed), vec![Operation::Tool("secret".into())]);
    }

    #[test]
    fn quoting_escapes_and_drops_controls() {
        assert_eq!(quoted("a\"b\\c\r\nd"), "a\\\"b\\\\cd");
    }
}
