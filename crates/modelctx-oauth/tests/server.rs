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
    TokenVerifier,
};
use modelctx_server::{Context, Server, ToolDef};
use modelctx_test::{text_of, within};
use modelctx_types::{JsonObject, Tool};
use p256::ecdsa::signature::Signer as _;
use serde_json::{Value, json};
use sha2::Digest as _;

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

async fn listener() -> (tokio::net::TcpListener, String) {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", l.local_addr().unwrap());
    (l, origin)
}

fn serve(l: tokio::net::TcpListener, app: axum::Router) {
    tokio::spawn(async move { axum::serve(l, app).await });
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
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
        }
    }

    /// An MCP `initialize` POST to the endpoint with `auth` as the Authorization header.
    async fn initialize(&self, url: &str, auth: Option<&str>) -> reqwest::Response {
        let mut rb = self
            .http
            .post(url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(
                json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "1"}}})
                .to_string(),
            );
        if let Some(auth) = auth {
            rb = rb.header("authorization", auth);
        }
        within(LIMIT, "an answer", rb.send()).await.unwrap()
    }

    /// A confidential client registered ahead of time, and a client-credentials token
    /// for `resource` with `scope`.
    async fn service_token(&self, resource: &str, scope: &str) -> String {
        self.auth
            .register_client(RegisteredClient::confidential(
                "svc",
                "svc-secret",
                Vec::<String>::new(),
            ))
            .await
            .unwrap();
        let answer = self
            .http
            .post(format!("{}/token", self.issuer))
            .basic_auth("svc", Some("svc-secret"))
            .form(&[
                ("grant_type", "client_credentials"),
                ("scope", scope),
                ("resource", resource),
            ])
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200);
        let body: Value = answer.json().await.unwrap();
        body["access_token"].as_str().unwrap().to_owned()
    }
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
}

impl User {
    fn alice() -> Self {
        Self {
            password: "wonderland",
            consents: Arc::default(),
            scopes_asked: Arc::default(),
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
            self.scopes_asked
                .lock()
                .unwrap()
                .push(query_param(authorization_url, "scope").unwrap_or_default());
            let http = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap();
            let location = consent(&http, authorization_url, self.password).await;
            AuthorizationResponse::from_redirect_url(&location)
        })
    }
}

#[tokio::test]
async fn our_client_authorizes_calls_a_tool_and_steps_up() {
    let world = World::start(None).await;
    let user = User::alice();
    let oauth = OAuthClient::builder(&world.mcp)
        .authorization_code(user.clone())
        .client_name("e2e", None)
        .build()
        .unwrap();
    let transport = StreamableHttpClientTransport::builder(&world.mcp)
        .auth(oauth.clone())
        .build()
        .unwrap();
    let client = within(
        LIMIT,
        "the client to connect",
        Client::builder("e2e", "1.0.0").connect(transport),
    )
    .await
    .expect("connected through OAuth");

    // Discovery, dynamic registration, consent, token: the handler sees the caller.
    let who = within(
        LIMIT,
        "whoami",
        client.call_tool("whoami", JsonObject::new()),
    )
    .await
    .unwrap();
    let text = text_of(&who);
    assert!(text.starts_with("alice via "), "{text}");
    assert!(text.ends_with("[mcp:tools]"), "{text}");
    assert_eq!(user.consents.load(Ordering::SeqCst), 1);
    assert_eq!(user.scopes_asked.lock().unwrap()[0], "mcp:tools");

    // `admin` needs mcp:admin: 403 insufficient_scope, the client asks again with the
    // union of scopes, and the call goes through.
    let admin = within(LIMIT, "admin", client.call_tool("admin", JsonObject::new()))
        .await
        .unwrap();
    assert_eq!(text_of(&admin), "admin done");
    assert_eq!(user.consents.load(Ordering::SeqCst), 2);
    let second = user.scopes_asked.lock().unwrap()[1].clone();
    let mut asked: Vec<&str> = second.split(' ').collect();
    asked.sort_unstable();
    assert_eq!(asked, ["mcp:admin", "mcp:tools"]);
    let who = within(
        LIMIT,
        "whoami",
        client.call_tool("whoami", JsonObject::new()),
    )
    .await
    .unwrap();
    assert!(text_of(&who).ends_with("[mcp:admin mcp:tools]"));
    let tokens = oauth.tokens().await.expect("tokens kept");
    assert!(tokens.refresh_token.is_some(), "a refresh token came too");
}

