//! Client auth: the grants without a user (client credentials, signed client assertions,\n//! enterprise ID-JAG by JWT bearer), registrations per authorization server, the\n//! credential store, refresh and its failures, and the request clock a login holds.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use modelctx::session::{RequestOptions, SessionError};
use modelctx_conformance::{Connector, Test, conformance_test, within};
use modelctx_oauth::{
    AssertionRequest, ClientRegistration, CredentialKey, CredentialStore, ErrorKind, IdJagExchange,
    InMemoryCredentialStore, OAuthClient, OAuthError, StoredCredentials, TokenSet,
};
use serde_json::{Value, json};

use crate::client_auth_steps::{
    answered_after_a_refused_refresh, connect_and_call, connect_fails, echoed, presented,
};
use crate::client_auth_support::{
    Browser, Config, Event, Hold, ID_JAG, JWT_BEARER, World, basic, reading,
};
use crate::support::Echo;
use modelctx_test::jose::assert_client_assertion;

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            client_credentials_need_no_user,
            ["client-auth:client-credentials"]
        ),
        conformance_test!(
            client_credentials_with_a_signed_client_assertion,
            ["client-auth:private-key-jwt"]
        ),
        conformance_test!(
            a_new_authorization_server_gets_a_new_registration,
            ["client-auth:as-binding"]
        ),
        conformance_test!(
            invalid_client_drops_registration_and_tokens,
            ["client-auth:invalid-client-clears-all"]
        ),
        conformance_test!(
            invalid_grant_drops_only_the_tokens,
            ["client-auth:invalid-grant-clears-tokens"]
        ),
        conformance_test!(
            an_expiring_token_is_refreshed_before_the_next_request,
            ["client-auth:refresh:transparent"]
        ),
        conformance_test!(
            tokens_from_elsewhere_are_never_presented,
            ["client-auth:token-provenance"]
        ),
        conformance_test!(
            a_login_holds_the_challenged_requests_clock,
            ["client-auth:login-time:not-counted"]
        ),
        conformance_test!(
            a_request_queued_behind_a_login_times_out_on_its_own_clock,
            ["client-auth:login-time:other-requests-keep-counting"]
        ),
        conformance_test!(
            an_enterprise_id_jag_is_presented_by_jwt_bearer,
            ["client-auth:identity-assertion"]
        ),
        conformance_test!(
            the_assertion_comes_from_the_application_callback,
            ["client-auth:identity-assertion:assertion-callback"]
        ),
        conformance_test!(
            a_configured_authorization_server_is_the_only_one_asked,
            ["client-auth:identity-assertion:issuer-pinning"]
        ),
        conformance_test!(
            a_disabled_jwt_bearer_grant_fails_the_connection,
            ["client-auth:identity-assertion:disabled-rejected"]
        ),
        conformance_test!(
            a_rejected_assertion_fails_the_connection,
            ["client-auth:identity-assertion:invalid-assertion"]
        ),
    ]
}

async fn client_credentials_need_no_user(connector: Connector) {
    let world = World::start(
        &connector,
        Config {
            auth_methods: vec!["client_secret_basic".into()],
            challenge_scope: Some("jobs".into()),
            ..Config::default()
        },
    )
    .await;
    let oauth = OAuthClient::builder(&world.server)
        .client_credentials()
        .client(ClientRegistration::new("m2m").with_secret("m2m-secret"))
        .build()
        .unwrap();
    connect_and_call(&world, &oauth).await;
    assert!(world.authorizations().is_empty(), "no user in the loop");
    assert!(world.registrations().is_empty());
    let (form, authorization) = &world.token_requests()[0];
    assert_eq!(form["grant_type"], "client_credentials");
    assert_eq!(form["scope"], "jobs");
    assert_eq!(
        authorization.as_deref(),
        Some(basic("m2m", "m2m-secret").as_str())
    );
    let token = oauth.tokens().await.expect("a token").access_token;
    assert!(presented(&world, &token));
}

