//! Hosting: auth — `modelctx-oauth`'s resource server in front of a hosted `Server` and
//! its bundled authorization server, on two loopback origins, checked on the wire (raw
//! HTTP) and end to end with the SDK's own OAuth client.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use futures::future::BoxFuture;
use modelctx::client::Client;
use modelctx::http::{
    StreamableHttpClientTransport, StreamableHttpServerConfig, StreamableHttpService,
};
use modelctx::server::{Context, Server, ToolDef};
use modelctx::types::{JsonObject, Tool};
use modelctx_conformance::{
    Connector, SpecVersion, Test, conformance_test, redis_connected, within,
};
use modelctx_oauth::{
    AuthInfo, AuthorizationHandler, AuthorizationResponse, AuthorizationServer,
    AuthorizationServerConfig, InMemoryStore, JwtVerifier, Login, OAuthClient, OAuthError,
    Operation, RegisteredClient, ResourceServer, ResourceServerConfig, TrustedIdentityProvider,
};
use p256::ecdsa::signature::Signer as _;
use serde_json::{Value, json};

use crate::http_support::{RawResponse, no_redirects, send};
use crate::support::connect_mode;

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            the_bundled_servers_publish_their_metadata_and_endpoints,
            [
                "hosting:auth:as-router",
                "hosting:auth:metadata-endpoints",
                "hosting:auth:prm:authorization-servers-field"
            ]
        ),
        conformance_test!(
            identity_assertions_are_advertised_and_exchanged_for_tokens,
            ["client-auth:identity-assertion:metadata-advertised"]
        ),
        conformance_test!(
            no_token_draws_401_with_resource_metadata,
            ["hosting:auth:missing-401"]
        ),
        conformance_test!(
            malformed_or_unverifiable_tokens_draw_401,
            ["hosting:auth:invalid-401"]
        ),
        conformance_test!(
            expired_tokens_draw_401_invalid_token,
            ["hosting:auth:expired-401"]
        ),
        conformance_test!(
            tokens_for_another_audience_are_refused,
            ["hosting:auth:aud-validation"]
        ),
        conformance_test!(
            under_scoped_tokens_draw_403_insufficient_scope,
            ["hosting:auth:scope-403"]
        ),
        conformance_test!(
            query_string_tokens_are_ignored,
            ["hosting:auth:query-token-ignored"]
        ),
        conformance_test!(
            the_authorization_code_flow_reaches_a_handler_and_reconnects,
            [
                "hosting:auth:authinfo-propagates",
                "flow:oauth:authorization-code-roundtrip"
            ]
        ),
        conformance_test!(
            authorize_without_pkce_is_invalid_request,
            ["hosting:auth:as:authorize-requires-pkce"]
        ),
        conformance_test!(
            a_wrong_code_verifier_is_invalid_grant,
            ["hosting:auth:as:verifier-mismatch"]
        ),
        conformance_test!(
            a_code_is_exchanged_once,
            ["hosting:auth:as:code-single-use"]
        ),
        conformance_test!(
            redirect_uris_are_bound_exactly,
            ["hosting:auth:as:redirect-uri-binding"]
        ),
        conformance_test!(
            registration_takes_https_or_loopback_redirects_only,
            [
                "hosting:auth:as:redirect-uri-scheme",
                "hosting:auth:as:register-error-response"
            ]
        ),
        conformance_test!(
            token_answers_are_never_cached,
            ["hosting:auth:as:token-cache-headers"]
        ),
        conformance_test!(
            registration_echoes_the_client_metadata,
            ["hosting:auth:as:register-echo"]
        ),
    ]
}

/// The private key the authorization server signs with (fixed, so a test can sign an
/// expired token with it).
pub(crate) const KEY: [u8; 32] = [0x2a; 32];
pub(crate) const REDIRECT: &str = "http://127.0.0.1:9/callback";

/// A protected MCP server and its authorization server.
pub(crate) struct Protected {
    pub(crate) mcp: String,
    other: String,
    pub(crate) issuer: String,
    pub(crate) auth: AuthorizationServer,
    pub(crate) version: SpecVersion,
    pub(crate) http: reqwest::Client,
}