#[tokio::test]
async fn metadata_documents_describe_both_servers() {
    let world = World::start(None).await;
    let origin = world.mcp.trim_end_matches("/mcp");
    let prm_url = format!("{origin}/.well-known/oauth-protected-resource/mcp");
    assert_eq!(world.rs.metadata_url(), prm_url);
    let prm: Value = world
        .http
        .get(&prm_url)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(prm["resource"], world.mcp.as_str());
    assert_eq!(prm["authorization_servers"], json!([world.issuer]));
    assert_eq!(prm["scopes_supported"], json!(["mcp:tools", "mcp:admin"]));
    assert_eq!(prm["bearer_methods_supported"], json!(["header"]));
    assert_eq!(prm["resource_name"], "protected test server");

    let asm: Value = world
        .http
        .get(format!(
            "{}/.well-known/oauth-authorization-server",
            world.issuer
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(asm["issuer"], world.issuer.as_str());
    for endpoint in [
        "authorization",
        "token",
        "registration",
        "revocation",
        "introspection",
    ] {
        let url = asm[format!("{endpoint}_endpoint")].as_str().unwrap();
        assert!(url.starts_with(&world.issuer), "{endpoint}: {url}");
    }
    assert_eq!(asm["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(asm["authorization_response_iss_parameter_supported"], true);
    assert_eq!(asm["jwks_uri"], format!("{}/jwks", world.issuer));
}

#[tokio::test]
async fn requests_without_a_good_token_are_challenged() {
    let world = World::start(None).await;
    let prm = world.rs.metadata_url().to_owned();

    // No token: 401, where the metadata is, no error code.
    let r = world.initialize(&world.mcp, None).await;
    assert_eq!(r.status(), 401);
    let c = challenge(&r);
    assert!(c.starts_with("Bearer "), "{c}");
    assert!(c.contains(&format!("resource_metadata=\"{prm}\"")), "{c}");
    assert!(c.contains("scope=\"mcp:tools\""), "{c}");
    assert!(!c.contains("error="), "{c}");

    // A good token in the query string is ignored: still unauthenticated.
    let token = world.service_token(&world.mcp, "mcp:tools").await;
    let r = world
        .initialize(&format!("{}?access_token={token}", world.mcp), None)
        .await;
    assert_eq!(r.status(), 401);
    assert!(!challenge(&r).contains("error="));
    // The same token in the header is accepted.
    let r = world
        .initialize(&world.mcp, Some(&format!("Bearer {token}")))
        .await;
    assert_eq!(r.status(), 200);

    // Malformed: not a JWT, bad characters, two tokens.
    for bad in ["Bearer not-a-jwt", "Bearer a b", "Bearer", "Bearer x.y.z"] {
        let r = world.initialize(&world.mcp, Some(bad)).await;
        assert_eq!(r.status(), 401, "{bad}");
        let c = challenge(&r);
        assert!(c.contains("error=\"invalid_token\""), "{bad}: {c}");
        assert!(c.contains(&format!("resource_metadata=\"{prm}\"")), "{c}");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["error"], "invalid_token");
    }

    // A token of this issuer for another resource: refused on audience.
    let elsewhere = world.service_token(&world.other, "mcp:tools").await;
    let r = world
        .initialize(&world.mcp, Some(&format!("Bearer {elsewhere}")))
        .await;
    assert_eq!(r.status(), 401);
    let c = challenge(&r);
    assert!(c.contains("error=\"invalid_token\""), "{c}");
    assert!(c.contains("audience"), "{c}");
    // Nothing about the token is echoed.
    assert!(!c.contains(&elsewhere));

    // Valid token without the scope every request needs: 403.
    let weak = world.service_token(&world.mcp, "").await;
    let r = world
        .initialize(&world.mcp, Some(&format!("Bearer {weak}")))
        .await;
    assert_eq!(r.status(), 403);
    let c = challenge(&r);
    assert!(c.contains("error=\"insufficient_scope\""), "{c}");
    assert!(c.contains("scope=\"mcp:tools\""), "{c}");
    assert!(c.contains(&format!("resource_metadata=\"{prm}\"")), "{c}");
}

#[tokio::test]
async fn a_tool_scope_is_a_403_with_the_scopes_needed() {
    let world = World::start(None).await;
    let token = world.service_token(&world.mcp, "mcp:tools").await;
    let bearer = format!("Bearer {token}");
    let r = world.initialize(&world.mcp, Some(&bearer)).await;
    assert_eq!(r.status(), 200);
    let session = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let call = |name: &str| {
        world
            .http
            .post(&world.mcp)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("authorization", &bearer)
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-11-25")
            .body(
                json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": name, "arguments": {}}})
                .to_string(),
            )
            .send()
    };
    let r = within(LIMIT, "admin", call("admin")).await.unwrap();
    assert_eq!(r.status(), 403);
    let c = challenge(&r);
    assert!(c.contains("error=\"insufficient_scope\""), "{c}");
    assert!(c.contains("scope=\"mcp:admin mcp:tools\""), "{c}");
    let r = within(LIMIT, "whoami", call("whoami")).await.unwrap();
    assert_eq!(r.status(), 200);

    // A body larger than the resource server reads to find the operation: 413.
    let big = world
        .http
        .post(&world.mcp)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("authorization", &bearer)
        .body(vec![b' '; 65 * 1024])
        .send()
        .await
        .unwrap();
    assert_eq!(big.status(), 413);
}

/// A P-256 key of the test's own, and a JWT it signs.
fn signed(key: &p256::ecdsa::SigningKey, kid: &str, claims: &Value) -> String {
    let header = json!({"alg": "ES256", "typ": "at+jwt", "kid": kid});
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let sig: p256::ecdsa::Signature = key.sign(input.as_bytes());
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.to_bytes()))
}

fn jwk(key: &p256::ecdsa::SigningKey, kid: &str) -> Value {
    let point = key.verifying_key().to_encoded_point(false);
    json!({"kty": "EC", "crv": "P-256", "kid": kid,
        "x": URL_SAFE_NO_PAD.encode(point.x().unwrap()),
        "y": URL_SAFE_NO_PAD.encode(point.y().unwrap())})
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[tokio::test]
async fn the_jwt_verifier_checks_lifetime_issuer_and_signature() {
    let key = p256::ecdsa::SigningKey::from_slice(&[3u8; 32]).unwrap();
    let stranger = p256::ecdsa::SigningKey::from_slice(&[4u8; 32]).unwrap();
    let jwks = json!({"keys": [jwk(&key, "k1")]});
    let verifier = JwtVerifier::with_jwks("https://as.example", &jwks).unwrap();
    let claims = |over: Value| {
        let mut c = json!({"iss": "https://as.example", "sub": "bob", "aud": "https://mcp.example/mcp",
            "exp": now() + 300, "scope": "a b"});
        for (k, v) in over.as_object().unwrap() {
            c[k] = v.clone();
        }
        c
    };
    let good = verifier
        .verify(&signed(&key, "k1", &claims(json!({}))))
        .await
        .unwrap();
    assert_eq!(good.subject.as_deref(), Some("bob"));
    assert!(good.has_scopes(["a", "b"]));
    assert_eq!(good.audience, ["https://mcp.example/mcp"]);

    let refused = [
        (
            "expired",
            signed(&key, "k1", &claims(json!({"exp": now() - 120}))),
        ),
        ("no exp", {
            let mut c = claims(json!({}));
            c.as_object_mut().unwrap().remove("exp");
            signed(&key, "k1", &c)
        }),
        (
            "not yet",
            signed(&key, "k1", &claims(json!({"nbf": now() + 600}))),
        ),
        (
            "issuer",
            signed(&key, "k1", &claims(json!({"iss": "https://evil.example"}))),
        ),
        ("stranger", signed(&stranger, "k1", &claims(json!({})))),
        ("unknown kid", signed(&key, "k2", &claims(json!({})))),
    ];
    for (what, token) in refused {
        let e = verifier.verify(&token).await.expect_err(what);
        assert!(e.is_invalid(), "{what}");
    }
    // Within the leeway an expired token still counts (clock skew).
    let skewed = signed(&key, "k1", &claims(json!({"exp": now() - 10})));
    assert!(verifier.verify(&skewed).await.is_ok());
    // alg "none" with the signature stripped.
    let good_token = signed(&key, "k1", &claims(json!({})));
    let mut parts = good_token.split('.');
    let (_, body) = (parts.next(), parts.next().unwrap());
    let none = format!("{}.{body}.", URL_SAFE_NO_PAD.encode(r#"{"alg":"none"}"#));
    assert!(verifier.verify(&none).await.unwrap_err().is_invalid());
}

#[tokio::test]
async fn the_jwks_is_fetched_again_for_an_unknown_key_id() {
    let old = p256::ecdsa::SigningKey::from_slice(&[5u8; 32]).unwrap();
    let new = p256::ecdsa::SigningKey::from_slice(&[6u8; 32]).unwrap();
    let jwks = Arc::new(Mutex::new(json!({"keys": [jwk(&old, "old")]})));
    let fetches = Arc::new(AtomicUsize::new(0));
    let (l, origin) = listener().await;
    let served = jwks.clone();
    let counted = fetches.clone();
    serve(
        l,
        axum::Router::new().route(
            "/jwks",
            axum::routing::get(move || {
                counted.fetch_add(1, Ordering::SeqCst);
                let doc = served.lock().unwrap().clone();
                async move { axum::Json(doc) }
            }),
        ),
    );
    let verifier = JwtVerifier::new("https://as.example", format!("{origin}/jwks"))
        .min_refresh_interval(Duration::ZERO);
    let claims = json!({"iss": "https://as.example", "sub": "s", "aud": "x", "exp": now() + 60});
    verifier
        .verify(&signed(&old, "old", &claims))
        .await
        .unwrap();
    verifier
        .verify(&signed(&old, "old", &claims))
        .await
        .unwrap();
    assert_eq!(fetches.load(Ordering::SeqCst), 1, "cached");
    // The authorization server rotates its key.
    *jwks.lock().unwrap() = json!({"keys": [jwk(&old, "old"), jwk(&new, "new")]});
    verifier
        .verify(&signed(&new, "new", &claims))
        .await
        .unwrap();
    assert_eq!(
        fetches.load(Ordering::SeqCst),
        2,
        "fetched again for the new kid"
    );

    // With the default interval, made-up key ids do not cause a fetch each.
    let verifier = JwtVerifier::new("https://as.example", format!("{origin}/jwks"));
    verifier
        .verify(&signed(&old, "old", &claims))
        .await
        .unwrap();
    for _ in 0..3 {
        assert!(
            verifier
                .verify(&signed(&old, "nope", &claims))
                .await
                .is_err()
        );
    }
    assert_eq!(fetches.load(Ordering::SeqCst), 3);

    // No JWKS reachable and no key known: 503-worthy, not "invalid".
    let down = JwtVerifier::new("https://as.example", "http://127.0.0.1:9/jwks");
    let e = down
        .verify(&signed(&old, "old", &claims))
        .await
        .unwrap_err();
    assert!(e.is_unavailable(), "{e}");
}

#[tokio::test]
async fn introspection_verifies_opaque_tokens_with_the_audience_checked() {
    let world = World::start(Some(Box::new(|issuer: &str| {
        Box::new(
            IntrospectionVerifier::new(format!("{issuer}/introspect"), "rs", "rs-secret")
                .issuer(issuer),
        )
    })))
    .await;
    world
        .auth
        .register_client(RegisteredClient::confidential(
            "rs",
            "rs-secret",
            Vec::<String>::new(),
        ))
        .await
        .unwrap();
    let token = world.service_token(&world.mcp, "mcp:tools").await;
    let r = world
        .initialize(&world.mcp, Some(&format!("Bearer {token}")))
        .await;
    assert_eq!(r.status(), 200);
    let elsewhere = world.service_token(&world.other, "mcp:tools").await;
    let r = world
        .initialize(&world.mcp, Some(&format!("Bearer {elsewhere}")))
        .await;
    assert_eq!(r.status(), 401);
    assert!(challenge(&r).contains("invalid_token"));
    let r = world
        .initialize(&world.mcp, Some("Bearer forged.token.here"))
        .await;
    assert_eq!(r.status(), 401);
}

// ---- the authorization server, request by request ----

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

#[tokio::test]
async fn codes_are_single_use_verifier_bound_and_redirect_bound() {
    let world = World::start(None).await;
    let client_id = world.public_client().await;
    let (verifier, challenge) = pkce();

    let code = world.code(&client_id, &challenge).await;
    let form = |code: &str, verifier: &str, redirect: &str| {
        vec![
            ("grant_type", "authorization_code".to_owned()),
            ("client_id", client_id.clone()),
            ("code", code.to_owned()),
            ("code_verifier", verifier.to_owned()),
            ("redirect_uri", redirect.to_owned()),
        ]
    };
    let send = |f: Vec<(&'static str, String)>| {
        let world = &world;
        async move {
            let pairs: Vec<(&str, &str)> = f.iter().map(|(k, v)| (*k, v.as_str())).collect();
            world.exchange(&pairs).await
        }
    };
    let good = form(&code, &verifier, REDIRECT);
    let (status, headers, body) = send(good.clone()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(headers["pragma"], "no-cache");
    assert_eq!(body["token_type"], "Bearer");
    let access = body["access_token"].as_str().unwrap().to_owned();
    let refresh = body["refresh_token"].as_str().unwrap().to_owned();
    // The token works at the resource server (audience = the MCP endpoint).
    let r = world
        .initialize(&world.mcp, Some(&format!("Bearer {access}")))
        .await;
    assert_eq!(r.status(), 200);

    // Replayed code.
    let (status, headers, body) = send(good).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant"))
    );
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(headers["pragma"], "no-cache");

    // Wrong verifier (and the code is spent by the attempt).
    let code = world.code(&client_id, &challenge).await;
    let wrong = URL_SAFE_NO_PAD.encode([1u8; 32]);
    let (status, _, body) = send(form(&code, &wrong, REDIRECT)).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant"))
    );
    let (status, _, _) = send(form(&code, &verifier, REDIRECT)).await;
    assert_eq!(status, 400);

    // Redirect URI differing from the authorization request's.
    let code = world.code(&client_id, &challenge).await;
    let (status, _, body) = send(form(&code, &verifier, "http://127.0.0.1:9/other")).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant"))
    );

    // Refresh tokens rotate: the new one works, the old one is spent.
    let refresh_form = |token: &str| {
        vec![
            ("grant_type", "refresh_token".to_owned()),
            ("client_id", client_id.clone()),
            ("refresh_token", token.to_owned()),
        ]
    };
    // The first code was presented twice: what it gave is revoked.
    let (status, _, body) = send(refresh_form(&refresh)).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant"))
    );

    let code = world.code(&client_id, &challenge).await;
    let (status, _, body) = send(form(&code, &verifier, REDIRECT)).await;
    assert_eq!(status, 200, "{body}");
    let refresh = body["refresh_token"].as_str().unwrap().to_owned();
    let (status, _, body) = send(refresh_form(&refresh)).await;
    assert_eq!(status, 200, "{body}");
    let rotated = body["refresh_token"].as_str().unwrap().to_owned();
    assert_ne!(rotated, refresh);
    let (status, _, body) = send(refresh_form(&rotated)).await;
    assert_eq!(status, 200, "{body}");
    let newest = body["refresh_token"].as_str().unwrap().to_owned();
    // A spent refresh token presented again: refused, and its family with it.
    let (status, _, body) = send(refresh_form(&refresh)).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant"))
    );
    let (status, _, body) = send(refresh_form(&newest)).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant"))
    );
}

