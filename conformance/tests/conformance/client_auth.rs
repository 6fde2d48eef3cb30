//! Client auth: the OAuth client (`modelctx-oauth`) on the streamable HTTP client
//! transport, against an OAuth-protected MCP endpoint and its authorization server on
//! loopback (`client_auth_support.rs`), in each era's cell.

use std::sync::Arc;

use base64::Engine as _;
use modelctx_conformance::{Connector, Test, conformance_test, within};
use modelctx_oauth::{
    CredentialKey, CredentialStore, ErrorKind, InMemoryCredentialStore, OAuthClient,
};
use serde_json::json;
use sha2::Digest as _;

use crate::client_auth_steps::{
    connect_and_call, connect_fails, connected_world, echoed, refused_world,
};
use crate::client_auth_support::{Browser, Config, Event, PrmAt, World, basic, withholding_admin};
use crate::support::Echo;

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            a_401_runs_one_authorization_code_flow,
            [
                "client-auth:401-triggers-flow",
                "client-auth:dcr",
                "client-auth:pkce:s256",
                "client-auth:resource-parameter"
            ]
        ),
        conformance_test!(
            every_request_after_authorization_carries_the_bearer_token,
            ["client-auth:bearer-header:every-request"]
        ),
        conformance_test!(
            a_token_refused_right_after_authorization_fails_the_request,
            ["client-auth:401-after-auth-throws"]
        ),
        conformance_test!(
            a_403_steps_up_once_with_the_union_of_scopes,
            [
                "client-auth:403-scope-upgrade",
                "client-auth:403-scope-union"
            ]
        ),
        conformance_test!(
            scopes_come_from_the_challenge_then_the_resource_then_none,
            ["client-auth:scope-selection:priority"]
        ),
        conformance_test!(
            offline_access_is_asked_for_with_consent_when_offered,
            ["client-auth:authorize:offline-access-consent"]
        ),
        conformance_test!(
            resource_metadata_from_the_challenge_else_the_well_known_order,
            ["client-auth:prm-discovery:fallback-order"]
        ),
        conformance_test!(
            without_resource_metadata_the_server_origin_is_the_authorization_server,
            ["client-auth:prm-discovery:no-prm-fallback"]
        ),
        conformance_test!(
            resource_metadata_for_another_resource_aborts,
            ["client-auth:prm-resource-mismatch"]
        ),
        conformance_test!(
            authorization_server_metadata_is_probed_in_the_spec_order,
            ["client-auth:as-metadata-discovery:priority-order"]
        ),
        conformance_test!(
            metadata_naming_another_issuer_is_refused,
            ["client-auth:as-metadata-discovery:issuer-validation"]
        ),
        conformance_test!(
            without_s256_in_the_metadata_the_client_stops,
            ["client-auth:pkce:refuse-if-unsupported"]
        ),
        conformance_test!(
            a_missing_or_forged_state_is_discarded,
            ["client-auth:state:verify"]
        ),
        conformance_test!(
            the_authorization_response_iss_is_checked,
            ["client-auth:authorization-response:iss-verify"]
        ),
        conformance_test!(
            an_error_redirect_aborts_before_the_token_request,
            ["client-auth:authorize:error-surfaces"]
        ),
        conformance_test!(
            a_refused_registration_surfaces_status_and_body,
            ["client-auth:dcr:registration-error-surfaces"]
        ),
        conformance_test!(
            substituted_registration_metadata_completes_unusable_credentials_do_not,
            ["client-auth:dcr:substituted-metadata"]
        ),
        conformance_test!(
            a_client_id_metadata_document_replaces_registration,
            ["client-auth:cimd"]
        ),
        conformance_test!(
            pre_registered_credentials_skip_registration,
            ["client-auth:pre-registration"]
        ),
        conformance_test!(
            the_token_endpoint_auth_method_is_the_registered_one,
            ["client-auth:token-endpoint-auth-method"]
        ),
    ]
}

fn base64url_sha256(text: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(text.as_bytes()))
}

