//! Client auth: renewing authorization once connected — refresh-token rotation and the
//! step-up for a wider scope (on the standalone stream too), bounded per request and
//! not repeated for a scope already refused.

use modelctx_conformance::{Connector, Test, conformance_test, within};
use modelctx_oauth::ErrorKind;
use serde_json::json;

use crate::client_auth_steps::{call_fails, connect_and_call, connected_world, echoed};
use crate::client_auth_support::{Config, Event, World, reading, withholding_admin};
use crate::support::Echo;

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            a_refresh_token_is_replaced_only_by_a_new_one,
            ["client-auth:refresh:rotation-handling"]
        ),
        conformance_test!(
            a_standalone_stream_refused_for_scope_steps_up_like_a_post,
            ["client-auth:stepup:get-stream-403"]
        ),
        conformance_test!(
            a_request_gets_one_step_up_and_one_retry,
            ["client-auth:stepup:retry-cap"]
        ),
        conformance_test!(
            a_scope_asked_for_and_refused_is_not_asked_for_again,
            ["client-auth:stepup:attempt-tracking"]
        ),
        conformance_test!(
            a_step_up_beyond_the_grant_authorizes_one_within_it_refreshes,
            ["client-auth:stepup:refresh-bypass-on-superset"]
        ),
        conformance_test!(
            without_step_ups_the_challenge_reaches_the_caller_as_a_typed_error,
            ["client-auth:stepup:throw-mode"]
        ),
    ]
}

/// The scopes of each authorization request, in order.
fn scopes_asked(world: &World) -> Vec<String> {
    world
        .authorizations()
        .iter()
        .map(|q| q.get("scope").cloned().unwrap_or_default())
        .collect()
}

/// The endpoint's 403 answers so far.
fn forbidden(world: &World) -> usize {
    world.mcp_requests().iter().filter(|r| r.3 == 403).count()
}

/// The refresh tokens presented so far, in order.
fn refreshes(world: &World) -> Vec<String> {
    world
        .token_requests()
        .into_iter()
        .filter(|(f, _)| f["grant_type"] == "refresh_token")
        .map(|(f, _)| f["refresh_token"].clone())
        .collect()
}

async fn a_refresh_token_is_replaced_only_by_a_new_one(connector: Connector) {
    let (world, oauth, client) = connected_world(&connector, Config::default()).await;
    let first = oauth.tokens().await.unwrap().refresh_token.unwrap();
    // Each time the endpoint stops taking the token, the next call refreshes it.
    let call_after_refresh = |n: u32| {
        world.revoke_all();
        let client = client.clone();
        async move {
            let answer = within(
                "the call after a refresh",
                client.request::<Echo>(json!({"n": n})),
            )
            .await
            .expect("answered with the refreshed token");
            assert_eq!(answer["n"], n);
        }
    };
    // A refresh answer with a new refresh token: it replaces the first.
    call_after_refresh(1).await;
    let rotated = oauth.tokens().await.unwrap().refresh_token.unwrap();
    assert_ne!(rotated, first);
    // Answers without one: the rotated token stays, and is what the next refresh sends.
    world.set(|c| c.refresh_rotates = false);
    call_after_refresh(2).await;
    assert_eq!(
        oauth.tokens().await.unwrap().refresh_token,
        Some(rotated.clone())
    );
    call_after_refresh(3).await;
    assert_eq!(refreshes(&world), [first, rotated.clone(), rotated.clone()]);
    assert_eq!(oauth.tokens().await.unwrap().refresh_token, Some(rotated));
    assert_eq!(world.authorizations().len(), 1, "no user for a refresh");
}

async fn a_standalone_stream_refused_for_scope_steps_up_like_a_post(connector: Connector) {
    // POSTs need `read` (from the challenge); the standalone GET also needs `stream`.
    let world = World::start(
        &connector,
        Config {
            get_scope: Some("stream".into()),
            ..reading()
        },
    )
    .await;
    let oauth = world.oauth().build().unwrap();
    // Connected once the stream is open (connect_and_call waits for a GET answered 200).
    connect_and_call(&world, &oauth).await;
    assert_eq!(scopes_asked(&world), ["read", "read stream"], "the union");
    let gets: Vec<(Option<String>, u16)> = world
        .events()
        .into_iter()
        .filter_map(|e| match e {
            Event::Mcp {
                method,
                authorization,
                status,
                ..
            } if method == http::Method::GET => Some((authorization, status)),
            _ => None,
        })
        .collect();
    let token = oauth.tokens().await.unwrap().access_token;
    assert_eq!(gets.len(), 2, "{gets:?}");
    assert_eq!(gets[0].1, 403);
    assert_ne!(gets[0].0, Some(format!("Bearer {token}")));
    assert_eq!(gets[1], (Some(format!("Bearer {token}")), 200));
}

