//! Lifecycle: how a client connects in each mode (probing for 2026-07-28, legacy, pinned,\n//! with a kept `server/discover` answer), and what `server/discover` answers.

use modelctx::client::{Client, ConnectMode};
use modelctx::http::StreamableHttpServerConfig;
use modelctx::server::Server;
use modelctx::types::{ErrorCode, ErrorData, JsonObject, JsonRpcMessage, Meta, ProtocolVersion};
use modelctx_conformance::{Connector, Recording, Test, conformance_test, record, within};
use serde_json::{Value, json};

use crate::http_support::{Hosted, host};
use crate::support::{both_eras, client, connect_recorded, text_tool};

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            a_handshake_only_server_gets_the_handshake_after_the_probe,
            ["lifecycle:discover:fallback-method-not-found"]
        ),
        conformance_test!(
            discover_says_what_the_server_speaks,
            ["lifecycle:discover:basic"]
        ),
        conformance_test!(
            a_version_refusal_that_lists_ours_is_asked_again,
            ["lifecycle:discover:retry-on-32022"]
        ),
        conformance_test!(
            a_silent_server_gets_the_handshake_after_the_probe_wait,
            ["lifecycle:discover:fallback-silence"]
        ),
        conformance_test!(
            the_legacy_mode_never_probes,
            ["lifecycle:mode:legacy-never-probes"]
        ),
        conformance_test!(
            a_pinned_client_starts_with_the_callers_first_request,
            [
                "lifecycle:mode:pin-never-handshakes",
                "lifecycle:stateless:no-initialize"
            ]
        ),
        conformance_test!(
            a_kept_discover_answer_saves_the_probe,
            ["lifecycle:mode:prior-discover-zero-rtt"]
        ),
    ]
}

/// A client left to choose its era asks `server/discover` first; a server of the
/// handshake era refuses it, and the client falls back to initialize on the same
/// connection.
async fn a_handshake_only_server_gets_the_handshake_after_the_probe(connector: Connector) {
    let legacy = Server::builder("legacy-only", "1.0.0")
        .stateless_era(false)
        .build();
    // Over HTTP: an endpoint of the handshake era only.
    let (client_side, session, _hosted) = if connector.cell().has_transport_pair() {
        let (client_side, server_side) = connector.transport_pair().await;
        (client_side, Some(legacy.serve(server_side)), None)
    } else {
        let config = StreamableHttpServerConfig::default().stateless_era(false);
        let hosted = host(legacy, config).await;
        let (transport, _) = hosted.transport();
        (modelctx::transport::boxed(transport), None, Some(hosted))
    };
    let (client, wire) = connect_recorded(
        client_side,
        client().mode(modelctx::client::ConnectMode::Auto),
    )
    .await;
    assert_eq!(client.protocol_version(), &ProtocolVersion::V2025_11_25);
    if let Some(session) = session {
        within("the handshake to finish", session.initialized()).await;
    }
    let sent = wire.sent_methods();
    assert_eq!(
        sent,
        ["server/discover", "initialize", "notifications/initialized"]
    );
    let refused = wire.received().into_iter().find_map(|m| match m {
        JsonRpcMessage::Error(e) => Some(e),
        _ => None,
    });
    assert!(refused.is_some(), "the probe was refused");
}

/// A server that speaks both eras, with a tool and instructions to recognise it by.
fn two_era_server() -> Server {
    let hello = text_tool("hello", "hi");
    Server::builder("two-eras", "2.0.0")
        .instructions("Both eras, one server.")
        .tool(hello)
        .unwrap()
        .build()
}

/// Serves `server` in both eras and connects a client in `mode` to it, recording the
/// client's wire; the last item keeps the server hosted.
async fn connect_to_both_eras(
    connector: &Connector,
    server: &Server,
    mode: ConnectMode,
) -> (Client, Recording, Option<Hosted>) {
    let (transport, hosted) = both_eras(connector, server).await;
    let (client, wire) = connect_recorded(transport, client().mode(mode)).await;
    (client, wire, hosted)
}

/// [`connect_to_both_eras`] with [`two_era_server`], the client pinned to 2026-07-28.
async fn pinned_to_two_eras(connector: &Connector) -> (Client, Recording, Option<Hosted>) {
    let pin = ConnectMode::Pin(ProtocolVersion::V2026_07_28);
    connect_to_both_eras(connector, &two_era_server(), pin).await
}