/// The enterprise identity provider the bundled authorization server trusts, and its
/// signing key.
const IDP: &str = "https://idp.example.test";
const IDP_KEY: [u8; 32] = [0x17; 32];
const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

fn idp_jwk() -> Value {
    let key = p256::ecdsa::SigningKey::from_slice(&IDP_KEY).expect("a valid scalar");
    let point = key.verifying_key().to_encoded_point(false);
    json!({
        "kty": "EC", "crv": "P-256", "kid": "idp-1",
        "x": URL_SAFE_NO_PAD.encode(point.x().unwrap()),
        "y": URL_SAFE_NO_PAD.encode(point.y().unwrap()),
    })
}

/// An identity assertion (ID-JAG) signed with `key`, with `claims`.
fn id_jag(key: &[u8; 32], claims: &Value) -> String {
    let header = json!({"alg": "ES256", "typ": "oauth-id-jag+jwt", "kid": "idp-1"});
    let part = |v: &Value| URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap());
    let input = format!("{}.{}", part(&header), part(claims));
    let key = p256::ecdsa::SigningKey::from_slice(key).expect("a valid scalar");
    let signature: p256::ecdsa::Signature = key.sign(input.as_bytes());
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature.to_bytes()))
}

/// The claims of an assertion the IdP issues to `enterprise` for employee 7.
fn id_jag_claims(issuer: &str, resource: &str, jti: &str) -> Value {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    json!({
        "iss": IDP, "sub": "employee-7", "aud": issuer, "client_id": "enterprise",
        "jti": jti, "iat": now, "exp": now + 300, "resource": resource, "scope": "mcp:tools",
    })
}

pub(crate) fn key_pem() -> String {
    use p256::pkcs8::EncodePrivateKey as _;
    let key = p256::SecretKey::from_slice(&KEY).expect("a valid scalar");
    key.to_pkcs8_pem(p256::pkcs8::LineEnding::LF)
        .expect("PEM")
        .to_string()
}

/// `whoami` answers with the verified caller; `admin` needs scope `mcp:admin`.
/// The subject of the verified caller that reached the tool (empty when the token
/// names none).
fn verified_subject(cx: &Context) -> Result<String, String> {
    match cx.extensions().get::<AuthInfo>() {
        Some(who) => Ok(who.subject.clone().unwrap_or_default()),
        None => Err("no caller reached the handler".to_owned()),
    }
}

fn server(version: SpecVersion) -> Server {
    let whoami = ToolDef::with_schema(
        Tool::without_arguments("whoami"),
        |_: JsonObject, cx: Context| async move { verified_subject(&cx) },
    );
    let admin = ToolDef::with_schema(Tool::without_arguments("admin"), |_: JsonObject, _| async {
        Ok::<_, String>("done")
    });
    let builder = Server::builder("protected", "1.0.0")
        .tool(whoami)
        .unwrap()
        .tool(admin)
        .unwrap();
    builder
        .stateless_era(version == SpecVersion::V2026_07_28)
        .build()
}

