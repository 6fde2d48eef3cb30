//! The OAuth client against an in-test authorization server and MCP resource server on
//! 127.0.0.1 (two origins), driven through the HTTP client transport or its auth hook.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderMap, Method, header};
use base64::Engine as _;
use futures::future::BoxFuture;
use modelctx_http::{AuthHook, StreamableHttpClientTransport};
use modelctx_oauth::{
    AuthorizationHandler, AuthorizationResponse, ClientRegistration, CredentialKey,
    CredentialStore, ErrorKind, FileCredentialStore, IdJagExchange, InMemoryCredentialStore,
    LoopbackRedirect, OAuthClient, OAuthError, SigningKey, TokenSet,
};
use modelctx_transport::{MessageSink, MessageStream, Transport, TransportMessage};
use modelctx_types::JsonRpcMessage;
use serde_json::{Value, json};
use sha2::Digest as _;
use support::{Browser, Config, Event, World};

const LIMIT: Duration = Duration::from_secs(10);

fn client(world: &World) -> modelctx_oauth::OAuthClientBuilder {
    OAuthClient::builder(&world.server)
        .authorization_code(Browser::honest())
        .client_name("flow-tests", None)
}

async fn rejected(hook: &OAuthClient, status: u16, headers: &HeaderMap) -> bool {
    tokio::time::timeout(LIMIT, hook.on_rejected(status, headers))
        .await
        .expect("on_rejected answered in time")
}

async fn headers_for(hook: &OAuthClient, url: &str) -> Result<HeaderMap, String> {
    tokio::time::timeout(LIMIT, hook.headers_for(&Method::POST, url))
        .await
        .expect("headers answered in time")
        .map_err(|e| e.to_string())
}

fn bearer(h: &HeaderMap) -> Option<String> {
    h.get(header::AUTHORIZATION)
        .map(|v| v.to_str().unwrap().to_owned())
}

#[tokio::test]
async fn authorization_code_through_the_transport() {
    let world = World::start(Config {
        prm_scopes: Some(vec!["mcp:read".into(), "mcp:write".into()]),
        challenge_scope: Some("mcp:read".into()),
        ..Config::default()
    })
    .await;
    let oauth = client(&world).build().unwrap();
    let transport = StreamableHttpClientTransport::builder(&world.server)
        .auth(oauth.clone())
        .standalone_stream(false)
        .build()
        .unwrap();
    let (sink, mut stream) = transport.split();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;
    sink.send(TransportMessage::new(init.parse().unwrap()))
        .await
        .unwrap();
    let reply = tokio::time::timeout(LIMIT, stream.recv())
        .await
        .expect("a reply in time")
        .expect("a reply")
        .expect("not an error");
    assert_eq!(
        reply.message.id().map(|i| i.to_string()),
        Some("1".to_owned())
    );

    // Discovery from the challenge, registration as a native public client.
    let events = world.events();
    assert!(matches!(
        &events[0],
        Event::Mcp {
            authorization: None
        }
    ));
    assert!(
        matches!(&events[1], Event::Prm(p) if p == "/.well-known/oauth-protected-resource/mcp")
    );
    assert!(
        matches!(&events[2], Event::Metadata(p) if p == "/.well-known/oauth-authorization-server")
    );
    let reg = &world.registrations()[0];
    assert_eq!(reg["application_type"], "native");
    assert_eq!(reg["token_endpoint_auth_method"], "none");
    assert!(
        reg["grant_types"]
            .as_array()
            .unwrap()
            .contains(&json!("refresh_token"))
    );
    assert_eq!(reg["redirect_uris"], json!(["http://127.0.0.1:9/callback"]));

    // Authorization: PKCE S256, state, resource exactly as the PRM says, the
    // challenge's scope.
    let q = &world.authorizations()[0];
    assert_eq!(q["response_type"], "code");
    assert_eq!(q["code_challenge_method"], "S256");
    assert_eq!(q["code_challenge"].len(), 43);
    assert!(q["state"].len() >= 32);
    assert_eq!(q["resource"], world.server);
    assert_eq!(q["scope"], "mcp:read");
    assert_eq!(q["client_id"], "client-1");

    // Token request: the verifier, the same resource, the client id (method none).
    let (form, authorization, _) = &world.token_requests()[0];
    assert_eq!(form["grant_type"], "authorization_code");
    assert_eq!(form["resource"], world.server);
    assert_eq!(form["client_id"], "client-1");
    assert_eq!(form["redirect_uri"], "http://127.0.0.1:9/callback");
    assert!(authorization.is_none());

    // The retried request carried the token.
    let last = events.last().unwrap();
    assert!(
        matches!(last, Event::Mcp { authorization: Some(a) } if a == "Bearer at-2"),
        "{last:?}"
    );
    assert_eq!(oauth.tokens().await.unwrap().access_token, "at-2");
    sink.close().await;
}

/// Sends `initialize` through a transport authenticated by `oauth`: the id of the
/// (successful) response, or the error.
async fn initialize(world: &World, oauth: &OAuthClient) -> Result<String, String> {
    let transport = StreamableHttpClientTransport::builder(&world.server)
        .auth(oauth.clone())
        .standalone_stream(false)
        .build()
        .unwrap();
    let (sink, mut stream) = transport.split();
    let init = r#"{"jsonrpc":"2.0","id":7,"method":"initialize","params":{}}"#;
    let sent = sink
        .send(TransportMessage::new(init.parse().unwrap()))
        .await;
    let outcome = match sent {
        Err(e) => Err(e.to_string()),
        Ok(()) => {
            let reply = tokio::time::timeout(LIMIT, stream.recv())
                .await
                .expect("a reply in time");
            match reply {
                Some(Ok(m)) => match m.message {
                    JsonRpcMessage::Response(r) => Ok(r.id.to_string()),
                    other => Err(format!("{other:?}")),
                },
                Some(Err(e)) => Err(e.to_string()),
                None => Err("closed".into()),
            }
        }
    };
    sink.close().await;
    outcome
}

