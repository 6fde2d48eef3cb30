//! The server half end to end: our OAuth client against our resource server (in front
//! of a real MCP server over streamable HTTP) and our bundled authorization server, on
//! two loopback origins; then the refusals, request by request.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use futures::future::BoxFuture;
use modelctx_client::Client;
use modelctx_http::{StreamableHttpClientTransport, StreamableHttpService};
use modelctx_oauth::{
    AuthInfo, AuthorizationHandler, AuthorizationResponse, AuthorizationServer,
    AuthorizationServerConfig, InMemoryStore, IntrospectionVerifier, JwtVerifier, Login,
    OAuthClient, OAuthError, Operation, RegisteredClient, ResourceServer, ResourceServerConfig,
    TokenSet, TokenVerifier,
};
use modelctx_server::{Context, Server, ToolDef};
use modelctx_test::jose::{es256_jwt, now, public_jwk, thumbprint};
use modelctx_test::{text_of, within};

use crate::loopback::{client_credentials, granted, listener, serve};
use modelctx_types::{JsonObject, Tool};
use serde_json::{Value, json};
use sha2::Digest as _;

mod authorization_server;
mod callers;
mod client_assertions;
mod dpop;
mod dpop_jkt;
mod end_to_end;

const LIMIT: Duration = Duration::from_secs(20);

/// The MCP server: `whoami` answers with the verified caller, `admin` needs a scope of
/// its own.
fn mcp_server() -> Server {
    let whoami = ToolDef::with_schema(
        Tool::without_arguments("whoami"),
        |_args: JsonObject, cx: Context| async move {
            let who = cx
                .extensions()
                .get::<AuthInfo>()
                .ok_or("no verified caller reached the handler")?;
            let scopes: Vec<&str> = who.scopes.iter().map(String::as_str).collect();
            Ok::<_, String>(format!(
                "{} via {} [{}]",
                who.subject.as_deref().unwrap_or("?"),
                who.client_id.as_deref().unwrap_or("?"),
                scopes.join(" ")
            ))
        },
    );
    let admin = ToolDef::with_schema(
        Tool::without_arguments("admin"),
        |_args: JsonObject, _cx: Context| async move { Ok::<_, String>("admin done".to_owned()) },
    );
    Server::builder("protected", "1.0.0")
        .tool(whoami)
        .unwrap()
        .tool(admin)
        .unwrap()
        .build()
}

/// Makes the resource server's verifier, given the issuer.
type MakeVerifier = Box<dyn Fn(&str) -> Box<dyn TokenVerifier>>;

struct World {
    /// The MCP endpoint (the protected resource).
    mcp: String,
    /// A resource this authorization server also issues tokens for.
    other: String,
    issuer: String,
    auth: AuthorizationServer,
    rs: ResourceServer,
    http: reqwest::Client,
}

/// An HTTP client that follows no redirect: the tests read them.
fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

impl World {
    /// The authorization server on one origin and, on another, the MCP server behind
    /// the resource server with `verifier` (the JWT verifier fetching the JWKS when
    /// `None`).
    async fn start(verifier: Option<MakeVerifier>) -> Self {
        let (as_listener, issuer) = listener().await;
        let (mcp_listener, mcp_origin) = listener().await;
        let mcp = format!("{mcp_origin}/mcp");
        let other = format!("{mcp_origin}/other");
        let config = AuthorizationServerConfig::new(&issuer, &mcp)
            .scopes_supported(["mcp:tools", "mcp:admin"]);
        let mut config = config;
        config.resources.push(other.clone());
        let auth = AuthorizationServer::new(config, InMemoryStore::new(), |login: &Login<'_>| {
            (login.username == "alice" && login.password == "wonderland")
                .then(|| "alice".to_owned())
        })
        .unwrap();
        serve(as_listener, auth.router());

