//! Roots (server → client): `roots/list` from a handler's context, the client's managed
//! roots list and its `notifications/roots/list_changed`.

use modelctx::client::{CallbackContext, RootsList};
use modelctx::server::{Context, Server};
use modelctx::types::{
    CallToolRequest, CallToolRequestParams, ErrorCode, ErrorData, JsonObject, JsonRpcMessage,
    ListRootsRequest, Root, RootsListChangedNotification,
};
use modelctx_conformance::{Connector, Test, conformance_test, within};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::support::{
    Pair, Work, answers_of, asked_of, call_work, client, connect, stateless_era, work_tool,
};

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            no_roots_in_input_required => no_roots_is_an_empty_list,
            ["roots:mrtr:list:empty"]
        ),
        conformance_test!(
            the_roots_reach_the_handler_on_the_retry,
            ["roots:mrtr:list:basic"]
        ),
        conformance_test!(a_handler_lists_the_client_roots, ["roots:list:basic"]),
        conformance_test!(no_roots_is_an_empty_list, ["roots:list:empty"]),
        conformance_test!(
            a_callback_error_reaches_the_handler,
            ["roots:list:client-error"]
        ),
        conformance_test!(
            roots_without_the_capability_is_method_not_found,
            ["roots:list:not-supported"]
        ),
        conformance_test!(
            every_change_notifies_the_server,
            ["roots:list-changed:client-emits", "roots:list-changed"]
        ),
        conformance_test!(roots_are_file_uris, ["roots:uri:file-scheme"]),
    ]
}

/// A server whose `test/work` handler lists the client's roots — through the context
/// (`{}`) or sent as is, skipping the local check (`{"raw": true}`) — and that counts
/// `notifications/roots/list_changed` on the returned channel.
fn roots_server() -> (Server, mpsc::UnboundedReceiver<()>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let server = Server::builder("roots-reader", "1.0.0")
        .tool(work_tool("roots", |_request: Value, cx: Context| async move {
            match cx.list_roots().await {
                Ok(roots) => json!({"ok": roots}),
                Err(e) => {
                    let data = e.to_error_data();
                    json!({"refused": e.is_refused(), "protocol": e.protocol_error().is_some(),
                           "code": data.code.0, "message": data.message})
                }
            }
        }))
        .expect("a valid tool")
        .request_handler::<Work, _, _>(|_request: Value, cx: Context| async move {
            Ok(match cx.peer().request::<ListRootsRequest>(None).await {
                Ok(r) => json!({"ok": r.roots}),
                Err(e) => json!({"protocol": e.protocol_error().is_some(), "code": e.to_error_data().code.0}),
            })
        })
        .notification_handler::<RootsListChangedNotification, _, _>(move |_params, _peer| {
            let _ = tx.send(());
            async {}
        })
        .build();
    (server, rx)
}

async fn list(pair: &Pair) -> Value {
    call_work(pair, "roots", json!({})).await
}

fn project_roots() -> Vec<Root> {
    vec![
        Root::new("file:///home/user/repos/frontend").with_name("Frontend"),
        Root::new("file:///home/user/repos/backend").with_name("Backend"),
    ]
}

/// [`project_roots`] as the wire carries them.
fn project_roots_json() -> Value {
    json!([
        {"uri": "file:///home/user/repos/frontend", "name": "Frontend"},
        {"uri": "file:///home/user/repos/backend", "name": "Backend"}
    ])
}

async fn a_handler_lists_the_client_roots(connector: Connector) {
    let roots = RootsList::new(project_roots()).unwrap();
    let pair = connect(&connector, &roots_server().0, client().roots(roots, false)).await;
    assert_eq!(
        serde_json::to_value(pair.server().client_capabilities().unwrap()).unwrap(),
        json!({"roots": {"listChanged": false}})
    );
    assert_eq!(list(&pair).await, json!({"ok": project_roots_json()}));
}

async fn the_roots_reach_the_handler_on_the_retry(connector: Connector) {
    let roots = RootsList::new(project_roots()).unwrap();
    let pair = connect(&connector, &roots_server().0, client().roots(roots, false)).await;
    assert_eq!(list(&pair).await, json!({"ok": project_roots_json()}));
    // The server asked once, inside its answer; the client answered on the retry.
    assert_eq!(asked_of(&pair, "roots/list").len(), 1);
    assert_eq!(answers_of(&pair), [json!({"roots": project_roots_json()})]);
    assert!(
        pair.wire
            .received()
            .iter()
            .all(|m| m.method() != Some("roots/list")),
        "no request from the server in this era"
    );
}

async fn no_roots_is_an_empty_list(connector: Connector) {
    let pair = connect(
        &connector,
        &roots_server().0,
        client().roots(RootsList::default(), false),
    )
    .await;
    assert_eq!(list(&pair).await, json!({"ok": []}));
}