#[tokio::test]
async fn step_up_within_one_request_through_the_transport() {
    let world = World::start(Config {
        challenge_scope: Some("read".into()),
        required_scope: Some("write".into()),
        ..Config::default()
    })
    .await;
    let oauth = client(&world).build().unwrap();
    // 401 → authorize(read) → retry → 403 insufficient_scope(write) → authorize(read
    // write) → retry → answered.
    assert_eq!(initialize(&world, &oauth).await.unwrap(), "7");
    let scopes: Vec<String> = world
        .authorizations()
        .iter()
        .map(|q| q["scope"].clone())
        .collect();
    assert_eq!(scopes, ["read", "read write"]);
}

#[tokio::test]
async fn dpop_nonce_right_after_a_new_token_through_the_transport() {
    let world = World::start(Config {
        dpop_algs: Some(vec!["ES256".into()]),
        rs_nonce: Some("rs-nonce-1".into()),
        ..Config::default()
    })
    .await;
    let oauth = client(&world).dpop(true).build().unwrap();
    // 401 → authorize → retry with the DPoP token → 401 use_dpop_nonce → retry with
    // the nonce → answered: two retries of one request.
    assert_eq!(initialize(&world, &oauth).await.unwrap(), "7");
    let presented: Vec<Option<String>> = world
        .events()
        .into_iter()
        .filter_map(|e| match e {
            Event::Mcp { authorization } => Some(authorization),
            _ => None,
        })
        .collect();
    assert_eq!(
        presented,
        [None, Some("DPoP at-2".into()), Some("DPoP at-2".into())]
    );
    assert_eq!(world.authorizations().len(), 1);
}

/// The `jwk` of the DPoP proof a client attaches to a request to `url`.
async fn proof_key(oauth: &OAuthClient, url: &str) -> Value {
    let headers = headers_for(oauth, url).await.unwrap();
    let proof = headers["dpop"].to_str().unwrap();
    let header = proof.split('.').next().unwrap();
    let header = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(header)
        .unwrap();
    serde_json::from_slice::<Value>(&header).unwrap()["jwk"].clone()
}

#[tokio::test]
async fn dpop_bound_tokens_of_an_earlier_run_keep_their_key() {
    let world = World::start(Config {
        dpop_algs: Some(vec!["ES256".into()]),
        ..Config::default()
    })
    .await;
    let store = Arc::new(InMemoryCredentialStore::new());
    let first = client(&world)
        .dpop(true)
        .store(store.clone())
        .build()
        .unwrap();
    assert_eq!(initialize(&world, &first).await.unwrap(), "7");
    let key = proof_key(&first, &world.server).await;
    // The stored credentials hold the key (and their Debug form does not show it).
    let stored = store
        .load(&CredentialKey::new(&world.issuer, &world.server))
        .await
        .unwrap()
        .unwrap();
    assert!(stored.dpop_key.is_some());
    assert!(!format!("{stored:?}").contains("PRIVATE KEY"));

    // A later run with the same store: the stored DPoP token, proofs by the same key,
    // no new authorization.
    let later = client(&world)
        .dpop(true)
        .store(store.clone())
        .build()
        .unwrap();
    assert_eq!(initialize(&world, &later).await.unwrap(), "7");
    assert_eq!(proof_key(&later, &world.server).await, key);
    assert_eq!(world.authorizations().len(), 1);
}

#[tokio::test]
async fn a_server_refusing_every_token_fails_the_request_without_looping() {
    let world = World::start(Config {
        // Without DPoP the nonce never comes: every authenticated request is refused.
        rs_nonce: Some("never-sent".into()),
        ..Config::default()
    })
    .await;
    let oauth = client(&world).build().unwrap();
    let e = initialize(&world, &oauth).await;
    assert!(e.is_err(), "{e:?}");
    assert_eq!(world.authorizations().len(), 1);
    assert_eq!(world.token_requests().len(), 1);
    // The unauthenticated try and one retry with the new token; a nonce challenge is
    // not answered by a client without DPoP.
    let tries = world
        .events()
        .iter()
        .filter(|e| matches!(e, Event::Mcp { .. }))
        .count();
    assert_eq!(tries, 2);
}

#[tokio::test]
async fn scope_falls_back_to_scopes_supported_then_none() {
    let world = World::start(Config {
        prm_scopes: Some(vec!["a".into(), "b".into()]),
        ..Config::default()
    })
    .await;
    let oauth = client(&world).build().unwrap();
    assert!(rejected(&oauth, 401, &world.challenge(None)).await);
    assert_eq!(world.authorizations()[0]["scope"], "a b");

    let world = World::start(Config::default()).await;
    let oauth = client(&world).build().unwrap();
    assert!(rejected(&oauth, 401, &world.challenge(None)).await);
    assert!(!world.authorizations()[0].contains_key("scope"));
}

#[tokio::test]
async fn offline_access_only_when_the_server_offers_it() {
    let world = World::start(Config {
        as_scopes: Some(vec!["mcp".into(), "offline_access".into()]),
        ..Config::default()
    })
    .await;
    let oauth = client(&world).build().unwrap();
    assert!(rejected(&oauth, 401, &world.challenge(Some("mcp"))).await);
    assert_eq!(world.authorizations()[0]["scope"], "mcp offline_access");
    assert_eq!(world.authorizations()[0]["prompt"], "consent");

    let world = World::start(Config {
        as_scopes: Some(vec!["mcp".into()]),
        ..Config::default()
    })
    .await;
    let oauth = client(&world).build().unwrap();
    assert!(rejected(&oauth, 401, &world.challenge(Some("mcp"))).await);
    assert_eq!(world.authorizations()[0]["scope"], "mcp");
    assert!(!world.authorizations()[0].contains_key("prompt"));
}

