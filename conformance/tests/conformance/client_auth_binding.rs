//! Client auth: what the OAuth client's credentials are bound to when the resource moves
//! to another authorization server, and the client metadata it registers with.

use std::sync::{Arc, Mutex};

use modelctx_conformance::{Connector, Test, conformance_test};
use modelctx_oauth::{
    AssertionRequest, ClientRegistration, CredentialKey, CredentialStore, ErrorKind,
    InMemoryCredentialStore, OAuthClient,
};
use serde_json::{Value, json};

use crate::client_auth_steps::{call_fails, connect_and_call, connected_world, echoed, presented};
use crate::client_auth_support::{Config, ID_JAG, Redirected, World};

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            a_metadata_document_client_id_goes_along_to_the_new_authorization_server,
            ["client-auth:as-binding:cimd-portable"]
        ),
        conformance_test!(
            the_old_client_id_reaches_no_endpoint_of_the_new_authorization_server,
            ["client-auth:as-binding:no-cred-reuse"]
        ),
        conformance_test!(
            the_old_tokens_are_dropped_and_new_ones_obtained_after_a_move,
            ["client-auth:as-binding:no-token-reuse"]
        ),
        conformance_test!(
            pre_registered_credentials_of_the_old_server_fail_the_flow_after_a_move,
            ["client-auth:as-binding:prereg-mismatch-error"]
        ),
        conformance_test!(
            machine_credentials_are_never_presented_to_a_new_authorization_server,
            ["client-auth:as-binding:m2m-no-cred-reuse"]
        ),
        conformance_test!(
            the_application_type_follows_the_redirect_uri,
            ["client-auth:dcr:app-type-heuristic"]
        ),
        conformance_test!(
            a_configured_application_type_is_registered_as_configured,
            ["client-auth:dcr:app-type-override"]
        ),
        conformance_test!(
            registration_asks_for_refresh_tokens_unless_configured_otherwise,
            ["client-auth:dcr:grant-types-default"]
        ),
    ]
}

/// Builds the OAuth client of a world.
type BuildFor = Box<dyn Fn(&World) -> OAuthClient>;

const DOCUMENT: &str = "https://app.example/oauth/client.json";

/// The call after the move is answered (with a token of the new server).
async fn call_after_the_move(client: &modelctx::client::Client) {
    echoed(
        client,
        "the call after the move",
        "m",
        "answered after the move",
    )
    .await;
}

/// The call after the move fails with the OAuth client's `IssuerMismatch` naming both
/// servers.
async fn call_after_the_move_fails(
    client: &modelctx::client::Client,
    oauth: &OAuthClient,
    world: &World,
    other: &World,
) {
    let (error, e) = call_fails(
        client,
        oauth,
        "the call after the move",
        json!({"m": 1}),
        "the credentials are not the new server's",
    )
    .await;
    assert_eq!(e.kind(), ErrorKind::IssuerMismatch, "{e}");
    assert!(e.message().contains(&other.issuer), "{e}");
    assert!(e.message().contains(&world.issuer), "{e}");
    assert!(error.to_string().contains(e.message()), "{error}");
}

async fn a_metadata_document_client_id_goes_along_to_the_new_authorization_server(
    connector: Connector,
) {
    let cimd = || Config {
        cimd: true,
        ..Config::default()
    };
    let world = World::start(&connector, cimd()).await;
    let oauth = world
        .oauth()
        .client_metadata_document(DOCUMENT)
        .build()
        .unwrap();
    let client = connect_and_call(&world, &oauth).await;
    assert_eq!(world.authorizations()[0]["client_id"], DOCUMENT);
    // The resource moves to another server that takes metadata documents too.
    let other = World::start(&connector, cimd()).await;
    world.move_to(&other);
    call_after_the_move(&client).await;
    // The same URL is the client_id there, and nothing was registered anywhere.
    let authorizations = other.authorizations();
    assert_eq!(authorizations.len(), 1);
    assert_eq!(authorizations[0]["client_id"], DOCUMENT);
    assert_eq!(other.token_requests()[0].0["client_id"], DOCUMENT);
    assert!(other.registrations().is_empty());
    assert!(world.registrations().is_empty());
}