        let verifier: Box<dyn TokenVerifier> = match verifier {
            Some(make) => make(&issuer),
            None => Box::new(JwtVerifier::new(&issuer, format!("{issuer}/jwks"))),
        };
        let rs = ResourceServer::new(
            ResourceServerConfig::new(&mcp, &issuer)
                .scopes_supported(["mcp:tools"])
                .required_scopes(["mcp:tools"])
                .operation_scopes(Operation::Tool("admin".into()), ["mcp:admin"])
                .resource_name("protected test server")
                .max_body_bytes(64 * 1024),
            verifier,
        )
        .unwrap();
        let server = mcp_server();
        let service = StreamableHttpService::new(move |t| {
            server.serve(t);
        });
        let app = axum::Router::new()
            .nest_service("/mcp", service.router().layer(rs.layer()))
            .merge(rs.metadata_router());
        serve(mcp_listener, app);
        World {
            mcp,
            other,
            issuer,
            auth,
            rs,
            http: no_redirects(),
        }
    }

    /// An MCP client named `name` connected to the MCP endpoint through `oauth`; `how`
    /// says what failed if it does not connect.
    async fn connect(&self, oauth: OAuthClient, name: &str, how: &str) -> Client {
        let transport = StreamableHttpClientTransport::builder(&self.mcp)
            .auth(oauth)
            .build()
            .unwrap();
        within(
            LIMIT,
            "the client to connect",
            Client::builder(name, "1.0.0").connect(transport),
        )
        .await
        .expect(how)
    }

    /// An MCP `initialize` POST to the endpoint with `auth` as the Authorization header.
    async fn initialize(&self, url: &str, auth: Option<&str>) -> reqwest::Response {
        let mut rb = self
            .http
            .post(url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(initialize().to_string());
        if let Some(auth) = auth {
            rb = rb.header("authorization", auth);
        }
        within(LIMIT, "an answer", rb.send()).await.unwrap()
    }

    /// An MCP `initialize` POST to the endpoint with `token` as its bearer token.
    async fn initialize_as(&self, token: &str) -> reqwest::Response {
        self.initialize(&self.mcp, Some(&format!("Bearer {token}")))
            .await
    }

    /// The challenge refusing an `initialize` with `token` as its bearer token, the
    /// refusal's status checked to be `status`.
    async fn challenge_to(&self, token: &str, status: u16) -> String {
        let r = self.initialize_as(token).await;
        assert_eq!(r.status(), status);
        challenge(&r)
    }

    /// A POST to the MCP endpoint as a client sends it, `authorization` its
    /// Authorization header; its body still to add.
    fn post(&self, authorization: &str) -> reqwest::RequestBuilder {
        self.http
            .post(&self.mcp)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("authorization", authorization)
    }

    /// A POST of `body` in the 2025-11-25 session `session`.
    fn post_in(&self, session: &str, authorization: &str, body: &Value) -> reqwest::RequestBuilder {
        self.post(authorization)
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25")
            .body(body.to_string())
    }

    /// A client-credentials token request by the confidential client `client`
    /// (registered with [`World::register_confidential`]) with `fields` added.
    fn client_credentials(&self, client: &str, fields: &[(&str, &str)]) -> reqwest::RequestBuilder {
        client_credentials(&self.http, &self.issuer, client, fields)
    }

    /// Registers the confidential client `id`, its secret `{id}-secret`, without
    /// redirect URIs.
    async fn register_confidential(&self, id: &str) {
        self.auth
            .register_client(RegisteredClient::confidential(
                id,
                &format!("{id}-secret"),
                Vec::<String>::new(),
            ))
            .await
            .unwrap();
    }

    /// A confidential client registered ahead of time, and a client-credentials token
    /// for `resource` with `scope`.
    async fn service_token(&self, resource: &str, scope: &str) -> String {
        self.register_confidential("svc").await;
        granted(self.client_credentials("svc", &[("scope", scope), ("resource", resource)])).await
    }
}

/// An MCP `initialize` request of a 2025-11-25 client.
fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
}

