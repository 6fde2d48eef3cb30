//! The server's error callback (`ServerBuilder::on_error`): what goes wrong outside any
//! request reaches the application there, once, and the session serves on. (An error
//! the client sends without an id is `protocol:error:null-id`, in `protocol`.)

use modelctx::client::Client;
use modelctx::server::{Context, Server, ToolDef};
use modelctx::transport::{MessageSink, TransportMessage};
use modelctx::types::{
    CallToolRequest, CallToolRequestParams, ErrorCode, ErrorData, JsonRpcMessage,
    JsonRpcResultResponse, RequestId, Tool, to_raw,
};
use modelctx_conformance::{
    Connector, SpecVersion, Test, TransportKind, conformance_test, notification_method, within,
};
use serde_json::json;
use tokio::sync::mpsc;

use crate::support::{client, connect, ping_then_first};

pub(crate) fn tests() -> Vec<Test> {
    vec![conformance_test!(
        errors_outside_any_request_reach_the_servers_callback,
        ["mcpserver:onerror:reach-through"]
    )]
}

notification_method!(
    /// A vendor notification whose server handler panics.
    Boom = "com.example/boom"
);

async fn reported(errors: &mut mpsc::UnboundedReceiver<ErrorData>, what: &str) -> ErrorData {
    within(what, errors.recv())
        .await
        .expect("the callback is alive")
}

/// The session still answers: a tool call completes.
async fn serves_on(client: &Client) {
    let result = within(
        "a call after it",
        client.request::<CallToolRequest>(CallToolRequestParams::new("still")),
    )
    .await
    .expect("the session serves on");
    assert_eq!(result.content[0].as_text(), Some("here"));
}

async fn errors_outside_any_request_reach_the_servers_callback(connector: Connector) {
    let (errors_tx, mut errors) = mpsc::unbounded_channel();
    let still = ToolDef::with_schema(
        Tool::new(
            "still",
            json!({"type": "object"}).as_object().unwrap().clone(),
        ),
        |_args, _cx: Context| async { Ok::<_, String>("here") },
    );
    let server = Server::builder("fragile", "1.0.0")
        .tool(still)
        .unwrap()
        .notification_handler::<Boom, _, _>(|_params, _peer| async move {
            panic!("the handler's own words");
        })
        .on_error(move |error, _peer| {
            let _ = errors_tx.send(error);
        })
        .build();

    // A notification handler that panics: the notification is lost, the callback hears
    // of it, and the session serves on. (In 2026-07-28 a client sends no notification
    // outside a request.)
    if connector.version() != SpecVersion::V2026_07_28 {
        let pair = connect(&connector, &server, client()).await;
        within("the notification", pair.client.notify::<Boom>(json!({})))
            .await
            .expect("the notification goes out");
        let error = reported(&mut errors, "the handler's panic").await;
        assert_eq!(error.code, ErrorCode::INTERNAL_ERROR, "{error:?}");
        assert!(error.message.contains("com.example/boom"), "{error:?}");
        assert!(
            error.message.contains("the handler's own words"),
            "{error:?}"
        );
        serves_on(&pair.client).await;
    }

    // An answer to no request the server is waiting on, from a client played by hand,
    // where its messages reach one session of the server.
    let raw = if connector.cell().has_transport_pair() {
        let (client_side, server_side) = connector.transport_pair().await;
        let session = server.serve(server_side);
        Some((client_side, Some(session)))
    } else if connector.kind() == TransportKind::StreamableHttpStateless {
        // Each POST is a session of its own, served by the same server.
        let per_post = server.clone();
        let client_side = connector
            .serve_stateless_http(move |transport| {
                per_post.serve(transport);
            })
            .await;
        Some((client_side, None))
    } else {
        None
    };
    if let Some(((sink, mut stream), _session)) = raw {
        let stray = JsonRpcResultResponse::new(RequestId::Number(977), to_raw(&json!({})).unwrap());
        sink.send(TransportMessage::new(stray.into()))
            .await
            .expect("the transport carries it");
        let error = reported(&mut errors, "the answer to nothing").await;
        assert_eq!(error.code, ErrorCode::INVALID_REQUEST, "{error:?}");
        assert!(error.message.contains("977"), "{error:?}");
        assert!(error.message.contains("not waiting"), "{error:?}");
        // A request sent after it is answered, and its answer is the first thing the
        // server sends: nothing answered the stray response.
        let first = ping_then_first(&sink, &mut stream, "the request's answer").await;
        let answered = match &first {
            JsonRpcMessage::Response(r) => Some(&r.id),
            JsonRpcMessage::Error(e) => e.id.as_ref(),
            _ => None,
        };
        assert_eq!(answered, Some(&RequestId::Number(1)), "{first:?}");
    }
    assert!(errors.try_recv().is_err(), "each error reported once");
}