async fn a_request_gets_one_step_up_and_one_retry(connector: Connector) {
    let (world, _, client) = connected_world(&connector, reading()).await;
    // From now on every answer asks for a scope never asked for before.
    world.set(|c| c.escalate = true);
    for n in 1..=2 {
        let authorized = world.authorizations().len();
        let refused = forbidden(&world);
        let call = client.request::<Echo>(json!({"n": n}));
        within("the escalating call", call)
            .await
            .expect_err("another scope every time");
        // The call and its one retry were refused; one step-up between them.
        assert_eq!(forbidden(&world) - refused, 2, "call {n}");
        assert_eq!(world.authorizations().len() - authorized, 1, "call {n}");
    }
    let scopes = scopes_asked(&world);
    assert_eq!(scopes.len(), 3);
    assert!(scopes[1].starts_with("read level-"), "{scopes:?}");
}

async fn a_scope_asked_for_and_refused_is_not_asked_for_again(connector: Connector) {
    // The authorization server never grants `admin`.
    let (world, _, client) = connected_world(&connector, withholding_admin()).await;
    world.set(|c| c.required_scope = Some("admin".into()));
    // The first call needing admin: one step-up, refused on its retry.
    within(
        "the first admin call",
        client.request::<Echo>(json!({"a": 1})),
    )
    .await
    .expect_err("admin is never granted");
    assert_eq!(scopes_asked(&world), ["read", "read admin"]);
    // The same operation again: refused at once, the user not sent again.
    for n in 2..=3 {
        let refused = forbidden(&world);
        let call = client.request::<Echo>(json!({"a": n}));
        within("the admin call again", call)
            .await
            .expect_err("admin is never granted");
        assert_eq!(forbidden(&world) - refused, 1, "no retry");
    }
    assert_eq!(scopes_asked(&world), ["read", "read admin"]);
}

async fn without_step_ups_the_challenge_reaches_the_caller_as_a_typed_error(connector: Connector) {
    let world = World::start(&connector, reading()).await;
    let oauth = world.oauth().max_step_ups(0).build().unwrap();
    let client = connect_and_call(&world, &oauth).await;
    world.set(|c| c.required_scope = Some("write".into()));
    let refused = forbidden(&world);
    let (error, e) = call_fails(
        &client,
        &oauth,
        "the call needing write",
        json!({"w": 1}),
        "no step-up",
    )
    .await;
    assert_eq!(e.kind(), ErrorKind::InsufficientScope, "{e}");
    assert_eq!(e.scopes(), ["write"]);
    let origin = world.server.trim_end_matches("/mcp");
    assert_eq!(
        e.resource_metadata(),
        Some(format!("{origin}/.well-known/oauth-protected-resource/mcp").as_str())
    );
    assert!(e.message().contains("this needs write"), "{e}");
    assert_eq!(e.status(), Some(403));
    assert!(error.to_string().contains(e.message()), "{error}");
    // The user was not sent to authorize again, and the call was not retried.
    assert_eq!(scopes_asked(&world), ["read"]);
    assert_eq!(forbidden(&world) - refused, 1);
}

async fn a_step_up_beyond_the_grant_authorizes_one_within_it_refreshes(connector: Connector) {
    let (world, oauth, client) = connected_world(&connector, reading()).await;
    assert!(oauth.tokens().await.unwrap().refresh_token.is_some());
    // `write` is beyond the token's grant: the user authorizes the union, no refresh.
    world.set(|c| c.required_scope = Some("write".into()));
    echoed(
        &client,
        "the call needing write",
        "w",
        "answered after the step-up",
    )
    .await;
    assert_eq!(scopes_asked(&world), ["read", "read write"]);
    assert!(refreshes(&world).is_empty());
    // The endpoint stops honouring the scopes of the token, which was granted `read
    // write`: a challenge for `read` is within the grant, so the token is refreshed.
    let granted = oauth.tokens().await.unwrap();
    assert_eq!(granted.scope.as_deref(), Some("read write"));
    world.forget_scopes();
    world.set(|c| c.required_scope = Some("read".into()));
    echoed(
        &client,
        "the call needing read",
        "r",
        "answered with the refreshed token",
    )
    .await;
    assert_eq!(refreshes(&world), [granted.refresh_token.unwrap()]);
    assert_eq!(
        scopes_asked(&world),
        ["read", "read write"],
        "no user this time"
    );
    assert_ne!(
        oauth.tokens().await.unwrap().access_token,
        granted.access_token
    );
}
