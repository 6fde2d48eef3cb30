//! The resource server (feature `resource-server`): bearer-token checks in front of the
//! streamable HTTP endpoint, and its protected-resource metadata (RFC 9728).

mod fetch;
mod introspection;
mod jwt;
mod layer;

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Map, Value};

pub use introspection::IntrospectionVerifier;
pub use jwt::JwtVerifier;
pub use layer::{RequireBearer, RequireBearerLayer};

use crate::ConfigError;
use crate::jose;

/// What a verified access token says about the caller. The resource server puts it in
/// the request's [`Extensions`](modelctx_transport::Extensions), so a handler reads it
/// with `cx.extensions().get::<AuthInfo>()`; plain axum handlers behind the layer find
/// it in the HTTP request's extensions.
///
/// The token itself is not kept. `Debug` shows the subject, client and scopes only.
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct AuthInfo {
    /// `sub`: the user (or, for client credentials, the client) the token stands for.
    pub subject: Option<String>,
    /// `client_id` (or `azp`): the OAuth client that holds the token.
    pub client_id: Option<String>,
    /// The granted scopes (`scope`, space-separated in the token; `scp` as a list).
    pub scopes: BTreeSet<String>,
    /// `aud`: the resources the token is for (this server's URI among them).
    pub audience: Vec<String>,
    /// `iss`: the authorization server that issued it.
    pub issuer: Option<String>,
    /// `exp`, in seconds since the Unix epoch.
    pub expires_at: Option<u64>,
    /// Every claim, as the token or the introspection answer gave them.
    pub claims: Map<String, Value>,
}

modelctx_types::__debug_shows!(AuthInfo, |v| {
    subject: &v.subject,
    client_id: &v.client_id,
    scopes: &v.scopes,
    ..
});

impl AuthInfo {
    /// The caller as state is bound to it (see [`modelctx_types::Principal`]): the
    /// issuer with the subject, or with the client when the token names no subject;
    /// `None` for a token naming neither.
    pub fn principal(&self) -> Option<modelctx_types::Principal> {
        let issuer = self.issuer.as_deref().unwrap_or("");
        let who = match (&self.subject, &self.client_id) {
            (Some(subject), _) => format!("sub:{subject}"),
            (None, Some(client)) => format!("client:{client}"),
            (None, None) => return None,
        };
        Some(modelctx_types::Principal::new(format!("{issuer} {who}")))
    }

    /// Reads the standard claims out of a JWT's claims or an introspection answer.
    pub fn from_claims(claims: Map<String, Value>) -> Self {
        let string = |name: &str| claims.get(name).and_then(Value::as_str).map(str::to_owned);
        let mut scopes = BTreeSet::new();
        if let Some(scope) = claims.get("scope").and_then(Value::as_str) {
            scopes.extend(scope.split_ascii_whitespace().map(str::to_owned));
        }
        if let Some(list) = claims.get("scp").and_then(Value::as_array) {
            scopes.extend(list.iter().filter_map(Value::as_str).map(str::to_owned));
        }
        let audience = match claims.get("aud") {
            Some(Value::String(one)) => vec![one.clone()],
            Some(Value::Array(many)) => many
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        };
        Self {
            subject: string("sub"),
            client_id: string("client_id").or_else(|| string("azp")),
            scopes,
            audience,
            issuer: string("iss"),
            expires_at: claims.get("exp").and_then(Value::as_u64),
            claims,
        }
    }

    /// Whether every scope of `required` was granted.
    pub fn has_scopes<'a>(&self, required: impl IntoIterator<Item = &'a str>) -> bool {
        required.into_iter().all(|s| self.scopes.contains(s))
    }
}

/// Why a token was refused. Its message never contains the token.
#[derive(Debug, Clone)]
pub struct TokenError {
    kind: TokenErrorKind,
    message: Cow<'static, str>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TokenErrorKind {
    Invalid,
    Unavailable,
}

impl TokenError {
    /// The token is malformed, expired, revoked, for another audience or otherwise not
    /// acceptable: HTTP 401 with `error="invalid_token"`.
    pub fn invalid(message: impl Into<Cow<'static, str>>) -> Self {
        Self {
            kind: TokenErrorKind::Invalid,
            message: message.into(),
        }
    }

    /// The token could not be checked now (the authorization server's keys or its
    /// introspection endpoint did not answer): HTTP 503, so that a client does not
    /// throw away a token that may be good.
    pub fn unavailable(message: impl Into<Cow<'static, str>>) -> Self {
        Self {
            kind: TokenErrorKind::Unavailable,
            message: message.into(),
        }
    }

    /// Whether the token itself was refused.
    pub fn is_invalid(&self) -> bool {
        self.kind == TokenErrorKind::Invalid
    }

