//! What the client settles with a server and keeps: experimental capabilities carried
//! both ways as declared, list calls for capabilities the server did not advertise, the
//! `server/discover` answer adopted once per connection, a modern-only client against a
//! server of the handshake era, an `initialize` dressed as a 2026-07-28 request, and the
//! list refresh a 2026-07-28 client runs over `subscriptions/listen`.

use modelctx::client::{ConnectMode, ListUpdate};
use modelctx::server::{Context, Server};
use modelctx::types::{
    CallToolRequest, ClientCapabilities, ErrorCode, ErrorData, ExperimentalCapabilities,
    ProtocolVersion, ServerCapabilities,
};
use modelctx_conformance::{Connector, Test, conformance_test, record, within};
use serde_json::{Value, json};

use crate::http_modern::{echo_server, modern_initialize, post_modern, raw_both_eras};
use crate::http_support::initialize;
use crate::list_changed::refreshing_tools;
use crate::support::{
    call_work, client, connect, connect_recorded, server_with_tool, text_tool, work_tool,
};

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            experimental_capabilities_cross_verbatim_both_ways,
            ["lifecycle:capability:experimental-passthrough"]
        ),
        conformance_test!(
            listing_a_kind_the_server_did_not_advertise_is_refused_unsent,
            ["lifecycle:capability:list-empty-when-not-advertised"]
        ),
        conformance_test!(
            the_discover_answer_is_adopted_once_and_kept,
            ["lifecycle:discover:era-cached"]
        ),
        conformance_test!(
            a_modern_only_client_probes_first_and_says_why_a_legacy_server_fails,
            ["lifecycle:mode:modern-only-legacy-peer"]
        ),
        conformance_test!(
            an_initialize_in_a_modern_envelope_is_not_a_handshake,
            ["lifecycle:version:dual-era-precedence"]
        ),
        conformance_test!(
            a_listened_change_brings_the_fresh_list_to_the_callback,
            ["client:listen:auto-refresh"]
        ),
        conformance_test!(
            a_kept_discover_answer_that_went_stale_is_asked_again,
            ["lifecycle:mode:prior-discover-stale-reprobe"]
        ),
    ]
}

fn experimental(value: Value) -> ExperimentalCapabilities {
    serde_json::from_value(value).expect("experimental capabilities")
}

async fn experimental_capabilities_cross_verbatim_both_ways(connector: Connector) {
    let server_side = experimental(json!({
        "com.example/telemetry": {"sinks": ["otlp", "stdout"], "sample": 0.25},
        "org.example.search/v2": {"nested": {"deep": [1, {"x": null}]}, "on": true}
    }));
    let client_side = experimental(json!({
        "com.example/drafts": {"autosave": {"every_ms": 1500}, "formats": ["md"]},
        "dev.example/empty": {}
    }));
    let server = Server::builder("experimental", "1.0.0")
        .capabilities(
            ServerCapabilities::new()
                .with_tools(false)
                .with_experimental(server_side.clone()),
        )
        .tool(work_tool("declared", |_: Value, cx: Context| async move {
            json!({"experimental": cx.client_capabilities().and_then(|c| c.experimental.clone())})
        }))
        .expect("a valid tool")
        .build();
    let declaring =
        client().capabilities(ClientCapabilities::new().with_experimental(client_side.clone()));
    let pair = connect(&connector, &server, declaring).await;
    // The server's, as the client reads them.
    assert_eq!(
        pair.client.server_capabilities().experimental.as_ref(),
        Some(&server_side)
    );
    // The client's, as a handler reads them.
    let seen = call_work(&pair, "declared", json!({})).await;
    assert_eq!(
        seen["experimental"],
        serde_json::to_value(&client_side).unwrap()
    );
}

async fn listing_a_kind_the_server_did_not_advertise_is_refused_unsent(connector: Connector) {
    let only_tools = Server::builder("tools-only", "1.0.0")
        .enable_tools()
        .build();
    let pair = connect(&connector, &only_tools, client()).await;
    assert!(pair.client.server_capabilities().prompts.is_none());
    assert!(pair.client.server_capabilities().resources.is_none());
    let prompts = pair.client.list_prompts(None).await.unwrap_err();
    let resources = pair.client.list_resources(None).await.unwrap_err();
    let templates = pair.client.list_resource_templates(None).await.unwrap_err();
    for refusal in [prompts, resources, templates] {
        assert!(refusal.is_refused(), "refused locally: {refusal:?}");
    }
    // What was advertised is listed as usual.
    assert!(pair.client.list_tools(None).await.unwrap().tools.is_empty());
    let sent = pair.wire.sent_methods();
    for unsent in ["prompts/list", "resources/list", "resources/templates/list"] {
        assert!(!sent.iter().any(|m| m == unsent), "{unsent} sent: {sent:?}");
    }
    assert!(sent.iter().any(|m| m == "tools/list"), "{sent:?}");
}