pub(crate) async fn protected(connect: &Connector) -> Protected {
    let version = connect.version();
    // The resource and its authorization server: each once, or on the shared leg each
    // twice behind a round-robin proxy, the authorization server's instances sharing a
    // Redis store.
    let mut mcp_endpoint = connect.http_endpoint().await;
    let mut as_endpoint = mcp_endpoint.sibling().await;
    let issuer = as_endpoint.origin().to_owned();
    let origin = mcp_endpoint.origin().to_owned();
    let mcp = format!("{origin}/mcp");
    let other = format!("{origin}/other");
    let mut config = AuthorizationServerConfig::new(&issuer, &mcp)
        .scopes_supported(["mcp:tools", "mcp:admin"])
        .trust_identity_provider(
            TrustedIdentityProvider::new(IDP, &json!({"keys": [idp_jwk()]})).expect("a P-256 key"),
        );
    config.resources.push(other.clone());
    let users = |login: &Login<'_>| (login.username == "alice").then(|| "alice".to_owned());
    let mut instances = Vec::new();
    for _ in 0..as_endpoint.instances() {
        let auth = match as_endpoint.redis_url() {
            None => AuthorizationServer::with_signing_key(
                config.clone(),
                InMemoryStore::new(),
                users,
                &key_pem(),
            ),
            Some(url) => {
                let stored = modelctx_redis::AuthorizationStoreConfig::default();
                let store =
                    redis_connected(modelctx_redis::AuthorizationStore::connect(&url, stored))
                        .await;
                AuthorizationServer::with_signing_key(config.clone(), store, users, &key_pem())
            }
        };
        instances.push(auth.unwrap());
    }
    // One registration: the instances share their store.
    let auth = instances[0].clone();
    register_service_client(&auth).await;
    let mut enterprise =
        RegisteredClient::confidential("enterprise", "ent-secret", Vec::<String>::new());
    enterprise.grant_types = vec![JWT_BEARER_GRANT.to_owned()];
    auth.register_client(enterprise).await.unwrap();
    let next = AtomicUsize::new(0);
    as_endpoint
        .serve(StreamableHttpServerConfig::default(), move |_| {
            instances[next.fetch_add(1, Ordering::Relaxed)].router()
        })
        .await;

    let era_2026 = version == SpecVersion::V2026_07_28;
    let hosted = server(version);
    let http_config = StreamableHttpServerConfig::default().stateless_era(era_2026);
    let (resource, issued_by) = (mcp.clone(), issuer.clone());
    mcp_endpoint
        .serve(http_config, move |http_config| {
            let rs = ResourceServer::new(
                ResourceServerConfig::new(&resource, &issued_by)
                    .required_scopes(["mcp:tools"])
                    .operation_scopes(Operation::Tool("admin".into()), ["mcp:admin"]),
                JwtVerifier::new(&issued_by, format!("{issued_by}/jwks")),
            )
            .unwrap();
            let hosted = hosted.clone();
            // `hosted` serves the 2026-07-28 era when the cell is of it (`server`).
            let service = StreamableHttpService::with_config(http_config, move |t| {
                hosted.serve(t);
            });
            axum::Router::new()
                .nest_service("/mcp", service.router().layer(rs.layer()))
                .merge(rs.metadata_router())
        })
        .await;
    Protected {
        mcp,
        other,
        issuer,
        auth,
        version,
        http: no_redirects(),
    }
}

impl Protected {
    /// A request the MCP endpoint serves in this cell's revision (`initialize`, or a
    /// 2026-07-28 `tools/list` standing on its own), to `url`, with `authorization`.
    pub(crate) async fn probe(&self, url: &str, authorization: Option<&str>) -> RawResponse {
        let mut rb = self
            .http
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        let body = if self.version == SpecVersion::V2026_07_28 {
            rb = rb
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/list");
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}}}})
        } else {
            crate::http_support::initialize(1, "2025-11-25")
        };
        if let Some(a) = authorization {
            rb = rb.header("authorization", a);
        }
        send(rb.body(body.to_string())).await
    }

    /// A client-credentials token for `resource` with `scope`.
    pub(crate) async fn token(&self, resource: &str, scope: &str) -> String {
        service_token(&self.http, &self.issuer, resource, scope).await
    }

    pub(crate) fn metadata_url(&self) -> String {
        format!(
            "{}/.well-known/oauth-protected-resource/mcp",
            self.mcp.trim_end_matches("/mcp")
        )
    }

    async fn register(&self, body: Value) -> RawResponse {
        send(
            self.http
                .post(format!("{}/register", self.issuer))
                .header("content-type", "application/json")
                .body(body.to_string()),
        )
        .await
    }

    async fn public_client(&self) -> String {
        let r = self
            .register(json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"}))
            .await;
        assert_eq!(r.status, 201, "{}", r.body);
        r.json()["client_id"].as_str().unwrap().to_owned()
    }

    fn authorize_url(&self, pairs: &[(&str, &str)]) -> String {
        let mut url = url::Url::parse(&format!("{}/authorize", self.issuer)).unwrap();
        url.query_pairs_mut()
            .append_pair("response_type", "code")
            .append_pair("state", "s1")
            .extend_pairs(pairs);
        url.to_string()
    }

    /// A code through the consent page, for a PKCE `challenge`.
    /// A public client registered, a PKCE pair, and a code issued to the client:
    /// `(client_id, verifier, code)`.
    async fn public_client_with_code(&self) -> (String, String, String) {
        let client_id = self.public_client().await;
        let (verifier, challenge) = pkce();
        let code = self.code(&client_id, &challenge).await;
        (client_id, verifier, code)
    }

    async fn code(&self, client_id: &str, challenge: &str) -> String {
        let url = self.authorize_url(&[
            ("client_id", client_id),
            ("redirect_uri", REDIRECT),
            ("code_challenge", challenge),
            ("code_challenge_method", "S256"),
        ]);
        let location = approve(&self.http, &url).await;
        param(&location, "code").expect("a code")
    }

    async fn exchange(&self, form: &[(&str, &str)]) -> RawResponse {
        send(self.http.post(format!("{}/token", self.issuer)).form(form)).await
    }
}

