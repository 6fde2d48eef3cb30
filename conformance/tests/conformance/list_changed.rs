//! list_changed and dynamic registration: the client's signal-only and auto-refresh
//! reactions (only for advertised kinds), the server's debounced announcements, and
//! registrations after clients connected.

use std::sync::{Arc, Mutex};

use modelctx::client::{ClientBuilder, ListKind, ListUpdate};
use modelctx::server::{Context, NoArgs, PromptDef, Server, ToolDef};
use modelctx::session::SessionError;
use modelctx::types::{
    CallToolRequest, CallToolRequestParams, LoggingLevel, LoggingMessageNotification,
    ToolListChangedNotification,
};
use modelctx_conformance::{Connector, Test, conformance_test, within};
use tokio::sync::mpsc;

use crate::support::{client, connect, text_resource, text_tool, watching};

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            signal_only_does_not_refetch,
            ["client:list-changed:signal-only"]
        ),
        conformance_test!(
            auto_refresh_delivers_the_fresh_list,
            ["client:list-changed:auto-refresh"]
        ),
        conformance_test!(
            reactions_need_the_advertised_capability,
            ["client:list-changed:capability-gated"]
        ),
        conformance_test!(
            a_burst_of_changes_is_announced_once,
            ["mcpserver:list-changed:debounce"]
        ),
        conformance_test!(
            registrations_after_connect_change_the_lists,
            ["mcpserver:register:post-connect"]
        ),
    ]
}

async fn signal_only_does_not_refetch(connector: Connector) {
    let server = Server::builder("dynamic", "1.0.0").enable_tools().build();
    let (pair, mut rx) = watching(&connector, &server, ListKind::Tools).await;
    server.add_tool(text_tool("one", "x")).unwrap();
    assert_eq!(within("the signal", rx.recv()).await, Some(ListKind::Tools));
    // The callback ran on the notification; the client asked for no list.
    assert_eq!(pair.wire.sent_count("tools/list"), 0);
}

/// A client that re-lists the tools on their change: each fresh list (or the failure
/// to get it) arrives on the receiver.
pub(crate) fn refreshing_tools() -> (
    ClientBuilder,
    mpsc::UnboundedReceiver<Result<ListUpdate, SessionError>>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let builder = client().on_list_refreshed(ListKind::Tools, move |update| {
        let _ = tx.send(update);
    });
    (builder, rx)
}

async fn auto_refresh_delivers_the_fresh_list(connector: Connector) {
    let server = Server::builder("dynamic", "1.0.0")
        .page_size(1)
        .tool(text_tool("first", "x"))
        .unwrap()
        .build();
    let (builder, mut rx) = refreshing_tools();
    let pair = connect(&connector, &server, builder).await;
    server.add_tool(text_tool("second", "x")).unwrap();
    let update = within("the refreshed list", rx.recv())
        .await
        .unwrap()
        .unwrap();
    let ListUpdate::Tools(tools) = update else {
        panic!("expected tools, got {update:?}");
    };
    let names: Vec<_> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["first", "second"]);
    // The client re-listed after the notification, following the pages.
    let messages = pair.wire.messages();
    let notified = messages
        .iter()
        .position(|r| r.message.message.method() == Some("notifications/tools/list_changed"))
        .unwrap();
    let listed = messages[notified..]
        .iter()
        .filter(|r| r.message.message.method() == Some("tools/list"))
        .count();
    assert_eq!(listed, 2);
}

async fn reactions_need_the_advertised_capability(connector: Connector) {
    // Its tool announces a change the server never advertised, then a log marker: a
    // stray announcement inside a request, which every era can carry.
    let stray = ToolDef::new("stray", |_: NoArgs, cx: Context| async move {
        cx.notify::<ToolListChangedNotification>(None)
            .await
            .map_err(|e| e.to_string())?;
        cx.info("marker").await.map_err(|e| e.to_string())?;
        Ok::<_, String>("announced")
    });
    let server = Server::builder("static", "1.0.0")
        .list_changed(false)
        .tool(text_tool("fixed", "x"))
        .unwrap()
        .tool(stray)
        .unwrap()
        .build();
    let signals = Arc::new(Mutex::new(Vec::new()));
    let (signal_log, refresh_log) = (signals.clone(), signals.clone());
    let (log_tx, mut log_rx) = mpsc::unbounded_channel();
    let builder = client()
        .on_list_changed(ListKind::Tools, move |kind| {
            signal_log.lock().unwrap().push(format!("{kind:?}"))
        })
        .on_list_refreshed(ListKind::Tools, move |_| {
            refresh_log.lock().unwrap().push("refresh".to_owned())
        })
        .notification_handler::<LoggingMessageNotification, _, _>(move |params, _peer| {
            let log_tx = log_tx.clone();
            async move {
                let _ = log_tx.send(params.data);
            }
        });
    let pair = connect(&connector, &server, builder).await;
    assert_ne!(
        pair.client
            .server_capabilities()
            .tools
            .as_ref()
            .unwrap()
            .list_changed,
        Some(true)
    );
    // A registry change is not announced without the capability...
    server.add_tool(text_tool("late", "x")).unwrap();
    // ...and a stray announcement does not trigger the client's reactions.
    pair.client
        .set_logging_level(LoggingLevel::Info)
        .await
        .unwrap();
    // The bare request: `call_tool` would list the tools first to learn the output
    // schema, and this test counts the lists.
    pair.client
        .request::<CallToolRequest>(CallToolRequestParams::new("stray"))
        .await
        .unwrap();
    // Notifications are handled in order: once the marker is seen, the announcement
    // before it was handled too.
    assert_eq!(within("the marker", log_rx.recv()).await.unwrap(), "marker");
    assert!(signals.lock().unwrap().is_empty());
    assert_eq!(pair.wire.sent_count("tools/list"), 0);
    assert_eq!(
        pair.wire.received_count("notifications/tools/list_changed"),
        1
    );
}