#[tokio::test]
async fn authorize_refuses_without_pkce_and_never_redirects_to_unregistered_uris() {
    let world = World::start(None).await;
    let client_id = world.public_client().await;
    let (_, challenge) = pkce();

    // An unregistered redirect URI: an error page, no redirect.
    let url = world.authorize_url(
        &client_id,
        &[
            ("redirect_uri", "http://127.0.0.1:9/evil"),
            ("code_challenge", &challenge),
            ("code_challenge_method", "S256"),
        ],
    );
    let r = world.http.get(&url).send().await.unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.headers().get("location").is_none());

    // No PKCE: invalid_request, back at the (registered) redirect URI with state and iss.
    for extra in [
        vec![("redirect_uri", REDIRECT)],
        vec![
            ("redirect_uri", REDIRECT),
            ("code_challenge", challenge.as_str()),
        ],
        vec![
            ("redirect_uri", REDIRECT),
            ("code_challenge", challenge.as_str()),
            ("code_challenge_method", "plain"),
        ],
    ] {
        let r = world
            .http
            .get(world.authorize_url(&client_id, &extra))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 302);
        let location = r.headers()["location"].to_str().unwrap();
        assert!(location.starts_with(REDIRECT));
        assert_eq!(
            query_param(location, "error").as_deref(),
            Some("invalid_request")
        );
        assert_eq!(query_param(location, "state").as_deref(), Some("st-1"));
        assert_eq!(
            query_param(location, "iss").as_deref(),
            Some(world.issuer.as_str())
        );
    }

    // A failed login shows the page again; deny sends access_denied back.
    let url = world.authorize_url(
        &client_id,
        &[
            ("redirect_uri", REDIRECT),
            ("code_challenge", &challenge),
            ("code_challenge_method", "S256"),
        ],
    );
    let page = world
        .http
        .get(&url)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let txn = field(&page, "txn");
    let post = |decision: &'static str, password: &'static str| {
        world
            .http
            .post(format!("{}/authorize", world.issuer))
            .form(&[
                ("txn", txn.as_str()),
                ("username", "alice"),
                ("password", password),
                ("decision", decision),
            ])
            .send()
    };
    let again = post("approve", "guess").await.unwrap();
    assert_eq!(again.status(), 200);
    assert!(again.text().await.unwrap().contains("The login failed"));
    let denied = post("deny", "").await.unwrap();
    assert_eq!(denied.status(), 302);
    let location = denied.headers()["location"].to_str().unwrap();
    assert_eq!(
        query_param(location, "error").as_deref(),
        Some("access_denied")
    );
    // The request is answered: the form cannot be replayed.
    assert_eq!(post("approve", "wonderland").await.unwrap().status(), 400);
}