/// The token request redeeming `code` of `client_id` with `verifier`, naming
/// `redirect_uri`.
pub(crate) fn redeeming<'a>(
    client_id: &'a str,
    code: &'a str,
    verifier: &'a str,
    redirect_uri: &'a str,
) -> [(&'static str, &'a str); 5] {
    [
        ("grant_type", "authorization_code"),
        ("client_id", client_id),
        ("code", code),
        ("code_verifier", verifier),
        ("redirect_uri", redirect_uri),
    ]
}

/// Asserts that the token endpoint refused with `invalid_grant`.
fn assert_invalid_grant(r: &RawResponse) {
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"], "invalid_grant");
}

pub(crate) fn param(url: &str, name: &str) -> Option<String> {
    url::Url::parse(url)
        .ok()?
        .query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// Registers `svc`, the confidential client whose client-credentials tokens the checks
/// use.
pub(crate) async fn register_service_client(auth: &AuthorizationServer) {
    let service = RegisteredClient::confidential("svc", "svc-secret", Vec::<String>::new());
    auth.register_client(service).await.unwrap();
}

/// A client-credentials token `svc` gets from `issuer` for `resource` with `scope`.
pub(crate) async fn service_token(
    http: &reqwest::Client,
    issuer: &str,
    resource: &str,
    scope: &str,
) -> String {
    let r = send(
        http.post(format!("{issuer}/token"))
            .basic_auth("svc", Some("svc-secret"))
            .form(&[
                ("grant_type", "client_credentials"),
                ("scope", scope),
                ("resource", resource),
            ]),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()["access_token"].as_str().unwrap().to_owned()
}

/// Opens the consent page at `url`, logs in as alice and approves; the redirect.
pub(crate) async fn approve(http: &reqwest::Client, url: &str) -> String {
    let page = send(http.get(url)).await;
    assert_eq!(page.status, 200, "{}", page.body);
    let marker = "name=\"txn\" value=\"";
    let start = page.body.find(marker).expect("the consent form") + marker.len();
    let txn = &page.body[start..start + page.body[start..].find('"').unwrap()];
    let answer = send(http.post(url.split('?').next().unwrap()).form(&[
        ("txn", txn),
        ("username", "alice"),
        ("password", ""),
        ("decision", "approve"),
    ]))
    .await;
    assert_eq!(answer.status, 302, "{}", answer.body);
    answer.header("location").unwrap().to_owned()
}

pub(crate) fn pkce() -> (String, String) {
    use sha2::Digest as _;
    let verifier = URL_SAFE_NO_PAD.encode([7u8; 32]);
    let challenge = URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier.as_bytes()));
    (verifier, challenge)
}