async fn a_burst_of_changes_is_announced_once(connector: Connector) {
    let server = Server::builder("bursty", "1.0.0")
        .enable_tools()
        .enable_prompts()
        .build();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (tx2, mut rx2) = mpsc::unbounded_channel();
    let listen = |tx: mpsc::UnboundedSender<ListKind>| {
        let (a, b) = (tx.clone(), tx);
        client()
            .on_list_changed(ListKind::Tools, move |k| {
                let _ = a.send(k);
            })
            .on_list_changed(ListKind::Prompts, move |k| {
                let _ = b.send(k);
            })
    };
    let first = connect(&connector, &server, listen(tx)).await;
    let second = connect(&connector, &server, listen(tx2)).await;
    for i in 0..10 {
        server.add_tool(text_tool(&format!("t{i}"), "x")).unwrap();
    }
    assert!(server.remove_tool("t3"));
    for (rx, which) in [(&mut rx, "first client"), (&mut rx2, "second client")] {
        assert_eq!(within(which, rx.recv()).await, Some(ListKind::Tools));
    }
    // A later change of another kind is announced after the burst's one: any extra
    // tools announcement from the burst would have come before it.
    server
        .add_prompt(PromptDef::new("p", |_: NoArgs, _cx: Context| async move {
            Ok::<_, String>("x".to_owned())
        }))
        .unwrap();
    for (rx, which) in [(&mut rx, "prompts, first"), (&mut rx2, "prompts, second")] {
        assert_eq!(within(which, rx.recv()).await, Some(ListKind::Prompts));
    }
    for pair in [&first, &second] {
        assert_eq!(
            pair.wire.received_count("notifications/tools/list_changed"),
            1
        );
        assert_eq!(
            pair.wire
                .received_count("notifications/prompts/list_changed"),
            1
        );
        assert_eq!(pair.client.list_all_tools().await.unwrap().len(), 9);
    }
}

async fn registrations_after_connect_change_the_lists(connector: Connector) {
    let server = Server::builder("dynamic", "1.0.0")
        .enable_tools()
        .enable_resources()
        .enable_prompts()
        .build();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut builder = client();
    for kind in [ListKind::Tools, ListKind::Resources, ListKind::Prompts] {
        let tx = tx.clone();
        builder = builder.on_list_changed(kind, move |k| {
            let _ = tx.send(k);
        });
    }
    let pair = connect(&connector, &server, builder).await;
    assert!(pair.client.list_all_tools().await.unwrap().is_empty());

    server.add_tool(text_tool("t", "x")).unwrap();
    server
        .add_resource(text_resource("file:///r", "r", "r"))
        .unwrap();
    server
        .add_prompt(PromptDef::new("p", |_: NoArgs, _cx: Context| async move {
            Ok::<_, String>("p".to_owned())
        }))
        .unwrap();
    let mut kinds = Vec::new();
    for _ in 0..3 {
        kinds.push(within("an announcement", rx.recv()).await.unwrap());
    }
    kinds.sort_by_key(|k| format!("{k:?}"));
    assert_eq!(
        kinds,
        [ListKind::Prompts, ListKind::Resources, ListKind::Tools]
    );
    assert_eq!(pair.client.list_all_tools().await.unwrap()[0].name, "t");
    assert_eq!(
        pair.client.list_all_resources().await.unwrap()[0].uri,
        "file:///r"
    );
    assert_eq!(pair.client.list_all_prompts().await.unwrap()[0].name, "p");

    assert!(server.remove_tool("t"));
    assert!(server.remove_resource("file:///r"));
    assert!(server.remove_prompt("p"));
    assert!(!server.remove_prompt("p"));
    let mut kinds = Vec::new();
    for _ in 0..3 {
        kinds.push(within("a removal announcement", rx.recv()).await.unwrap());
    }
    assert_eq!(kinds.len(), 3);
    assert!(pair.client.list_all_tools().await.unwrap().is_empty());
    assert!(pair.client.list_all_resources().await.unwrap().is_empty());
    assert!(pair.client.list_all_prompts().await.unwrap().is_empty());
    // The tool is gone for calls too.
    let gone = pair
        .client
        .call_tool("t", modelctx::types::JsonObject::new())
        .await
        .unwrap_err();
    assert!(gone.protocol_error().is_some());
}