async fn the_legacy_mode_never_probes(connector: Connector) {
    let (legacy, wire, _hosted) =
        connect_to_both_eras(&connector, &two_era_server(), ConnectMode::Handshake).await;
    assert_eq!(legacy.protocol_version(), &ProtocolVersion::V2025_11_25);
    legacy.list_all_tools().await.unwrap();
    assert_eq!(
        wire.sent_methods(),
        ["initialize", "notifications/initialized", "tools/list"]
    );
}

async fn a_pinned_client_starts_with_the_callers_first_request(connector: Connector) {
    let (pinned, wire, _hosted) = pinned_to_two_eras(&connector).await;
    // Born connected: nothing crossed the wire, and the revision is the pinned one.
    assert!(wire.messages().is_empty(), "{:?}", wire.messages());
    assert_eq!(pinned.protocol_version(), &ProtocolVersion::V2026_07_28);
    assert!(pinned.discover_result().is_none());
    // Nothing is known of the server, so nothing is refused locally: the first request
    // on the wire is the caller's, with the whole envelope.
    let result = pinned.call_tool("hello", JsonObject::new()).await.unwrap();
    assert_eq!(result.content[0].as_text(), Some("hi"));
    let sent = wire.sent();
    let first = serde_json::to_value(&sent[0]).unwrap();
    assert_eq!(first["method"], "tools/call", "{first}");
    let meta = &first["params"]["_meta"];
    assert_eq!(meta[Meta::PROTOCOL_VERSION], "2026-07-28");
    assert!(meta[Meta::CLIENT_CAPABILITIES].is_object(), "{first}");
    assert_eq!(meta[Meta::CLIENT_INFO]["name"], "conformance-client");
    let methods = wire.sent_methods();
    assert!(
        !methods
            .iter()
            .any(|m| m == "initialize" || m == "server/discover")
    );
    // Only a stateless revision can be pinned.
    let (transport, _hosted) = both_eras(&connector, &two_era_server()).await;
    let err = client()
        .mode(ConnectMode::Pin(ProtocolVersion::V2025_11_25))
        .connect(transport)
        .await
        .unwrap_err();
    assert!(
        err.is_refused() && err.to_string().contains("ConnectMode::Handshake"),
        "{err}"
    );
}

async fn a_kept_discover_answer_saves_the_probe(connector: Connector) {
    let server = two_era_server();
    let (transport, _hosted) = both_eras(&connector, &server).await;
    let first = within(
        "the first client to connect",
        client().mode(ConnectMode::Discover).connect(transport),
    )
    .await
    .unwrap();
    let kept = first
        .discover_result()
        .cloned()
        .expect("the discover answer");
    first.close().await;

    let (again, wire, _hosted) =
        connect_to_both_eras(&connector, &server, ConnectMode::Prior(Box::new(kept))).await;
    assert!(wire.messages().is_empty(), "no negotiation traffic");
    assert_eq!(again.protocol_version(), &ProtocolVersion::V2026_07_28);
    assert_eq!(again.server_info().name, "two-eras");
    assert_eq!(again.server_info().version, "2.0.0");
    assert_eq!(again.instructions(), Some("Both eras, one server."));
    assert!(again.server_capabilities().tools.is_some());
    again.call_tool("hello", JsonObject::new()).await.unwrap();
    assert!(!wire.sent_methods().iter().any(|m| m == "server/discover"));
}

async fn discover_says_what_the_server_speaks(connector: Connector) {
    let (modern, wire, _hosted) = pinned_to_two_eras(&connector).await;
    let found = modern.discover().await.unwrap();
    assert!(found.supported_versions.iter().any(|v| v == "2026-07-28"));
    assert!(found.capabilities.tools.is_some());
    assert_eq!(
        found.instructions.as_deref(),
        Some("Both eras, one server.")
    );
    assert_eq!(
        found
            .meta
            .as_ref()
            .and_then(Meta::server_info)
            .map(|i| i.name),
        Some("two-eras".to_owned())
    );
    // The request carries nothing but the envelope.
    let sent = serde_json::to_value(&wire.sent()[0]).unwrap();
    assert_eq!(sent["method"], "server/discover");
    let params = sent["params"].as_object().unwrap();
    assert_eq!(params.keys().collect::<Vec<_>>(), ["_meta"], "{sent}");

    // A session of the handshake era has no such method: refused, nothing sent.
    let (transport, _hosted) = both_eras(&connector, &two_era_server()).await;
    let (transport, wire) = record(transport);
    let legacy = client().connect(transport).await.unwrap();
    let before = wire.messages().len();
    assert!(legacy.discover().await.unwrap_err().is_refused());
    assert_eq!(wire.messages().len(), before);
}