pub(crate) fn challenge_of(r: &RawResponse) -> &str {
    r.header("www-authenticate")
        .expect("a WWW-Authenticate challenge")
}

async fn the_bundled_servers_publish_their_metadata_and_endpoints(connect: Connector) {
    let p = protected(&connect).await;
    let prm = send(p.http.get(p.metadata_url())).await;
    assert_eq!(prm.status, 200);
    let prm = prm.json();
    assert_eq!(prm["resource"], p.mcp.as_str());
    let servers = prm["authorization_servers"].as_array().expect("a list");
    assert!(!servers.is_empty());
    assert_eq!(servers[0], p.issuer.as_str());
    let asm = send(p.http.get(format!(
        "{}/.well-known/oauth-authorization-server",
        servers[0].as_str().unwrap()
    )))
    .await;
    assert_eq!(asm.status, 200);
    let asm = asm.json();
    assert_eq!(asm["issuer"], p.issuer.as_str());
    // Each endpoint is there: it answers a bad request as such, not with 404/405.
    let get = |key: &str| asm[key].as_str().expect(key).to_owned();
    let authorize = send(p.http.get(get("authorization_endpoint"))).await;
    assert_eq!(authorize.status, 400);
    for key in ["token_endpoint", "revocation_endpoint"] {
        let r = send(p.http.post(get(key)).form(&[("x", "y")])).await;
        assert!(matches!(r.status, 400 | 401), "{key}: {}", r.status);
        assert!(r.json()["error"].is_string(), "{key}");
    }
    let r = p.register(json!({})).await;
    assert_eq!(r.status, 400);
}

async fn no_token_draws_401_with_resource_metadata(connect: Connector) {
    let p = protected(&connect).await;
    let r = p.probe(&p.mcp, None).await;
    assert_eq!(r.status, 401);
    let c = challenge_of(&r);
    assert!(c.starts_with("Bearer "), "{c}");
    assert!(
        c.contains(&format!("resource_metadata=\"{}\"", p.metadata_url())),
        "{c}"
    );
    assert!(!c.contains("error="), "{c}");
}

async fn malformed_or_unverifiable_tokens_draw_401(connect: Connector) {
    let p = protected(&connect).await;
    let good = p.token(&p.mcp, "mcp:tools").await;
    // The same claims under another key's signature.
    let mut parts = good.rsplitn(2, '.');
    let (_, signed_part) = (parts.next(), parts.next().unwrap());
    let forged = format!("{signed_part}.{}", URL_SAFE_NO_PAD.encode([1u8; 64]));
    for auth in [
        "Bearer".to_owned(),
        "Bearer not a token".to_owned(),
        "Bearer abc".to_owned(),
        format!("Bearer {forged}"),
    ] {
        let r = p.probe(&p.mcp, Some(&auth)).await;
        assert_eq!(r.status, 401, "{auth}");
        let c = challenge_of(&r);
        assert!(c.contains("error=\"invalid_token\""), "{c}");
        assert!(c.contains("resource_metadata="), "{c}");
    }
    let r = p.probe(&p.mcp, Some(&format!("Bearer {good}"))).await;
    assert_eq!(r.status, 200, "{}", r.body);
}

/// Seconds since the epoch, as a token's `iat` and `exp` count them.
pub(crate) fn seconds_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// An access token of `p`'s authorization server (signed with its key) for `alice`,
/// granting `scope`, issued at `iat` and expiring at `exp`.
pub(crate) fn access_token(p: &Protected, scope: &str, iat: u64, exp: u64) -> String {
    let jwks = p.auth.jwks();
    let kid = jwks["keys"][0]["kid"].as_str().unwrap();
    let claims = json!({"iss": p.issuer, "sub": "alice", "aud": p.mcp, "scope": scope,
        "iat": iat, "exp": exp});
    let header = json!({"alg": "ES256", "typ": "at+jwt", "kid": kid});
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let key = p256::ecdsa::SigningKey::from_slice(&KEY).unwrap();
    let sig: p256::ecdsa::Signature = key.sign(input.as_bytes());
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.to_bytes()))
}