    /// Whether the token could not be checked now.
    pub fn is_unavailable(&self) -> bool {
        self.kind == TokenErrorKind::Unavailable
    }

    /// What went wrong (no token material).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for TokenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TokenError {}

/// Checks an access token and says what it grants. [`JwtVerifier`] and
/// [`IntrospectionVerifier`] are ready ones.
///
/// A verifier checks signature (or the issuer's word), issuer, lifetime and revocation;
/// it need not check the audience: the resource server always does, against its own
/// resource URI, whatever the verifier says.
pub trait TokenVerifier: Send + Sync + 'static {
    /// Verifies `token`; `Err` refuses the request.
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<AuthInfo, TokenError>>;
}

impl<V: TokenVerifier + ?Sized> TokenVerifier for Arc<V> {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<AuthInfo, TokenError>> {
        (**self).verify(token)
    }
}

impl<V: TokenVerifier + ?Sized> TokenVerifier for Box<V> {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<AuthInfo, TokenError>> {
        (**self).verify(token)
    }
}

/// What the resource server serves and requires.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ResourceServerConfig {
    /// The canonical URI of the MCP endpoint (RFC 8707 / RFC 9728 `resource`), e.g.
    /// `https://mcp.example.com/mcp`: tokens must name it in `aud`.
    pub resource: String,
    /// The authorization servers' issuer URLs, advertised in the metadata.
    pub authorization_servers: Vec<String>,
    /// The scopes advertised in the metadata (`scopes_supported`).
    pub scopes_supported: Vec<String>,
    /// Scopes every request needs.
    pub required_scopes: Vec<String>,
    /// A human-readable name (`resource_name`).
    pub resource_name: Option<String>,
    /// Scopes per operation: `tools/call` by tool name, `resources/read` by URI,
    /// `prompts/get` by prompt name.
    pub operation_scopes: BTreeMap<Operation, Vec<String>>,
    /// The largest request body read to find the operation (only read when
    /// [`operation_scopes`](Self::operation_scopes) is not empty). 4 MiB by default.
    pub max_body_bytes: usize,
    /// What listings show a caller: everything ([`Listing::All`], the default) or only
    /// what its token's scopes let it use ([`Listing::Permitted`]).
    pub listing: Listing,
    /// Where the `jti`s of the DPoP proofs accepted are remembered: in this process
    /// (`None`, the default), or in a store every instance of the resource server
    /// shares ([`replay_store`](Self::replay_store)).
    pub(crate) replay_store: Option<ReplayStore>,
}

/// The store of [`ResourceServerConfig::replay_store`].
#[derive(Clone)]
pub(crate) struct ReplayStore(pub(crate) Arc<dyn crate::SingleUseStore>);

impl fmt::Debug for ReplayStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ReplayStore")
    }
}

/// What the listings (`tools/list`, `resources/list`, `prompts/list`) show a caller
/// whose token lacks the [scopes of some operations](ResourceServerConfig::operation_scopes).
///
/// The default is [`All`](Self::All): a client learns of a tool it may not call yet,
/// calls it, draws 403 `insufficient_scope` with the scopes it needs, and asks the user
/// for them (step-up authorization) — which it could not do for a tool it never saw.
/// [`Permitted`](Self::Permitted) is for servers where what exists is itself not for
/// everyone's eyes; a client there only ever gets what it asked scopes for up front.
/// Either way, a call is checked against the scopes by the layer.
///
/// Resource templates are always listed: scopes are per concrete resource URI
/// ([`Operation::Resource`]), so a template says nothing about which of the URIs it
/// covers a caller may read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Listing {
    /// Every tool, resource and prompt is listed, whatever the caller's scopes.
    #[default]
    All,
    /// A tool, resource or prompt is listed only when the caller's token has the scopes
    /// its operation needs. The layer puts a [`modelctx_types::Permissions`] in the
    /// request's extensions, which modelctx's server honours when listing.
    Permitted,
}

/// An operation that may need its own scopes (see
/// [`ResourceServerConfig::operation_scopes`]).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Operation {
    /// `tools/call` of the tool with this name.
    Tool(String),
    /// `resources/read` (and `resources/subscribe`) of the resource with this URI.
    Resource(String),
    /// `prompts/get` of the prompt with this name.
    Prompt(String),
}

impl ResourceServerConfig {
    /// A resource at `resource` (its canonical URI) whose tokens come from the
    /// authorization server `issuer`.
    pub fn new(resource: impl Into<String>, issuer: impl Into<String>) -> Self {
        Self {
            resource: resource.into(),
            authorization_servers: vec![issuer.into()],
            scopes_supported: Vec::new(),
            required_scopes: Vec::new(),
            resource_name: None,
            operation_scopes: BTreeMap::new(),
            max_body_bytes: 4 * 1024 * 1024,
            listing: Listing::All,
            replay_store: None,
        }
    }