/// A flow that fails: on_rejected asks for the retry, whose headers carry the error.
async fn failing_flow(world: &World, oauth: &OAuthClient) -> OAuthError {
    assert!(rejected(oauth, 401, &world.challenge(None)).await);
    let e = headers_for(oauth, &world.server).await.unwrap_err();
    let last = oauth.last_error().expect("the flow's error");
    assert!(e.contains(last.message()), "{e} / {last}");
    assert!(oauth.tokens().await.is_none());
    last
}

#[tokio::test]
async fn pkce_without_s256_is_refused_before_authorization() {
    let world = World::start(Config {
        pkce_methods: vec!["plain".into()],
        ..Config::default()
    })
    .await;
    let oauth = client(&world).build().unwrap();
    let e = failing_flow(&world, &oauth).await;
    assert_eq!(e.kind(), ErrorKind::PkceUnsupported);
    assert!(world.authorizations().is_empty());
}

#[tokio::test]
async fn metadata_with_another_issuer_is_refused() {
    let world = World::start(Config {
        metadata_issuer: Some("https://attacker.example".into()),
        ..Config::default()
    })
    .await;
    let oauth = client(&world).build().unwrap();
    let e = failing_flow(&world, &oauth).await;
    assert_eq!(e.kind(), ErrorKind::IssuerMismatch);
    assert!(world.registrations().is_empty());
    assert!(world.authorizations().is_empty());
}

#[tokio::test]
async fn prm_for_another_resource_is_refused() {
    let world = World::start(Config {
        prm_resource: Some("https://evil.example/mcp".into()),
        ..Config::default()
    })
    .await;
    let oauth = client(&world).build().unwrap();
    let e = failing_flow(&world, &oauth).await;
    assert_eq!(e.kind(), ErrorKind::ResourceMismatch);
    assert!(
        !world
            .events()
            .iter()
            .any(|e| matches!(e, Event::Metadata(_)))
    );
}

#[tokio::test]
async fn insecure_authorization_server_is_refused() {
    let world = World::start(Config {
        prm_issuer: Some("http://as.example".into()),
        ..Config::default()
    })
    .await;
    let oauth = client(&world).build().unwrap();
    let e = failing_flow(&world, &oauth).await;
    assert_eq!(e.kind(), ErrorKind::InsecureUrl);
    // With the private-network guard forced on, even this loopback setup is refused
    // before anything is fetched.
    let guarded = client(&world).private_network_guard(true).build().unwrap();
    let before = world.events().len();
    let e = failing_flow(&world, &guarded).await;
    assert_eq!(e.kind(), ErrorKind::InsecureUrl);
    assert!(e.message().contains("private-network guard"), "{e}");
    assert_eq!(world.events().len(), before);
    let e = OAuthClient::builder("http://mcp.example/mcp")
        .authorization_code(Browser::honest())
        .build()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config);
}

/// SECURITY.md case 31: an authorization endpoint with a dangerous scheme
/// (`javascript:`, `file:`, `data:`) or plain http off loopback is refused before the
/// user is sent anywhere: the browser never sees it and no token is asked for.
#[tokio::test]
async fn dangerous_authorization_endpoints_are_refused_before_the_browser() {
    for endpoint in [
        "javascript:alert(document.cookie)",
        "file:///etc/passwd",
        "data:text/html,<script>alert(1)</script>",
        "http://as.example/authorize",
    ] {
        let world = World::start(Config {
            authorization_endpoint: Some(endpoint.into()),
            ..Config::default()
        })
        .await;
        let oauth = client(&world).build().unwrap();
        let e = failing_flow(&world, &oauth).await;
        assert_eq!(e.kind(), ErrorKind::InsecureUrl, "{endpoint}: {e}");
        assert!(
            !world
                .events()
                .iter()
                .any(|e| matches!(e, Event::Authorize(_) | Event::Token { .. })),
            "{endpoint}: the flow stopped before the browser"
        );
    }
}

#[tokio::test]
async fn oversize_metadata_is_refused() {
    let world = World::start(Config {
        prm_padding: 64 * 1024,
        ..Config::default()
    })
    .await;
    let oauth = client(&world).limits(LIMIT, 16 * 1024).build().unwrap();
    let e = failing_flow(&world, &oauth).await;
    assert_eq!(e.kind(), ErrorKind::InvalidResponse);
    assert!(e.message().contains("larger than"), "{e}");
}

#[tokio::test]
async fn tampered_state_is_refused_before_the_token_request() {
    let world = World::start(Config::default()).await;
    let oauth = OAuthClient::builder(&world.server)
        .authorization_code(Browser {
            tamper: Some(("state", "forged")),
            ..Browser::honest()
        })
        .build()
        .unwrap();
    let e = failing_flow(&world, &oauth).await;
    assert_eq!(e.kind(), ErrorKind::StateMismatch);
    assert!(world.token_requests().is_empty());
}

#[tokio::test]
async fn wrong_or_missing_iss_is_refused() {
    for (mode, supported) in [("wrong", true), ("wrong", false), ("omit", true)] {
        let world = World::start(Config {
            iss_mode: mode,
            iss_supported: supported,
            ..Config::default()
        })
        .await;
        let oauth = client(&world).build().unwrap();
        let e = failing_flow(&world, &oauth).await;
        assert_eq!(e.kind(), ErrorKind::IssuerMismatch, "{mode} {supported}");
        assert!(world.token_requests().is_empty());
    }
    // Not advertised and absent: fine.
    let world = World::start(Config {
        iss_mode: "omit",
        iss_supported: false,
        ..Config::default()
    })
    .await;
    let oauth = client(&world).build().unwrap();
    assert!(rejected(&oauth, 401, &world.challenge(None)).await);
    assert!(bearer(&headers_for(&oauth, &world.server).await.unwrap()).is_some());
}

