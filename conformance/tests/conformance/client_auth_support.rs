//! The client-auth area's world: an OAuth-protected MCP endpoint (a real `Server` over
//! streamable HTTP, in the connector's era, behind a bearer-token gate) and its
//! authorization server, on two loopback origins; what each of them saw, in order; and
//! a headless user agent for the authorization-code flow.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::Request;
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use futures::future::BoxFuture;
use modelctx::client::Client;
use modelctx::http::{
    StreamableHttpClientTransport, StreamableHttpServerConfig, StreamableHttpService,
};
use modelctx::server::Server;
use modelctx::session::SessionError;
use modelctx_conformance::{Connector, SpecVersion, within};
use modelctx_oauth::{AuthorizationHandler, AuthorizationResponse, OAuthClient, OAuthError};
use serde_json::{Value, json};
use sha2::Digest as _;
use tokio::sync::Notify;

pub(crate) use modelctx_test::{Browser, Hold};

use crate::support::{Echo, client};

/// The JWT-bearer grant type (RFC 7523).
pub(crate) const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// The ID-JAG the test IdP issues, the only assertion the test AS accepts.
pub(crate) const ID_JAG: &str = "id-jag.from-the-idp";

/// Where the protected-resource metadata is published.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PrmAt {
    /// `/.well-known/oauth-protected-resource/mcp` (path-aware).
    PathAware,
    /// `/.well-known/oauth-protected-resource` (root).
    Root,
    /// This path only (named by the challenge's `resource_metadata`).
    Custom(&'static str),
    /// Nowhere (a 2025-03-26 server).
    Nowhere,
}

/// How the test servers behave; every field can change while a test runs.
#[derive(Clone)]
pub(crate) struct Config {
    pub(crate) prm_at: PrmAt,
    /// Whether the 401 challenge carries `resource_metadata`.
    pub(crate) hint: bool,
    /// The PRM's `resource` (default: the MCP endpoint's URL).
    pub(crate) prm_resource: Option<String>,
    /// The PRM's `authorization_servers[0]` (default: the test AS's issuer).
    pub(crate) prm_issuer: Option<String>,
    pub(crate) prm_scopes: Option<Vec<String>>,
    /// The `scope` of the 401 challenge.
    pub(crate) challenge_scope: Option<String>,
    /// The scope every MCP request needs (else 403 `insufficient_scope`).
    pub(crate) required_scope: Option<String>,
    /// Every token is refused with 401.
    pub(crate) refuse_all: bool,
    /// The authorization server runs on the MCP endpoint's origin (its issuer).
    pub(crate) as_on_resource_origin: bool,
    /// The issuer's path ("" or e.g. "/tenant").
    pub(crate) issuer_path: &'static str,
    /// The one well-known path that answers with metadata (default: RFC 8414's,
    /// path-inserted).
    pub(crate) metadata_path: Option<String>,
    /// The metadata's `issuer` (default: the issuer).
    pub(crate) metadata_issuer: Option<String>,
    /// `code_challenge_methods_supported` (absent when `None`).
    pub(crate) pkce_methods: Option<Vec<String>>,
    pub(crate) iss_supported: bool,
    /// `iss` in the authorization response: "correct", "wrong" or "omit".
    pub(crate) iss_mode: &'static str,
    /// The authorization endpoint redirects with this OAuth `error` instead of a code.
    pub(crate) authorize_error: Option<&'static str>,
    pub(crate) as_scopes: Option<Vec<String>>,
    /// Scopes the AS never grants, whatever is asked.
    pub(crate) withheld_scopes: Vec<String>,
    pub(crate) auth_methods: Vec<String>,
    pub(crate) cimd: bool,
    /// The registration answer: its status, and members that replace what was asked.
    pub(crate) register_status: u16,
    pub(crate) register_patch: Value,
    /// The lifetime of tokens from an authorization code.
    pub(crate) code_expires_in: u64,
    /// The refresh_token grant's answer: "ok" or an OAuth error code.
    pub(crate) refresh: &'static str,
    /// Whether the JWT-bearer grant is enabled.
    pub(crate) jwt_bearer: bool,
    /// Whether a refresh answer carries a new refresh token.
    pub(crate) refresh_rotates: bool,
    /// The scope a GET (the standalone stream) needs, instead of `required_scope`.
    pub(crate) get_scope: Option<String>,
    /// Every request with a token is refused with 403 `insufficient_scope` naming a
    /// scope never named before.
    pub(crate) escalate: bool,
    /// The metadata's `token_endpoint` (default: the issuer's `/token`).
    pub(crate) token_endpoint: Option<String>,
}

