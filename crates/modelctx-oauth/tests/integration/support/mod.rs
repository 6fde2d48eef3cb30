//! The in-test authorization server and MCP resource server (two origins on
//! 127.0.0.1), what they saw, and the test kit's headless browser.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine as _;
pub(crate) use modelctx_test::Browser;
use serde_json::{Value, json};
use sha2::Digest as _;

/// How the test servers behave.
#[derive(Clone)]
pub(crate) struct Config {
    /// The PRM's `resource` (default: the server URL).
    pub(crate) prm_resource: Option<String>,
    /// The PRM's `authorization_servers[0]` (default: the test AS).
    pub(crate) prm_issuer: Option<String>,
    pub(crate) prm_scopes: Option<Vec<String>>,
    /// The metadata's `issuer` (default: the AS URL).
    pub(crate) metadata_issuer: Option<String>,
    pub(crate) pkce_methods: Vec<String>,
    pub(crate) iss_supported: bool,
    /// `iss` in the redirect: "correct", "wrong", "omit".
    pub(crate) iss_mode: &'static str,
    pub(crate) as_scopes: Option<Vec<String>>,
    pub(crate) auth_methods: Vec<String>,
    pub(crate) dpop_algs: Option<Vec<String>>,
    pub(crate) expires_in: u64,
    /// The refresh_token grant's answer: "ok", "invalid_grant", "invalid_client".
    pub(crate) refresh: &'static str,
    pub(crate) register_status: u16,
    /// The scope the MCP endpoint requires (403 `insufficient_scope` otherwise).
    pub(crate) required_scope: Option<String>,
    /// The `scope` of the 401 challenge.
    pub(crate) challenge_scope: Option<String>,
    /// Bytes of padding in the PRM document.
    pub(crate) prm_padding: usize,
    /// `client_id_metadata_document_supported`.
    pub(crate) cimd: bool,
    /// Registration answers with other redirect URIs than asked for.
    pub(crate) substitute_redirect: bool,
    /// The DPoP nonce the MCP endpoint requires in proofs.
    pub(crate) rs_nonce: Option<String>,
    /// The metadata's `authorization_endpoint` (default: the test AS's `/authorize`).
    pub(crate) authorization_endpoint: Option<String>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            prm_resource: None,
            prm_issuer: None,
            prm_scopes: None,
            metadata_issuer: None,
            pkce_methods: vec!["S256".into()],
            iss_supported: true,
            iss_mode: "correct",
            as_scopes: None,
            auth_methods: vec!["none".into()],
            dpop_algs: None,
            expires_in: 3600,
            refresh: "ok",
            register_status: 201,
            required_scope: None,
            challenge_scope: None,
            prm_padding: 0,
            cimd: false,
            substitute_redirect: false,
            rs_nonce: None,
            authorization_endpoint: None,
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) enum Event {
    Prm(String),
    Metadata(String),
    Register(Value),
    Authorize(HashMap<String, String>),
    Token {
        form: HashMap<String, String>,
        authorization: Option<String>,
        dpop: Option<String>,
    },
    Mcp {
        authorization: Option<String>,
    },
    /// A token exchange at the test IdP: its form and `Authorization` header.
    Exchange(HashMap<String, String>, Option<String>),
}

pub(crate) type TokenRequest = (HashMap<String, String>, Option<String>, Option<String>);

#[derive(Default)]
pub(crate) struct Shared {
    pub(crate) config: Mutex<Config>,
    pub(crate) events: Mutex<Vec<Event>>,
    /// Issued access tokens and their scopes.
    pub(crate) tokens: Mutex<HashMap<String, Vec<String>>>,
    /// The code challenge of the last authorization request.
    pub(crate) challenge: Mutex<Option<String>>,
    pub(crate) counter: Mutex<u32>,
    pub(crate) rs: Mutex<String>,
    pub(crate) auth_server: Mutex<String>,
}

impl Shared {
    pub(crate) fn config(&self) -> Config {
        self.config.lock().unwrap().clone()
    }
    pub(crate) fn push(&self, e: Event) {
        self.events.lock().unwrap().push(e);
    }
    pub(crate) fn next(&self) -> u32 {
        let mut c = self.counter.lock().unwrap();
        *c += 1;
        *c
    }
}

pub(crate) struct World {
    pub(crate) shared: Arc<Shared>,
    /// The MCP server's URL.
    pub(crate) server: String,
    /// The authorization server's base URL (its issuer).
    pub(crate) issuer: String,
}

