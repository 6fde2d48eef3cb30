//! Hosting: auth — the bundled authorization server's side of client ID metadata
//! documents (a `client_id` that is the URL of the client's metadata: fetched, checked,
//! cached as its headers allow) and of RFC 9207 (`iss` on every authorization
//! response). The documents live on a loopback server of the test's, which the
//! authorization server is allowed to reach (`private_network_documents`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use modelctx_conformance::{Connector, Test, conformance_test};
use modelctx_oauth::{AuthorizationServer, AuthorizationServerConfig, InMemoryStore, Login};
use serde_json::{Value, json};

use crate::hosting_auth::{REDIRECT, approve, param, pkce, redeeming};
use crate::http_support::{RawResponse, no_redirects, send};

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            the_authorization_server_advertises_metadata_documents,
            ["hosting:auth:as:cimd-supported-flag"]
        ),
        conformance_test!(
            a_url_client_id_is_fetched_and_carried_through_to_a_token,
            [
                "hosting:auth:as:cimd-client-id",
                "hosting:auth:as:cimd:fetch-on-url-client-id"
            ]
        ),
        conformance_test!(
            a_document_naming_another_client_id_is_refused,
            ["hosting:auth:as:cimd:client-id-matches-url"]
        ),
        conformance_test!(
            a_document_must_be_a_json_object_with_its_required_fields,
            ["hosting:auth:as:cimd:document-validation"]
        ),
        conformance_test!(
            documents_are_reused_only_as_their_cache_headers_allow,
            ["hosting:auth:as:cimd:cache-respects-headers"]
        ),
        conformance_test!(
            every_authorization_response_names_the_issuer,
            ["hosting:auth:as-iss-emission"]
        ),
    ]
}

/// A document the test's document server serves: the body, and its `Cache-Control`.
#[derive(Clone)]
struct Document {
    body: String,
    cache_control: Option<&'static str>,
}

/// The bundled authorization server, and a server of client metadata documents
/// counting the fetches of each.
struct Cimd {
    issuer: String,
    docs: String,
    documents: Arc<Mutex<HashMap<String, Document>>>,
    fetches: Arc<Mutex<HashMap<String, usize>>>,
    http: reqwest::Client,
}

async fn listen() -> (tokio::net::TcpListener, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    (listener, origin)
}

async fn cimd() -> Cimd {
    let documents: Arc<Mutex<HashMap<String, Document>>> = Arc::default();
    let fetches: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
    let (served, counted) = (documents.clone(), fetches.clone());
    let app = axum::Router::new().route(
        "/clients/{name}",
        axum::routing::get(
            move |axum::extract::Path(name): axum::extract::Path<String>| {
                let (served, counted) = (served.clone(), counted.clone());
                async move {
                    *counted.lock().unwrap().entry(name.clone()).or_default() += 1;
                    let document = served.lock().unwrap().get(&name).cloned();
                    let Some(document) = document else {
                        return http::Response::builder()
                            .status(404)
                            .body(axum::body::Body::empty())
                            .unwrap();
                    };
                    let mut r =
                        http::Response::builder().header("content-type", "application/json");
                    if let Some(cc) = document.cache_control {
                        r = r.header("cache-control", cc);
                    }
                    r.body(axum::body::Body::from(document.body)).unwrap()
                }
            },
        ),
    );
    let (listener, docs) = listen().await;
    tokio::spawn(async move { axum::serve(listener, app).await });

    let (listener, issuer) = listen().await;
    let config = AuthorizationServerConfig::new(&issuer, "http://127.0.0.1:9/mcp")
        .private_network_documents(true);
    let users = |login: &Login<'_>| (login.username == "alice").then(|| "alice".to_owned());
    let auth = AuthorizationServer::new(config, InMemoryStore::new(), users).unwrap();
    let app = auth.router();
    tokio::spawn(async move { axum::serve(listener, app).await });
    Cimd {
        issuer,
        docs,
        documents,
        fetches,
        http: no_redirects(),
    }
}