#[tokio::test]
async fn registration_checks_redirect_uris_and_echoes_the_metadata() {
    let world = World::start(None).await;
    for bad in [
        "http://example.com/callback",
        "javascript:alert(1)",
        "https://example.com/cb#frag",
        "not a url",
    ] {
        let r = world.register(json!({"redirect_uris": [bad]})).await;
        assert_eq!(r.status(), 400, "{bad}");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["error"], "invalid_redirect_uri", "{bad}");
    }
    let r = world.register(json!({"redirect_uris": "https://x"})).await;
    assert_eq!(r.status(), 400);
    let r = world
        .register(json!({"redirect_uris": ["https://app.example/cb"], "grant_types": ["password"]}))
        .await;
    assert_eq!(
        r.json::<Value>().await.unwrap()["error"],
        "invalid_client_metadata"
    );

    let r = world
        .register(json!({
            "redirect_uris": ["https://app.example/cb", "http://localhost:8080/cb", "http://[::1]/cb"],
            "client_name": "Native", "application_type": "native",
            "software_id": "abc", "scope": "mcp:tools"}))
        .await;
    assert_eq!(r.status(), 201);
    assert_eq!(r.headers()["cache-control"], "no-store");
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["application_type"], "native");
    assert_eq!(body["client_name"], "Native");
    assert_eq!(body["software_id"], "abc");
    assert_eq!(body["scope"], "mcp:tools");
    assert_eq!(body["token_endpoint_auth_method"], "client_secret_basic");
    assert_eq!(body["grant_types"], json!(["authorization_code"]));
    assert!(
        body["client_secret"]
            .as_str()
            .is_some_and(|s| s.len() >= 43)
    );
    assert_eq!(body["client_secret_expires_at"], 0);
    assert!(body["client_id_issued_at"].as_u64().is_some());

    // A public client gets no secret; a body that is not JSON is an error body too.
    let r = world
        .register(json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"}))
        .await;
    let body: Value = r.json().await.unwrap();
    assert!(body.get("client_secret").is_none());
    assert!(
        body.get("application_type").is_none(),
        "no default substituted"
    );
    let r = world
        .http
        .post(format!("{}/register", world.issuer))
        .body("{")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert_eq!(
        r.json::<Value>().await.unwrap()["error"],
        "invalid_client_metadata"
    );
}

#[tokio::test]
async fn client_credentials_need_the_secret_and_revoked_refresh_tokens_stop() {
    let world = World::start(None).await;
    let token = world.service_token(&world.mcp, "mcp:tools").await;
    let r = world
        .initialize(&world.mcp, Some(&format!("Bearer {token}")))
        .await;
    assert_eq!(r.status(), 200);
    let bad = world
        .http
        .post(format!("{}/token", world.issuer))
        .basic_auth("svc", Some("wrong"))
        .form(&[("grant_type", "client_credentials")])
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 401);
    assert_eq!(bad.headers()["pragma"], "no-cache");
    assert_eq!(
        bad.json::<Value>().await.unwrap()["error"],
        "invalid_client"
    );
    let (status, _, body) = world
        .exchange(&[
            ("grant_type", "client_credentials"),
            ("client_id", "svc"),
            ("client_secret", "svc-secret"),
            ("resource", "https://unknown.example/mcp"),
        ])
        .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_target"))
    );

    // Revocation of a refresh token.
    let client_id = world.public_client().await;
    let (verifier, challenge) = pkce();
    let code = world.code(&client_id, &challenge).await;
    let (_, _, body) = world
        .exchange(&[
            ("grant_type", "authorization_code"),
            ("client_id", &client_id),
            ("code", &code),
            ("code_verifier", &verifier),
            ("redirect_uri", REDIRECT),
        ])
        .await;
    let refresh = body["refresh_token"].as_str().unwrap().to_owned();
    let r = world
        .http
        .post(format!("{}/revoke", world.issuer))
        .form(&[
            ("client_id", client_id.as_str()),
            ("token", refresh.as_str()),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let (status, _, body) = world
        .exchange(&[
            ("grant_type", "refresh_token"),
            ("client_id", &client_id),
            ("refresh_token", &refresh),
        ])
        .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant"))
    );
}

// ---- DPoP (RFC 9449) ----