async fn a_callback_error_reaches_the_handler(connector: Connector) {
    let failing = client().roots_callback(false, |_cx: CallbackContext| async {
        Err::<Vec<Root>, _>(ErrorData::new(ErrorCode(-32000), "roots are unavailable"))
    });
    let pair = connect(&connector, &roots_server().0, failing).await;
    let got = within("the handler's answer", list(&pair)).await;
    assert_eq!(
        got,
        json!({"refused": false, "protocol": true, "code": -32000, "message": "roots are unavailable"})
    );
}

async fn roots_without_the_capability_is_method_not_found(connector: Connector) {
    let pair = connect(&connector, &roots_server().0, client()).await;
    let got = pair
        .client
        .request::<Work>(json!({"raw": true}))
        .await
        .unwrap();
    assert_eq!(got, json!({"protocol": true, "code": -32601}));
    // Through the context, it is refused before anything is sent.
    let got = list(&pair).await;
    assert_eq!(got["refused"], json!(true), "{got}");
    let asked = pair.wire.received_count("roots/list");
    assert_eq!(asked, 1, "only the raw request reached the client");
}

fn changes_sent(pair: &Pair) -> usize {
    pair.wire.sent_count("notifications/roots/list_changed")
}

async fn every_change_notifies_the_server(connector: Connector) {
    let (server, mut changed) = roots_server();
    let roots = RootsList::default();
    let pair = connect(&connector, &server, client().roots(roots.clone(), true)).await;

    roots.add(Root::new("file:///a")).await.unwrap();
    within("the first change", changed.recv()).await.unwrap();
    assert_eq!(list(&pair).await, json!({"ok": [{"uri": "file:///a"}]}));
    roots.set(project_roots()).await.unwrap();
    within("the second change", changed.recv()).await.unwrap();
    assert!(roots.remove("file:///home/user/repos/backend").await);
    within("the third change", changed.recv()).await.unwrap();
    assert_eq!(changes_sent(&pair), 3);
    assert_eq!(
        list(&pair).await,
        json!({"ok": [{"uri": "file:///home/user/repos/frontend", "name": "Frontend"}]})
    );
    // Removing nothing changes nothing.
    assert!(!roots.remove("file:///nowhere").await);
    assert_eq!(changes_sent(&pair), 3);

    // Without `listChanged` the same edits send nothing.
    let quiet = RootsList::default();
    let pair = connect(&connector, &server, client().roots(quiet.clone(), false)).await;
    quiet.add(Root::new("file:///b")).await.unwrap();
    assert_eq!(list(&pair).await, json!({"ok": [{"uri": "file:///b"}]}));
    assert_eq!(changes_sent(&pair), 0);
}

async fn roots_are_file_uris(connector: Connector) {
    assert!(RootsList::new(vec![Root::new("https://example.test/repo")]).is_err());
    let roots = RootsList::new(project_roots()).unwrap();
    let err = roots.add(Root::new("s3://bucket/key")).await.unwrap_err();
    assert_eq!(err.uri(), "s3://bucket/key");
    assert_eq!(
        roots.roots(),
        project_roots(),
        "a refused root is not added"
    );

    // A callback returning a non-file URI gets an error, and the URI is never sent.
    let bad = client().roots_callback(false, |_cx| async {
        Ok(vec![
            Root::new("file:///ok"),
            Root::new("https://example.test/not-a-root"),
        ])
    });
    let pair = connect(&connector, &roots_server().0, bad).await;
    if stateless_era(&pair.client) {
        // The roots are the input the call's result asks for: the call fails.
        let call = CallToolRequestParams::new("roots").with_arguments(JsonObject::new());
        let err = pair
            .client
            .request::<CallToolRequest>(call)
            .await
            .unwrap_err();
        assert!(err.is_refused(), "{err}");
    } else {
        let got = list(&pair).await;
        assert_eq!(got["protocol"], json!(true), "{got}");
    }
    // Neither as an answer (2025-11-25) nor as an input response on a retry (2026-07-28);
    // an error may name it.
    let leaked = pair.wire.sent().iter().any(|m| match m {
        JsonRpcMessage::Response(r) => r.result.get().contains("https://example.test"),
        JsonRpcMessage::Request(r) => r
            .params
            .as_ref()
            .is_some_and(|p| p.get().contains("https://example.test")),
        _ => false,
    });
    assert!(!leaked, "the non-file root never left the client");

    let pair = connect(&connector, &roots_server().0, client().roots(roots, false)).await;
    let got = list(&pair).await;
    for root in got["ok"].as_array().unwrap() {
        assert!(
            root["uri"].as_str().unwrap().starts_with("file://"),
            "{root}"
        );
    }
}