async fn a_401_runs_one_authorization_code_flow(connector: Connector) {
    let world = World::start(&connector, Config::default()).await;
    let oauth = world.oauth().build().unwrap();
    connect_and_call(&world, &oauth).await;

    // The first request went without a token and drew the one 401.
    let mcp = world.mcp_requests();
    assert_eq!(mcp[0].1, None);
    assert_eq!(mcp[0].3, 401);
    assert_eq!(mcp.iter().filter(|r| r.3 == 401).count(), 1, "{mcp:?}");
    // One discovery, one registration (no client_id was configured), one authorization,
    // one token request: the flow ran once.
    let registrations = world.registrations();
    assert_eq!(registrations.len(), 1);
    let (at, body) = &registrations[0];
    assert_eq!(at, &world.issuer);
    assert_eq!(
        body["redirect_uris"],
        json!(["http://127.0.0.1:9/callback"])
    );
    let authorizations = world.authorizations();
    assert_eq!(authorizations.len(), 1);
    let q = &authorizations[0];
    assert_eq!(q["client_id"], "client-1");
    assert_eq!(q["response_type"], "code");
    // PKCE S256: the challenge, then its verifier at the token endpoint.
    assert_eq!(q["code_challenge_method"], "S256");
    let tokens = world.token_requests();
    assert_eq!(tokens.len(), 1);
    let (form, _) = &tokens[0];
    assert_eq!(form["grant_type"], "authorization_code");
    assert_eq!(
        base64url_sha256(&form["code_verifier"]),
        q["code_challenge"]
    );
    // RFC 8707: both legs name the MCP server's canonical URI.
    assert_eq!(q["resource"], world.server);
    assert_eq!(form["resource"], world.server);
    // Every later request carried the token the flow obtained.
    let token = oauth.tokens().await.expect("a token").access_token;
    assert!(
        mcp[1..]
            .iter()
            .all(|r| r.1 == Some(format!("Bearer {token}")))
    );
}

async fn every_request_after_authorization_carries_the_bearer_token(connector: Connector) {
    let (world, oauth, client) = connected_world(&connector, Config::default()).await;
    client.close().await;
    if !world.era_2026 {
        world
            .wait_for(
                "the DELETE",
                |e| matches!(e, Event::Mcp { method, .. } if method == http::Method::DELETE),
            )
            .await;
    }
    let token = oauth.tokens().await.expect("a token").access_token;
    let mcp = world.mcp_requests();
    assert!(mcp.len() >= 3, "{mcp:?}");
    for (method, authorization, query, status) in &mcp[1..] {
        assert_eq!(
            authorization.as_deref(),
            Some(format!("Bearer {token}").as_str()),
            "{method}"
        );
        assert_ne!(*status, 401, "{method}");
        assert!(
            query.as_deref().is_none_or(|q| !q.contains(&token)),
            "never in the query: {query:?}"
        );
    }
    let methods: Vec<&http::Method> = mcp.iter().map(|r| &r.0).collect();
    if !world.era_2026 {
        assert!(methods.contains(&&http::Method::GET), "{methods:?}");
        assert!(methods.contains(&&http::Method::DELETE), "{methods:?}");
    }
}

async fn a_token_refused_right_after_authorization_fails_the_request(connector: Connector) {
    let world = World::start(
        &connector,
        Config {
            refuse_all: true,
            ..Config::default()
        },
    )
    .await;
    let oauth = world.oauth().build().unwrap();
    let error = match world.connect(&oauth).await {
        Ok(_) => panic!("a server refusing every token cannot be connected to"),
        Err(e) => e,
    };
    let last = oauth.last_error().expect("the OAuth client's error");
    assert!(last.message().contains("just issued"), "{last}");
    assert!(!error.to_string().is_empty());
    // One authorization; the request without a token and its one retry with the new one.
    assert_eq!(world.authorizations().len(), 1);
    assert_eq!(world.token_requests().len(), 1);
    let mcp = world.mcp_requests();
    assert_eq!(mcp.len(), 2, "{mcp:?}");
    assert_eq!(mcp[0].1, None);
    assert!(mcp[1].1.is_some());
}

