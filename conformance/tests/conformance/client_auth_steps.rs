//! What a client-auth test does against a [`World`]: connect (and fail to), call
//! through the token, and what the endpoint saw of it.

use modelctx::session::SessionError;
use modelctx_conformance::{Connector, within};
use modelctx_oauth::{ErrorKind, OAuthClient, OAuthError};
use serde_json::{Value, json};

use crate::client_auth_support::{Config, Event, World};
use crate::support::Echo;

/// Connecting through `oauth` fails, with the OAuth client's error (of `kind`) in the
/// error the caller sees; returns that error.
pub(crate) async fn connect_fails(
    world: &World,
    oauth: &OAuthClient,
    kind: ErrorKind,
) -> OAuthError {
    let error = match world.connect(oauth).await {
        Ok(_) => panic!("the connection must fail with {kind:?}"),
        Err(e) => e,
    };
    let oauth_error = oauth.last_error().expect("the OAuth client's error");
    assert_eq!(oauth_error.kind(), kind, "{oauth_error}");
    assert!(
        error.to_string().contains(oauth_error.message()),
        "the caller sees the OAuth error: {error} / {oauth_error}"
    );
    oauth_error
}

/// A call through `client` that fails (`why`) once the OAuth client gives up: the
/// error the caller sees and the OAuth client's own, for the test to check.
pub(crate) async fn call_fails(
    client: &modelctx::client::Client,
    oauth: &OAuthClient,
    what: &str,
    arguments: Value,
    why: &str,
) -> (SessionError, OAuthError) {
    let error = within(what, client.request::<Echo>(arguments))
        .await
        .expect_err(why);
    let oauth_error = oauth.last_error().expect("the OAuth client's error");
    (error, oauth_error)
}

/// Starts a world with `config`, where connecting with its default OAuth client fails
/// with `kind` (as [`connect_fails`]): the world and the OAuth client's error.
pub(crate) async fn refused_world(
    connector: &Connector,
    config: Config,
    kind: ErrorKind,
) -> (World, OAuthError) {
    let world = World::start(connector, config).await;
    let oauth = world.oauth().build().unwrap();
    let error = connect_fails(&world, &oauth, kind).await;
    (world, error)
}

/// Connects and makes one call: the endpoint answers through the token. In
/// 2025-11-25 it also waits for the standalone GET stream to be open, so that what the
/// test does next meets no request of the client's own making.
pub(crate) async fn connect_and_call(
    world: &World,
    oauth: &OAuthClient,
) -> modelctx::client::Client {
    let client = world.connect(oauth).await.expect("the client connects");
    let answer = within("the echo", client.request::<Echo>(json!({"k": 1})))
        .await
        .expect("the protected endpoint answers");
    assert_eq!(answer["k"], 1);
    if !world.era_2026 {
        world
            .wait_for("the standalone GET stream", |e| {
                matches!(e, Event::Mcp { method, status: 200, .. } if method == http::Method::GET)
            })
            .await;
    }
    client
}

/// Starts a world with `config` and connects its default OAuth client with
/// [`connect_and_call`]: the world, the OAuth client and the connected client.
pub(crate) async fn connected_world(
    connector: &Connector,
    config: Config,
) -> (World, OAuthClient, modelctx::client::Client) {
    let world = World::start(connector, config).await;
    let oauth = world.oauth().build().unwrap();
    let client = connect_and_call(&world, &oauth).await;
    (world, oauth, client)
}

/// Sends `test/echo` with `{key: 1}` (`what` names the wait) and checks it is answered,
/// `answered` saying when it must be.
pub(crate) async fn echoed(
    client: &modelctx::client::Client,
    what: &str,
    key: &str,
    answered: &str,
) {
    let answer = within(what, client.request::<Echo>(json!({ key: 1 })))
        .await
        .expect(answered);
    assert_eq!(answer[key], 1);
}

/// Revokes every token and has the authorization server refuse the next refresh with
/// `error`: the next call is answered all the same, after a new authorization.
pub(crate) async fn answered_after_a_refused_refresh(
    world: &World,
    client: &modelctx::client::Client,
    error: &'static str,
) {
    world.revoke_all();
    world.set(|c| c.refresh = error);
    echoed(
        client,
        "the call after the refused refresh",
        "r",
        "answered after a new authorization",
    )
    .await;
}

/// Whether the endpoint ever saw `Authorization: Bearer <token>`.
pub(crate) fn presented(world: &World, token: &str) -> bool {
    let expected = format!("Bearer {token}");
    world
        .mcp_requests()
        .iter()
        .any(|(_, a, _, _)| a.as_deref() == Some(expected.as_str()))
}