async fn expired_tokens_draw_401_invalid_token(connect: Connector) {
    let p = protected(&connect).await;
    let now = seconds_now();
    let expired = access_token(&p, "mcp:tools", now - 7200, now - 3600);
    let r = p.probe(&p.mcp, Some(&format!("Bearer {expired}"))).await;
    assert_eq!(r.status, 401);
    let c = challenge_of(&r);
    assert!(c.contains("error=\"invalid_token\""), "{c}");
    assert!(c.contains("expired"), "{c}");
}

async fn tokens_for_another_audience_are_refused(connect: Connector) {
    let p = protected(&connect).await;
    let elsewhere = p.token(&p.other, "mcp:tools").await;
    let r = p.probe(&p.mcp, Some(&format!("Bearer {elsewhere}"))).await;
    assert_eq!(r.status, 401);
    assert!(challenge_of(&r).contains("error=\"invalid_token\""));
    let here = p.token(&p.mcp, "mcp:tools").await;
    let r = p.probe(&p.mcp, Some(&format!("Bearer {here}"))).await;
    assert_eq!(r.status, 200);
}

async fn under_scoped_tokens_draw_403_insufficient_scope(connect: Connector) {
    let p = protected(&connect).await;
    let weak = p.token(&p.mcp, "mcp:admin").await;
    let r = p.probe(&p.mcp, Some(&format!("Bearer {weak}"))).await;
    assert_eq!(r.status, 403);
    let c = challenge_of(&r);
    assert!(c.contains("error=\"insufficient_scope\""), "{c}");
    assert!(c.contains("scope=\"mcp:tools\""), "{c}");
    assert!(
        c.contains(&format!("resource_metadata=\"{}\"", p.metadata_url())),
        "{c}"
    );
}

async fn query_string_tokens_are_ignored(connect: Connector) {
    let p = protected(&connect).await;
    let token = p.token(&p.mcp, "mcp:tools").await;
    let r = p
        .probe(&format!("{}?access_token={token}", p.mcp), None)
        .await;
    assert_eq!(r.status, 401);
    assert!(!challenge_of(&r).contains("error="));
}

/// A user who approves on the consent page, counting the times asked.
#[derive(Clone, Default)]
struct Alice {
    asked: Arc<AtomicUsize>,
}

impl AuthorizationHandler for Alice {
    fn redirect_uri(&self) -> String {
        REDIRECT.into()
    }

    fn authorize<'a>(
        &'a self,
        url: &'a str,
    ) -> BoxFuture<'a, Result<AuthorizationResponse, OAuthError>> {
        Box::pin(async move {
            self.asked.fetch_add(1, Ordering::SeqCst);
            let http = no_redirects();
            AuthorizationResponse::from_redirect_url(&approve(&http, url).await)
        })
    }
}

async fn the_authorization_code_flow_reaches_a_handler_and_reconnects(connect: Connector) {
    let p = protected(&connect).await;
    let alice = Alice::default();
    let oauth = OAuthClient::builder(&p.mcp)
        .authorization_code(alice.clone())
        .client_name("conformance", None)
        .build()
        .unwrap();
    let connect_client = || async {
        let transport = StreamableHttpClientTransport::builder(&p.mcp)
            .auth(oauth.clone())
            .build()
            .unwrap();
        let builder = Client::builder("conformance", "1.0.0").mode(connect_mode(p.version));
        within("the client to connect", builder.connect(transport))
            .await
            .expect("connected")
    };
    let client = connect_client().await;
    assert_eq!(whoami(&client).await, "alice");
    assert_eq!(alice.asked.load(Ordering::SeqCst), 1, "challenged once");
    drop(client);
    // Reconnecting uses the token it has: no second authorization.
    let client = connect_client().await;
    assert_eq!(whoami(&client).await, "alice");
    assert_eq!(alice.asked.load(Ordering::SeqCst), 1);
}

