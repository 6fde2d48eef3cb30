//! The stdio transport on real child processes (the `stdio-fixture` binary, as in
//! `stdio.rs`), across protocol eras: one server program serving a client of either era
//! on its connection, and a server process that crashes started again.

use std::time::Duration;

use modelctx::client::{Client, ConnectMode};
use modelctx::stdio::{ChildProcess, RestartPolicy};
use modelctx::transport::ReconnectPolicy;
use modelctx::types::{CallToolRequest, CallToolRequestParams, JsonRpcMessage};
use modelctx_conformance::{Connector, Test, conformance_test, within};
use modelctx_test::text_of;
use serde_json::json;

use crate::support::{client, connect_recorded};

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            one_server_program_serves_either_era_on_its_own_connection,
            ["transport:stdio:dual-era-serving"]
        ),
        conformance_test!(
            a_crashed_server_process_is_started_again_for_the_retry,
            ["transport:stdio:restart-after-crash"]
        ),
    ]
}

const FIXTURE: &str = env!("CARGO_BIN_EXE_stdio-fixture");

fn greet(name: &str) -> CallToolRequestParams {
    CallToolRequestParams::new("greet")
        .with_arguments(json!({"name": name}).as_object().cloned().unwrap())
}

/// Connects a client in `mode` to a fresh fixture process; the client, and the methods
/// of what it sent, in order.
async fn connect(mode: ConnectMode) -> (Client, modelctx_conformance::Recording) {
    let spawned = ChildProcess::new(FIXTURE)
        .spawn()
        .expect("the fixture spawns");
    let (client, wire) =
        connect_recorded(modelctx::transport::boxed(spawned), client().mode(mode)).await;
    (client, wire)
}

fn sent_methods(wire: &modelctx_conformance::Recording) -> Vec<String> {
    wire.sent()
        .iter()
        .filter(|m| matches!(m, JsonRpcMessage::Request(_)))
        .filter_map(|m| m.method().map(str::to_owned))
        .collect()
}

/// Asserts that `client`'s call of `greet` for `name` is answered with the greeting.
async fn greets(client: &Client, name: &str) {
    let result = within("greet", client.request::<CallToolRequest>(greet(name)))
        .await
        .unwrap();
    assert!(
        text_of(&result).starts_with(&format!("Hello, {name}!")),
        "{result:?}"
    );
}

async fn one_server_program_serves_either_era_on_its_own_connection(_: Connector) {
    // A plain client of the handshake era.
    let (legacy, legacy_wire) = connect(ConnectMode::Handshake).await;
    assert_eq!(legacy.protocol_version().as_str(), "2025-11-25");
    greets(&legacy, "old").await;
    assert_eq!(sent_methods(&legacy_wire)[0], "initialize");

    // A client that negotiates, to the same program in a process of its own.
    let (modern, modern_wire) = connect(ConnectMode::Auto).await;
    assert_eq!(modern.protocol_version().as_str(), "2026-07-28");
    greets(&modern, "new").await;
    let methods = sent_methods(&modern_wire);
    assert_eq!(methods[0], "server/discover", "{methods:?}");
    assert!(
        !methods.iter().any(|m| m == "initialize"),
        "no handshake: {methods:?}"
    );
    // Its requests carry the era's envelope.
    let call = modern_wire.first_sent("tools/call").unwrap();
    let call = serde_json::to_value(&call).unwrap();
    assert_eq!(
        call["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    legacy.close().await;
    modern.close().await;
}

async fn a_crashed_server_process_is_started_again_for_the_retry(_: Connector) {
    let policy = RestartPolicy::OnFailure(
        ReconnectPolicy::new()
            .initial_delay(Duration::from_millis(10))
            .max_delay(Duration::from_millis(100))
            .max_attempts(3),
    );
    let transport = ChildProcess::new(FIXTURE)
        .spawn_restarting(policy)
        .expect("the fixture spawns");
    let handle = transport.handle();
    let client = within(
        "the client to connect",
        client().mode(ConnectMode::Auto).connect(transport),
    )
    .await
    .expect("the client connects");
    let first = handle.current().and_then(|c| c.id()).expect("a child runs");
    greets(&client, "a").await;

    // The server exits mid-request: that request is lost with it.
    let crash = CallToolRequestParams::new("crash");
    let err = within("the crash", client.request::<CallToolRequest>(crash))
        .await
        .expect_err("the process died with the request");
    assert!(err.is_interrupted(), "{err:?}");

    // The client started a fresh process; a retry is served by it.
    let result = within("greet again", client.request::<CallToolRequest>(greet("b")))
        .await
        .expect("the fresh process answers");
    assert!(text_of(&result).starts_with("Hello, b!"));
    assert_eq!(handle.restarts(), 1);
    let second = handle.current().and_then(|c| c.id()).expect("a child runs");
    assert_ne!(first, second, "another process");
    client.close().await;
}