#[tokio::test]
async fn authorization_error_surfaces() {
    let world = World::start(Config::default()).await;
    let oauth = OAuthClient::builder(&world.server)
        .authorization_code(Browser {
            tamper: Some(("error", "access_denied")),
            ..Browser::honest()
        })
        .build()
        .unwrap();
    let e = failing_flow(&world, &oauth).await;
    assert_eq!(e.kind(), ErrorKind::Authorization);
    assert_eq!(e.oauth_error(), Some("access_denied"));
}

#[tokio::test]
async fn registration_errors_surface_status_and_body() {
    let world = World::start(Config {
        register_status: 400,
        ..Config::default()
    })
    .await;
    let oauth = client(&world).build().unwrap();
    let e = failing_flow(&world, &oauth).await;
    assert_eq!(e.kind(), ErrorKind::Registration);
    assert_eq!(e.status(), Some(400));
    assert_eq!(e.oauth_error(), Some("invalid_redirect_uri"));
    assert!(e.message().contains("not allowed here"), "{e}");
}

#[tokio::test]
async fn substituted_redirect_uris_are_refused() {
    let world = World::start(Config {
        substitute_redirect: true,
        ..Config::default()
    })
    .await;
    let oauth = client(&world).build().unwrap();
    let e = failing_flow(&world, &oauth).await;
    assert_eq!(e.kind(), ErrorKind::Registration);
    assert!(world.authorizations().is_empty());
}

#[tokio::test]
async fn client_id_metadata_document_where_supported_else_registration() {
    const DOC: &str = "https://app.example/client.json";
    let world = World::start(Config {
        cimd: true,
        ..Config::default()
    })
    .await;
    let oauth = client(&world)
        .client_metadata_document(DOC)
        .build()
        .unwrap();
    assert!(rejected(&oauth, 401, &world.challenge(None)).await);
    assert!(world.registrations().is_empty());
    assert_eq!(world.authorizations()[0]["client_id"], DOC);
    assert_eq!(world.token_requests()[0].0["client_id"], DOC);

    // Not advertised: dynamic registration.
    let world = World::start(Config::default()).await;
    let oauth = client(&world)
        .client_metadata_document(DOC)
        .build()
        .unwrap();
    assert!(rejected(&oauth, 401, &world.challenge(None)).await);
    assert_eq!(world.registrations().len(), 1);
    assert_eq!(world.authorizations()[0]["client_id"], "client-1");

    // A metadata document URL must be https with a path.
    let e = client(&world)
        .client_metadata_document("https://app.example/")
        .build()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config);
}

#[tokio::test]
async fn pre_registered_credentials_with_basic_auth_only_at_their_issuer() {
    let world = World::start(Config {
        auth_methods: vec!["client_secret_basic".into()],
        ..Config::default()
    })
    .await;
    let oauth = client(&world)
        .pre_registered(
            "https://other-as.example",
            ClientRegistration::new("elsewhere"),
        )
        .pre_registered(
            world.issuer.clone(),
            ClientRegistration::new("pre id").with_secret("s3cret:&"),
        )
        .build()
        .unwrap();
    assert!(rejected(&oauth, 401, &world.challenge(None)).await);
    assert!(world.registrations().is_empty());
    assert_eq!(world.authorizations()[0]["client_id"], "pre id");
    let (form, authorization, _) = &world.token_requests()[0];
    // RFC 6749 §2.3.1: id and secret form-urlencoded, then Basic.
    let expected = base64::engine::general_purpose::STANDARD.encode("pre+id:s3cret%3A%26");
    assert_eq!(
        authorization.as_deref(),
        Some(format!("Basic {expected}").as_str())
    );
    assert!(!form.contains_key("client_secret"));
}

#[tokio::test]
async fn client_secret_post_when_that_is_all_the_server_takes() {
    let world = World::start(Config {
        auth_methods: vec!["client_secret_post".into()],
        ..Config::default()
    })
    .await;
    let oauth = client(&world).build().unwrap();
    assert!(rejected(&oauth, 401, &world.challenge(None)).await);
    let (form, authorization, _) = &world.token_requests()[0];
    assert_eq!(form["client_secret"], "secret-1");
    assert_eq!(form["client_id"], "client-1");
    assert!(authorization.is_none());
}

#[tokio::test]
async fn refresh_before_expiry_is_transparent() {
    let world = World::start(Config {
        expires_in: 10,
        ..Config::default()
    })
    .await;
    let oauth = client(&world).build().unwrap();
    assert!(rejected(&oauth, 401, &world.challenge(None)).await);
    // The token expires within the refresh margin: the next request refreshes first.
    let h = headers_for(&oauth, &world.server).await.unwrap();
    assert_eq!(bearer(&h).as_deref(), Some("Bearer at-3"));
    let requests = world.token_requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].0["grant_type"], "refresh_token");
    assert_eq!(requests[1].0["refresh_token"], "rt-2");
    assert_eq!(requests[1].0["resource"], world.server);
    assert_eq!(world.authorizations().len(), 1);
}