    modelctx_types::__setters! {
        /// Remembers the DPoP proofs accepted in `store` rather than in this process:
        /// with several instances behind a load balancer, give each the same shared store
        /// (`modelctx_redis::AuthorizationStore`, for one), and a proof replayed
        /// to another instance within its window is refused there as well. A proof whose
        /// check the store cannot answer is refused.
        replay_store(store: Arc<dyn crate::SingleUseStore>)
            { replay_store = Some(ReplayStore(store)) }

        /// Advertises `scopes` in the metadata.
        scopes_supported(scopes: impl IntoIterator<Item = impl Into<String>>)
            { scopes_supported = scopes.into_iter().map(Into::into).collect() }

        /// Requires `scopes` on every request.
        required_scopes(scopes: impl IntoIterator<Item = impl Into<String>>)
            { required_scopes = scopes.into_iter().map(Into::into).collect() }
    }

    /// Requires `scopes` (besides the [required](Self::required_scopes) ones) for
    /// `operation`. A call without the scopes draws 403 `insufficient_scope`, which
    /// makes a compliant client ask for them (step-up authorization). Listings show the
    /// operation to every caller unless [`listing`](Self::listing) says otherwise.
    #[must_use]
    pub fn operation_scopes(
        mut self,
        operation: Operation,
        scopes: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.operation_scopes
            .insert(operation, scopes.into_iter().map(Into::into).collect());
        self
    }

    modelctx_types::__setters! {
        /// Sets what listings show a caller (see [`Listing`]; [`Listing::All`] by default).
        listing(listing: Listing) { listing = listing }

        /// Sets the `resource_name` of the metadata.
        resource_name(name: impl Into<String>) { resource_name = Some(name.into()) }

        /// Sets the largest body read to find a request's operation.
        max_body_bytes(max: usize) { max_body_bytes = max }
    }
}

/// An OAuth 2.1 resource server for an MCP endpoint: [`layer`](Self::layer) checks the
/// bearer token of every request, [`metadata_router`](Self::metadata_router) serves the
/// protected-resource metadata (RFC 9728) at the path-aware well-known URI.
///
/// - The token is read from the `Authorization: Bearer` header only; a token in the
///   query string is ignored (the request is then unauthenticated).
/// - No token, or a malformed one: 401 with
///   `WWW-Authenticate: Bearer resource_metadata="…"` (plus `error="invalid_token"`
///   when one was sent but refused: bad signature, expired, wrong issuer, revoked);
///   the `scope` every request needs, when there is one.
/// - A malformed request (two `Authorization` headers, two `Mcp-Session-Id`): 400,
///   with `error="invalid_request"` for the credentials.
/// - The audience is always checked: a token whose `aud` does not name this
///   server's resource URI is refused (401 `invalid_token`). There is no switch.
/// - Missing scopes: 403 with `error="insufficient_scope"` and the `scope` needed.
/// - Listings show every tool, resource and prompt, or only those the caller's scopes
///   allow ([`Listing`], [`ResourceServerConfig::listing`]).
/// - DPoP (RFC 9449): a token bound to a key (`cnf.jkt`) is taken only as
///   `Authorization: DPoP` with a valid proof for this request (ES256 key matching the
///   binding, `htm`/`htu` of this request and resource, `ath` of the token, fresh `iat`,
///   a `jti` not seen within five minutes — in this process, or in every instance
///   sharing a [`replay_store`](ResourceServerConfig::replay_store)); presented as a
///   bearer token it is refused.
/// - An MCP session belongs to the caller that created it: the layer attaches the
///   caller as a [`Principal`](modelctx_types::Principal) (issuer with subject, or
///   client), and modelctx-http's streamable HTTP service binds each session to the
///   `Principal` of its `initialize` for as long as the session lives (on every
///   service sharing it through a session registry). Its `Mcp-Session-Id` with another
///   caller's token is answered 404, as an unknown session, so a leaked session id is
///   no use to another user; an id no session has is unknown to everyone. A request
///   sending `Mcp-Session-Id` or `DPoP` twice is refused.
/// - The verified [`AuthInfo`] goes to the handlers (`cx.extensions()`); nothing
///   about the token is logged or echoed.
#[derive(Clone)]
pub struct ResourceServer {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) config: ResourceServerConfig,
    pub(crate) verifier: Box<dyn TokenVerifier>,
    pub(crate) metadata_url: String,
    pub(crate) metadata_path: String,
    /// The DPoP proofs seen lately (each is good once).
    pub(crate) replay: jose::ReplayCache,
}