async fn a_403_steps_up_once_with_the_union_of_scopes(connector: Connector) {
    let (world, _, client) = connected_world(&connector, withholding_admin()).await;
    // The endpoint now needs `write`: one 403, one step-up, the call answered.
    world.set(|c| c.required_scope = Some("write".into()));
    echoed(
        &client,
        "the stepped-up call",
        "w",
        "answered after the step-up",
    )
    .await;
    let scopes: Vec<String> = world
        .authorizations()
        .iter()
        .map(|q| q["scope"].clone())
        .collect();
    assert_eq!(
        scopes,
        ["read", "read write"],
        "the union, not the new scope alone"
    );
    // `admin` is never granted: the refused call gets one step-up, then fails instead of
    // asking again.
    world.set(|c| c.required_scope = Some("admin".into()));
    let forbidden = |w: &World| w.mcp_requests().iter().filter(|r| r.3 == 403).count();
    let before = forbidden(&world);
    let error = within("the refused call", client.request::<Echo>(json!({"a": 1})))
        .await
        .expect_err("admin is never granted");
    assert!(!error.to_string().is_empty());
    let scopes: Vec<String> = world
        .authorizations()
        .iter()
        .map(|q| q["scope"].clone())
        .collect();
    assert_eq!(scopes, ["read", "read write", "read write admin"]);
    assert_eq!(forbidden(&world) - before, 2, "the call and its one retry");
}

async fn scopes_come_from_the_challenge_then_the_resource_then_none(connector: Connector) {
    let prm_scopes = Some(vec!["files:read".to_owned(), "files:write".to_owned()]);
    // The challenge's scope wins over scopes_supported.
    let (world, _, _) = connected_world(
        &connector,
        Config {
            challenge_scope: Some("files:read".into()),
            prm_scopes: prm_scopes.clone(),
            ..Config::default()
        },
    )
    .await;
    assert_eq!(world.authorizations()[0]["scope"], "files:read");
    // No scope in the challenge: the resource's scopes_supported.
    let (world, _, _) = connected_world(
        &connector,
        Config {
            prm_scopes,
            ..Config::default()
        },
    )
    .await;
    assert_eq!(world.authorizations()[0]["scope"], "files:read files:write");
    // Neither: no scope parameter at all.
    let (world, _, _) = connected_world(&connector, Config::default()).await;
    assert!(!world.authorizations()[0].contains_key("scope"));
}

async fn offline_access_is_asked_for_with_consent_when_offered(connector: Connector) {
    let (world, _, _) = connected_world(
        &connector,
        Config {
            challenge_scope: Some("mcp".into()),
            as_scopes: Some(vec!["mcp".into(), "offline_access".into()]),
            ..Config::default()
        },
    )
    .await;
    // The client registered for the refresh_token grant…
    let (_, registration) = &world.registrations()[0];
    assert!(
        registration["grant_types"]
            .as_array()
            .is_some_and(|g| g.contains(&json!("refresh_token"))),
        "{registration}"
    );
    // …and asks for offline_access, with the consent prompt it requires.
    let q = &world.authorizations()[0];
    assert_eq!(q["scope"], "mcp offline_access");
    assert_eq!(q["prompt"], "consent");
    // Not offered: neither.
    let (world, _, _) = connected_world(
        &connector,
        Config {
            challenge_scope: Some("mcp".into()),
            as_scopes: Some(vec!["mcp".into()]),
            ..Config::default()
        },
    )
    .await;
    let q = &world.authorizations()[0];
    assert_eq!(q["scope"], "mcp");
    assert!(!q.contains_key("prompt"));
}

/// The PRM probes, in order, with whether each was found.
fn prm_probes(world: &World) -> Vec<(String, bool)> {
    world
        .well_known()
        .into_iter()
        .filter(|(p, _)| {
            p.starts_with("/.well-known/oauth-protected-resource") || p.contains("custom")
        })
        .collect()
}