async fn identity_assertions_are_advertised_and_exchanged_for_tokens(connect: Connector) {
    let p = protected(&connect).await;
    let metadata = send(p.http.get(format!(
        "{}/.well-known/oauth-authorization-server",
        p.issuer
    )))
    .await
    .json();
    assert!(
        metadata["grant_types_supported"]
            .as_array()
            .unwrap()
            .contains(&json!(JWT_BEARER_GRANT)),
        "{metadata}"
    );
    assert_eq!(
        metadata["authorization_grant_profiles_supported"],
        json!(["urn:ietf:params:oauth:grant-profile:id-jag"])
    );

    // The SDK's client presents an assertion from the IdP: a token for the employee.
    let mint = |request: modelctx_oauth::AssertionRequest| async move {
        let claims = id_jag_claims(&request.issuer, &request.resource, "jti-client");
        Ok::<_, OAuthError>(id_jag(&IDP_KEY, &claims))
    };
    let oauth = OAuthClient::builder(&p.mcp)
        .jwt_bearer(mint)
        .client(modelctx_oauth::ClientRegistration::new("enterprise").with_secret("ent-secret"))
        .build()
        .unwrap();
    let transport = StreamableHttpClientTransport::builder(&p.mcp)
        .auth(oauth)
        .build()
        .unwrap();
    let client = within(
        "the client to connect",
        Client::builder("conformance", "1.0.0")
            .mode(connect_mode(p.version))
            .connect(transport),
    )
    .await
    .expect("connected with the assertion's token");
    assert_eq!(whoami(&client).await, "employee-7");

    // Refused: a replayed assertion, another client's, an untrusted signer's.
    let present = |assertion: String| {
        let http = p.http.clone();
        let token = format!("{}/token", p.issuer);
        async move {
            send(
                http.post(token)
                    .basic_auth("enterprise", Some("ent-secret"))
                    .form(&[("grant_type", JWT_BEARER_GRANT), ("assertion", &assertion)]),
            )
            .await
        }
    };
    let fresh = id_jag(&IDP_KEY, &id_jag_claims(&p.issuer, &p.mcp, "jti-raw"));
    assert_eq!(present(fresh.clone()).await.status, 200);
    let replayed = present(fresh).await;
    assert_eq!(
        replayed.json()["error"],
        "invalid_grant",
        "{}",
        replayed.body
    );
    let mut other = id_jag_claims(&p.issuer, &p.mcp, "jti-other");
    other["client_id"] = json!("svc");
    assert_eq!(
        present(id_jag(&IDP_KEY, &other)).await.json()["error"],
        "invalid_grant"
    );
    let forged = id_jag(&[0x42; 32], &id_jag_claims(&p.issuer, &p.mcp, "jti-forged"));
    assert_eq!(present(forged).await.json()["error"], "invalid_grant");
}

async fn authorize_without_pkce_is_invalid_request(connect: Connector) {
    let p = protected(&connect).await;
    let client_id = p.public_client().await;
    let r = send(
        p.http
            .get(p.authorize_url(&[("client_id", &client_id), ("redirect_uri", REDIRECT)])),
    )
    .await;
    assert_eq!(r.status, 302);
    let location = r.header("location").unwrap();
    assert_eq!(param(location, "error").as_deref(), Some("invalid_request"));
    assert_eq!(param(location, "state").as_deref(), Some("s1"));
}

async fn a_wrong_code_verifier_is_invalid_grant(connect: Connector) {
    let p = protected(&connect).await;
    let (client_id, _, code) = p.public_client_with_code().await;
    let wrong = URL_SAFE_NO_PAD.encode([8u8; 32]);
    let form = redeeming(&client_id, &code, &wrong, REDIRECT);
    assert_invalid_grant(&p.exchange(&form).await);
}

async fn a_code_is_exchanged_once(connect: Connector) {
    let p = protected(&connect).await;
    let (client_id, verifier, code) = p.public_client_with_code().await;
    let form = redeeming(&client_id, &code, &verifier, REDIRECT);
    assert_eq!(p.exchange(&form).await.status, 200);
    assert_invalid_grant(&p.exchange(&form).await);
}