modelctx_types::__debug_shows!(ResourceServer, |v| {
    resource: &v.inner.config.resource,
    metadata_url: &v.inner.metadata_url,
    ..
});

/// The scope that asks for a refresh token (OpenID Connect Core §11).
const OFFLINE_ACCESS: &str = "offline_access";

impl ResourceServer {
    /// A resource server checking tokens with `verifier`. `Err` when the resource URI
    /// is not an absolute `http(s)` URI without fragment, or no authorization server is
    /// named.
    ///
    /// `offline_access` is dropped from every scope list of `config`: refresh tokens
    /// are the client's business with its authorization server, never something a
    /// resource requires, so it is neither advertised (`scopes_supported`), nor named
    /// in a challenge's `scope`, nor asked of a token.
    pub fn new(
        mut config: ResourceServerConfig,
        verifier: impl TokenVerifier,
    ) -> Result<Self, ConfigError> {
        let resource_scope = |s: &String| s != OFFLINE_ACCESS;
        config.scopes_supported.retain(resource_scope);
        config.required_scopes.retain(resource_scope);
        for scopes in config.operation_scopes.values_mut() {
            scopes.retain(resource_scope);
        }
        let url = url::Url::parse(&config.resource)
            .map_err(|e| ConfigError(format!("the resource URI is not a URL: {e}")))?;
        if !matches!(url.scheme(), "https" | "http") || url.fragment().is_some() {
            return Err(ConfigError(
                "the resource URI must be an http(s) URI without a fragment".into(),
            ));
        }
        if config.authorization_servers.is_empty() {
            return Err(ConfigError("no authorization server is named".into()));
        }
        let path = url.path().trim_end_matches('/');
        let metadata_path = format!("/.well-known/oauth-protected-resource{path}");
        let mut metadata = url.clone();
        metadata.set_path(&metadata_path);
        metadata.set_query(None);
        Ok(Self {
            inner: Arc::new(Inner {
                metadata_url: metadata.to_string(),
                metadata_path,
                config,
                verifier: Box::new(verifier),
                replay: jose::ReplayCache::default(),
            }),
        })
    }

    /// The tower layer to put in front of the MCP endpoint (any service answering
    /// axum requests, such as `StreamableHttpService::router`).
    pub fn layer(&self) -> RequireBearerLayer {
        RequireBearerLayer::new(self.inner.clone())
    }

    /// The URL of the protected-resource metadata (announced in every challenge).
    pub fn metadata_url(&self) -> &str {
        &self.inner.metadata_url
    }

    /// The protected-resource metadata document.
    pub fn metadata(&self) -> Value {
        let c = &self.inner.config;
        let mut doc = serde_json::json!({
            "resource": c.resource,
            "authorization_servers": c.authorization_servers,
            "bearer_methods_supported": ["header"],
            "dpop_signing_alg_values_supported": ["ES256"],
        });
        let mut scopes: Vec<&str> = c.scopes_supported.iter().map(String::as_str).collect();
        for s in c
            .required_scopes
            .iter()
            .chain(c.operation_scopes.values().flatten())
        {
            if !scopes.contains(&s.as_str()) {
                scopes.push(s.as_str());
            }
        }
        if !scopes.is_empty() {
            doc["scopes_supported"] = scopes.into();
        }
        if let Some(name) = &c.resource_name {
            doc["resource_name"] = name.as_str().into();
        }
        doc
    }

    /// A router serving [`metadata`](Self::metadata) at the path-aware well-known URI
    /// (`/.well-known/oauth-protected-resource/mcp` for a resource at `/mcp`), open to
    /// every origin. Merge it into the application's router at the root.
    pub fn metadata_router(&self) -> axum::Router {
        let doc = Arc::new(self.metadata());
        axum::Router::new().route(
            &self.inner.metadata_path,
            axum::routing::get(move || {
                let doc = doc.clone();
                async move {
                    (
                        [(http::header::ACCESS_CONTROL_ALLOW_ORIGIN, "*")],
                        axum::Json((*doc).clone()),
                    )
                }
            }),
        )
    }
}

/// How far past `exp` (and before `nbf`) a token is still taken, for clock skew.
pub(crate) const DEFAULT_LEEWAY_SECS: u64 = 60;

/// Whether the token may be used here: `aud` names `resource` (compared without a
/// trailing slash). Its lifetime is the verifier's to check, with the verifier's own
/// leeway (see [`TokenVerifier`]).
pub(crate) fn check_audience(info: &AuthInfo, resource: &str) -> Result<(), TokenError> {
    let canonical = resource.trim_end_matches('/');
    if !info
        .audience
        .iter()
        .any(|a| a.trim_end_matches('/') == canonical)
    {
        return Err(TokenError::invalid(
            "the token is not meant for this resource (audience)",
        ));
    }
    Ok(())
}
