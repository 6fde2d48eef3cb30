//! The OAuth client against an in-test authorization server and MCP resource server on
//! 127.0.0.1 (two origins), driven through the HTTP client transport or its auth hook.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::{Browser, Config, Event, World};
use axum::http::{HeaderMap, Method, header};
use base64::Engine as _;
use modelctx_http::{AuthHook, StreamableHttpClientTransport};
use modelctx_oauth::{
    AuthorizationHandler, AuthorizationResponse, ClientRegistration, CredentialKey,
    CredentialStore, ErrorKind, FileCredentialStore, IdJagExchange, InMemoryCredentialStore,
    LoopbackRedirect, OAuthClient, OAuthError, TokenSet,
};
use modelctx_test::Hold;
use modelctx_test::jose::{assert_client_assertion, jwt_part, verify_es256};
use modelctx_transport::{MessageSink, MessageStream, Transport, TransportMessage};
use modelctx_types::JsonRpcMessage;
use serde_json::{Value, json};
use sha2::Digest as _;

mod grants;
mod refusals;
mod registration;
mod step_up;
mod transport;

const LIMIT: Duration = Duration::from_secs(10);

fn client(world: &World) -> modelctx_oauth::OAuthClientBuilder {
    OAuthClient::builder(&world.server)
        .authorization_code(Browser::honest())
        .client_name("flow-tests", None)
}

/// Our usual client, authorized after the MCP server's first 401.
async fn authorized(world: &World) -> OAuthClient {
    let oauth = client(world).build().unwrap();
    assert!(rejected(&oauth, 401, &world.challenge(None)).await);
    oauth
}

/// Our client, unnamed, authorizing through `browser`.
fn client_through(world: &World, browser: Browser) -> OAuthClient {
    OAuthClient::builder(&world.server)
        .authorization_code(browser)
        .build()
        .unwrap()
}

/// A browser whose user, while `hold` is holding, waits for the test to let them go on.
fn held_by(hold: &Hold) -> Browser {
    Browser {
        hold: Some(hold.clone()),
        ..Browser::honest()
    }
}

/// A browser that hands the redirect back with its `name` parameter set to `value`.
fn tampering(name: &'static str, value: &'static str) -> Browser {
    Browser {
        tamper: Some((name, value)),
        ..Browser::honest()
    }
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

/// The `Authorization` header `oauth` sends with a request to `url`, if any.
async fn authorization_to(oauth: &OAuthClient, url: &str) -> Option<String> {
    bearer(&headers_for(oauth, url).await.unwrap())
}

/// Asserts that `oauth` sends `Authorization: <expected>` with a request to `url`.
async fn assert_sends(oauth: &OAuthClient, url: &str, expected: &str) {
    assert_eq!(
        authorization_to(oauth, url).await.as_deref(),
        Some(expected)
    );
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

/// A flow that fails: on_rejected asks for the retry, whose headers carry the error.
async fn failing_flow(world: &World, oauth: &OAuthClient) -> OAuthError {
    assert!(rejected(oauth, 401, &world.challenge(None)).await);
    let e = headers_for(oauth, &world.server).await.unwrap_err();
    let last = oauth.last_error().expect("the flow's error");
    assert!(e.contains(last.message()), "{e} / {last}");
    assert!(oauth.tokens().await.is_none());
    last
}

/// The flow of our usual client against servers configured by `change`, which fails:
/// the servers, and the flow's error.
async fn refused_flow(change: impl FnOnce(&mut Config)) -> (World, OAuthError) {
    let world = World::start_with(change).await;
    let oauth = client(&world).build().unwrap();
    let e = failing_flow(&world, &oauth).await;
    (world, e)
}