async fn the_discover_answer_is_adopted_once_and_kept(connector: Connector) {
    let hello = text_tool("hello", "hi");
    let server = Server::builder("discoverable", "1.0.0")
        .instructions("Say hello.")
        .tool(hello)
        .unwrap()
        .build();
    let (transport, _hosted) = crate::support::both_eras(&connector, &server).await;
    let (client, wire) = connect_recorded(transport, client().mode(ConnectMode::Auto)).await;
    assert_eq!(client.protocol_version(), &ProtocolVersion::V2026_07_28);
    let adopted = client
        .discover_result()
        .cloned()
        .expect("the probe's answer is kept");
    assert!(adopted.supported_versions.iter().any(|v| v == "2026-07-28"));
    // Requests of every kind go out in the adopted era without asking again.
    client.list_all_tools().await.unwrap();
    client.call_tool("hello", json!({})).await.unwrap();
    client.list_all_tools().await.unwrap();
    let requests: Vec<Value> = wire
        .sent()
        .into_iter()
        .filter_map(|m| serde_json::to_value(m).ok())
        .filter(|m| m.get("id").is_some())
        .collect();
    let probes = requests
        .iter()
        .filter(|m| m["method"] == "server/discover")
        .count();
    assert_eq!(probes, 1, "one probe per connection: {requests:?}");
    assert_eq!(requests[0]["method"], "server/discover");
    for request in &requests[1..] {
        assert_eq!(
            request["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"], "2026-07-28",
            "{request}"
        );
    }
    // Reading the adopted answer again costs nothing on the wire.
    let before = wire.sent().len();
    assert_eq!(client.discover_result(), Some(&adopted));
    assert_eq!(client.instructions(), Some("Say hello."));
    assert_eq!(client.server_info().name, "discoverable");
    assert_eq!(wire.sent().len(), before);
}

async fn a_modern_only_client_probes_first_and_says_why_a_legacy_server_fails(
    connector: Connector,
) {
    // A server of the handshake era: it knows no server/discover.
    let answer = |method: &str| -> Result<Value, ErrorData> {
        match method {
            "initialize" => Ok(json!({
                "protocolVersion": "2025-11-25", "capabilities": {},
                "serverInfo": {"name": "old", "version": "1"}
            })),
            other => Err(ErrorData::method_not_found(other)),
        }
    };
    let transport = crate::support::scripted_server_with_errors(&connector, answer).await;
    let (transport, wire) = record(transport);
    let refused = within(
        "the connection attempt",
        client().mode(ConnectMode::Discover).connect(transport),
    )
    .await
    .expect_err("a modern-only client does not settle with a legacy server");
    // The probe went first, and the client never fell back to the handshake.
    assert_eq!(wire.sent_methods(), ["server/discover"]);
    let said = refused.to_string();
    assert!(said.contains("2026-07-28"), "the era is named: {said}");
    assert!(
        said.contains("auto") && said.contains("legacy"),
        "the way out is named: {said}"
    );
}

async fn an_initialize_in_a_modern_envelope_is_not_a_handshake(_: Connector) {
    let (hosted, raw) = raw_both_eras(echo_server()).await;
    // A valid handshake in every field, in a frame that also is a 2026-07-28 request: the
    // full envelope in `_meta`, and the modern headers.
    let dual = modern_initialize("2025-11-25");
    let r = post_modern(&raw, &dual, None).await;
    assert_eq!(r.status, 404, "{r:?}");
    assert_eq!(r.header("mcp-session-id"), None, "no session: {r:?}");
    let answer = r.only_message();
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["error"]["code"], ErrorCode::METHOD_NOT_FOUND.0);
    assert!(answer.get("result").is_none(), "{answer}");
    assert_eq!(hosted.service.session_count(), 0);
    // Without the envelope and headers, the same endpoint serves the handshake.
    let session = raw
        .init_with(&initialize(2, "2025-11-25"), "2025-11-25")
        .await;
    assert!(!session.is_empty());
    assert_eq!(hosted.service.session_count(), 1);
}

