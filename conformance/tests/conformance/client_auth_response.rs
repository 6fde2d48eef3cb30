//! Client auth: how the OAuth client reads the authorization response (RFC 9207 `iss`
//! validation, raw callbacks, error redirects) and the token endpoint's answers.

use modelctx_conformance::{Connector, Test, conformance_test};
use modelctx_oauth::{ErrorKind, OAuthClient, OAuthError};
use serde_json::json;

use crate::client_auth_steps::{
    answered_after_a_refused_refresh, call_fails, connect_and_call, connect_fails, connected_world,
    refused_world,
};
use crate::client_auth_support::{Config, Redirected, World, query_param};

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            an_advertised_iss_equal_to_the_issuer_lets_the_code_be_redeemed,
            ["client-auth:iss:match"]
        ),
        conformance_test!(
            an_advertised_iss_that_is_missing_stops_the_flow,
            ["client-auth:iss:supported-missing-reject"]
        ),
        conformance_test!(
            an_unadvertised_iss_is_still_checked_when_present,
            ["client-auth:iss:unadvertised-present-validated"]
        ),
        conformance_test!(
            neither_advertised_nor_present_the_flow_goes_on,
            ["client-auth:iss:unadvertised-proceed"]
        ),
        conformance_test!(
            iss_is_compared_without_normalisation,
            ["client-auth:iss:no-normalize"]
        ),
        conformance_test!(
            an_error_redirect_from_another_issuer_is_not_reported,
            ["client-auth:iss:error-response-validated"]
        ),
        conformance_test!(
            a_raw_callback_query_is_checked_for_iss_before_its_code_is_used,
            ["client-auth:finishauth:urlsearchparams-sanitizes"]
        ),
        conformance_test!(
            a_refused_code_exchange_ends_the_flow_naming_the_status,
            ["client-auth:token:error-surfaces"]
        ),
        conformance_test!(
            token_endpoint_errors_carry_their_oauth_code,
            ["client-auth:token-error:machine-readable-code"]
        ),
        conformance_test!(
            tokens_are_asked_for_over_https_or_loopback_only,
            ["client-auth:token-endpoint:https-guard"]
        ),
    ]
}

const LOOPBACK: &str = "http://127.0.0.1:9/callback";

fn iss(supported: bool, mode: &'static str) -> Config {
    Config {
        iss_supported: supported,
        iss_mode: mode,
        ..Config::default()
    }
}

/// A world whose authorization responses `rewrite` turns into the raw query the client
/// is handed; its OAuth client.
async fn rewriting(
    connector: &Connector,
    config: Config,
    rewrite: impl Fn(&World, &str) -> String + Send + Sync + 'static,
) -> (World, OAuthClient) {
    let world = World::start(connector, config).await;
    let seen = world.clone();
    let oauth = OAuthClient::builder(&world.server)
        .authorization_code(Redirected::rewriting(LOOPBACK, move |q| rewrite(&seen, q)))
        .build()
        .unwrap();
    (world, oauth)
}

/// The code was redeemed: one exchange of the code the authorization server issued.
fn redeemed(world: &World) {
    let tokens = world.token_requests();
    assert_eq!(tokens.len(), 1, "{tokens:?}");
    assert_eq!(tokens[0].0["grant_type"], "authorization_code");
    assert!(tokens[0].0["code"].starts_with("code-"), "{tokens:?}");
}

/// The flow stopped at the authorization response: the user was sent once, and no code
/// reached the token endpoint.
fn stopped_at_the_response(world: &World) {
    assert_eq!(world.authorizations().len(), 1);
    assert!(world.token_requests().is_empty());
    assert!(world.mcp_requests().iter().all(|r| r.1.is_none()));
}

async fn an_advertised_iss_equal_to_the_issuer_lets_the_code_be_redeemed(connector: Connector) {
    let world = World::start(&connector, iss(true, "correct")).await;
    let oauth = world.oauth().build().unwrap();
    connect_and_call(&world, &oauth).await;
    redeemed(&world);
    let token = oauth.tokens().await.expect("a token").access_token;
    assert!(crate::client_auth_steps::presented(&world, &token));
}

async fn an_advertised_iss_that_is_missing_stops_the_flow(connector: Connector) {
    let (world, e) = refused_world(&connector, iss(true, "omit"), ErrorKind::IssuerMismatch).await;
    assert!(e.message().contains("iss"), "{e}");
    stopped_at_the_response(&world);
}