/// The JSON answer to `request`.
async fn json_answer(request: reqwest::RequestBuilder) -> Value {
    within(LIMIT, "a JSON answer", request.send())
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// The text of the page at `url`.
async fn page(http: &reqwest::Client, url: &str) -> String {
    within(LIMIT, "a page", http.get(url).send())
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// Our client for the MCP endpoint, named `name`, authorizing through `user`.
fn our_client(
    world: &World,
    user: impl AuthorizationHandler,
    name: &str,
) -> modelctx_oauth::OAuthClientBuilder {
    OAuthClient::builder(&world.mcp)
        .authorization_code(user)
        .client_name(name, None)
}

/// The tokens of our client with DPoP on, named `name` and authorizing through `user`
/// (who logs in as alice), once it has connected and called as alice: bound to its key.
async fn dpop_tokens(world: &World, user: impl AuthorizationHandler, name: &str) -> TokenSet {
    let oauth = our_client(world, user, name).dpop(true).build().unwrap();
    let client = world
        .connect(oauth.clone(), "e2e", "connected with DPoP")
        .await;
    assert!(whoami(&client).await.starts_with("alice via "));
    let tokens = oauth.tokens().await.unwrap();
    assert_eq!(tokens.token_type, "DPoP");
    tokens
}

/// The answer of the `whoami` tool: the caller as the handler sees it.
async fn whoami(client: &Client) -> String {
    let who = within(
        LIMIT,
        "whoami",
        client.call_tool("whoami", JsonObject::new()),
    )
    .await
    .unwrap();
    text_of(&who)
}

fn challenge(r: &reqwest::Response) -> String {
    r.headers()
        .get("www-authenticate")
        .expect("a WWW-Authenticate challenge")
        .to_str()
        .unwrap()
        .to_owned()
}

/// A user at a browser: opens the authorization URL, logs in on the consent page and
/// approves, and hands back the redirect's parameters.
#[derive(Clone)]
struct User {
    password: &'static str,
    consents: Arc<AtomicUsize>,
    scopes_asked: Arc<Mutex<Vec<String>>>,
    /// The authorization URLs the user was sent to.
    urls: Arc<Mutex<Vec<String>>>,
}

impl User {
    fn alice() -> Self {
        Self {
            password: "wonderland",
            consents: Arc::default(),
            scopes_asked: Arc::default(),
            urls: Arc::default(),
        }
    }
}

const REDIRECT: &str = "http://127.0.0.1:9/callback";

/// The value of the hidden `name` field of a page.
fn field(page: &str, name: &str) -> String {
    let marker = format!("name=\"{name}\" value=\"");
    let start = page.find(&marker).expect("the field is on the page") + marker.len();
    let end = start + page[start..].find('"').unwrap();
    page[start..end].to_owned()
}

fn query_param(url: &str, name: &str) -> Option<String> {
    let url = url::Url::parse(url).unwrap();
    url.query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// Logs in on the consent page at `url` and approves; the redirect's `Location`.
async fn consent(http: &reqwest::Client, url: &str, password: &str) -> String {
    let page = http.get(url).send().await.unwrap();
    assert_eq!(page.status(), 200, "the consent page");
    assert_eq!(page.headers()["x-frame-options"], "DENY");
    let page = page.text().await.unwrap();
    let action = url.split('?').next().unwrap().to_owned();
    let answer = http
        .post(action)
        .form(&[
            ("txn", field(&page, "txn").as_str()),
            ("username", "alice"),
            ("password", password),
            ("decision", "approve"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 302, "approval redirects back");
    answer.headers()["location"].to_str().unwrap().to_owned()
}

impl AuthorizationHandler for User {
    fn redirect_uri(&self) -> String {
        REDIRECT.into()
    }

    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
    ) -> BoxFuture<'a, Result<AuthorizationResponse, OAuthError>> {
        Box::pin(async move {
            self.consents.fetch_add(1, Ordering::SeqCst);
            self.urls.lock().unwrap().push(authorization_url.to_owned());
            self.scopes_asked
                .lock()
                .unwrap()
                .push(query_param(authorization_url, "scope").unwrap_or_default());
            let location = consent(&no_redirects(), authorization_url, self.password).await;
            AuthorizationResponse::from_redirect_url(&location)
        })
    }
}

/// An access token with these claims, signed by a P-256 key of the test's own.
fn signed(key: &p256::ecdsa::SigningKey, kid: &str, claims: &Value) -> String {
    es256_jwt(
        key,
        &json!({"alg": "ES256", "typ": "at+jwt", "kid": kid}),
        claims,
    )
}

fn pkce() -> (String, String) {
    let verifier = URL_SAFE_NO_PAD.encode([42u8; 32]);
    let challenge = URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier.as_bytes()));
    (verifier, challenge)
}

impl World {
    async fn register(&self, body: Value) -> reqwest::Response {
        self.http
            .post(format!("{}/register", self.issuer))
            .json(&body)
            .send()
            .await
            .unwrap()
    }

    /// A public client registered with `REDIRECT`.
    async fn public_client(&self) -> String {
        let r = self
            .register(
                json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"], "client_name": "raw"}),
            )
            .await;
        assert_eq!(r.status(), 201);
        let body: Value = r.json().await.unwrap();
        body["client_id"].as_str().unwrap().to_owned()
    }

    fn authorize_url(&self, client_id: &str, extra: &[(&str, &str)]) -> String {
        let mut url = url::Url::parse(&format!("{}/authorize", self.issuer)).unwrap();
        url.query_pairs_mut()
            .append_pair("response_type", "code")
            .append_pair("client_id", client_id)
            .append_pair("state", "st-1")
            .append_pair("scope", "mcp:tools")
            .append_pair("resource", &self.mcp)
            .extend_pairs(extra);
        url.to_string()
    }

    /// A code for `client_id` with `challenge`, through the consent page.
    async fn code(&self, client_id: &str, challenge: &str) -> String {
        let url = self.authorize_url(
            client_id,
            &[
                ("redirect_uri", REDIRECT),
                ("code_challenge", challenge),
                ("code_challenge_method", "S256"),
            ],
        );
        let location = consent(&self.http, &url, "wonderland").await;
        assert!(location.starts_with(REDIRECT), "{location}");
        assert_eq!(query_param(&location, "state").as_deref(), Some("st-1"));
        assert_eq!(
            query_param(&location, "iss").as_deref(),
            Some(self.issuer.as_str())
        );
        query_param(&location, "code").expect("a code")
    }

    async fn exchange(&self, form: &[(&str, &str)]) -> (u16, reqwest::header::HeaderMap, Value) {
        let r = self
            .http
            .post(format!("{}/token", self.issuer))
            .form(form)
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let headers = r.headers().clone();
        (status, headers, r.json().await.unwrap())
    }
}

/// A DPoP proof by `key` for `htm` `htu`, bound to `token` when given.
fn dpop_proof(key: &p256::ecdsa::SigningKey, htm: &str, htu: &str, token: Option<&str>) -> String {
    let header = json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": public_jwk(key, None)});
    // Unique per proof, however fast they are made.
    static PROOFS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = PROOFS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let jti = format!("{}-{n}", URL_SAFE_NO_PAD.encode(now().to_be_bytes()));
    let mut claims = json!({"htm": htm, "htu": htu, "iat": now(), "jti": jti});
    if let Some(token) = token {
        claims["ath"] = URL_SAFE_NO_PAD
            .encode(sha2::Sha256::digest(token.as_bytes()))
            .into();
    }
    es256_jwt(key, &header, &claims)
}

/// A token endpoint's answer as a refusal is checked: its status and OAuth error code.
fn error_of(status: u16, body: &Value) -> (u16, Option<&str>) {
    (status, body["error"].as_str())
}

/// The claims of a JWT (signature not checked).
fn claims_of(jwt: &str) -> Value {
    let part = jwt.split('.').nth(1).unwrap();
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
}

impl World {
    /// A code for `client_id` bound to the DPoP key `jkt`.
    async fn bound_code(&self, client_id: &str, challenge: &str, jkt: &str) -> String {
        let url = self.authorize_url(
            client_id,
            &[
                ("redirect_uri", REDIRECT),
                ("code_challenge", challenge),
                ("code_challenge_method", "S256"),
                ("dpop_jkt", jkt),
            ],
        );
        let location = consent(&self.http, &url, "wonderland").await;
        query_param(&location, "code").expect("a code")
    }

    /// Exchanges `code`, with a DPoP proof by `key` when given.
    async fn exchange_with_proof(
        &self,
        client_id: &str,
        code: &str,
        verifier: &str,
        key: Option<&p256::ecdsa::SigningKey>,
    ) -> (u16, Value) {
        let token_url = format!("{}/token", self.issuer);
        let mut rb = self.http.post(&token_url).form(&[
            ("grant_type", "authorization_code"),
            ("client_id", client_id),
            ("code", code),
            ("code_verifier", verifier),
            ("redirect_uri", REDIRECT),
        ]);
        if let Some(key) = key {
            rb = rb.header("dpop", dpop_proof(key, "POST", &token_url, None));
        }
        let r = within(LIMIT, "the token endpoint", rb.send())
            .await
            .unwrap();
        (r.status().as_u16(), r.json().await.unwrap())
    }
}

/// A client assertion by `key` with these claims.
fn assertion(key: &p256::ecdsa::SigningKey, claims: &Value) -> String {
    es256_jwt(key, &json!({"alg": "ES256", "typ": "JWT"}), claims)
}

const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