async fn a_listened_change_brings_the_fresh_list_to_the_callback(connector: Connector) {
    let server = server_with_tool("dynamic", text_tool("first", "x"));
    let (builder, mut rx) = refreshing_tools();
    let pair = connect(&connector, &server, builder).await;
    // The client opened a stream for the tool list's changes.
    let listen = pair
        .wire
        .sent()
        .into_iter()
        .filter_map(|m| serde_json::to_value(m).ok())
        .find(|m| m["method"] == "subscriptions/listen")
        .expect("a subscriptions/listen request");
    assert_eq!(
        listen["params"]["notifications"]["toolsListChanged"], true,
        "{listen}"
    );
    for (added, expected) in [
        ("second", vec!["first", "second"]),
        ("third", vec!["first", "second", "third"]),
    ] {
        server.add_tool(text_tool(added, "x")).unwrap();
        let update = within("the refreshed list", rx.recv())
            .await
            .expect("the callback is kept")
            .expect("the refresh succeeds");
        let ListUpdate::Tools(tools) = update else {
            panic!("expected tools, got {update:?}");
        };
        let names: Vec<_> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, expected);
    }
    // Each change was followed by a fresh tools/list.
    let messages = pair.wire.messages();
    let changed = messages
        .iter()
        .position(|r| r.message.message.method() == Some("notifications/tools/list_changed"))
        .expect("the change arrived");
    let listed = messages[changed..]
        .iter()
        .filter(|r| r.message.message.method() == Some("tools/list"))
        .count();
    assert!(listed >= 2, "a listing per change: {listed}");
}

/// A server played by hand whose `tools/call` is refused with `-32022` the first time,
/// and whose `server/discover` offers `offered`; later calls answer "fresh".
async fn refusing_once(
    connector: &Connector,
    offered: &'static str,
) -> modelctx::transport::BoxTransport {
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    crate::support::scripted_server_with_errors(connector, move |method| match method {
        "server/discover" => {
            let mut found = crate::support::discovered("moved", json!({"tools": {}}));
            found["supportedVersions"] = json!([offered]);
            Ok(found)
        }
        "tools/call" if calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 => {
            Err(ErrorData::new(
                ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
                "Unsupported protocol version: 2026-07-28",
            )
            .with_data(json!({"supported": [offered], "requested": "2026-07-28"})))
        }
        "tools/call" => {
            Ok(json!({"resultType": "complete", "content": [{"type": "text", "text": "fresh"}]}))
        }
        other => Err(ErrorData::method_not_found(other)),
    })
    .await
}

async fn a_kept_discover_answer_that_went_stale_is_asked_again(connector: Connector) {
    let kept: modelctx::types::DiscoverResult =
        serde_json::from_value(crate::support::discovered("moved", json!({"tools": {}}))).unwrap();
    let prior = || client().mode(ConnectMode::Prior(Box::new(kept.clone())));
    // The bare request: `call_tool` would list the tools too.
    let call = || modelctx::types::CallToolRequestParams::new("work");
    // A client of the kept answer, to a server that refuses its era once and then offers
    // `offered`; the client and its wire.
    let connect_stale = async |offered: &'static str| {
        let (transport, wire) = record(refusing_once(&connector, offered).await);
        let client = within("the client to connect", prior().connect(transport))
            .await
            .expect("no traffic to connect");
        (client, wire)
    };

    // The server still offers the era: the call is sent again and answered; the caller
    // never sees the refusal.
    let (client, wire) = connect_stale("2026-07-28").await;
    let result = within("the call", client.request::<CallToolRequest>(call()))
        .await
        .expect("the call is answered after the server is asked again");
    assert_eq!(modelctx_test::text_of(&result), "fresh");
    assert_eq!(
        wire.sent_methods(),
        ["tools/call", "server/discover", "tools/call"]
    );

    // It offers the era no longer: the error says what it offers now, not the stale
    // refusal.
    let (client, wire) = connect_stale("2025-11-25").await;
    let err = within("the call", client.request::<CallToolRequest>(call()))
        .await
        .expect_err("the server no longer serves the era");
    assert!(
        err.protocol_error().is_none(),
        "not the stale -32022: {err:?}"
    );
    let said = err.to_string();
    assert!(
        said.contains("no longer serves protocol 2026-07-28"),
        "{said}"
    );
    assert!(said.contains("now offers 2025-11-25"), "{said}");
    assert_eq!(wire.sent_methods(), ["tools/call", "server/discover"]);
}