async fn client_credentials_with_a_signed_client_assertion(connector: Connector) {
    let world = World::start(
        &connector,
        Config::authenticating_with(&["private_key_jwt"]),
    )
    .await;
    let (oauth, key) = modelctx_test::private_key_jwt_client(&world.server);
    connect_and_call(&world, &oauth).await;
    let (form, authorization) = &world.token_requests()[0];
    assert_eq!(form["grant_type"], "client_credentials");
    assert_eq!(authorization, &None);
    assert_client_assertion(form, &key.public_jwk(), "m2m", &world.issuer);
    let token = oauth.tokens().await.expect("a token").access_token;
    assert!(presented(&world, &token));
}

async fn a_new_authorization_server_gets_a_new_registration(connector: Connector) {
    let world = World::start(&connector, Config::default()).await;
    let store = Arc::new(InMemoryCredentialStore::new());
    let oauth = world.oauth().store(store.clone()).build().unwrap();
    let client = connect_and_call(&world, &oauth).await;
    let first_id = world.authorizations()[0]["client_id"].clone();
    // The resource moves to another authorization server; its old tokens are refused.
    let other = World::start(&connector, Config::default()).await;
    world.move_to(&other);
    echoed(
        &client,
        "the call after the move",
        "m",
        "answered with a token of the new server",
    )
    .await;
    // A registration of its own at the new server, never the old client_id.
    let registrations = other.registrations();
    assert_eq!(registrations.len(), 1);
    assert_eq!(registrations[0].0, other.issuer);
    let new_id = other.authorizations()[0]["client_id"].clone();
    assert_ne!(new_id, first_id);
    assert_eq!(other.token_requests()[0].0["client_id"], new_id);
    assert_eq!(world.registrations().len(), 1);
    assert_eq!(world.authorizations().len(), 1);
    // What was bound to the old issuer is gone from the store.
    let old = CredentialKey::new(&world.issuer, &world.server);
    assert!(store.load(&old).await.unwrap().is_none());
    let new = CredentialKey::new(&other.issuer, &world.server);
    let stored = store.load(&new).await.unwrap().expect("the new binding");
    assert_eq!(stored.registration.unwrap().client_id, new_id);
}

/// A credential store that records what each save kept: (a client_id, tokens present).
#[derive(Default)]
struct RecordingStore {
    inner: InMemoryCredentialStore,
    saves: Mutex<Vec<(Option<String>, bool)>>,
}

impl CredentialStore for RecordingStore {
    fn load<'a>(
        &'a self,
        key: &'a CredentialKey,
    ) -> futures::future::BoxFuture<'a, Result<Option<StoredCredentials>, OAuthError>> {
        self.inner.load(key)
    }

    fn save<'a>(
        &'a self,
        key: &'a CredentialKey,
        credentials: &'a StoredCredentials,
    ) -> futures::future::BoxFuture<'a, Result<(), OAuthError>> {
        self.saves.lock().unwrap().push((
            credentials
                .registration
                .as_ref()
                .map(|r| r.client_id.clone()),
            credentials.tokens.is_some(),
        ));
        self.inner.save(key, credentials)
    }

    fn clear<'a>(
        &'a self,
        key: &'a CredentialKey,
    ) -> futures::future::BoxFuture<'a, Result<(), OAuthError>> {
        self.inner.clear(key)
    }
}

/// Connects, then has the endpoint revoke the token and the AS answer the refresh
/// with `error`; the next call goes through after a new authorization. Returns what the
/// store saw after the refused refresh, and the client_ids of the authorizations.
async fn refused_refresh(
    connector: &Connector,
    error: &'static str,
) -> (World, Vec<(Option<String>, bool)>) {
    let world = World::start(connector, Config::default()).await;
    let store = Arc::new(RecordingStore::default());
    let oauth = world.oauth().store(store.clone()).build().unwrap();
    let client = connect_and_call(&world, &oauth).await;
    let old = oauth.tokens().await.expect("a token");
    let saved_before = store.saves.lock().unwrap().len();
    answered_after_a_refused_refresh(&world, &client, error).await;
    // The refresh was tried with the stored refresh token, and refused.
    let refreshes: Vec<_> = world
        .token_requests()
        .into_iter()
        .filter(|(f, _)| f["grant_type"] == "refresh_token")
        .collect();
    assert_eq!(refreshes.len(), 1);
    assert_eq!(
        Some(&refreshes[0].0["refresh_token"]),
        old.refresh_token.as_ref()
    );
    assert_eq!(world.authorizations().len(), 2, "authorized anew");
    assert_ne!(oauth.tokens().await.unwrap().access_token, old.access_token);
    let saves = store.saves.lock().unwrap()[saved_before..].to_vec();
    (world, saves)
}