async fn resource_metadata_from_the_challenge_else_the_well_known_order(connector: Connector) {
    // The challenge names the document: only it is fetched.
    const CUSTOM: &str = "/meta/custom-prm.json";
    let (world, _, _) = connected_world(
        &connector,
        Config {
            prm_at: PrmAt::Custom(CUSTOM),
            ..Config::default()
        },
    )
    .await;
    assert_eq!(prm_probes(&world), [(CUSTOM.to_owned(), true)]);
    // No hint: the path-aware well-known URI, then the root one.
    let (world, _, _) = connected_world(
        &connector,
        Config {
            hint: false,
            prm_at: PrmAt::Root,
            ..Config::default()
        },
    )
    .await;
    assert_eq!(
        prm_probes(&world),
        [
            (
                "/.well-known/oauth-protected-resource/mcp".to_owned(),
                false
            ),
            ("/.well-known/oauth-protected-resource".to_owned(), true),
        ]
    );
    // The path-aware one answering: the root one is not asked.
    let (world, _, _) = connected_world(
        &connector,
        Config {
            hint: false,
            ..Config::default()
        },
    )
    .await;
    assert_eq!(
        prm_probes(&world),
        [("/.well-known/oauth-protected-resource/mcp".to_owned(), true)]
    );
}

async fn without_resource_metadata_the_server_origin_is_the_authorization_server(
    connector: Connector,
) {
    let world = World::start(
        &connector,
        Config {
            hint: false,
            prm_at: PrmAt::Nowhere,
            as_on_resource_origin: true,
            ..Config::default()
        },
    )
    .await;
    let origin = world.server.trim_end_matches("/mcp").to_owned();
    assert_eq!(world.issuer, origin);
    let oauth = world.oauth().build().unwrap();
    connect_and_call(&world, &oauth).await;
    // Both PRM probes fail; the metadata comes from the server's origin.
    assert_eq!(
        world.well_known(),
        [
            (
                "/.well-known/oauth-protected-resource/mcp".to_owned(),
                false
            ),
            ("/.well-known/oauth-protected-resource".to_owned(), false),
            ("/.well-known/oauth-authorization-server".to_owned(), true),
        ]
    );
    assert_eq!(world.registrations()[0].0, origin);
    assert_eq!(world.authorizations()[0]["resource"], world.server);
}

async fn resource_metadata_for_another_resource_aborts(connector: Connector) {
    let (world, e) = refused_world(
        &connector,
        Config {
            prm_resource: Some("http://127.0.0.1:1/elsewhere".into()),
            ..Config::default()
        },
        ErrorKind::ResourceMismatch,
    )
    .await;
    assert!(e.message().contains("elsewhere"), "{e}");
    // Nothing was asked of the authorization server.
    assert!(
        world
            .well_known()
            .iter()
            .all(|(p, _)| p.starts_with("/.well-known/oauth-protected-resource")),
        "{:?}",
        world.well_known()
    );
    assert!(world.registrations().is_empty());
    assert!(world.authorizations().is_empty());
}

/// The authorization-server metadata probes, in order.
fn metadata_probes(world: &World) -> Vec<(String, bool)> {
    world
        .well_known()
        .into_iter()
        .filter(|(p, _)| !p.starts_with("/.well-known/oauth-protected-resource"))
        .collect()
}

async fn authorization_server_metadata_is_probed_in_the_spec_order(connector: Connector) {
    // An issuer with a path, answering only at the last candidate.
    let world = World::start(
        &connector,
        Config {
            issuer_path: "/tenant",
            metadata_path: Some("/tenant/.well-known/openid-configuration".into()),
            ..Config::default()
        },
    )
    .await;
    assert!(world.issuer.ends_with("/tenant"));
    connect_and_call(&world, &world.oauth().build().unwrap()).await;
    assert_eq!(
        metadata_probes(&world),
        [
            (
                "/.well-known/oauth-authorization-server/tenant".to_owned(),
                false
            ),
            ("/.well-known/openid-configuration/tenant".to_owned(), false),
            ("/tenant/.well-known/openid-configuration".to_owned(), true),
        ]
    );
    // An issuer without a path: the root forms, OAuth then OpenID.
    let (world, _, _) = connected_world(
        &connector,
        Config {
            metadata_path: Some("/.well-known/openid-configuration".into()),
            ..Config::default()
        },
    )
    .await;
    assert_eq!(
        metadata_probes(&world),
        [
            ("/.well-known/oauth-authorization-server".to_owned(), false),
            ("/.well-known/openid-configuration".to_owned(), true),
        ]
    );
}