/// The usual endpoint: it challenges for `read` and the rest is the defaults.
pub(crate) fn reading() -> Config {
    Config {
        challenge_scope: Some("read".into()),
        ..Config::default()
    }
}

/// [`reading`], with an authorization server that never grants `admin`.
pub(crate) fn withholding_admin() -> Config {
    Config {
        withheld_scopes: vec!["admin".into()],
        ..reading()
    }
}

impl Config {
    /// The default world whose token endpoint accepts exactly `methods` of client
    /// authentication.
    pub(crate) fn authenticating_with(methods: &[&str]) -> Self {
        Self {
            auth_methods: methods.iter().map(|m| (*m).to_owned()).collect(),
            ..Self::default()
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            prm_at: PrmAt::PathAware,
            hint: true,
            prm_resource: None,
            prm_issuer: None,
            prm_scopes: None,
            challenge_scope: None,
            required_scope: None,
            refuse_all: false,
            as_on_resource_origin: false,
            issuer_path: "",
            metadata_path: None,
            metadata_issuer: None,
            pkce_methods: Some(vec!["S256".into()]),
            iss_supported: true,
            iss_mode: "correct",
            authorize_error: None,
            as_scopes: None,
            withheld_scopes: Vec::new(),
            auth_methods: vec!["none".into()],
            cimd: false,
            register_status: 201,
            register_patch: json!({}),
            code_expires_in: 3600,
            refresh: "ok",
            jwt_bearer: true,
            refresh_rotates: true,
            get_scope: None,
            escalate: false,
            token_endpoint: None,
        }
    }
}

/// One thing a test server saw.
#[derive(Debug, Clone)]
pub(crate) enum Event {
    /// A request to the MCP endpoint: its method, `Authorization`, query, and the
    /// status it was answered with by the gate (200 when it got through).
    Mcp {
        method: http::Method,
        authorization: Option<String>,
        query: Option<String>,
        status: u16,
    },
    /// A GET of a metadata document (a well-known URI at either origin, or the one a
    /// challenge names): the path, and whether it was found.
    WellKnown { path: String, found: bool },
    /// A dynamic client registration at the AS `issuer`.
    Register { issuer: String, body: Value },
    /// An authorization request: its query.
    Authorize { query: HashMap<String, String> },
    /// A token request: its form and `Authorization` header.
    Token {
        form: HashMap<String, String>,
        authorization: Option<String>,
    },
    /// A token exchange at the enterprise IdP.
    Exchange(HashMap<String, String>),
}

#[derive(Default)]
struct Shared {
    config: Mutex<Config>,
    events: Mutex<Vec<Event>>,
    changed: Notify,
    /// Issued access tokens and their scopes.
    tokens: Mutex<HashMap<String, Vec<String>>>,
    /// Per authorization code: the PKCE challenge and the scope asked for.
    codes: Mutex<HashMap<String, (String, Vec<String>)>>,
    /// Issued refresh tokens and the scopes they renew.
    refreshable: Mutex<HashMap<String, Vec<String>>>,
    counter: Mutex<u32>,
    /// The MCP endpoint's URL.
    server: Mutex<String>,
    /// The test AS's issuer.
    issuer: Mutex<String>,
    /// Other worlds whose authorization server's tokens the endpoint accepts too.
    trusted: Mutex<Vec<Arc<Shared>>>,
}

impl Shared {
    fn config(&self) -> Config {
        self.config.lock().unwrap().clone()
    }
    fn push(&self, e: Event) {
        self.events.lock().unwrap().push(e);
        self.changed.notify_waiters();
    }
    fn next(&self) -> u32 {
        let mut c = self.counter.lock().unwrap();
        *c += 1;
        *c
    }
    /// The scopes of `token`, if this world's AS (or a trusted one) issued it.
    fn granted(&self, token: &str) -> Option<Vec<String>> {
        if let Some(scopes) = self.tokens.lock().unwrap().get(token) {
            return Some(scopes.clone());
        }
        let trusted = self.trusted.lock().unwrap().clone();
        trusted.iter().find_map(|t| t.granted(token))
    }
    fn prm_url(&self) -> String {
        let server = self.server.lock().unwrap().clone();
        let origin = server.trim_end_matches("/mcp");
        match self.config().prm_at {
            PrmAt::Custom(path) => format!("{origin}{path}"),
            PrmAt::Root => format!("{origin}/.well-known/oauth-protected-resource"),
            _ => format!("{origin}/.well-known/oauth-protected-resource/mcp"),
        }
    }
}