#[tokio::test]
async fn invalid_grant_clears_tokens_only_and_invalid_client_the_registration() {
    let store = Arc::new(InMemoryCredentialStore::new());
    let world = World::start(Config {
        expires_in: 10,
        refresh: "invalid_grant",
        ..Config::default()
    })
    .await;
    let oauth = client(&world).store(store.clone()).build().unwrap();
    assert!(rejected(&oauth, 401, &world.challenge(None)).await);
    let key = CredentialKey::new(&world.issuer, &world.server);
    // The refresh is refused: no token goes out, the registration stays.
    let h = headers_for(&oauth, &world.server).await.unwrap();
    assert!(bearer(&h).is_none());
    let stored = store.load(&key).await.unwrap().unwrap();
    assert!(stored.tokens.is_none());
    assert_eq!(stored.registration.unwrap().client_id, "client-1");

    for refusal in ["invalid_client", "unauthorized_client"] {
        let world = World::start(Config {
            expires_in: 10,
            refresh: refusal,
            ..Config::default()
        })
        .await;
        let store = Arc::new(InMemoryCredentialStore::new());
        let oauth = client(&world).store(store.clone()).build().unwrap();
        assert!(rejected(&oauth, 401, &world.challenge(None)).await);
        let h = headers_for(&oauth, &world.server).await.unwrap();
        assert!(bearer(&h).is_none());
        let key = CredentialKey::new(&world.issuer, &world.server);
        let stored = store.load(&key).await.unwrap().unwrap();
        assert!(stored.tokens.is_none(), "{refusal}");
        assert!(stored.registration.is_none(), "{refusal}");
        // The next 401 registers anew.
        assert!(rejected(&oauth, 401, &world.challenge(None)).await);
        assert_eq!(world.registrations().len(), 2, "{refusal}");
    }
}

#[tokio::test]
async fn a_configured_authorization_server_is_used_alone() {
    // The resource names another authorization server; the configured one is used,
    // and the resource server is not asked.
    let world = World::start(Config {
        prm_issuer: Some("http://127.0.0.1:1".into()),
        ..Config::default()
    })
    .await;
    let oauth = client(&world)
        .authorization_server(world.issuer.clone())
        .build()
        .unwrap();
    assert!(rejected(&oauth, 401, &world.challenge(None)).await);
    assert!(!world.events().iter().any(|e| matches!(e, Event::Prm(_))));
    assert_eq!(world.authorizations()[0]["resource"], world.server);
    assert!(bearer(&headers_for(&oauth, &world.server).await.unwrap()).is_some());

    // Its metadata must name it: else no assertion is asked for, nothing is sent.
    let world = World::start(Config {
        metadata_issuer: Some("https://attacker.example".into()),
        ..Config::default()
    })
    .await;
    let asked = Arc::new(Mutex::new(0));
    let count = asked.clone();
    let oauth = OAuthClient::builder(&world.server)
        .authorization_server(world.issuer.clone())
        .jwt_bearer(move |_: modelctx_oauth::AssertionRequest| {
            *count.lock().unwrap() += 1;
            async { Ok("id-jag".to_owned()) }
        })
        .client(ClientRegistration::new("c").with_secret("s"))
        .build()
        .unwrap();
    let e = failing_flow(&world, &oauth).await;
    assert_eq!(e.kind(), ErrorKind::IssuerMismatch);
    assert_eq!(*asked.lock().unwrap(), 0);
    assert!(world.token_requests().is_empty());
    // A configured issuer must be a usable URL.
    let e = client(&world)
        .authorization_server("not a url")
        .build()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config);
}

#[tokio::test]
async fn step_up_asks_for_the_union_within_a_limit() {
    let world = World::start(Config::default()).await;
    let oauth = client(&world).max_step_ups(2).build().unwrap();
    assert!(rejected(&oauth, 401, &world.challenge(Some("read"))).await);
    headers_for(&oauth, &world.server).await.unwrap();
    headers_for(&oauth, &world.server).await.unwrap();
    assert!(rejected(&oauth, 403, &world.insufficient("write")).await);
    assert_eq!(world.authorizations()[1]["scope"], "read write");
    headers_for(&oauth, &world.server).await.unwrap();
    // The same challenge again: the token was granted write, so no authorization would
    // help; a refreshed token is tried instead (no user).
    assert!(rejected(&oauth, 403, &world.insufficient("write")).await);
    assert_eq!(world.authorizations().len(), 2);
    headers_for(&oauth, &world.server).await.unwrap();
    // Refused again on its first use: the limit (2) is reached.
    assert!(!rejected(&oauth, 403, &world.insufficient("read write")).await);
    // Another operation's challenge, then the one of its retry; then the limit.
    headers_for(&oauth, &world.server).await.unwrap();
    assert!(rejected(&oauth, 403, &world.insufficient("admin")).await);
    headers_for(&oauth, &world.server).await.unwrap();
    assert!(rejected(&oauth, 403, &world.insufficient("root")).await);
    headers_for(&oauth, &world.server).await.unwrap();
    assert!(!rejected(&oauth, 403, &world.insufficient("more")).await);
    assert_eq!(world.authorizations().len(), 4);
    // A 403 without insufficient_scope is not a scope problem.
    let mut plain = HeaderMap::new();
    plain.insert(
        header::WWW_AUTHENTICATE,
        "Bearer error=\"invalid_token\"".parse().unwrap(),
    );
    assert!(!rejected(&oauth, 403, &plain).await);
}

/// A user who authorizes at once, or, while `holding`, says so and waits for a release.
#[derive(Clone, Default)]
struct HeldUser {
    holding: Arc<std::sync::atomic::AtomicBool>,
    opened: Arc<tokio::sync::Notify>,
    release: Arc<tokio::sync::Notify>,
}

impl AuthorizationHandler for HeldUser {
    fn redirect_uri(&self) -> String {
        Browser::honest().redirect_uri()
    }

    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
    ) -> BoxFuture<'a, Result<AuthorizationResponse, OAuthError>> {
        Box::pin(async move {
            if self.holding.load(std::sync::atomic::Ordering::SeqCst) {
                let released = self.release.notified();
                self.opened.notify_one();
                released.await;
            }
            Browser::honest().authorize(authorization_url).await
        })
    }
}