impl Cimd {
    /// The URL of document `name`.
    fn url(&self, name: &str) -> String {
        format!("{}/clients/{name}", self.docs)
    }

    /// Serves `body` as document `name`.
    fn serve(&self, name: &str, body: String, cache_control: Option<&'static str>) {
        self.documents.lock().unwrap().insert(
            name.to_owned(),
            Document {
                body,
                cache_control,
            },
        );
    }

    /// Serves a valid document for `name` (naming its own URL); its URL.
    fn serve_valid(&self, name: &str, cache_control: Option<&'static str>) -> String {
        let url = self.url(name);
        let doc = json!({"client_id": url, "client_name": "Metadata App",
            "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"});
        self.serve(name, doc.to_string(), cache_control);
        url
    }

    fn fetches(&self, name: &str) -> usize {
        self.fetches.lock().unwrap().get(name).copied().unwrap_or(0)
    }

    /// The authorization URL for `client_id`, with PKCE unless `challenge` is `None`.
    fn authorize_url(&self, client_id: &str, challenge: Option<&str>) -> String {
        let mut url = url::Url::parse(&format!("{}/authorize", self.issuer)).unwrap();
        url.query_pairs_mut()
            .append_pair("response_type", "code")
            .append_pair("state", "s1")
            .append_pair("client_id", client_id)
            .append_pair("redirect_uri", REDIRECT);
        if let Some(challenge) = challenge {
            url.query_pairs_mut()
                .append_pair("code_challenge", challenge)
                .append_pair("code_challenge_method", "S256");
        }
        url.to_string()
    }

    async fn authorize(&self, client_id: &str) -> RawResponse {
        let (_, challenge) = pkce();
        send(
            self.http
                .get(self.authorize_url(client_id, Some(&challenge))),
        )
        .await
    }

    async fn metadata(&self) -> Value {
        send(self.http.get(format!(
            "{}/.well-known/oauth-authorization-server",
            self.issuer
        )))
        .await
        .json()
    }
}

async fn the_authorization_server_advertises_metadata_documents(_: Connector) {
    let c = cimd().await;
    assert_eq!(
        c.metadata().await["client_id_metadata_document_supported"],
        true
    );
    // Turned off, it says nothing of them.
    let off = AuthorizationServerConfig::new("http://127.0.0.1:1", "http://127.0.0.1:9/mcp")
        .client_metadata_documents(false);
    let users = |_: &Login<'_>| None;
    let off = AuthorizationServer::new(off, InMemoryStore::new(), users).unwrap();
    assert!(
        off.metadata()
            .get("client_id_metadata_document_supported")
            .is_none()
    );
}

async fn a_url_client_id_is_fetched_and_carried_through_to_a_token(_: Connector) {
    let c = cimd().await;
    let client_id = c.serve_valid("app.json", None);
    assert_eq!(c.fetches("app.json"), 0);
    // Never registered: the authorization request fetches the document.
    let (verifier, challenge) = pkce();
    let url = c.authorize_url(&client_id, Some(&challenge));
    let page = send(c.http.get(&url)).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert_eq!(c.fetches("app.json"), 1);
    assert!(
        page.body.contains("Metadata App"),
        "the document's name is shown"
    );
    let location = approve(&c.http, &url).await;
    assert!(location.starts_with(REDIRECT), "{location}");
    let code = param(&location, "code").expect("a code");
    let form = redeeming(&client_id, &code, &verifier, REDIRECT);
    let token = send(c.http.post(format!("{}/token", c.issuer)).form(&form)).await;
    assert_eq!(token.status, 200, "{}", token.body);
    assert!(token.json()["access_token"].is_string(), "{}", token.body);
}

async fn a_document_naming_another_client_id_is_refused(_: Connector) {
    let c = cimd().await;
    let doc = json!({"client_id": c.url("someone-else.json"), "redirect_uris": [REDIRECT]});
    c.serve("impostor.json", doc.to_string(), None);
    let r = c.authorize(&c.url("impostor.json")).await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.header("location").is_none(), "never redirected");
    assert_eq!(c.fetches("impostor.json"), 1);
    // The same document at the URL it names is taken.
    let doc = json!({"client_id": c.url("someone-else.json"), "redirect_uris": [REDIRECT]});
    c.serve("someone-else.json", doc.to_string(), None);
    let r = c.authorize(&c.url("someone-else.json")).await;
    assert_eq!(r.status, 200, "{}", r.body);
}