/// The protected MCP endpoint and its authorization server.
#[derive(Clone)]
pub(crate) struct World {
    shared: Arc<Shared>,
    /// The MCP endpoint's URL.
    pub(crate) server: String,
    /// The authorization server's issuer.
    pub(crate) issuer: String,
    /// Whether the endpoint serves 2026-07-28 (the stateless era).
    pub(crate) era_2026: bool,
}

/// A `Server` answering `test/echo`, in the connector's era.
fn echo_server(era_2026: bool) -> Server {
    Server::builder("protected", "1.0.0")
        .request_handler::<Echo, _, _>(|p, _| async move { Ok(p) })
        .stateless_era(era_2026)
        .build()
}

async fn listen() -> (tokio::net::TcpListener, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    (listener, origin)
}

impl World {
    /// Starts the endpoint (in `connector`'s era; on the shared leg, two instances
    /// behind a round-robin proxy) and its authorization server (the test's own, one
    /// instance; on the resource's origin, part of each endpoint instance).
    pub(crate) async fn start(connector: &Connector, config: Config) -> World {
        let era_2026 = connector.version() == SpecVersion::V2026_07_28;
        let shared = Arc::new(Shared::default());
        let on_resource_origin = config.as_on_resource_origin;
        let issuer_path = config.issuer_path;
        *shared.config.lock().unwrap() = config;
        let mut endpoint = connector.http_endpoint().await;
        let rs = endpoint.origin().to_owned();
        let server = format!("{rs}/mcp");
        *shared.server.lock().unwrap() = server.clone();

        let issuer = if on_resource_origin {
            format!("{rs}{issuer_path}")
        } else {
            let (as_listener, origin) = listen().await;
            let as_state = shared.clone();
            let as_app = axum::Router::new().fallback(move |request: Request| {
                let shared = as_state.clone();
                async move { authorization_server(&shared, request).await }
            });
            tokio::spawn(async move { axum::serve(as_listener, as_app).await });
            format!("{origin}{issuer_path}")
        };
        *shared.issuer.lock().unwrap() = issuer.clone();

        let mcp_server = echo_server(era_2026);
        let service_config = StreamableHttpServerConfig::default().stateless_era(era_2026);
        let app_state = shared.clone();
        endpoint
            .serve(service_config, move |service_config| {
                let mcp_server = mcp_server.clone();
                let service =
                    StreamableHttpService::with_config(service_config, move |transport| {
                        mcp_server.serve(transport);
                    });
                let gate_state = app_state.clone();
                let mcp = service.router().layer(axum::middleware::from_fn(
                    move |request: Request, next: Next| {
                        let shared = gate_state.clone();
                        async move { gate(&shared, request, next).await }
                    },
                ));
                let wk_state = app_state.clone();
                let rs_app = axum::Router::new().nest_service("/mcp", mcp);
                if on_resource_origin {
                    rs_app.fallback(move |request: Request| {
                        let shared = wk_state.clone();
                        async move { authorization_server(&shared, request).await }
                    })
                } else {
                    rs_app.fallback(move |request: Request| {
                        let shared = wk_state.clone();
                        async move { resource_well_known(&shared, request) }
                    })
                }
            })
            .await;
        World {
            shared,
            server,
            issuer,
            era_2026,
        }
    }

    /// Changes the servers' behaviour.
    pub(crate) fn set(&self, f: impl FnOnce(&mut Config)) {
        f(&mut self.shared.config.lock().unwrap());
    }

    /// Every event so far, in order.
    pub(crate) fn events(&self) -> Vec<Event> {
        self.shared.events.lock().unwrap().clone()
    }

    /// Waits until an event matching `pred` happened.
    pub(crate) async fn wait_for(&self, what: &str, pred: impl Fn(&Event) -> bool) {
        within(what, async {
            loop {
                let changed = self.shared.changed.notified();
                if self.events().iter().any(&pred) {
                    return;
                }
                changed.await;
            }
        })
        .await;
    }