async fn invalid_client_drops_registration_and_tokens(connector: Connector) {
    for error in ["invalid_client", "unauthorized_client"] {
        let (world, saves) = refused_refresh(&connector, error).await;
        // Right after the refusal, nothing is kept: neither registration nor tokens.
        assert_eq!(saves.first(), Some(&(None, false)), "{error}: {saves:?}");
        // So the client registered again, and authorized as the new client.
        assert_eq!(world.registrations().len(), 2, "{error}");
        let ids: Vec<String> = world
            .authorizations()
            .iter()
            .map(|q| q["client_id"].clone())
            .collect();
        assert_ne!(ids[0], ids[1], "{error}");
    }
}

async fn invalid_grant_drops_only_the_tokens(connector: Connector) {
    let (world, saves) = refused_refresh(&connector, "invalid_grant").await;
    // Right after the refusal: the registration kept, the tokens gone.
    assert_eq!(
        saves.first(),
        Some(&(Some("client-1".to_owned()), false)),
        "{saves:?}"
    );
    // The same client authorized again, without registering again.
    assert_eq!(world.registrations().len(), 1);
    let ids: Vec<String> = world
        .authorizations()
        .iter()
        .map(|q| q["client_id"].clone())
        .collect();
    assert_eq!(ids, ["client-1", "client-1"]);
}

async fn an_expiring_token_is_refreshed_before_the_next_request(connector: Connector) {
    // Tokens of the authorization code live 10 s: within the client's refresh margin.
    let world = World::start(
        &connector,
        Config {
            code_expires_in: 10,
            ..Config::default()
        },
    )
    .await;
    let store = Arc::new(InMemoryCredentialStore::new());
    let oauth = world.oauth().store(store.clone()).build().unwrap();
    connect_and_call(&world, &oauth).await;
    let requests = world.token_requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert_eq!(requests[0].0["grant_type"], "authorization_code");
    let (refresh, _) = &requests[1];
    assert_eq!(refresh["grant_type"], "refresh_token");
    assert!(refresh["refresh_token"].starts_with("rt-"));
    assert_eq!(refresh["resource"], world.server);
    assert_eq!(world.authorizations().len(), 1, "no user for a refresh");
    // The refreshed token is stored and is what the endpoint saw; the expiring one
    // never went out.
    let key = CredentialKey::new(&world.issuer, &world.server);
    let stored = store.load(&key).await.unwrap().unwrap().tokens.unwrap();
    assert_eq!(Some(stored.clone()), oauth.tokens().await);
    assert!(presented(&world, &stored.access_token));
    assert!(
        world
            .mcp_requests()
            .iter()
            .skip(1)
            .all(|r| r.1 == Some(format!("Bearer {}", stored.access_token)))
    );
}

fn token_set(access: &str) -> TokenSet {
    serde_json::from_value(json!({"access_token": access, "token_type": "Bearer"})).unwrap()
}