async fn the_old_client_id_reaches_no_endpoint_of_the_new_authorization_server(
    connector: Connector,
) {
    let (world, _, client) = connected_world(&connector, Config::default()).await;
    assert_eq!(world.registrations().len(), 1);
    let old_id = world.authorizations()[0]["client_id"].clone();
    let other = World::start(&connector, Config::default()).await;
    world.move_to(&other);
    call_after_the_move(&client).await;
    // The new server registered a client of its own…
    assert_eq!(other.registrations().len(), 1);
    let new_id = other.authorizations()[0]["client_id"].clone();
    assert_ne!(new_id, old_id);
    // …and the old client_id is in none of its authorization or token requests.
    let authorizations = other.authorizations();
    assert!(!authorizations.is_empty());
    for q in &authorizations {
        assert!(q.values().all(|v| v != &old_id), "{q:?}");
    }
    let tokens = other.token_requests();
    assert!(!tokens.is_empty());
    for (form, authorization) in &tokens {
        assert!(form.values().all(|v| v != &old_id), "{form:?}");
        assert_eq!(
            authorization, &None,
            "a public client: no Basic credentials"
        );
    }
}

async fn the_old_tokens_are_dropped_and_new_ones_obtained_after_a_move(connector: Connector) {
    let world = World::start(&connector, Config::default()).await;
    let store = Arc::new(InMemoryCredentialStore::new());
    let oauth = world.oauth().store(store.clone()).build().unwrap();
    let client = connect_and_call(&world, &oauth).await;
    let old = oauth.tokens().await.expect("tokens of the first server");
    let old_refresh = old.refresh_token.clone().expect("a refresh token");
    let other = World::start(&connector, Config::default()).await;
    world.move_to(&other);
    call_after_the_move(&client).await;
    // The new server never saw the old refresh token: no refresh there, an
    // authorization and a code exchange instead.
    let tokens = other.token_requests();
    assert_eq!(tokens.len(), 1, "{tokens:?}");
    assert_eq!(tokens[0].0["grant_type"], "authorization_code");
    for (form, _) in &tokens {
        assert!(form.values().all(|v| v != &old_refresh), "{form:?}");
    }
    assert_eq!(other.authorizations().len(), 1);
    // New tokens, which the resource then saw; nothing of the old server is stored.
    let new = oauth.tokens().await.expect("tokens of the new server");
    assert_ne!(new.access_token, old.access_token);
    assert_ne!(new.refresh_token, old.refresh_token);
    assert!(presented(&world, &new.access_token));
    let stale = CredentialKey::new(&world.issuer, &world.server);
    assert!(store.load(&stale).await.unwrap().is_none());
}

fn confidential() -> Config {
    Config::authenticating_with(&["client_secret_basic"])
}

async fn pre_registered_credentials_of_the_old_server_fail_the_flow_after_a_move(
    connector: Connector,
) {
    let world = World::start(&connector, confidential()).await;
    let other = World::start(&connector, confidential()).await;
    let oauth = world.pre_registered("pre-registered", "pre-secret");
    let client = connect_and_call(&world, &oauth).await;
    assert_eq!(world.authorizations()[0]["client_id"], "pre-registered");
    // The resource now names another server, which would register anyone: the client
    // reports the mismatch instead of using its credentials or registering there.
    world.move_to(&other);
    call_after_the_move_fails(&client, &oauth, &world, &other).await;
    assert!(other.registrations().is_empty());
    assert!(other.authorizations().is_empty());
    assert!(other.token_requests().is_empty());

    // Credentials pre-registered at both servers: the move takes the new server's.
    let world = World::start(&connector, confidential()).await;
    let other = World::start(&connector, confidential()).await;
    let oauth = world
        .oauth()
        .pre_registered(
            world.issuer.clone(),
            ClientRegistration::new("at-first").with_secret("first-secret"),
        )
        .pre_registered(
            other.issuer.clone(),
            ClientRegistration::new("at-second").with_secret("second-secret"),
        )
        .build()
        .unwrap();
    let client = connect_and_call(&world, &oauth).await;
    world.move_to(&other);
    call_after_the_move(&client).await;
    assert!(other.registrations().is_empty());
    assert_eq!(other.authorizations()[0]["client_id"], "at-second");
}