    /// What `pick` takes from each event so far, in order (the events it passes over
    /// left out).
    fn picked<T>(&self, pick: impl FnMut(Event) -> Option<T>) -> Vec<T> {
        self.events().into_iter().filter_map(pick).collect()
    }

    /// The requests that reached the MCP endpoint.
    pub(crate) fn mcp_requests(&self) -> Vec<(http::Method, Option<String>, Option<String>, u16)> {
        self.picked(|e| match e {
            Event::Mcp {
                method,
                authorization,
                query,
                status,
            } => Some((method, authorization, query, status)),
            _ => None,
        })
    }

    /// The well-known paths requested, in order.
    pub(crate) fn well_known(&self) -> Vec<(String, bool)> {
        self.picked(|e| match e {
            Event::WellKnown { path, found } => Some((path, found)),
            _ => None,
        })
    }

    pub(crate) fn registrations(&self) -> Vec<(String, Value)> {
        self.picked(|e| match e {
            Event::Register { issuer, body } => Some((issuer, body)),
            _ => None,
        })
    }

    pub(crate) fn authorizations(&self) -> Vec<HashMap<String, String>> {
        self.picked(|e| match e {
            Event::Authorize { query, .. } => Some(query),
            _ => None,
        })
    }

    /// Each token request: its form and `Authorization` header.
    pub(crate) fn token_requests(&self) -> Vec<(HashMap<String, String>, Option<String>)> {
        self.picked(|e| match e {
            Event::Token {
                form,
                authorization,
                ..
            } => Some((form, authorization)),
            _ => None,
        })
    }

    /// The MCP endpoint stops accepting every token issued so far.
    pub(crate) fn revoke_all(&self) {
        self.shared.tokens.lock().unwrap().clear();
    }

    /// The MCP endpoint takes the tokens issued so far as granting no scope at all.
    pub(crate) fn forget_scopes(&self) {
        for scopes in self.shared.tokens.lock().unwrap().values_mut() {
            scopes.clear();
        }
    }

    /// Accepts tokens issued by `other`'s authorization server too (the resource moved
    /// there).
    pub(crate) fn trust(&self, other: &World) {
        self.shared
            .trusted
            .lock()
            .unwrap()
            .push(other.shared.clone());
    }

    /// Starts counting issued ids from `n` (two worlds then issue distinct ids).
    pub(crate) fn count_from(&self, n: u32) {
        *self.shared.counter.lock().unwrap() = n;
    }

    /// The resource moves to `other`'s authorization server: its metadata names that
    /// issuer, the endpoint takes that server's tokens and no longer those issued so far.
    pub(crate) fn move_to(&self, other: &World) {
        other.count_from(100);
        self.trust(other);
        let issuer = other.issuer.clone();
        self.set(|c| c.prm_issuer = Some(issuer));
        self.revoke_all();
    }

    /// The OAuth client of this endpoint, authorization code through an honest user.
    pub(crate) fn oauth(&self) -> modelctx_oauth::OAuthClientBuilder {
        OAuthClient::builder(&self.server)
            .authorization_code(Browser::honest())
            .client_name("conformance", None)
    }

    /// [`oauth`](Self::oauth) with the client `id` (and `secret`) pre-registered at this
    /// endpoint's issuer.
    pub(crate) fn pre_registered(&self, id: &str, secret: &str) -> OAuthClient {
        self.oauth()
            .pre_registered(
                self.issuer.clone(),
                modelctx_oauth::ClientRegistration::new(id).with_secret(secret),
            )
            .build()
            .unwrap()
    }

    /// Connects an MCP client in the endpoint's era through `oauth`.
    pub(crate) async fn connect(&self, oauth: &OAuthClient) -> Result<Client, SessionError> {
        let transport = StreamableHttpClientTransport::builder(&self.server)
            .auth(oauth.clone())
            .build()
            .expect("a valid URL");
        let builder = if self.era_2026 {
            client().mode(modelctx::client::ConnectMode::Discover)
        } else {
            client()
        };
        within("the client to connect", builder.connect(transport)).await
    }
}