async fn metadata_naming_another_issuer_is_refused(connector: Connector) {
    let (world, e) = refused_world(
        &connector,
        Config {
            metadata_issuer: Some("https://attacker.example".into()),
            ..Config::default()
        },
        ErrorKind::IssuerMismatch,
    )
    .await;
    assert!(e.message().contains("attacker.example"), "{e}");
    assert!(world.registrations().is_empty());
    assert!(world.authorizations().is_empty());
    assert!(world.token_requests().is_empty());
}

async fn without_s256_in_the_metadata_the_client_stops(connector: Connector) {
    for methods in [None, Some(vec!["plain".to_owned()])] {
        let (world, e) = refused_world(
            &connector,
            Config {
                pkce_methods: methods.clone(),
                ..Config::default()
            },
            ErrorKind::PkceUnsupported,
        )
        .await;
        assert!(e.message().contains("S256"), "{methods:?}: {e}");
        assert!(world.authorizations().is_empty(), "{methods:?}");
        assert!(world.token_requests().is_empty(), "{methods:?}");
    }
}

async fn a_missing_or_forged_state_is_discarded(connector: Connector) {
    for tamper in [("state", ""), ("state", "forged")] {
        let world = World::start(&connector, Config::default()).await;
        let oauth = OAuthClient::builder(&world.server)
            .authorization_code(Browser {
                tamper: Some(tamper),
                hold: None,
            })
            .build()
            .unwrap();
        let e = connect_fails(&world, &oauth, ErrorKind::StateMismatch).await;
        assert!(e.message().contains("state"), "{e}");
        // The authorization URL carried a state; the answer without it was discarded.
        let q = &world.authorizations()[0];
        assert!(q["state"].len() >= 16, "{q:?}");
        assert!(world.token_requests().is_empty(), "{tamper:?}");
    }
}

async fn the_authorization_response_iss_is_checked(connector: Connector) {
    // Another issuer, or none where the server advertises it: refused.
    for (mode, supported) in [("wrong", true), ("wrong", false), ("omit", true)] {
        let (world, _) = refused_world(
            &connector,
            Config {
                iss_mode: mode,
                iss_supported: supported,
                ..Config::default()
            },
            ErrorKind::IssuerMismatch,
        )
        .await;
        assert!(world.token_requests().is_empty(), "{mode} {supported}");
    }
    // The right one, or none where the server does not advertise it: accepted.
    for (mode, supported) in [("correct", true), ("omit", false)] {
        connected_world(
            &connector,
            Config {
                iss_mode: mode,
                iss_supported: supported,
                ..Config::default()
            },
        )
        .await;
    }
}

async fn an_error_redirect_aborts_before_the_token_request(connector: Connector) {
    let (world, e) = refused_world(
        &connector,
        Config {
            authorize_error: Some("access_denied"),
            ..Config::default()
        },
        ErrorKind::Authorization,
    )
    .await;
    assert_eq!(e.oauth_error(), Some("access_denied"));
    assert!(e.message().contains("the user said no"), "{e}");
    assert_eq!(world.authorizations().len(), 1);
    assert!(world.token_requests().is_empty());
}

async fn a_refused_registration_surfaces_status_and_body(connector: Connector) {
    let (world, e) = refused_world(
        &connector,
        Config {
            register_status: 400,
            ..Config::default()
        },
        ErrorKind::Registration,
    )
    .await;
    assert_eq!(e.status(), Some(400));
    assert_eq!(e.oauth_error(), Some("invalid_client_metadata"));
    assert!(e.message().contains("not allowed here"), "{e}");
    assert!(world.authorizations().is_empty());
}