async fn tokens_from_elsewhere_are_never_presented(connector: Connector) {
    let world = World::start(&connector, Config::default()).await;
    // The store holds tokens for this resource from another authorization server, and
    // this AS's tokens for another resource.
    let store = Arc::new(InMemoryCredentialStore::new());
    let mut foreign = StoredCredentials::default();
    foreign.tokens = Some(token_set("from-another-as"));
    store
        .save(
            &CredentialKey::new("https://as.elsewhere.example", &world.server),
            &foreign,
        )
        .await
        .unwrap();
    let mut other_resource = StoredCredentials::default();
    other_resource.tokens = Some(token_set("for-another-resource"));
    store
        .save(
            &CredentialKey::new(&world.issuer, "http://127.0.0.1:1/mcp"),
            &other_resource,
        )
        .await
        .unwrap();
    let oauth = world.oauth().store(store.clone()).build().unwrap();
    connect_and_call(&world, &oauth).await;
    assert!(!presented(&world, "from-another-as"));
    assert!(!presented(&world, "for-another-resource"));
    // Only what this server's AS issued went out.
    let issued: Vec<String> = world
        .mcp_requests()
        .iter()
        .filter_map(|r| r.1.clone())
        .collect();
    assert!(!issued.is_empty());
    let token = oauth.tokens().await.unwrap().access_token;
    assert!(
        issued.iter().all(|a| a == &format!("Bearer {token}")),
        "{issued:?}"
    );
    assert_eq!(world.token_requests().len(), 1);
}

/// A world whose user authorizes at once for the connection, then is held at the next
/// authorization until released; the client is connected with a token for `read`, and
/// the endpoint now needs `write` (a step-up through the user).
async fn held_login(connector: &Connector) -> (World, OAuthClient, modelctx::client::Client, Hold) {
    let world = World::start(connector, Config { ..reading() }).await;
    let hold = Hold::default();
    let oauth = OAuthClient::builder(&world.server)
        .authorization_code(Browser {
            tamper: None,
            hold: Some(hold.clone()),
        })
        .build()
        .unwrap();
    let client = connect_and_call(&world, &oauth).await;
    hold.holding
        .store(true, std::sync::atomic::Ordering::SeqCst);
    world.set(|c| c.required_scope = Some("write".into()));
    (world, oauth, client, hold)
}

const SHORT: Duration = Duration::from_millis(300);
/// A call's budget where what it does within the budget matters too.
const BUDGET: Duration = Duration::from_secs(1);

fn with_timeout(timeout: Duration) -> RequestOptions {
    RequestOptions::new().timeout(timeout)
}

/// Awaits `call`, a request queued behind the held login, and checks it ran out of its
/// own clock.
async fn times_out(
    what: &str,
    call: impl std::future::Future<Output = Result<Value, SessionError>>,
) {
    let queued = within(what, call).await;
    assert!(
        queued.as_ref().is_err_and(SessionError::is_timeout),
        "{queued:?}"
    );
}

/// Lets the held user finish: no later authorization waits, the waiting one goes on.
fn let_the_user_through(hold: &Hold) {
    hold.holding
        .store(false, std::sync::atomic::Ordering::SeqCst);
    hold.release.notify_one();
}

/// The challenged call `{"c": 1}` is answered once the second authorization is done.
async fn the_challenged_call_is_answered(
    world: &World,
    challenged: tokio::task::JoinHandle<Result<Value, SessionError>>,
    expect: &str,
) {
    let answer = within("the challenged call", challenged)
        .await
        .unwrap()
        .expect(expect);
    assert_eq!(answer["c"], 1);
    assert_eq!(world.authorizations().len(), 2);
}

/// The challenged call still waits for the held login (`waiting` says why); once the
/// user is let through it is answered ([`the_challenged_call_is_answered`], `expect`).
async fn the_challenged_call_waits_then_is_answered(
    (world, hold): (&World, &Hold),
    challenged: tokio::task::JoinHandle<Result<Value, SessionError>>,
    waiting: &str,
    expect: &str,
) {
    assert!(!challenged.is_finished(), "{waiting}");
    let_the_user_through(hold);
    the_challenged_call_is_answered(world, challenged, expect).await;
}