#[tokio::test]
async fn a_403_for_an_older_token_is_retried_with_the_stepped_up_one() {
    let world = World::start(Config::default()).await;
    let user = HeldUser::default();
    let oauth = OAuthClient::builder(&world.server)
        .authorization_code(user.clone())
        .build()
        .unwrap();
    assert!(rejected(&oauth, 401, &world.challenge(Some("read"))).await);
    headers_for(&oauth, &world.server).await.unwrap();
    headers_for(&oauth, &world.server).await.unwrap();
    // One request's 403 starts a step-up; the user takes their time.
    user.holding
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let opened = user.opened.notified();
    let hook = oauth.clone();
    let insufficient = world.insufficient("write");
    let first = tokio::spawn(async move { hook.on_rejected(403, &insufficient).await });
    tokio::time::timeout(LIMIT, opened).await.unwrap();
    // Another request, sent with the same old token, is refused meanwhile.
    let stale = world.insufficient("write");
    let second = oauth.on_rejected(403, &stale);
    futures::pin_mut!(second);
    assert!(futures::poll!(&mut second).is_pending());
    user.holding
        .store(false, std::sync::atomic::Ordering::SeqCst);
    user.release.notify_one();
    assert!(tokio::time::timeout(LIMIT, first).await.unwrap().unwrap());
    // It is retried with the new token instead of failing: nothing new to ask for.
    assert!(tokio::time::timeout(LIMIT, second).await.unwrap());
    assert_eq!(world.authorizations().len(), 2);
    assert_eq!(
        bearer(&headers_for(&oauth, &world.server).await.unwrap()).as_deref(),
        Some("Bearer at-3")
    );
}

#[tokio::test]
async fn a_401_right_after_a_new_token_does_not_authorize_again() {
    let world = World::start(Config::default()).await;
    let oauth = client(&world).build().unwrap();
    assert!(rejected(&oauth, 401, &world.challenge(None)).await);
    // The retry carries the new token and is refused again.
    headers_for(&oauth, &world.server).await.unwrap();
    assert!(!rejected(&oauth, 401, &world.challenge(None)).await);
    assert_eq!(world.authorizations().len(), 1);
    assert!(
        oauth
            .last_error()
            .unwrap()
            .message()
            .contains("just issued")
    );
}

/// A browser whose user takes their time: it says when it is open, and goes on only
/// when released.
struct SlowUser {
    opened: Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
    release: tokio::sync::Mutex<Option<tokio::sync::oneshot::Receiver<()>>>,
}

impl AuthorizationHandler for SlowUser {
    fn redirect_uri(&self) -> String {
        Browser::honest().redirect_uri()
    }

    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
    ) -> BoxFuture<'a, Result<AuthorizationResponse, OAuthError>> {
        Box::pin(async move {
            if let Some(opened) = self.opened.lock().unwrap().take() {
                let _ = opened.send(());
            }
            if let Some(release) = self.release.lock().await.take() {
                let _ = release.await;
            }
            Browser::honest().authorize(authorization_url).await
        })
    }
}

#[tokio::test]
async fn authorization_outlives_the_request_that_started_it() {
    let world = World::start(Config::default()).await;
    let (opened_tx, opened_rx) = tokio::sync::oneshot::channel();
    let (release_tx, release_rx) = tokio::sync::oneshot::channel();
    let oauth = OAuthClient::builder(&world.server)
        .authorization_code(SlowUser {
            opened: Mutex::new(Some(opened_tx)),
            release: tokio::sync::Mutex::new(Some(release_rx)),
        })
        .build()
        .unwrap();
    let hook = oauth.clone();
    let challenge = world.challenge(None);
    let request = tokio::spawn(async move { hook.on_rejected(401, &challenge).await });
    tokio::time::timeout(LIMIT, opened_rx)
        .await
        .expect("the user was sent to authorize")
        .unwrap();
    // The request gives up (its timeout) while the user is still at it.
    request.abort();
    assert!(request.await.unwrap_err().is_cancelled());
    release_tx.send(()).unwrap();
    // The authorization completes all the same; the next request has the token.
    let tokens = tokio::time::timeout(LIMIT, oauth.tokens())
        .await
        .expect("the flow finished in time");
    assert_eq!(tokens.map(|t| t.access_token).as_deref(), Some("at-2"));
    assert_eq!(
        bearer(&headers_for(&oauth, &world.server).await.unwrap()).as_deref(),
        Some("Bearer at-2")
    );
}

#[tokio::test]
async fn tokens_never_go_to_another_origin() {
    let world = World::start(Config::default()).await;
    let oauth = client(&world).build().unwrap();
    assert!(rejected(&oauth, 401, &world.challenge(None)).await);
    let other = format!("{}/mcp", world.issuer);
    assert!(headers_for(&oauth, &other).await.unwrap().is_empty());
    assert!(
        headers_for(&oauth, "http://localhost:1/mcp")
            .await
            .unwrap()
            .is_empty()
    );
    assert!(bearer(&headers_for(&oauth, &world.server).await.unwrap()).is_some());
}