async fn an_unadvertised_iss_is_still_checked_when_present(connector: Connector) {
    // Equal to the issuer: the flow goes on.
    let (world, _, _) = connected_world(&connector, iss(false, "correct")).await;
    redeemed(&world);
    // Another issuer's: refused though the metadata never mentioned iss.
    let (world, e) =
        refused_world(&connector, iss(false, "wrong"), ErrorKind::IssuerMismatch).await;
    assert!(e.message().contains("attacker.example"), "{e}");
    stopped_at_the_response(&world);
}

async fn neither_advertised_nor_present_the_flow_goes_on(connector: Connector) {
    let (world, _, _) = connected_world(&connector, iss(false, "omit")).await;
    redeemed(&world);
}

/// A variant of the issuer.
type Variant = fn(&str) -> String;

/// `query` with its `iss` replaced by `value` (form-encoded).
fn with_iss(query: &str, value: &str) -> String {
    let mut pairs: Vec<String> = query
        .split('&')
        .filter(|p| !p.starts_with("iss="))
        .map(str::to_owned)
        .collect();
    let mut encoded = reqwest::Url::parse("http://x/").unwrap();
    encoded.query_pairs_mut().append_pair("iss", value);
    pairs.push(encoded.query().unwrap().to_owned());
    pairs.join("&")
}

async fn iss_is_compared_without_normalisation(connector: Connector) {
    // An issuer with a path, so that percent-encoding has something to encode.
    let config = || Config {
        issuer_path: "/tenant",
        ..Config::default()
    };
    let variants: [(&str, Variant); 3] = [
        ("a trailing slash", |issuer| format!("{issuer}/")),
        ("the scheme in capitals", |issuer| {
            issuer.replacen("http", "HTTP", 1)
        }),
        ("a percent-encoded path", |issuer| {
            issuer.replace("/tenant", "/%74enant")
        }),
    ];
    for (what, variant) in variants {
        let (world, oauth) = rewriting(&connector, config(), move |w, q| {
            with_iss(q, &variant(&w.issuer))
        })
        .await;
        assert!(world.issuer.ends_with("/tenant"));
        let e = connect_fails(&world, &oauth, ErrorKind::IssuerMismatch).await;
        assert!(e.message().contains(&world.issuer), "{what}: {e}");
        stopped_at_the_response(&world);
    }
    // The same rewriting with the issuer itself: accepted.
    let (world, oauth) = rewriting(&connector, config(), |w, q| with_iss(q, &w.issuer)).await;
    connect_and_call(&world, &oauth).await;
    redeemed(&world);
}

/// The error the caller sees when connecting through `oauth` fails.
async fn refused(world: &World, oauth: &OAuthClient) -> String {
    match world.connect(oauth).await {
        Ok(_) => panic!("the connection must fail"),
        Err(e) => e.to_string(),
    }
}

/// Neither the error nor the caller's view of it holds any of `words`.
fn says_none_of(error: &OAuthError, caller: &str, words: &[&str]) {
    for word in words {
        assert!(!error.to_string().contains(word), "{word}: {error}");
        assert!(!caller.contains(word), "{word}: {caller}");
    }
}

async fn an_error_redirect_from_another_issuer_is_not_reported(connector: Connector) {
    let world = World::start(
        &connector,
        Config {
            authorize_error: Some("access_denied"),
            iss_mode: "wrong",
            ..Config::default()
        },
    )
    .await;
    let oauth = world.oauth().build().unwrap();
    let caller = refused(&world, &oauth).await;
    let e = oauth.last_error().expect("the OAuth client's error");
    assert_eq!(e.kind(), ErrorKind::IssuerMismatch, "{e}");
    assert_eq!(
        e.oauth_error(),
        None,
        "the redirect's error is not taken up"
    );
    says_none_of(&e, &caller, &["access_denied", "the user said no"]);
    stopped_at_the_response(&world);
}