impl World {
    pub(crate) async fn start(config: Config) -> World {
        let shared = Arc::new(Shared::default());
        *shared.config.lock().unwrap() = config;
        let rs_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let as_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let rs = format!(
            "http://127.0.0.1:{}",
            rs_listener.local_addr().unwrap().port()
        );
        let issuer = format!(
            "http://127.0.0.1:{}",
            as_listener.local_addr().unwrap().port()
        );
        *shared.rs.lock().unwrap() = rs.clone();
        *shared.auth_server.lock().unwrap() = issuer.clone();
        let rs_app = Router::new()
            .route("/.well-known/oauth-protected-resource/mcp", get(prm))
            .route("/mcp", post(mcp))
            .with_state(shared.clone());
        let as_app = Router::new()
            .route("/.well-known/oauth-authorization-server", get(metadata))
            .route("/register", post(register))
            .route("/authorize", get(authorize))
            .route("/token", post(token))
            .route("/idp/token", post(idp_token))
            .with_state(shared.clone());
        tokio::spawn(async move { axum::serve(rs_listener, rs_app).await });
        tokio::spawn(async move { axum::serve(as_listener, as_app).await });
        World {
            shared,
            server: format!("{rs}/mcp"),
            issuer,
        }
    }

    /// [`World::start`] with the default configuration changed by `change`.
    pub(crate) async fn start_with(change: impl FnOnce(&mut Config)) -> World {
        let mut config = Config::default();
        change(&mut config);
        World::start(config).await
    }

    pub(crate) fn events(&self) -> Vec<Event> {
        self.shared.events.lock().unwrap().clone()
    }