async fn redirect_uris_are_bound_exactly(connect: Connector) {
    let p = protected(&connect).await;
    let client_id = p.public_client().await;
    let (verifier, challenge) = pkce();
    // Not registered: refused without a redirect.
    let r = send(p.http.get(p.authorize_url(&[
        ("client_id", &client_id),
        ("redirect_uri", "http://127.0.0.1:9/callback/other"),
        ("code_challenge", &challenge),
        ("code_challenge_method", "S256"),
    ])))
    .await;
    assert_eq!(r.status, 400);
    assert!(r.header("location").is_none());
    // At the token endpoint, another redirect URI than at authorize.
    let code = p.code(&client_id, &challenge).await;
    let form = redeeming(&client_id, &code, &verifier, "http://127.0.0.1:9/elsewhere");
    assert_invalid_grant(&p.exchange(&form).await);
}

async fn registration_takes_https_or_loopback_redirects_only(connect: Connector) {
    let p = protected(&connect).await;
    for bad in ["http://app.example/cb", "ftp://127.0.0.1/cb", "custom:cb"] {
        let r = p.register(json!({"redirect_uris": [bad]})).await;
        assert_eq!(r.status, 400, "{bad}");
        assert_eq!(r.json()["error"], "invalid_redirect_uri", "{bad}");
        assert!(r.json()["error_description"].is_string());
    }
    let r = p
        .register(json!({"redirect_uris": ["https://app.example/cb"], "token_endpoint_auth_method": "private_key_jwt"}))
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"], "invalid_client_metadata");
    for good in [
        "https://app.example/cb",
        "http://127.0.0.1:8080/cb",
        "http://localhost/cb",
        "http://[::1]:3000/cb",
    ] {
        let r = p.register(json!({"redirect_uris": [good]})).await;
        assert_eq!(r.status, 201, "{good}: {}", r.body);
    }
}

async fn token_answers_are_never_cached(connect: Connector) {
    let p = protected(&connect).await;
    let ok = send(
        p.http
            .post(format!("{}/token", p.issuer))
            .basic_auth("svc", Some("svc-secret"))
            .form(&[("grant_type", "client_credentials"), ("scope", "mcp:tools")]),
    )
    .await;
    let refused = p
        .exchange(&[("grant_type", "authorization_code"), ("client_id", "svc")])
        .await;
    let unsupported = p
        .exchange(&[("grant_type", "password"), ("client_id", "nobody")])
        .await;
    assert_eq!((ok.status, refused.status), (200, 401));
    for r in [ok, refused, unsupported] {
        assert_eq!(r.header("cache-control"), Some("no-store"), "{}", r.status);
        assert_eq!(r.header("pragma"), Some("no-cache"), "{}", r.status);
    }
}

async fn registration_echoes_the_client_metadata(connect: Connector) {
    let p = protected(&connect).await;
    let r = p
        .register(json!({
            "redirect_uris": ["http://127.0.0.1:3000/cb"],
            "client_name": "Echo", "application_type": "native",
            "grant_types": ["authorization_code", "refresh_token"],
            "client_uri": "https://app.example"}))
        .await;
    assert_eq!(r.status, 201);
    let body = r.json();
    assert_eq!(body["application_type"], "native");
    assert_eq!(body["client_name"], "Echo");
    assert_eq!(body["client_uri"], "https://app.example");
    assert_eq!(body["redirect_uris"], json!(["http://127.0.0.1:3000/cb"]));
    assert_eq!(
        body["grant_types"],
        json!(["authorization_code", "refresh_token"])
    );
    assert!(body["client_id"].is_string());
    assert!(body["client_secret"].is_string());
    assert_eq!(body["client_secret_expires_at"], 0);
}

/// Calls the `whoami` tool and returns the text it answers with: the user the token
/// names.
async fn whoami(client: &Client) -> Value {
    let who = within("whoami", client.call_tool("whoami", JsonObject::new()))
        .await
        .unwrap();
    serde_json::to_value(&who).unwrap()["content"][0]["text"].take()
}