/// The bearer-token gate in front of the MCP endpoint: 401 without a token it issued
/// (or with any, when told to refuse all), 403 `insufficient_scope` without the
/// required scope, else the MCP endpoint's own answer.
async fn gate(shared: &Shared, request: Request, next: Next) -> Response {
    let c = shared.config();
    let method = request.method().clone();
    let query = request.uri().query().map(str::to_owned);
    let authorization = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let granted = authorization
        .as_deref()
        .and_then(|a| a.strip_prefix("Bearer "))
        .and_then(|t| shared.granted(t))
        .filter(|_| !c.refuse_all);
    let resource_metadata = format!(r#"resource_metadata="{}""#, shared.prm_url());
    let required = match &c.get_scope {
        Some(scope) if method == http::Method::GET => Some(scope.clone()),
        _ if c.escalate => Some(format!("level-{}", shared.next())),
        _ => c.required_scope.clone(),
    };
    let response = match granted {
        Some(granted) => match &required {
            Some(required) if !granted.contains(required) => {
                let mut value = format!(
                    r#"Bearer error="insufficient_scope", scope="{required}", error_description="this needs {required}""#
                );
                if c.hint {
                    value.push_str(", ");
                    value.push_str(&resource_metadata);
                }
                (StatusCode::FORBIDDEN, [(header::WWW_AUTHENTICATE, value)]).into_response()
            }
            _ => next.run(request).await,
        },
        None => {
            let mut params = Vec::new();
            if authorization.is_some() {
                params.push(r#"error="invalid_token""#.to_owned());
            }
            if let Some(scope) = &c.challenge_scope {
                params.push(format!(r#"scope="{scope}""#));
            }
            if c.hint {
                params.push(resource_metadata);
            }
            let value = format!("Bearer {}", params.join(", "));
            (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, value.trim_end().to_owned())],
            )
                .into_response()
        }
    };
    shared.push(Event::Mcp {
        method,
        authorization,
        query,
        status: response.status().as_u16(),
    });
    response
}

/// The MCP origin's well-known documents: the protected-resource metadata.
fn resource_well_known(shared: &Shared, request: Request) -> Response {
    let path = request.uri().path().to_owned();
    let c = shared.config();
    let served = match &c.prm_at {
        PrmAt::PathAware => Some("/.well-known/oauth-protected-resource/mcp"),
        PrmAt::Root => Some("/.well-known/oauth-protected-resource"),
        PrmAt::Custom(p) => Some(*p),
        PrmAt::Nowhere => None,
    };
    let found = served == Some(path.as_str());
    shared.push(Event::WellKnown { path, found });
    if !found {
        return StatusCode::NOT_FOUND.into_response();
    }
    let server = shared.server.lock().unwrap().clone();
    let issuer = shared.issuer.lock().unwrap().clone();
    let mut doc = json!({
        "resource": c.prm_resource.unwrap_or(server),
        "authorization_servers": [c.prm_issuer.unwrap_or(issuer)],
    });
    if let Some(scopes) = c.prm_scopes {
        doc["scopes_supported"] = json!(scopes);
    }
    json_response(StatusCode::OK, &doc)
}

fn json_response(status: StatusCode, value: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

fn oauth_error(code: &str) -> Response {
    json_response(
        StatusCode::BAD_REQUEST,
        &json!({"error": code, "error_description": format!("test AS: {code}")}),
    )
}

/// The authorization server (and the enterprise IdP's token endpoint), by path.
async fn authorization_server(shared: &Shared, request: Request) -> Response {
    let c = shared.config();
    let issuer = shared.issuer.lock().unwrap().clone();
    let path = request.uri().path().to_owned();
    let query = request.uri().query().unwrap_or_default().to_owned();
    let headers = request.headers().clone();
    let body = axum::body::to_bytes(request.into_body(), 1 << 20)
        .await
        .unwrap_or_default();
    let body = String::from_utf8_lossy(&body).into_owned();
    let local = path
        .strip_prefix(c.issuer_path)
        .unwrap_or(path.as_str())
        .to_owned();
    if path.contains("/.well-known/") {
        if path.starts_with("/.well-known/oauth-protected-resource") {
            return resource_well_known(shared, rebuild(&path));
        }
        return metadata(shared, &c, &issuer, path);
    }
    match local.as_str() {
        "/register" => register(shared, &c, issuer, &body),
        "/authorize" => authorize(shared, &c, issuer, &query),
        "/token" => token(shared, &c, &headers, &body),
        "/idp/token" => idp_token(shared, &body),
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

fn rebuild(path: &str) -> Request {
    Request::builder()
        .uri(path)
        .body(axum::body::Body::empty())
        .unwrap()
}

fn metadata(shared: &Shared, c: &Config, issuer: &str, path: String) -> Response {
    let answering = c.metadata_path.clone().unwrap_or(format!(
        "/.well-known/oauth-authorization-server{}",
        c.issuer_path
    ));
    let found = path == answering;
    shared.push(Event::WellKnown { path, found });
    if !found {
        return StatusCode::NOT_FOUND.into_response();
    }
    let mut doc = json!({
        "issuer": c.metadata_issuer.clone().unwrap_or(issuer.to_owned()),
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": c.token_endpoint.clone().unwrap_or(format!("{issuer}/token")),
        "registration_endpoint": format!("{issuer}/register"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
        "token_endpoint_auth_methods_supported": c.auth_methods,
        "authorization_response_iss_parameter_supported": c.iss_supported,
    });
    if let Some(methods) = &c.pkce_methods {
        doc["code_challenge_methods_supported"] = json!(methods);
    }
    if let Some(scopes) = &c.as_scopes {
        doc["scopes_supported"] = json!(scopes);
    }
    if c.cimd {
        doc["client_id_metadata_document_supported"] = json!(true);
    }
    json_response(StatusCode::OK, &doc)
}

fn register(shared: &Shared, c: &Config, issuer: String, body: &str) -> Response {
    let body: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    shared.push(Event::Register {
        issuer,
        body: body.clone(),
    });
    if c.register_status >= 400 {
        let status = StatusCode::from_u16(c.register_status).unwrap();
        let error = json!({
            "error": "invalid_client_metadata",
            "error_description": "redirect URIs of this kind are not allowed here"
        });
        return json_response(status, &error);
    }
    let n = shared.next();
    let method = body["token_endpoint_auth_method"]
        .as_str()
        .unwrap_or("client_secret_basic")
        .to_owned();
    let mut answer = body.clone();
    answer["client_id"] = json!(format!("client-{n}"));
    if method != "none" {
        answer["client_secret"] = json!(format!("secret-{n}"));
    }
    if let (Some(answer), Some(patch)) = (answer.as_object_mut(), c.register_patch.as_object()) {
        for (k, v) in patch {
            answer.insert(k.clone(), v.clone());
        }
    }
    json_response(StatusCode::CREATED, &answer)
}

fn authorize(shared: &Shared, c: &Config, issuer: String, query: &str) -> Response {
    let q = modelctx_test::form_fields(query);
    shared.push(Event::Authorize { query: q.clone() });
    let redirect = q.get("redirect_uri").cloned().unwrap_or_default();
    let state = q.get("state").cloned().unwrap_or_default();
    let mut pairs: Vec<(&str, String)> = Vec::new();
    match c.authorize_error {
        Some(error) => {
            pairs.push(("error", error.to_owned()));
            pairs.push(("error_description", "the user said no".to_owned()));
        }
        None => {
            let code = format!("code-{}", shared.next());
            let scopes = q
                .get("scope")
                .map(|s| s.split(' ').map(str::to_owned).collect())
                .unwrap_or_default();
            let challenge = q.get("code_challenge").cloned().unwrap_or_default();
            shared
                .codes
                .lock()
                .unwrap()
                .insert(code.clone(), (challenge, scopes));
            pairs.push(("code", code));
        }
    }
    pairs.push(("state", state));
    match c.iss_mode {
        "correct" => pairs.push(("iss", issuer)),
        "wrong" => pairs.push(("iss", "https://attacker.example".to_owned())),
        _ => {}
    }
    let mut target = reqwest::Url::parse(&redirect).expect("a redirect URI");
    for (k, v) in &pairs {
        target.query_pairs_mut().append_pair(k, v);
    }
    (StatusCode::FOUND, [(header::LOCATION, target.to_string())]).into_response()
}

fn token(shared: &Shared, c: &Config, headers: &HeaderMap, body: &str) -> Response {
    let form = modelctx_test::form_fields(body);
    shared.push(Event::Token {
        form: form.clone(),
        authorization: headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
    });
    let grant = form.get("grant_type").cloned().unwrap_or_default();
    let (scopes, expires_in) = match grant.as_str() {
        "authorization_code" => {
            let code = form.get("code").cloned().unwrap_or_default();
            let Some((challenge, scopes)) = shared.codes.lock().unwrap().remove(&code) else {
                return oauth_error("invalid_grant");
            };
            let verifier = form.get("code_verifier").cloned().unwrap_or_default();
            let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(sha2::Sha256::digest(verifier.as_bytes()));
            if computed != challenge {
                return oauth_error("invalid_grant");
            }
            (scopes, c.code_expires_in)
        }
        "refresh_token" => match c.refresh {
            "ok" => {
                let presented = form.get("refresh_token").cloned().unwrap_or_default();
                let scopes = shared.refreshable.lock().unwrap().get(&presented).cloned();
                (scopes.unwrap_or_default(), 3600)
            }
            other => return oauth_error(other),
        },
        "client_credentials" => (
            form.get("scope")
                .map(|s| s.split(' ').map(str::to_owned).collect())
                .unwrap_or_default(),
            3600,
        ),
        JWT_BEARER if !c.jwt_bearer => return oauth_error("unsupported_grant_type"),
        JWT_BEARER if form.get("assertion").map(String::as_str) == Some(ID_JAG) => {
            (Vec::new(), 3600)
        }
        JWT_BEARER => return oauth_error("invalid_grant"),
        _ => return oauth_error("unsupported_grant_type"),
    };
    let scopes: Vec<String> = scopes
        .into_iter()
        .filter(|s| !c.withheld_scopes.contains(s))
        .collect();
    let n = shared.next();
    let access = format!("at-{n}");
    shared
        .tokens
        .lock()
        .unwrap()
        .insert(access.clone(), scopes.clone());
    shared
        .refreshable
        .lock()
        .unwrap()
        .insert(format!("rt-{n}"), scopes.clone());
    let mut answer = json!({
        "access_token": access,
        "token_type": "Bearer",
        "refresh_token": format!("rt-{n}"),
        "expires_in": expires_in,
        "scope": scopes.join(" "),
    });
    if grant == "refresh_token" && !c.refresh_rotates {
        answer.as_object_mut().unwrap().remove("refresh_token");
    }
    json_response(StatusCode::OK, &answer)
}

/// The enterprise IdP: RFC 8693 exchange of the user's ID token for an ID-JAG.
fn idp_token(shared: &Shared, body: &str) -> Response {
    let form = modelctx_test::form_fields(body);
    shared.push(Event::Exchange(form.clone()));
    if form.get("subject_token").map(String::as_str) != Some("user-id-token") {
        return oauth_error("invalid_grant");
    }
    let answer = json!({
        "access_token": ID_JAG,
        "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag",
        "token_type": "N_A",
    });
    json_response(StatusCode::OK, &answer)
}

/// A user agent with its own redirect URI: it follows the authorization URL to the
/// authorization server's redirect and hands the client the redirect's query as is, or
/// as `rewrite` makes it (the raw query in, the raw query out).
#[derive(Clone)]
pub(crate) struct Redirected {
    pub(crate) redirect_uri: String,
    pub(crate) rewrite: Arc<dyn Fn(&str) -> String + Send + Sync>,
}

impl Redirected {
    pub(crate) fn to(redirect_uri: &str) -> Self {
        Self::rewriting(redirect_uri, str::to_owned)
    }

    pub(crate) fn rewriting(
        redirect_uri: &str,
        rewrite: impl Fn(&str) -> String + Send + Sync + 'static,
    ) -> Self {
        Self {
            redirect_uri: redirect_uri.to_owned(),
            rewrite: Arc::new(rewrite),
        }
    }
}

impl AuthorizationHandler for Redirected {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
    ) -> BoxFuture<'a, Result<AuthorizationResponse, OAuthError>> {
        Box::pin(async move {
            let location = modelctx_test::redirect_of(authorization_url).await?;
            let query = location.split_once('?').map_or("", |(_, q)| q);
            Ok(AuthorizationResponse::from_query(&(self.rewrite)(query)))
        })
    }
}

/// The value of `name` in the form-encoded `query`.
pub(crate) fn query_param(query: &str, name: &str) -> Option<String> {
    modelctx_test::form_fields(query).remove(name)
}

/// The `Authorization` value of HTTP Basic authentication for `id` and `secret`.
pub(crate) fn basic(id: &str, secret: &str) -> String {
    use base64::Engine as _;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}"))
    )
}