async fn machine_credentials_are_never_presented_to_a_new_authorization_server(
    connector: Connector,
) {
    let registration = || ClientRegistration::new("m2m").with_secret("m2m-secret");
    // Client credentials, configured for the resource's server or for an issuer; and a
    // JWT-bearer client whose assertion provider records what it is asked.
    let asked = Arc::new(Mutex::new(Vec::<AssertionRequest>::new()));
    let builders: Vec<(&str, BuildFor)> = vec![
        (
            "client credentials",
            Box::new(move |w: &World| {
                OAuthClient::builder(&w.server)
                    .client_credentials()
                    .client(registration())
                    .build()
                    .unwrap()
            }),
        ),
        (
            "client credentials for an issuer",
            Box::new(move |w: &World| {
                OAuthClient::builder(&w.server)
                    .client_credentials()
                    .pre_registered(w.issuer.clone(), registration())
                    .build()
                    .unwrap()
            }),
        ),
        ("jwt bearer", {
            let asked = asked.clone();
            Box::new(move |w: &World| {
                let record = asked.clone();
                OAuthClient::builder(&w.server)
                    .jwt_bearer(move |request: AssertionRequest| {
                        record.lock().unwrap().push(request);
                        async move { Ok(ID_JAG.to_owned()) }
                    })
                    .client(registration())
                    .build()
                    .unwrap()
            })
        }),
    ];
    for (grant, build) in builders {
        let world = World::start(&connector, confidential()).await;
        let other = World::start(&connector, confidential()).await;
        let oauth = build(&world);
        let client = connect_and_call(&world, &oauth).await;
        assert_eq!(world.token_requests().len(), 1, "{grant}");
        world.move_to(&other);
        call_after_the_move_fails(&client, &oauth, &world, &other).await;
        assert!(other.token_requests().is_empty(), "{grant}");
        assert!(other.registrations().is_empty(), "{grant}");
    }
    // The assertion provider was asked for the first server only.
    let audiences: Vec<String> = asked
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.issuer.clone())
        .collect();
    assert_eq!(audiences.len(), 1, "{audiences:?}");
}

/// The registration request a connection through `redirect_uri` (and `configure`) made.
async fn registered(
    connector: &Connector,
    redirect_uri: &str,
    configure: impl FnOnce(modelctx_oauth::OAuthClientBuilder) -> modelctx_oauth::OAuthClientBuilder,
) -> Value {
    let world = World::start(connector, Config::default()).await;
    let oauth = configure(
        OAuthClient::builder(&world.server)
            .authorization_code(Redirected::to(redirect_uri))
            .client_name("conformance", None),
    )
    .build()
    .unwrap();
    connect_and_call(&world, &oauth).await;
    let registrations = world.registrations();
    assert_eq!(registrations.len(), 1);
    assert_eq!(registrations[0].1["redirect_uris"], json!([redirect_uri]));
    registrations[0].1.clone()
}

async fn the_application_type_follows_the_redirect_uri(connector: Connector) {
    for (redirect_uri, expected) in [
        ("http://127.0.0.1:9/callback", "native"),
        ("http://localhost:9/callback", "native"),
        ("com.example.app:/oauth/callback", "native"),
        ("https://app.example/oauth/callback", "web"),
        ("http://app.example/oauth/callback", "web"),
    ] {
        let body = registered(&connector, redirect_uri, |b| b).await;
        assert_eq!(body["application_type"], expected, "{redirect_uri}");
    }
}

async fn a_configured_application_type_is_registered_as_configured(connector: Connector) {
    // Against what the redirect URI suggests, both ways.
    for (redirect_uri, configured) in [
        ("http://127.0.0.1:9/callback", "web"),
        ("https://app.example/oauth/callback", "native"),
    ] {
        let body = registered(&connector, redirect_uri, |b| b.application_type(configured)).await;
        assert_eq!(body["application_type"], configured, "{redirect_uri}");
    }
}

async fn registration_asks_for_refresh_tokens_unless_configured_otherwise(connector: Connector) {
    const LOOPBACK: &str = "http://127.0.0.1:9/callback";
    let body = registered(&connector, LOOPBACK, |b| b).await;
    assert_eq!(
        body["grant_types"],
        json!(["authorization_code", "refresh_token"])
    );
    for configured in [
        vec!["authorization_code"],
        vec!["refresh_token", "authorization_code", "urn:example:custom"],
    ] {
        let body = registered(&connector, LOOPBACK, |b| b.grant_types(configured.clone())).await;
        assert_eq!(body["grant_types"], json!(configured));
    }
}