/// A DPoP proof by `key` for `htm` `htu`, bound to `token` when given.
fn dpop_proof(key: &p256::ecdsa::SigningKey, htm: &str, htu: &str, token: Option<&str>) -> String {
    let header = json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": jwk(key, "")});
    let mut jwk_only = header.clone();
    jwk_only["jwk"].as_object_mut().unwrap().remove("kid");
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
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(jwk_only.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let sig: p256::ecdsa::Signature = key.sign(input.as_bytes());
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.to_bytes()))
}

#[tokio::test]
async fn our_client_gets_and_uses_dpop_bound_tokens() {
    let world = World::start(None).await;
    let user = User::alice();
    let oauth = OAuthClient::builder(&world.mcp)
        .authorization_code(user.clone())
        .client_name("e2e-dpop", None)
        .dpop(true)
        .build()
        .unwrap();
    let transport = StreamableHttpClientTransport::builder(&world.mcp)
        .auth(oauth.clone())
        .build()
        .unwrap();
    let client = within(
        LIMIT,
        "the client to connect",
        Client::builder("e2e", "1.0.0").connect(transport),
    )
    .await
    .expect("connected with DPoP");
    let who = within(
        LIMIT,
        "whoami",
        client.call_tool("whoami", JsonObject::new()),
    )
    .await
    .unwrap();
    assert!(text_of(&who).starts_with("alice via "));
    let tokens = oauth.tokens().await.unwrap();
    assert_eq!(tokens.token_type, "DPoP");
    // Stolen, the bound token is of no use as a bearer token, nor with a proof by
    // another key.
    let r = world
        .initialize(&world.mcp, Some(&format!("Bearer {}", tokens.access_token)))
        .await;
    assert_eq!(r.status(), 401);
    assert!(challenge(&r).contains("invalid_token"));
    let thief = p256::ecdsa::SigningKey::from_slice(&[12u8; 32]).unwrap();
    let r = world
        .http
        .post(&world.mcp)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("authorization", format!("DPoP {}", tokens.access_token))
        .header(
            "dpop",
            dpop_proof(&thief, "POST", &world.mcp, Some(&tokens.access_token)),
        )
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let c = challenge(&r);
    assert!(c.starts_with("DPoP "), "{c}");
    assert!(c.contains("invalid_dpop_proof"), "{c}");
}

#[tokio::test]
async fn a_dpop_proof_fits_one_request_once() {
    let world = World::start(None).await;
    world
        .auth
        .register_client(RegisteredClient::confidential(
            "svc",
            "svc-secret",
            Vec::<String>::new(),
        ))
        .await
        .unwrap();
    let key = p256::ecdsa::SigningKey::from_slice(&[13u8; 32]).unwrap();
    let token_url = format!("{}/token", world.issuer);
    let answer: Value = world
        .http
        .post(&token_url)
        .basic_auth("svc", Some("svc-secret"))
        .header("dpop", dpop_proof(&key, "POST", &token_url, None))
        .form(&[("grant_type", "client_credentials"), ("scope", "mcp:tools")])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(answer["token_type"], "DPoP");
    let token = answer["access_token"].as_str().unwrap().to_owned();
    let post = |proof: String| {
        world
            .http
            .post(&world.mcp)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("authorization", format!("DPoP {token}"))
            .header("dpop", proof)
            .body(
                json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "1"}}})
                .to_string(),
            )
            .send()
    };
    let proof = dpop_proof(&key, "POST", &world.mcp, Some(&token));
    let first = post(proof.clone()).await.unwrap();
    assert_eq!(
        first.status(),
        200,
        "{:?}",
        first.headers().get("www-authenticate")
    );
    // The same proof again: a replay.
    let replay = post(proof).await.unwrap();
    assert_eq!(replay.status(), 401);
    assert!(challenge(&replay).contains("used before"));
    // For another method, another URL, another token.
    for (what, proof) in [
        ("htm", dpop_proof(&key, "GET", &world.mcp, Some(&token))),
        ("htu", dpop_proof(&key, "POST", &world.other, Some(&token))),
        ("ath", dpop_proof(&key, "POST", &world.mcp, Some("another"))),
        ("no ath", dpop_proof(&key, "POST", &world.mcp, None)),
    ] {
        let r = post(proof).await.unwrap();
        assert_eq!(r.status(), 401, "{what}");
        assert!(challenge(&r).contains("invalid_dpop_proof"), "{what}");
    }
    // Without a proof at all.
    let r = world
        .initialize(&world.mcp, Some(&format!("DPoP {token}")))
        .await;
    assert_eq!(r.status(), 401);
}

#[tokio::test]
async fn a_session_answers_only_the_caller_that_opened_it() {
    let world = World::start(None).await;
    let mine = world.service_token(&world.mcp, "mcp:tools").await;
    world
        .auth
        .register_client(RegisteredClient::confidential(
            "other",
            "other-secret",
            Vec::<String>::new(),
        ))
        .await
        .unwrap();
    let theirs: Value = world
        .http
        .post(format!("{}/token", world.issuer))
        .basic_auth("other", Some("other-secret"))
        .form(&[("grant_type", "client_credentials"), ("scope", "mcp:tools")])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let theirs = theirs["access_token"].as_str().unwrap().to_owned();
    let r = world
        .initialize(&world.mcp, Some(&format!("Bearer {mine}")))
        .await;
    assert_eq!(r.status(), 200);
    let session = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let list = |token: &str| {
        world
            .http
            .post(&world.mcp)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("authorization", format!("Bearer {token}"))
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-11-25")
            .body(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string())
            .send()
    };
    // Another caller with a valid token and the leaked session id: no such session.
    assert_eq!(list(&theirs).await.unwrap().status(), 404);
    assert_eq!(list(&mine).await.unwrap().status(), 200);
}

#[tokio::test]
async fn rs256_tokens_of_an_identity_provider_verify_too() {
    use rsa::pkcs8::DecodePrivateKey as _;
    use rsa::signature::{SignatureEncoding as _, Signer as _};
    use rsa::traits::PublicKeyParts as _;
    // A throwaway key made for this test.
    let private = rsa::RsaPrivateKey::from_pkcs8_pem(include_str!("keys/rs256-test.pem")).unwrap();
    let public = private.to_public_key();
    let jwks = json!({"keys": [{"kty": "RSA", "kid": "r1", "alg": "RS256", "use": "sig",
        "n": URL_SAFE_NO_PAD.encode(public.n().to_bytes_be()),
        "e": URL_SAFE_NO_PAD.encode(public.e().to_bytes_be())}]});
    let signer = rsa::pkcs1v15::SigningKey::<sha2::Sha256>::new(private);
    let sign = |alg: &str, claims: &Value| {
        let header = json!({"alg": alg, "typ": "JWT", "kid": "r1"});
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let sig = signer.sign(input.as_bytes());
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.to_bytes()))
    };
    let verifier = JwtVerifier::with_jwks("https://idp.example", &jwks).unwrap();
    let claims = json!({"iss": "https://idp.example", "sub": "carol", "aud": "https://mcp.example/mcp",
        "exp": now() + 300, "scp": ["a", "b"], "azp": "app"});
    let info = verifier.verify(&sign("RS256", &claims)).await.unwrap();
    assert_eq!(info.subject.as_deref(), Some("carol"));
    assert_eq!(info.client_id.as_deref(), Some("app"));
    assert!(info.has_scopes(["a", "b"]));
    // The same RSA signature under another algorithm's name is refused, and so is a
    // token for another issuer.
    assert!(
        verifier
            .verify(&sign("ES256", &claims))
            .await
            .unwrap_err()
            .is_invalid()
    );
    assert!(
        verifier
            .verify(&sign("RS512", &claims))
            .await
            .unwrap_err()
            .is_invalid()
    );
    let mut other = claims.clone();
    other["iss"] = "https://evil.example".into();
    assert!(verifier.verify(&sign("RS256", &other)).await.is_err());
}