async fn a_login_holds_the_challenged_requests_clock(connector: Connector) {
    let (world, _oauth, client, hold) = held_login(&connector).await;
    let opened = hold.opened.notified();
    let challenged = tokio::spawn({
        let client = client.clone();
        async move {
            client
                .request_with::<Echo>(json!({"c": 1}), with_timeout(BUDGET))
                .await
        }
    });
    within("the user to be sent to authorize", opened).await;
    // A call started after the challenged one, with the same budget, runs out of it
    // while the user is still at the authorization server…
    let later = client.request_with::<Echo>(json!({"q": 1}), with_timeout(BUDGET));
    times_out("the later call to time out", later).await;
    // …while the challenged call, whose clock the login holds, still waits.
    the_challenged_call_waits_then_is_answered(
        (&world, &hold),
        challenged,
        "the user's time does not count against the challenged call",
        "answered within the budget it had left",
    )
    .await;
}

async fn a_request_queued_behind_a_login_times_out_on_its_own_clock(connector: Connector) {
    let (world, _oauth, client, hold) = held_login(&connector).await;
    let opened = hold.opened.notified();
    // The challenged call (the default, long timeout) starts the login…
    let challenged = tokio::spawn({
        let client = client.clone();
        async move { client.request::<Echo>(json!({"c": 1})).await }
    });
    within("the user to be sent to authorize", opened).await;
    // …and another call waiting behind it keeps its own, short clock.
    let queued = client.request_with::<Echo>(json!({"q": 1}), with_timeout(SHORT));
    times_out("the queued call to time out", queued).await;
    the_challenged_call_waits_then_is_answered(
        (&world, &hold),
        challenged,
        "the challenged call still waits for the login",
        "answered after the login",
    )
    .await;
}

/// The test IdP's token exchange, for the enterprise user `user-id-token`.
fn idp(world: &World, id_token: &str) -> IdJagExchange {
    IdJagExchange::new(
        &format!("{}/idp/token", world.issuer),
        ClientRegistration::new("idp-client").with_secret("idp-secret"),
        id_token,
    )
    .unwrap()
}

fn enterprise_world_config(enabled: bool) -> Config {
    Config {
        auth_methods: vec!["client_secret_basic".into()],
        jwt_bearer: enabled,
        ..Config::default()
    }
}

async fn an_enterprise_id_jag_is_presented_by_jwt_bearer(connector: Connector) {
    let world = World::start(&connector, enterprise_world_config(true)).await;
    let oauth = OAuthClient::builder(&world.server)
        .jwt_bearer(idp(&world, "user-id-token"))
        .client(ClientRegistration::new("mcp-client").with_secret("mcp-secret"))
        .build()
        .unwrap();
    connect_and_call(&world, &oauth).await;
    // The IdP exchanged the user's ID token for an ID-JAG for this AS and resource…
    let exchange = world
        .events()
        .into_iter()
        .find_map(|e| match e {
            Event::Exchange(form) => Some(form),
            _ => None,
        })
        .expect("a token exchange at the IdP");
    assert_eq!(
        exchange["requested_token_type"],
        "urn:ietf:params:oauth:token-type:id-jag"
    );
    assert_eq!(exchange["audience"], world.issuer);
    assert_eq!(exchange["resource"], world.server);
    // …which the client presented with the JWT-bearer grant: no authorize, no
    // registration.
    assert!(world.authorizations().is_empty());
    assert!(world.registrations().is_empty());
    let (form, authorization) = &world.token_requests()[0];
    assert_eq!(form["grant_type"], JWT_BEARER);
    assert_eq!(form["assertion"], ID_JAG);
    assert_eq!(
        authorization.as_deref(),
        Some(basic("mcp-client", "mcp-secret").as_str())
    );
    let token = oauth.tokens().await.expect("a token").access_token;
    assert!(presented(&world, &token));
}

async fn the_assertion_comes_from_the_application_callback(connector: Connector) {
    let world = World::start(&connector, enterprise_world_config(true)).await;
    let asked = Arc::new(Mutex::new(Vec::new()));
    let record = asked.clone();
    let oauth = OAuthClient::builder(&world.server)
        .jwt_bearer(move |request: AssertionRequest| {
            record.lock().unwrap().push(request);
            async move { Ok(ID_JAG.to_owned()) }
        })
        .client(ClientRegistration::new("mcp-client").with_secret("mcp-secret"))
        .build()
        .unwrap();
    connect_and_call(&world, &oauth).await;
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].issuer, world.issuer, "the AS is the audience");
    assert_eq!(asked[0].resource, world.server);
    let (form, _) = &world.token_requests()[0];
    assert_eq!(form["grant_type"], JWT_BEARER);
    assert_eq!(form["assertion"], ID_JAG);
}