async fn a_raw_callback_query_is_checked_for_iss_before_its_code_is_used(connector: Connector) {
    // The raw query holds the real code and state, a forged iss, and error fields.
    let (world, oauth) = rewriting(&connector, Config::default(), |_, q| {
        let code = query_param(q, "code").unwrap();
        let state = query_param(q, "state").unwrap();
        format!(
            "code={code}&state={state}&iss=https%3A%2F%2Fattacker.example\
             &error=server_error&error_description=Call+support.evil.example\
             &error_uri=https%3A%2F%2Fhelp.evil.example%2Fsupport"
        )
    })
    .await;
    let caller = refused(&world, &oauth).await;
    let e = oauth.last_error().expect("the OAuth client's error");
    assert_eq!(e.kind(), ErrorKind::IssuerMismatch, "{e}");
    assert_eq!(e.oauth_error(), None);
    says_none_of(&e, &caller, &["server_error", "evil.example"]);
    stopped_at_the_response(&world);
    // The same raw form with the issuer's own iss: its code is taken and redeemed.
    let (world, oauth) = rewriting(&connector, Config::default(), |w, q| {
        let code = query_param(q, "code").unwrap();
        let state = query_param(q, "state").unwrap();
        with_iss(&format!("code={code}&state={state}"), &w.issuer)
    })
    .await;
    connect_and_call(&world, &oauth).await;
    redeemed(&world);
}

/// A world whose user agent hands over a code the authorization server never issued
/// (the token endpoint refuses it with 400 `invalid_grant`).
async fn forged_code(connector: &Connector) -> (World, OAuthClient) {
    rewriting(connector, Config::default(), |_, q| {
        q.split('&')
            .map(|p| {
                if p.starts_with("code=") {
                    "code=forged"
                } else {
                    p
                }
            })
            .collect::<Vec<_>>()
            .join("&")
    })
    .await
}

async fn a_refused_code_exchange_ends_the_flow_naming_the_status(connector: Connector) {
    let (world, oauth) = forged_code(&connector).await;
    let caller = refused(&world, &oauth).await;
    let e = oauth.last_error().expect("the OAuth client's error");
    assert_eq!(e.kind(), ErrorKind::TokenEndpoint, "{e}");
    assert_eq!(e.status(), Some(400));
    assert!(caller.contains("HTTP 400"), "{caller}");
    // One authorization, one exchange: no loop; and no bearer token ever went out.
    assert_eq!(world.authorizations().len(), 1);
    assert_eq!(world.token_requests().len(), 1);
    assert!(world.mcp_requests().iter().all(|r| r.1.is_none()));
}

async fn token_endpoint_errors_carry_their_oauth_code(connector: Connector) {
    // The code exchange.
    let (world, oauth) = forged_code(&connector).await;
    let e = connect_fails(&world, &oauth, ErrorKind::TokenEndpoint).await;
    assert_eq!(e.oauth_error(), Some("invalid_grant"));
    assert_eq!(e.status(), Some(400));
    // A refresh: refused, then replaced by a new authorization; the refusal is kept.
    for code in ["invalid_grant", "invalid_client"] {
        let (world, oauth, client) = connected_world(&connector, Config::default()).await;
        answered_after_a_refused_refresh(&world, &client, code).await;
        let refreshes = world
            .token_requests()
            .into_iter()
            .filter(|(f, _)| f["grant_type"] == "refresh_token")
            .count();
        assert_eq!(refreshes, 1, "{code}");
        let e = oauth.last_error().expect("the refused refresh");
        assert_eq!(e.kind(), ErrorKind::TokenEndpoint, "{code}: {e}");
        assert_eq!(e.oauth_error(), Some(code));
        assert_eq!(e.status(), Some(400));
    }
}

const PLAIN_HTTP: &str = "http://as.example.test/token";

async fn tokens_are_asked_for_over_https_or_loopback_only(connector: Connector) {
    // A plain-http token endpoint off loopback: refused before the user is involved.
    let world = World::start(
        &connector,
        Config {
            token_endpoint: Some(PLAIN_HTTP.into()),
            ..Config::default()
        },
    )
    .await;
    let oauth = world.oauth().build().unwrap();
    let e = connect_fails(&world, &oauth, ErrorKind::InsecureUrl).await;
    assert!(e.message().contains(PLAIN_HTTP), "{e}");
    assert!(world.authorizations().is_empty());
    assert!(world.token_requests().is_empty());
    // Loopback http is fine; a refresh is not sent once the endpoint moves off it.
    let (world, oauth, client) = connected_world(&connector, Config::default()).await;
    assert_eq!(world.token_requests().len(), 1);
    world.set(|c| c.token_endpoint = Some(PLAIN_HTTP.into()));
    world.revoke_all();
    let (_, e) = call_fails(
        &client,
        &oauth,
        "the call with a refused token",
        json!({"t": 1}),
        "no refresh over plain http",
    )
    .await;
    assert_eq!(e.kind(), ErrorKind::InsecureUrl, "{e}");
    assert!(e.message().contains(PLAIN_HTTP), "{e}");
    assert_eq!(world.token_requests().len(), 1, "no refresh anywhere");
}