#[tokio::test]
async fn an_unreachable_key_set_is_a_503_not_a_refused_token() {
    // Nothing listens on port 9: the JWKS cannot be fetched.
    let world = World::start(Some(Box::new(|issuer: &str| {
        Box::new(JwtVerifier::new(issuer, "http://127.0.0.1:9/jwks"))
    })))
    .await;
    let token = world.service_token(&world.mcp, "mcp:tools").await;
    let r = world
        .initialize(&world.mcp, Some(&format!("Bearer {token}")))
        .await;
    assert_eq!(r.status(), 503);
    assert!(r.headers().get("www-authenticate").is_none());
    // A malformed token is still refused as such, without asking for keys.
    let r = world.initialize(&world.mcp, Some("Bearer abc")).await;
    assert_eq!(r.status(), 401);
}

#[tokio::test]
async fn a_client_id_metadata_document_stands_in_for_registration() {
    // The document, served on its own loopback origin.
    let (l, origin) = listener().await;
    let doc_url = format!("{origin}/client.json");
    let liar_url = format!("{origin}/liar.json");
    let doc = doc_url.clone();
    serve(
        l,
        axum::Router::new()
            .route(
                "/client.json",
                axum::routing::get(move || {
                    let doc = json!({"client_id": doc, "client_name": "Doc App",
                        "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"});
                    async move { axum::Json(doc) }
                }),
            )
            .route(
                "/liar.json",
                axum::routing::get(|| async {
                    axum::Json(json!({"client_id": "https://someone.else/c.json",
                        "redirect_uris": [REDIRECT]}))
                }),
            ),
    );
    let (as_listener, issuer) = listener().await;
    let mcp = "http://127.0.0.1:1/mcp";
    let config = AuthorizationServerConfig::new(&issuer, mcp)
        .scopes_supported(["mcp:tools"])
        .private_network_documents(true);
    let auth = AuthorizationServer::new(config, InMemoryStore::new(), |l: &Login<'_>| {
        Some(l.username.to_owned())
    })
    .unwrap();
    assert_eq!(
        auth.metadata()["client_id_metadata_document_supported"],
        true
    );
    serve(as_listener, auth.router());
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let (verifier, challenge) = pkce();
    let authorize = |client_id: &str, redirect: &str| {
        let mut url = url::Url::parse(&format!("{issuer}/authorize")).unwrap();
        url.query_pairs_mut()
            .append_pair("response_type", "code")
            .append_pair("client_id", client_id)
            .append_pair("redirect_uri", redirect)
            .append_pair("code_challenge", &challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("state", "s");
        url.to_string()
    };
    let page = http
        .get(authorize(&doc_url, REDIRECT))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("Doc App"), "{page}");
    let location = consent(&http, &authorize(&doc_url, REDIRECT), "any").await;
    let code = query_param(&location, "code").unwrap();
    let answer = http
        .post(format!("{issuer}/token"))
        .form(&[
            ("grant_type", "authorization_code"),
            ("client_id", doc_url.as_str()),
            ("code", code.as_str()),
            ("code_verifier", verifier.as_str()),
            ("redirect_uri", REDIRECT),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);

    // A redirect URI the document does not list, a document naming another client.
    for (client, redirect) in [
        (doc_url.as_str(), "http://127.0.0.1:9/elsewhere"),
        (liar_url.as_str(), REDIRECT),
    ] {
        let r = http.get(authorize(client, redirect)).send().await.unwrap();
        assert_eq!(r.status(), 400, "{client} {redirect}");
        assert!(r.headers().get("location").is_none());
    }

    // By default the server fetches from the public internet only: a loopback
    // document URL is just an unknown client.
    let (l2, issuer2) = listener().await;
    let guarded = AuthorizationServer::new(
        AuthorizationServerConfig::new(&issuer2, mcp),
        InMemoryStore::new(),
        |l: &Login<'_>| Some(l.username.to_owned()),
    )
    .unwrap();
    serve(l2, guarded.router());
    let r = http
        .get(authorize(&doc_url, REDIRECT).replace(&issuer, &issuer2))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("not registered"));
}

// ---- dpop_jkt (RFC 9449 §10) ----

/// The RFC 7638 thumbprint of a P-256 key.
fn thumbprint(key: &p256::ecdsa::SigningKey) -> String {
    let jwk = jwk(key, "");
    let canonical = format!(
        r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
        jwk["x"].as_str().unwrap(),
        jwk["y"].as_str().unwrap()
    );
    URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(canonical.as_bytes()))
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

#[tokio::test]
async fn a_code_bound_by_dpop_jkt_goes_only_to_that_key() {
    let world = World::start(None).await;
    let client_id = world.public_client().await;
    let (verifier, challenge) = pkce();
    let key = p256::ecdsa::SigningKey::from_slice(&[21u8; 32]).unwrap();
    let other = p256::ecdsa::SigningKey::from_slice(&[22u8; 32]).unwrap();
    let jkt = thumbprint(&key);

    // Not a thumbprint: refused at the authorization request, back to the client.
    let url = world.authorize_url(
        &client_id,
        &[
            ("redirect_uri", REDIRECT),
            ("code_challenge", &challenge),
            ("code_challenge_method", "S256"),
            ("dpop_jkt", "not-a-thumbprint"),
        ],
    );
    let r = world.http.get(&url).send().await.unwrap();
    assert_eq!(r.status(), 302);
    let location = r.headers()["location"].to_str().unwrap().to_owned();
    assert_eq!(
        query_param(&location, "error").as_deref(),
        Some("invalid_request")
    );

    // Without a proof, or with another key's: refused (and the code is spent).
    let code = world.bound_code(&client_id, &challenge, &jkt).await;
    let (status, body) = world
        .exchange_with_proof(&client_id, &code, &verifier, None)
        .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_dpop_proof"))
    );
    let code = world.bound_code(&client_id, &challenge, &jkt).await;
    let (status, body) = world
        .exchange_with_proof(&client_id, &code, &verifier, Some(&other))
        .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_dpop_proof"))
    );
    let (status, body) = world
        .exchange_with_proof(&client_id, &code, &verifier, Some(&key))
        .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant"))
    );

    // With a proof by the bound key: a DPoP token bound to it.
    let code = world.bound_code(&client_id, &challenge, &jkt).await;
    let (status, body) = world
        .exchange_with_proof(&client_id, &code, &verifier, Some(&key))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["token_type"], "DPoP");
    let access = body["access_token"].as_str().unwrap();
    assert_eq!(claims_of(access)["cnf"]["jkt"], jkt.as_str());
}