/// A server played by hand that refuses the first `server/discover` with `-32022`
/// listing 2026-07-28, and answers the second.
async fn a_version_refusal_that_lists_ours_is_asked_again(connector: Connector) {
    let discovers = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = discovers.clone();
    let answer = move |method: &str| -> Result<Value, ErrorData> {
        match method {
            "server/discover" if count.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 => {
                Err(ErrorData::new(
                    ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
                    "Unsupported protocol version",
                )
                .with_data(json!({"supported": ["2026-07-28"], "requested": "2026-07-28"})))
            }
            "server/discover" => Ok(json!({
                "resultType": "complete", "ttlMs": 0, "cacheScope": "private",
                "supportedVersions": ["2026-07-28"], "capabilities": {},
                "_meta": {Meta::SERVER_INFO: {"name": "picky", "version": "1"}}
            })),
            other => Ok(json!({"resultType": "complete", "unexpected": other})),
        }
    };
    let transport = crate::support::scripted_server_with_errors(&connector, answer).await;
    let (modern, wire) = connect_recorded(transport, client().mode(ConnectMode::Auto)).await;
    assert_eq!(modern.protocol_version(), &ProtocolVersion::V2026_07_28);
    assert_eq!(modern.server_info().name, "picky");
    assert_eq!(wire.sent_methods(), ["server/discover", "server/discover"]);

    // Listing nothing we speak: the refusal stands, and auto mode falls back.
    let answer = |method: &str| -> Result<Value, ErrorData> {
        match method {
            "server/discover" => Err(ErrorData::new(
                ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
                "Unsupported protocol version",
            )
            .with_data(json!({"supported": ["2099-01-01"], "requested": "2026-07-28"}))),
            "initialize" => Ok(json!({
                "protocolVersion": "2025-11-25", "capabilities": {},
                "serverInfo": {"name": "old", "version": "1"}
            })),
            _ => Ok(json!({})),
        }
    };
    let transport = crate::support::scripted_server_with_errors(&connector, answer).await;
    let (fallback, wire) = connect_recorded(transport, client().mode(ConnectMode::Auto)).await;
    assert_eq!(fallback.protocol_version(), &ProtocolVersion::V2025_11_25);
    assert_eq!(
        wire.sent_methods(),
        ["server/discover", "initialize", "notifications/initialized"]
    );
}

/// A server of the handshake era that says nothing to requests before `initialize`:
/// the probe goes unanswered, and after the probe wait the client sends the handshake.
async fn a_silent_server_gets_the_handshake_after_the_probe_wait(connector: Connector) {
    let answer = |method: &str| -> Option<Value> {
        match method {
            "initialize" => Some(json!({
                "protocolVersion": "2025-11-25", "capabilities": {},
                "serverInfo": {"name": "taciturn", "version": "1"}
            })),
            "server/discover" => None,
            _ => Some(json!({})),
        }
    };
    let transport = crate::support::scripted_server_with_silence(&connector, answer).await;
    let (transport, wire) = record(transport);
    let client = within(
        "the client to connect",
        client()
            .mode(ConnectMode::Auto)
            .probe_timeout(std::time::Duration::from_millis(200))
            .connect(transport),
    )
    .await
    .unwrap();
    assert_eq!(client.protocol_version(), &ProtocolVersion::V2025_11_25);
    assert_eq!(client.server_info().name, "taciturn");
    // The handshake beside the open probe, which is cancelled once the handshake
    // answered (a late answer would still have counted).
    assert_eq!(
        wire.sent_methods(),
        [
            "server/discover",
            "initialize",
            "notifications/cancelled",
            "notifications/initialized"
        ]
    );
}