async fn a_document_must_be_a_json_object_with_its_required_fields(_: Connector) {
    let c = cimd().await;
    let url = |name: &str| c.url(name);
    let bad = [
        ("html.json", "<html>not a document</html>".to_owned()),
        ("array.json", json!([url("array.json")]).to_string()),
        (
            "truncated.json",
            format!("{{\"client_id\": \"{}\"", url("truncated.json")),
        ),
        (
            "no-redirects.json",
            json!({"client_id": url("no-redirects.json")}).to_string(),
        ),
        (
            "bad-redirect.json",
            json!({"client_id": url("bad-redirect.json"),
                   "redirect_uris": ["http://app.example/cb"]})
            .to_string(),
        ),
    ];
    for (name, body) in bad {
        c.serve(name, body, None);
        let r = c.authorize(&c.url(name)).await;
        assert_eq!(r.status, 400, "{name}: {}", r.body);
        assert!(r.header("location").is_none(), "{name}");
    }
    // No document at all.
    let r = c.authorize(&c.url("missing.json")).await;
    assert_eq!(r.status, 400, "{}", r.body);
}

async fn documents_are_reused_only_as_their_cache_headers_allow(_: Connector) {
    let c = cimd().await;
    let cases = [
        ("cached.json", Some("public, max-age=300"), 1),
        ("no-store.json", Some("no-store"), 2),
        ("no-cache.json", Some("max-age=300, no-cache"), 2),
        ("stale.json", Some("max-age=0"), 2),
        ("silent.json", None, 2),
    ];
    for (name, cache_control, _) in cases {
        let client_id = c.serve_valid(name, cache_control);
        for _ in 0..2 {
            let r = c.authorize(&client_id).await;
            assert_eq!(r.status, 200, "{name}: {}", r.body);
        }
    }
    for (name, cache_control, fetched) in cases {
        assert_eq!(c.fetches(name), fetched, "{name} ({cache_control:?})");
    }
}

async fn every_authorization_response_names_the_issuer(_: Connector) {
    let c = cimd().await;
    assert_eq!(
        c.metadata().await["authorization_response_iss_parameter_supported"],
        true
    );
    let client_id = c.serve_valid("app.json", Some("max-age=300"));
    // Success.
    let (_, challenge) = pkce();
    let location = approve(&c.http, &c.authorize_url(&client_id, Some(&challenge))).await;
    assert!(param(&location, "code").is_some(), "{location}");
    assert_eq!(param(&location, "iss").as_deref(), Some(c.issuer.as_str()));
    // An error redirect: no PKCE.
    let r = send(c.http.get(c.authorize_url(&client_id, None))).await;
    assert_eq!(r.status, 302, "{}", r.body);
    let location = r.header("location").unwrap();
    assert_eq!(param(location, "error").as_deref(), Some("invalid_request"));
    assert_eq!(param(location, "iss").as_deref(), Some(c.issuer.as_str()));
    // An error redirect: the user declines.
    let url = c.authorize_url(&client_id, Some(&challenge));
    let page = send(c.http.get(&url)).await;
    let marker = "name=\"txn\" value=\"";
    let start = page.body.find(marker).expect("the consent form") + marker.len();
    let txn = &page.body[start..start + page.body[start..].find('"').unwrap()];
    let r = send(
        c.http
            .post(format!("{}/authorize", c.issuer))
            .form(&[("txn", txn), ("decision", "deny")]),
    )
    .await;
    assert_eq!(r.status, 302, "{}", r.body);
    let location = r.header("location").unwrap();
    assert_eq!(param(location, "error").as_deref(), Some("access_denied"));
    assert_eq!(param(location, "iss").as_deref(), Some(c.issuer.as_str()));
}