/// A user that also keeps the authorization URLs it was sent to.
#[derive(Clone, Default)]
struct Recorder {
    urls: Arc<Mutex<Vec<String>>>,
}

impl AuthorizationHandler for Recorder {
    fn redirect_uri(&self) -> String {
        REDIRECT.into()
    }

    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
    ) -> BoxFuture<'a, Result<AuthorizationResponse, OAuthError>> {
        self.urls.lock().unwrap().push(authorization_url.to_owned());
        Box::pin(async move { User::alice().authorize(authorization_url).await })
    }
}

#[tokio::test]
async fn our_dpop_client_binds_the_code_to_its_key() {
    let world = World::start(None).await;
    let user = Recorder::default();
    let oauth = OAuthClient::builder(&world.mcp)
        .authorization_code(user.clone())
        .client_name("e2e-dpop-jkt", None)
        .dpop(true)
        .build()
        .unwrap();
    let transport = StreamableHttpClientTransport::builder(&world.mcp)
        .auth(oauth.clone())
        .build()
        .unwrap();
    let client = within(
        LIMIT,
        "the client to connect",
        Client::builder("e2e", "1.0.0").connect(transport),
    )
    .await
    .expect("connected with DPoP");
    let who = within(
        LIMIT,
        "whoami",
        client.call_tool("whoami", JsonObject::new()),
    )
    .await
    .unwrap();
    assert!(text_of(&who).starts_with("alice via "));
    let tokens = oauth.tokens().await.unwrap();
    assert_eq!(tokens.token_type, "DPoP");
    let urls = user.urls.lock().unwrap().clone();
    assert_eq!(urls.len(), 1);
    let sent = query_param(&urls[0], "dpop_jkt").expect("dpop_jkt on the authorization URL");
    assert_eq!(claims_of(&tokens.access_token)["cnf"]["jkt"], sent.as_str());

    // Without DPoP, no dpop_jkt.
    let plain_user = Recorder::default();
    let plain = OAuthClient::builder(&world.mcp)
        .authorization_code(plain_user.clone())
        .client_name("e2e-plain", None)
        .build()
        .unwrap();
    let transport = StreamableHttpClientTransport::builder(&world.mcp)
        .auth(plain)
        .build()
        .unwrap();
    let client = within(
        LIMIT,
        "the client to connect",
        Client::builder("e2e", "1.0.0").connect(transport),
    )
    .await
    .expect("connected");
    within(
        LIMIT,
        "whoami",
        client.call_tool("whoami", JsonObject::new()),
    )
    .await
    .unwrap();
    let urls = plain_user.urls.lock().unwrap().clone();
    assert!(query_param(&urls[0], "dpop_jkt").is_none());
}

// ---- private_key_jwt (RFC 7523 client assertions) ----

/// A client assertion by `key` with these claims.
fn assertion(key: &p256::ecdsa::SigningKey, claims: &Value) -> String {
    let header = json!({"alg": "ES256", "typ": "JWT"});
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let sig: p256::ecdsa::Signature = key.sign(input.as_bytes());
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.to_bytes()))
}

const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

#[tokio::test]
async fn private_key_jwt_clients_sign_once_per_request() {
    let world = World::start(None).await;
    let key = p256::ecdsa::SigningKey::from_slice(&[31u8; 32]).unwrap();
    let stranger = p256::ecdsa::SigningKey::from_slice(&[32u8; 32]).unwrap();
    world
        .auth
        .register_client(RegisteredClient::private_key_jwt(
            "signer",
            json!({"keys": [jwk(&key, "k1")]}),
            Vec::<String>::new(),
        ))
        .await
        .unwrap();
    let asm = world.auth.metadata();
    assert!(
        asm["token_endpoint_auth_methods_supported"]
            .as_array()
            .unwrap()
            .contains(&json!("private_key_jwt"))
    );
    assert_eq!(
        asm["token_endpoint_auth_signing_alg_values_supported"],
        json!(["ES256"])
    );
    let token_url = format!("{}/token", world.issuer);
    let good = |jti: &str| {
        json!({"iss": "signer", "sub": "signer", "aud": token_url, "jti": jti,
            "iat": now(), "exp": now() + 120})
    };
    let grant = |assertion: String| {
        let world = &world;
        async move {
            world
                .exchange(&[
                    ("grant_type", "client_credentials"),
                    ("scope", "mcp:tools"),
                    ("resource", &world.mcp),
                    ("client_assertion_type", ASSERTION_TYPE),
                    ("client_assertion", &assertion),
                ])
                .await
        }
    };

    // A good assertion: a token for the client, usable at the resource server.
    let one = assertion(&key, &good("j1"));
    let (status, _, body) = grant(one.clone()).await;
    assert_eq!(status, 200, "{body}");
    let token = body["access_token"].as_str().unwrap();
    assert_eq!(claims_of(token)["client_id"], "signer");
    let r = world
        .initialize(&world.mcp, Some(&format!("Bearer {token}")))
        .await;
    assert_eq!(r.status(), 200);
    // The issuer as audience is taken too.
    let mut by_issuer = good("j2");
    by_issuer["aud"] = world.issuer.as_str().into();
    assert_eq!(grant(assertion(&key, &by_issuer)).await.0, 200);

    // Each of these is refused as invalid_client.
    let mut cases = vec![("replayed", one)];
    let mut c = good("j3");
    c["aud"] = "https://elsewhere.example/token".into();
    cases.push(("another audience", assertion(&key, &c)));
    let mut c = good("j4");
    c.as_object_mut().unwrap().remove("exp");
    cases.push(("no exp", assertion(&key, &c)));
    let mut c = good("j5");
    c["exp"] = (now() - 600).into();
    cases.push(("expired", assertion(&key, &c)));
    let mut c = good("j6");
    c["exp"] = (now() + 3600).into();
    cases.push(("too long-lived", assertion(&key, &c)));
    // The largest exp there is: refused, never an overflow (it once panicked in builds
    // with overflow checks, before the signature was looked at).
    let mut c = good("j6b");
    c["exp"] = u64::MAX.into();
    cases.push(("exp at u64::MAX", assertion(&key, &c)));
    let mut c = good("j7");
    c["sub"] = "someone-else".into();
    cases.push(("sub is not iss", assertion(&key, &c)));
    let mut c = good("j8");
    c.as_object_mut().unwrap().remove("jti");
    cases.push(("no jti", assertion(&key, &c)));
    cases.push(("another key", assertion(&stranger, &good("j9"))));
    let mut c = good("j10");
    c["iss"] = "svc".into();
    c["sub"] = "svc".into();
    cases.push(("a client of another method", assertion(&key, &c)));
    for (what, bad) in cases {
        let (status, _, body) = grant(bad).await;
        assert_eq!(
            (status, body["error"].as_str()),
            (401, Some("invalid_client")),
            "{what}"
        );
    }
    // The client's bare id, or an unknown assertion type: no authentication.
    let (status, _, _) = world
        .exchange(&[
            ("grant_type", "client_credentials"),
            ("client_id", "signer"),
        ])
        .await;
    assert_eq!(status, 401);
    let (status, _, body) = world
        .exchange(&[
            ("grant_type", "client_credentials"),
            ("client_assertion_type", "urn:example:other"),
            ("client_assertion", &assertion(&key, &good("j11"))),
        ])
        .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_request"))
    );
}