    pub(crate) fn authorizations(&self) -> Vec<HashMap<String, String>> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                Event::Authorize(q) => Some(q),
                _ => None,
            })
            .collect()
    }

    /// Each token request: its form, its `Authorization` and `DPoP` headers.
    pub(crate) fn token_requests(&self) -> Vec<TokenRequest> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                Event::Token {
                    form,
                    authorization,
                    dpop,
                } => Some((form, authorization, dpop)),
                _ => None,
            })
            .collect()
    }

    pub(crate) fn registrations(&self) -> Vec<Value> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                Event::Register(v) => Some(v),
                _ => None,
            })
            .collect()
    }

    pub(crate) fn set(&self, f: impl FnOnce(&mut Config)) {
        f(&mut self.shared.config.lock().unwrap());
    }

    /// The 401 challenge the MCP endpoint sends.
    pub(crate) fn challenge(&self, scope: Option<&str>) -> HeaderMap {
        let mut value = format!(
            r#"Bearer error="invalid_token", resource_metadata="{}""#,
            prm_url(&self.shared)
        );
        if let Some(scope) = scope {
            value.push_str(&format!(r#", scope="{scope}""#));
        }
        let mut h = HeaderMap::new();
        h.insert(header::WWW_AUTHENTICATE, value.parse().unwrap());
        h
    }

    pub(crate) fn insufficient(&self, scope: &str) -> HeaderMap {
        let value = format!(
            r#"Bearer error="insufficient_scope", scope="{scope}", resource_metadata="{}""#,
            prm_url(&self.shared)
        );
        let mut h = HeaderMap::new();
        h.insert(header::WWW_AUTHENTICATE, value.parse().unwrap());
        h
    }
}

pub(crate) fn prm_url(shared: &Shared) -> String {
    format!(
        "{}/.well-known/oauth-protected-resource/mcp",
        shared.rs.lock().unwrap()
    )
}

pub(crate) async fn prm(State(s): State<Arc<Shared>>) -> Response {
    let c = s.config();
    s.push(Event::Prm(
        "/.well-known/oauth-protected-resource/mcp".into(),
    ));
    let rs = s.rs.lock().unwrap().clone();
    let issuer = s.auth_server.lock().unwrap().clone();
    let mut doc = json!({
        "resource": c.prm_resource.unwrap_or(format!("{rs}/mcp")),
        "authorization_servers": [c.prm_issuer.unwrap_or(issuer)],
    });
    if let Some(scopes) = c.prm_scopes {
        doc["scopes_supported"] = json!(scopes);
    }
    if c.prm_padding > 0 {
        doc["padding"] = json!("x".repeat(c.prm_padding));
    }
    axum::Json(doc).into_response()
}

pub(crate) async fn metadata(State(s): State<Arc<Shared>>) -> Response {
    let c = s.config();
    s.push(Event::Metadata(
        "/.well-known/oauth-authorization-server".into(),
    ));
    let base = s.auth_server.lock().unwrap().clone();
    let mut doc = json!({
        "issuer": c.metadata_issuer.unwrap_or(base.clone()),
        "authorization_endpoint": c
            .authorization_endpoint
            .unwrap_or_else(|| format!("{base}/authorize")),
        "token_endpoint": format!("{base}/token"),
        "registration_endpoint": format!("{base}/register"),
        "response_types_supported": ["code"],
        "code_challenge_methods_supported": c.pkce_methods,
        "token_endpoint_auth_methods_supported": c.auth_methods,
        "authorization_response_iss_parameter_supported": c.iss_supported,
    });
    if let Some(scopes) = c.as_scopes {
        doc["scopes_supported"] = json!(scopes);
    }
    if c.cimd {
        doc["client_id_metadata_document_supported"] = json!(true);
    }
    if let Some(algs) = c.dpop_algs {
        doc["dpop_signing_alg_values_supported"] = json!(algs);
    }
    axum::Json(doc).into_response()
}

pub(crate) async fn register(
    State(s): State<Arc<Shared>>,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    let c = s.config();
    s.push(Event::Register(body.clone()));
    if c.register_status >= 400 {
        let status = StatusCode::from_u16(c.register_status).unwrap();
        return (
            status,
            axum::Json(
                json!({"error": "invalid_redirect_uri", "error_description": "not allowed here"}),
            ),
        )
            .into_response();
    }
    let n = s.next();
    let method = body["token_endpoint_auth_method"]
        .as_str()
        .unwrap_or("none");
    let redirect_uris = if c.substitute_redirect {
        json!(["https://elsewhere.example/cb"])
    } else {
        body["redirect_uris"].clone()
    };
    let mut answer = json!({
        "client_id": format!("client-{n}"),
        "redirect_uris": redirect_uris,
        "token_endpoint_auth_method": method,
    });
    if method != "none" {
        answer["client_secret"] = json!(format!("secret-{n}"));
    }
    (StatusCode::CREATED, axum::Json(answer)).into_response()
}

pub(crate) async fn authorize(
    State(s): State<Arc<Shared>>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let c = s.config();
    s.push(Event::Authorize(q.clone()));
    *s.challenge.lock().unwrap() = q.get("code_challenge").cloned();
    let issuer = s.auth_server.lock().unwrap().clone();
    let mut target = url_with(
        q.get("redirect_uri")
            .map(String::as_str)
            .unwrap_or_default(),
        &[
            ("code", "the-code"),
            (
                "state",
                q.get("state").map(String::as_str).unwrap_or_default(),
            ),
        ],
    );
    match c.iss_mode {
        "correct" => target = url_with(&target, &[("iss", &issuer)]),
        "wrong" => target = url_with(&target, &[("iss", "https://evil.example")]),
        _ => {}
    }
    // Remember the scope asked for, for the token.
    *s.tokens
        .lock()
        .unwrap()
        .entry("pending-scope".into())
        .or_default() = q
        .get("scope")
        .map(|s| s.split(' ').map(str::to_owned).collect())
        .unwrap_or_default();
    (StatusCode::FOUND, [(header::LOCATION, target)]).into_response()
}

pub(crate) fn url_with(base: &str, pairs: &[(&str, &str)]) -> String {
    let mut u = reqwest::Url::parse(base).unwrap();
    for (k, v) in pairs {
        u.query_pairs_mut().append_pair(k, v);
    }
    u.to_string()
}

/// A request header's value, when it is text.
fn header_of(headers: &HeaderMap, name: header::HeaderName) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// A token endpoint's refusal with the OAuth error `code`.
fn token_error(code: &str) -> Response {
    (StatusCode::BAD_REQUEST, axum::Json(json!({"error": code}))).into_response()
}

pub(crate) async fn token(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let c = s.config();
    let form = modelctx_test::form_fields(&body);
    s.push(Event::Token {
        form: form.clone(),
        authorization: header_of(&headers, header::AUTHORIZATION),
        dpop: header_of(&headers, header::HeaderName::from_static("dpop")),
    });
    let grant = form
        .get("grant_type")
        .map(String::as_str)
        .unwrap_or_default();
    let scopes: Vec<String> = match grant {
        "authorization_code" => {
            let verifier = form.get("code_verifier").cloned().unwrap_or_default();
            let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(sha2::Sha256::digest(verifier.as_bytes()));
            if Some(computed) != *s.challenge.lock().unwrap() || form["code"] != "the-code" {
                return token_error("invalid_grant");
            }
            s.tokens
                .lock()
                .unwrap()
                .get("pending-scope")
                .cloned()
                .unwrap_or_default()
        }
        "refresh_token" => match c.refresh {
            "ok" => vec![],
            other => return token_error(other),
        },
        "client_credentials" => form
            .get("scope")
            .map(|s| s.split(' ').map(str::to_owned).collect())
            .unwrap_or_default(),
        // Only the test IdP's ID-JAGs are accepted as JWT-bearer assertions.
        "urn:ietf:params:oauth:grant-type:jwt-bearer"
            if form
                .get("assertion")
                .is_some_and(|a| a.starts_with("id-jag")) =>
        {
            vec![]
        }
        _ => return token_error("unsupported_grant_type"),
    };
    let n = s.next();
    let access = format!("at-{n}");
    s.tokens
        .lock()
        .unwrap()
        .insert(access.clone(), scopes.clone());
    let token_type = if headers.contains_key("dpop") {
        "DPoP"
    } else {
        "Bearer"
    };
    axum::Json(json!({
        "access_token": access,
        "token_type": token_type,
        "refresh_token": format!("rt-{n}"),
        "expires_in": c.expires_in,
        "scope": scopes.join(" "),
    }))
    .into_response()
}

/// The enterprise IdP's token endpoint: RFC 8693 exchange of an ID token for an ID-JAG.
pub(crate) async fn idp_token(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let form = modelctx_test::form_fields(&body);
    s.push(Event::Exchange(
        form.clone(),
        header_of(&headers, header::AUTHORIZATION),
    ));
    if form.get("subject_token").map(String::as_str) != Some("user-id-token") {
        return token_error("invalid_grant");
    }
    axum::Json(json!({
        "access_token": "id-jag-1",
        "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag",
        "token_type": "N_A",
    }))
    .into_response()
}

pub(crate) async fn mcp(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let c = s.config();
    let authorization = header_of(&headers, header::AUTHORIZATION);
    s.push(Event::Mcp {
        authorization: authorization.clone(),
    });
    let token = authorization
        .as_deref()
        .and_then(|a| {
            a.strip_prefix("Bearer ")
                .or_else(|| a.strip_prefix("DPoP "))
        })
        .map(str::to_owned);
    let granted = token.and_then(|t| s.tokens.lock().unwrap().get(&t).cloned());
    let Some(granted) = granted else {
        let mut value = format!(r#"Bearer resource_metadata="{}""#, prm_url(&s));
        if let Some(scope) = &c.challenge_scope {
            value.push_str(&format!(r#", scope="{scope}""#));
        }
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, value)],
        )
            .into_response();
    };
    if let Some(nonce) = &c.rs_nonce {
        // The proof must carry the server's nonce (RFC 9449 §9).
        let proof_nonce = headers
            .get("dpop")
            .and_then(|v| v.to_str().ok())
            .and_then(|p| p.split('.').nth(1).map(str::to_owned))
            .and_then(|c| {
                base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .decode(c)
                    .ok()
            })
            .and_then(|c| serde_json::from_slice::<Value>(&c).ok())
            .and_then(|c| c["nonce"].as_str().map(str::to_owned));
        if proof_nonce.as_deref() != Some(nonce.as_str()) {
            return (
                StatusCode::UNAUTHORIZED,
                [
                    (
                        header::WWW_AUTHENTICATE,
                        r#"DPoP error="use_dpop_nonce""#.to_owned(),
                    ),
                    (header::HeaderName::from_static("dpop-nonce"), nonce.clone()),
                ],
            )
                .into_response();
        }
    }
    if let Some(required) = &c.required_scope
        && !granted.contains(required)
    {
        let value = format!(
            r#"Bearer error="insufficient_scope", scope="{required}", resource_metadata="{}""#,
            prm_url(&s)
        );
        return (StatusCode::FORBIDDEN, [(header::WWW_AUTHENTICATE, value)]).into_response();
    }
    let request: Value = serde_json::from_str(&body).unwrap_or_default();
    axum::Json(json!({"jsonrpc": "2.0", "id": request["id"], "result": {}})).into_response()
}