async fn substituted_registration_metadata_completes_unusable_credentials_do_not(
    connector: Connector,
) {
    // Metadata the server substituted but the flow does not depend on: it completes.
    let (_world, _, _) = connected_world(
        &connector,
        Config {
            register_patch: json!({
                "application_type": "smart-fridge",
                "redirect_uris": null,
                "grant_types": ["authorization_code", "refresh_token", "urn:example:extra"],
            }),
            ..Config::default()
        },
    )
    .await;
    // Credentials the authorization-code flow cannot apply: a registration error before
    // anything is stored or the user is sent to authorize.
    let unusable = [
        json!({"token_endpoint_auth_method": "tls_client_auth"}),
        json!({"token_endpoint_auth_method": "private_key_jwt"}),
        json!({"token_endpoint_auth_method": "client_secret_basic"}),
        json!({"token_endpoint_auth_method": "client_secret_post"}),
    ];
    for patch in unusable {
        let world = World::start(
            &connector,
            Config {
                register_patch: patch.clone(),
                ..Config::default()
            },
        )
        .await;
        let store = Arc::new(InMemoryCredentialStore::new());
        let oauth = world.oauth().store(store.clone()).build().unwrap();
        let e = connect_fails(&world, &oauth, ErrorKind::Registration).await;
        assert!(
            e.message().contains("token_endpoint_auth_method"),
            "{patch}: {e}"
        );
        assert_eq!(world.registrations().len(), 1);
        assert!(world.authorizations().is_empty(), "{patch}");
        let key = CredentialKey::new(&world.issuer, &world.server);
        let stored = store.load(&key).await.unwrap();
        assert!(
            stored.is_none_or(|s| s.registration.is_none()),
            "{patch}: nothing persisted"
        );
    }
}

async fn a_client_id_metadata_document_replaces_registration(connector: Connector) {
    const DOCUMENT: &str = "https://app.example/oauth/client.json";
    let world = World::start(
        &connector,
        Config {
            cimd: true,
            ..Config::default()
        },
    )
    .await;
    let oauth = world
        .oauth()
        .client_metadata_document(DOCUMENT)
        .build()
        .unwrap();
    connect_and_call(&world, &oauth).await;
    assert!(world.registrations().is_empty());
    assert_eq!(world.authorizations()[0]["client_id"], DOCUMENT);
    assert_eq!(world.token_requests()[0].0["client_id"], DOCUMENT);
}

async fn pre_registered_credentials_skip_registration(connector: Connector) {
    let world = World::start(
        &connector,
        Config::authenticating_with(&["client_secret_basic"]),
    )
    .await;
    let oauth = world.pre_registered("pre-registered", "pre-secret");
    connect_and_call(&world, &oauth).await;
    assert!(world.registrations().is_empty());
    assert_eq!(world.authorizations()[0]["client_id"], "pre-registered");
    let (form, authorization) = &world.token_requests()[0];
    assert_eq!(
        authorization.as_deref(),
        Some(basic("pre-registered", "pre-secret").as_str())
    );
    assert!(!form.contains_key("client_secret"));
}

async fn the_token_endpoint_auth_method_is_the_registered_one(connector: Connector) {
    // The client asks for client_secret_basic; the server registers it for
    // client_secret_post: the token request authenticates that way.
    let (world, _, _) = connected_world(
        &connector,
        Config {
            auth_methods: vec!["client_secret_basic".into(), "client_secret_post".into()],
            register_patch: json!({"token_endpoint_auth_method": "client_secret_post"}),
            ..Config::default()
        },
    )
    .await;
    let (_, asked) = &world.registrations()[0];
    assert_eq!(asked["token_endpoint_auth_method"], "client_secret_basic");
    let (form, authorization) = &world.token_requests()[0];
    assert_eq!(form["client_id"], "client-1");
    assert_eq!(form["client_secret"], "secret-1");
    assert_eq!(authorization, &None);
    // Registered as asked: HTTP Basic, the secret not in the form.
    let (world, _, _) = connected_world(
        &connector,
        Config::authenticating_with(&["client_secret_basic", "client_secret_post"]),
    )
    .await;
    let (form, authorization) = &world.token_requests()[0];
    assert_eq!(
        authorization.as_deref(),
        Some(basic("client-1", "secret-1").as_str())
    );
    assert!(!form.contains_key("client_secret"));
}