async fn a_disabled_jwt_bearer_grant_fails_the_connection(connector: Connector) {
    let world = World::start(&connector, enterprise_world_config(false)).await;
    let oauth = OAuthClient::builder(&world.server)
        .jwt_bearer(idp(&world, "user-id-token"))
        .client(ClientRegistration::new("mcp-client").with_secret("mcp-secret"))
        .build()
        .unwrap();
    let e = connect_fails(&world, &oauth, ErrorKind::TokenEndpoint).await;
    assert_eq!(e.oauth_error(), Some("unsupported_grant_type"));
    assert!(oauth.tokens().await.is_none());
    assert!(world.mcp_requests().iter().all(|r| r.1.is_none()));
}

async fn a_rejected_assertion_fails_the_connection(connector: Connector) {
    let world = World::start(&connector, enterprise_world_config(true)).await;
    let oauth = OAuthClient::builder(&world.server)
        .jwt_bearer(|_: AssertionRequest| async { Ok("a.forged.assertion".to_owned()) })
        .client(ClientRegistration::new("mcp-client").with_secret("mcp-secret"))
        .build()
        .unwrap();
    let e = connect_fails(&world, &oauth, ErrorKind::TokenEndpoint).await;
    assert_eq!(e.oauth_error(), Some("invalid_grant"));
    assert_eq!(
        world.token_requests()[0].0["assertion"],
        "a.forged.assertion"
    );
    assert!(oauth.tokens().await.is_none());
    assert!(world.mcp_requests().iter().all(|r| r.1.is_none()));
}

async fn a_configured_authorization_server_is_the_only_one_asked(connector: Connector) {
    // The resource's metadata names another authorization server: it is not read.
    let world = World::start(
        &connector,
        Config {
            prm_issuer: Some("http://127.0.0.1:1".into()),
            ..enterprise_world_config(true)
        },
    )
    .await;
    let asked = Arc::new(Mutex::new(Vec::new()));
    let oauth = enterprise_client(&world, &asked);
    connect_and_call(&world, &oauth).await;
    assert_eq!(
        world.well_known(),
        [("/.well-known/oauth-authorization-server".to_owned(), true)],
        "only the configured issuer's RFC 8414 metadata"
    );
    assert_eq!(asked.lock().unwrap().len(), 1);
    let (form, authorization) = &world.token_requests()[0];
    assert_eq!(form["assertion"], ID_JAG);
    assert_eq!(form["resource"], world.server);
    assert!(authorization.is_some());
    // Metadata that does not validate: neither the ID-JAG nor the secret goes out.
    let world = World::start(
        &connector,
        Config {
            metadata_issuer: Some("https://attacker.example".into()),
            ..enterprise_world_config(true)
        },
    )
    .await;
    let asked = Arc::new(Mutex::new(Vec::new()));
    let oauth = enterprise_client(&world, &asked);
    connect_fails(&world, &oauth, ErrorKind::IssuerMismatch).await;
    assert!(asked.lock().unwrap().is_empty(), "no ID-JAG asked for");
    assert!(
        world.token_requests().is_empty(),
        "nothing sent to the token endpoint"
    );
}

/// A JWT-bearer client pinned to `world`'s authorization server, recording what its
/// assertion callback is asked.
fn enterprise_client(world: &World, asked: &Arc<Mutex<Vec<AssertionRequest>>>) -> OAuthClient {
    let record = asked.clone();
    OAuthClient::builder(&world.server)
        .authorization_server(world.issuer.clone())
        .jwt_bearer(move |request: AssertionRequest| {
            record.lock().unwrap().push(request);
            async move { Ok(ID_JAG.to_owned()) }
        })
        .client(ClientRegistration::new("mcp-client").with_secret("mcp-secret"))
        .build()
        .unwrap()
}