#[tokio::test]
async fn file_store_keeps_credentials_between_clients() {
    let dir = std::env::temp_dir().join(format!("modelctx-oauth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("store-test.json");
    let _ = std::fs::remove_file(&path);
    let world = World::start(Config::default()).await;
    let first = client(&world)
        .store(FileCredentialStore::new(&path))
        .build()
        .unwrap();
    assert!(rejected(&first, 401, &world.challenge(None)).await);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    // A second client (another run) finds the token: no new authorization.
    let second = client(&world)
        .store(FileCredentialStore::new(&path))
        .build()
        .unwrap();
    assert!(rejected(&second, 401, &world.challenge(None)).await);
    assert_eq!(
        bearer(&headers_for(&second, &world.server).await.unwrap()).as_deref(),
        Some("Bearer at-2")
    );
    assert_eq!(world.authorizations().len(), 1);
    // A corrupt file is an error, not a panic.
    std::fs::write(&path, "{not json").unwrap();
    let store = FileCredentialStore::new(&path);
    let e = store
        .load(&CredentialKey::new(&world.issuer, &world.server))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Store);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn migration_to_another_authorization_server_registers_anew() {
    let world = World::start(Config::default()).await;
    let other = World::start(Config::default()).await;
    *other.shared.counter.lock().unwrap() = 100;
    let store = Arc::new(InMemoryCredentialStore::new());
    let oauth = client(&world).store(store.clone()).build().unwrap();
    assert!(rejected(&oauth, 401, &world.challenge(None)).await);
    headers_for(&oauth, &world.server).await.unwrap();
    headers_for(&oauth, &world.server).await.unwrap();
    // The resource now names the other authorization server.
    let new_issuer = other.issuer.clone();
    world.set(|c| c.prm_issuer = Some(new_issuer));
    assert!(rejected(&oauth, 401, &world.challenge(None)).await);
    assert_eq!(other.registrations().len(), 1);
    let q = &other.authorizations()[0];
    assert_eq!(q["client_id"], "client-101");
    assert_eq!(other.token_requests()[0].0["client_id"], "client-101");
    assert_eq!(world.registrations().len(), 1);
    // What was bound to the old server is gone.
    let old = CredentialKey::new(&world.issuer, &world.server);
    assert!(store.load(&old).await.unwrap().is_none());
    let new = CredentialKey::new(&other.issuer, &world.server);
    assert!(store.load(&new).await.unwrap().unwrap().tokens.is_some());
}

#[tokio::test]
async fn client_credentials_with_private_key_jwt() {
    let world = World::start(Config {
        auth_methods: vec!["private_key_jwt".into()],
        ..Config::default()
    })
    .await;
    let key = SigningKey::generate().unwrap();
    let oauth = OAuthClient::builder(&world.server)
        .client_credentials()
        .client(ClientRegistration::new("m2m").with_auth_method("private_key_jwt"))
        .client_key(key.clone())
        .build()
        .unwrap();
    assert!(rejected(&oauth, 401, &world.challenge(Some("jobs"))).await);
    let (form, _, _) = &world.token_requests()[0];
    assert_eq!(form["grant_type"], "client_credentials");
    assert_eq!(form["scope"], "jobs");
    assert_eq!(form["resource"], world.server);
    assert_eq!(
        form["client_assertion_type"],
        "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    );
    let claims = verify_es256(&form["client_assertion"], &key.public_jwk());
    assert_eq!(claims["iss"], "m2m");
    assert_eq!(claims["sub"], "m2m");
    assert_eq!(claims["aud"], world.issuer);
    assert!(world.authorizations().is_empty());
}

#[tokio::test]
async fn jwt_bearer_grant_with_the_application_assertion() {
    let world = World::start(Config::default()).await;
    let seen = Arc::new(Mutex::new(None));
    let record = seen.clone();
    let oauth = OAuthClient::builder(&world.server)
        .jwt_bearer(move |request: modelctx_oauth::AssertionRequest| {
            *record.lock().unwrap() = Some((request.issuer.clone(), request.resource.clone()));
            async move { Ok("workload.jwt".to_owned()) }
        })
        .client(ClientRegistration::new("workload"))
        .build()
        .unwrap();
    // The test AS does not know the grant: its error surfaces, with the code.
    let e = failing_flow(&world, &oauth).await;
    assert_eq!(e.kind(), ErrorKind::TokenEndpoint);
    assert_eq!(e.oauth_error(), Some("unsupported_grant_type"));
    let (form, _, _) = &world.token_requests()[0];
    assert_eq!(
        form["grant_type"],
        "urn:ietf:params:oauth:grant-type:jwt-bearer"
    );
    assert_eq!(form["assertion"], "workload.jwt");
    assert_eq!(form["client_id"], "workload");
    assert_eq!(
        *seen.lock().unwrap(),
        Some((world.issuer.clone(), world.server.clone()))
    );
    // Not retried.
    assert_eq!(world.token_requests().len(), 1);
}

#[tokio::test]
async fn enterprise_id_jag_by_token_exchange_then_jwt_bearer() {
    let world = World::start(Config {
        auth_methods: vec!["client_secret_basic".into()],
        ..Config::default()
    })
    .await;
    let idp = IdJagExchange::new(
        &format!("{}/idp/token", world.issuer),
        ClientRegistration::new("idp-client").with_secret("idp-secret"),
        "user-id-token",
    )
    .unwrap();
    let oauth = OAuthClient::builder(&world.server)
        .jwt_bearer(idp)
        .client(ClientRegistration::new("mcp-client").with_secret("mcp-secret"))
        .build()
        .unwrap();
    assert!(rejected(&oauth, 401, &world.challenge(Some("files"))).await);
    let exchange = world
        .events()
        .into_iter()
        .find_map(|e| match e {
            Event::Exchange(form, authorization) => Some((form, authorization)),
            _ => None,
        })
        .expect("a token exchange at the IdP");
    let (form, authorization) = exchange;
    assert_eq!(
        form["grant_type"],
        "urn:ietf:params:oauth:grant-type:token-exchange"
    );
    assert_eq!(
        form["requested_token_type"],
        "urn:ietf:params:oauth:token-type:id-jag"
    );
    assert_eq!(
        form["subject_token_type"],
        "urn:ietf:params:oauth:token-type:id_token"
    );
    assert_eq!(form["audience"], world.issuer);
    assert_eq!(form["resource"], world.server);
    assert_eq!(form["scope"], "files");
    let basic = base64::engine::general_purpose::STANDARD.encode("idp-client:idp-secret");
    assert_eq!(authorization, Some(format!("Basic {basic}")));
    // The ID-JAG is the assertion of the grant at the authorization server.
    let (form, authorization, _) = &world.token_requests()[0];
    assert_eq!(
        form["grant_type"],
        "urn:ietf:params:oauth:grant-type:jwt-bearer"
    );
    assert_eq!(form["assertion"], "id-jag-1");
    let basic = base64::engine::general_purpose::STANDARD.encode("mcp-client:mcp-secret");
    assert_eq!(
        authorization.as_deref(),
        Some(format!("Basic {basic}").as_str())
    );
    assert!(bearer(&headers_for(&oauth, &world.server).await.unwrap()).is_some());

    // An IdP refusal surfaces with its code.
    let idp = IdJagExchange::new(
        &format!("{}/idp/token", world.issuer),
        ClientRegistration::new("idp-client"),
        "expired-id-token",
    )
    .unwrap();
    let oauth = OAuthClient::builder(&world.server)
        .jwt_bearer(idp)
        .client(ClientRegistration::new("mcp-client").with_secret("mcp-secret"))
        .build()
        .unwrap();
    let e = failing_flow(&world, &oauth).await;
    assert_eq!(e.oauth_error(), Some("invalid_grant"));
}

#[tokio::test]
async fn dpop_binds_token_and_resource_requests() {
    let world = World::start(Config {
        dpop_algs: Some(vec!["ES256".into()]),
        ..Config::default()
    })
    .await;
    let oauth = client(&world).dpop(true).build().unwrap();
    assert!(rejected(&oauth, 401, &world.challenge(None)).await);
    let (_, _, proof) = &world.token_requests()[0];
    let proof = proof.clone().expect("a DPoP proof at the token endpoint");
    let header = jwt_part(&proof, 0);
    assert_eq!(header["typ"], "dpop+jwt");
    let claims = verify_es256(&proof, &header["jwk"]);
    assert_eq!(claims["htm"], "POST");
    assert_eq!(claims["htu"], format!("{}/token", world.issuer));

    let h = tokio::time::timeout(LIMIT, oauth.headers_for(&Method::GET, &world.server))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(bearer(&h).as_deref(), Some("DPoP at-2"));
    let proof = h["dpop"].to_str().unwrap();
    let claims = verify_es256(proof, &jwt_part(proof, 0)["jwk"]);
    assert_eq!(claims["htm"], "GET");
    assert_eq!(claims["htu"], world.server);
    let ath =
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(b"at-2"));
    assert_eq!(claims["ath"], ath);

    // A nonce challenge: retried once with the nonce, not twice for the same one.
    let mut challenge = HeaderMap::new();
    challenge.insert(
        header::WWW_AUTHENTICATE,
        r#"DPoP error="use_dpop_nonce""#.parse().unwrap(),
    );
    challenge.insert("dpop-nonce", "n-1".parse().unwrap());
    assert!(rejected(&oauth, 401, &challenge).await);
    let h = headers_for(&oauth, &world.server).await.unwrap();
    let proof = h["dpop"].to_str().unwrap();
    assert_eq!(jwt_part(proof, 1)["nonce"], "n-1");
    assert!(!rejected(&oauth, 401, &challenge).await);
}

#[tokio::test]
async fn loopback_redirect_receives_the_callback() {
    let world = World::start(Config::default()).await;
    let (tx, rx) = tokio::sync::oneshot::channel::<String>();
    let tx = Mutex::new(Some(tx));
    let handler = LoopbackRedirect::bind(0)
        .await
        .unwrap()
        .timeout(LIMIT)
        .on_url(move |url| {
            if let Some(tx) = tx.lock().unwrap().take() {
                let _ = tx.send(url.to_owned());
            }
        });
    let redirect_uri = handler.redirect_uri();
    assert!(redirect_uri.starts_with("http://127.0.0.1:"));
    let oauth = OAuthClient::builder(&world.server)
        .authorization_code(handler)
        .build()
        .unwrap();
    // The "user": opens the URL shown and follows the redirects to the listener.
    tokio::spawn(async move {
        let url = rx.await.unwrap();
        let _ = reqwest::get(url).await;
    });
    assert!(rejected(&oauth, 401, &world.challenge(None)).await);
    assert_eq!(world.authorizations()[0]["redirect_uri"], redirect_uri);
    assert_eq!(world.token_requests()[0].0["redirect_uri"], redirect_uri);
    assert!(bearer(&headers_for(&oauth, &world.server).await.unwrap()).is_some());
}

#[tokio::test]
async fn debug_output_hides_tokens_and_secrets() {
    let registration = ClientRegistration::new("id").with_secret("top-secret");
    assert!(!format!("{registration:?}").contains("top-secret"));
    let tokens: TokenSet = serde_json::from_value(json!({
        "access_token": "access-secret",
        "token_type": "Bearer",
        "refresh_token": "refresh-secret",
    }))
    .unwrap();
    let shown = format!("{tokens:?}");
    assert!(!shown.contains("access-secret") && !shown.contains("refresh-secret"));
    let response = AuthorizationResponse::from_query("code=the-code&state=s");
    assert!(!format!("{response:?}").contains("the-code"));
}

fn jwt_part(jwt: &str, i: usize) -> Value {
    let part = jwt.split('.').nth(i).unwrap();
    serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(part)
            .unwrap(),
    )
    .unwrap()
}

/// Verifies an ES256 JWT with the JWK and returns its claims.
fn verify_es256(jwt: &str, jwk: &Value) -> Value {
    use p256::ecdsa::signature::Verifier as _;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let x = b64.decode(jwk["x"].as_str().unwrap()).unwrap();
    let y = b64.decode(jwk["y"].as_str().unwrap()).unwrap();
    let point = p256::EncodedPoint::from_affine_coordinates(
        x.as_slice().into(),
        y.as_slice().into(),
        false,
    );
    let key = p256::ecdsa::VerifyingKey::from_encoded_point(&point).unwrap();
    let (input, signature) = jwt.rsplit_once('.').unwrap();
    let signature = p256::ecdsa::Signature::from_slice(&b64.decode(signature).unwrap()).unwrap();
    key.verify(input.as_bytes(), &signature).unwrap();
    assert_eq!(jwt_part(jwt, 0)["alg"], "ES256");
    jwt_part(jwt, 1)
}