#[tokio::test]
async fn registration_takes_private_key_jwt_with_keys_only() {
    let world = World::start(None).await;
    let key = p256::ecdsa::SigningKey::from_slice(&[33u8; 32]).unwrap();
    let jwks = json!({"keys": [jwk(&key, "k1")]});
    let r = world
        .register(
            json!({"token_endpoint_auth_method": "private_key_jwt", "jwks": jwks,
            "grant_types": ["client_credentials"], "client_name": "signer"}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["token_endpoint_auth_method"], "private_key_jwt");
    assert!(body.get("client_secret").is_none(), "no secret: {body}");
    let client_id = body["client_id"].as_str().unwrap().to_owned();
    let token_url = format!("{}/token", world.issuer);
    let signed = assertion(
        &key,
        &json!({"iss": client_id, "sub": client_id, "aud": token_url, "jti": "r1",
            "exp": now() + 60}),
    );
    let (status, _, body) = world
        .exchange(&[
            ("grant_type", "client_credentials"),
            ("resource", &world.mcp),
            ("client_assertion_type", ASSERTION_TYPE),
            ("client_assertion", &signed),
        ])
        .await;
    assert_eq!(status, 200, "{body}");

    for bad in [
        json!({"token_endpoint_auth_method": "private_key_jwt",
            "grant_types": ["client_credentials"]}),
        json!({"token_endpoint_auth_method": "private_key_jwt", "jwks": {"keys": []},
            "grant_types": ["client_credentials"]}),
        json!({"token_endpoint_auth_method": "private_key_jwt", "jwks": jwks,
            "jwks_uri": "https://app.example/jwks", "grant_types": ["client_credentials"]}),
        // Loopback or private key sets only where private-network documents are allowed.
        json!({"token_endpoint_auth_method": "private_key_jwt",
            "jwks_uri": "http://127.0.0.1:9/jwks", "grant_types": ["client_credentials"]}),
        json!({"token_endpoint_auth_method": "private_key_jwt",
            "jwks_uri": "https://10.0.0.1/jwks", "grant_types": ["client_credentials"]}),
        json!({"token_endpoint_auth_method": "private_key_jwt",
            "jwks_uri": "https://localhost/jwks", "grant_types": ["client_credentials"]}),
    ] {
        let r = world.register(bad.clone()).await;
        assert_eq!(r.status(), 400, "{bad}");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["error"], "invalid_client_metadata", "{bad}");
    }
}

#[tokio::test]
async fn a_jwks_uri_is_fetched_for_the_assertion() {
    let key = p256::ecdsa::SigningKey::from_slice(&[34u8; 32]).unwrap();
    let (keys_listener, keys_origin) = listener().await;
    let jwks = json!({"keys": [jwk(&key, "k1")]});
    serve(
        keys_listener,
        axum::Router::new().route(
            "/jwks",
            axum::routing::get(move || {
                let jwks = jwks.clone();
                async move { axum::Json(jwks) }
            }),
        ),
    );
    let (as_listener, issuer) = listener().await;
    let auth = AuthorizationServer::new(
        AuthorizationServerConfig::new(&issuer, "http://127.0.0.1:9/mcp")
            .private_network_documents(true),
        InMemoryStore::new(),
        |_: &Login<'_>| None,
    )
    .unwrap();
    serve(as_listener, auth.router());
    let http = reqwest::Client::new();
    let r = http
        .post(format!("{issuer}/register"))
        .json(&json!({"token_endpoint_auth_method": "private_key_jwt",
            "jwks_uri": format!("{keys_origin}/jwks"), "grant_types": ["client_credentials"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let client_id = r.json::<Value>().await.unwrap()["client_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let token = |signer: &p256::ecdsa::SigningKey, jti: &str| {
        let form = [
            ("grant_type", "client_credentials".to_owned()),
            ("client_assertion_type", ASSERTION_TYPE.to_owned()),
            (
                "client_assertion",
                assertion(
                    signer,
                    &json!({"iss": client_id, "sub": client_id, "aud": issuer,
                        "jti": jti, "exp": now() + 60}),
                ),
            ),
        ];
        http.post(format!("{issuer}/token")).form(&form).send()
    };
    assert_eq!(
        within(LIMIT, "a token", token(&key, "u1"))
            .await
            .unwrap()
            .status(),
        200
    );
    let stranger = p256::ecdsa::SigningKey::from_slice(&[35u8; 32]).unwrap();
    assert_eq!(
        within(LIMIT, "a refusal", token(&stranger, "u2"))
            .await
            .unwrap()
            .status(),
        401
    );
}

#[tokio::test]
async fn our_client_authenticates_with_private_key_jwt_end_to_end() {
    let world = World::start(None).await;
    let key = modelctx_oauth::SigningKey::generate().unwrap();
    world
        .auth
        .register_client(RegisteredClient::private_key_jwt(
            "m2m",
            json!({"keys": [key.public_jwk()]}),
            Vec::<String>::new(),
        ))
        .await
        .unwrap();
    let oauth = OAuthClient::builder(&world.mcp)
        .client_credentials()
        .client(modelctx_oauth::ClientRegistration::new("m2m").with_auth_method("private_key_jwt"))
        .client_key(key)
        .build()
        .unwrap();
    let transport = StreamableHttpClientTransport::builder(&world.mcp)
        .auth(oauth.clone())
        .build()
        .unwrap();
    let client = within(
        LIMIT,
        "the client to connect",
        Client::builder("m2m", "1.0.0").connect(transport),
    )
    .await
    .expect("connected with a client assertion");
    let who = within(
        LIMIT,
        "whoami",
        client.call_tool("whoami", JsonObject::new()),
    )
    .await
    .unwrap();
    assert_eq!(text_of(&who), "m2m via m2m [mcp:tools]");
}
