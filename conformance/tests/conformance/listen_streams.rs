//! `subscriptions/listen` streams side by side and over time, against a real `Server`
//! in the 2026-07-28 era: several streams on one connection told apart by their
//! subscription id, the server ending its streams on purpose, its limit on open streams,
//! and a stdio client listening again after it reconnects. What one stream carries is
//! in `listen.rs`.

use modelctx::client::{ListKind, Subscription};
use modelctx::server::{Context, NoArgs, Server};
use modelctx::types::{ErrorCode, ServerNotification, SubscriptionFilter};
use modelctx_conformance::{Connector, Test, conformance_test, within};
use serde_json::Value;

use crate::listen::{dynamic, stamped};
use crate::support::{
    Pair, client, connect, next_change, signalling_client, text_resource, text_tool,
};
use crate::tools::error_code;

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            concurrent_streams_each_get_only_their_own_notifications,
            ["subscriptions:listen:concurrent-demux"]
        ),
        conformance_test!(
            on_one_stdio_channel_notifications_go_by_subscription_id
                => concurrent_streams_each_get_only_their_own_notifications,
            ["subscriptions:listen:demux-by-subscription-id"]
        ),
        conformance_test!(
            a_stream_the_server_ends_is_answered_before_it_closes,
            ["subscriptions:listen:graceful-close"]
        ),
        conformance_test!(
            a_stream_the_server_ends_is_answered_never_cancelled,
            [
                "protocol:cancel:listen-teardown-cancelled",
                "protocol:cancel:server-listen-only"
            ]
        ),
        conformance_test!(
            a_listen_over_the_limit_is_refused_before_any_acknowledgement,
            ["subscriptions:listen:capacity-guard"]
        ),
        conformance_test!(
            a_reconnected_stdio_client_listens_again,
            ["subscriptions:listen:stdio-resubscribe-after-reconnect"]
        ),
    ]
}

fn kind(change: &ServerNotification) -> &'static str {
    match change {
        ServerNotification::ToolListChanged(_) => "tools",
        ServerNotification::PromptListChanged(_) => "prompts",
        ServerNotification::ResourceListChanged(_) => "resources",
        ServerNotification::ResourceUpdated(_) => "updated",
        _ => "other",
    }
}

async fn concurrent_streams_each_get_only_their_own_notifications(connector: Connector) {
    let server = dynamic();
    let pair = connect(&connector, &server, client()).await;
    let tools = SubscriptionFilter::new().with_tools_list_changed(true);
    let both = tools.clone().with_prompts_list_changed(true);
    let mut a = within("the first acknowledgement", pair.client.subscribe(tools))
        .await
        .unwrap();
    let mut b = within("the second acknowledgement", pair.client.subscribe(both))
        .await
        .unwrap();
    assert_ne!(a.id(), b.id());

    server.add_tool(text_tool("one", "one")).unwrap();
    let on_a = next_change("the tools change on a", a.next()).await;
    let on_b = next_change("the tools change on b", b.next()).await;
    assert_eq!((kind(&on_a), kind(&on_b)), ("tools", "tools"));
    server
        .add_prompt(modelctx::server::PromptDef::new(
            "p",
            |_: NoArgs, _cx: Context| async move { Ok::<_, String>("p".to_owned()) },
        ))
        .unwrap();
    let on_b = next_change("the prompts change on b", b.next()).await;
    assert_eq!(kind(&on_b), "prompts");
    server.add_tool(text_tool("two", "two")).unwrap();
    // a's next is the second tools change: the prompts change never reached it.
    let on_a = next_change("the second tools change on a", a.next()).await;
    let on_b = next_change("the second tools change on b", b.next()).await;
    assert_eq!((kind(&on_a), kind(&on_b)), ("tools", "tools"));

    // On the one connection each notification named its own stream; each stream got
    // a copy of the change both asked for.
    let methods =
        |on: Vec<(String, Value)>| -> Vec<String> { on.into_iter().map(|(m, _)| m).collect() };
    assert_eq!(
        methods(stamped(&pair, a.id())),
        [
            "notifications/subscriptions/acknowledged",
            "notifications/tools/list_changed",
            "notifications/tools/list_changed"
        ]
    );
    assert_eq!(
        methods(stamped(&pair, b.id())),
        [
            "notifications/subscriptions/acknowledged",
            "notifications/tools/list_changed",
            "notifications/prompts/list_changed",
            "notifications/tools/list_changed"
        ]
    );
}

/// A client of [`library`] listening for updates of `file:///a.txt`, acknowledged.
async fn subscribed_to_a(connector: &Connector) -> (Server, Pair, Subscription) {
    let server = library();
    let pair = connect(connector, &server, client()).await;
    let subscription = within("the acknowledgement", pair.client.subscribe(updates_of_a()))
        .await
        .unwrap();
    (server, pair, subscription)
}

fn library() -> Server {
    Server::builder("library", "1.0.0")
        .resource(text_resource("file:///a.txt", "a", "a"))
        .unwrap()
        .max_subscriptions(1)
        .build()
}

fn updates_of_a() -> SubscriptionFilter {
    SubscriptionFilter::new().with_resource_subscriptions(vec!["file:///a.txt".to_owned()])
}

async fn a_stream_the_server_ends_is_answered_before_it_closes(connector: Connector) {
    let (server, pair, mut subscription) = subscribed_to_a(&connector).await;
    assert_eq!(server.notify_resource_updated("file:///a.txt").await, 1);
    // The server ends its streams (at shutdown, say): the change already sent comes
    // first, then the end, with no error.
    assert_eq!(server.end_subscriptions(), 1);
    let change = next_change("the update", subscription.next()).await;
    assert_eq!(kind(&change), "updated");
    assert!(within("the end", subscription.next()).await.is_none());
    // On the wire the listen request was answered: an empty result naming the
    // subscription.
    let id = serde_json::to_value(subscription.id()).unwrap();
    let answer = pair
        .wire
        .received()
        .iter()
        .map(|m| serde_json::to_value(m).unwrap())
        .find(|m| m["id"] == id && m.get("method").is_none())
        .expect("the listen request's answer");
    let result = &answer["result"];
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/subscriptionId"], id,
        "{answer}"
    );
    let own: Vec<&String> = result
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| *k != "_meta" && *k != "resultType")
        .collect();
    assert!(own.is_empty(), "{answer}");
}

async fn a_stream_the_server_ends_is_answered_never_cancelled(connector: Connector) {
    let (server, pair, mut subscription) = subscribed_to_a(&connector).await;
    assert_eq!(server.end_subscriptions(), 1);
    assert!(within("the end", subscription.next()).await.is_none());
    // Ended with an answer to the listen request, and no cancellation from the server,
    // for the stream or anything else.
    let id = serde_json::to_value(subscription.id()).unwrap();
    let received: Vec<Value> = pair
        .wire
        .received()
        .iter()
        .map(|m| serde_json::to_value(m).unwrap())
        .collect();
    assert!(
        received
            .iter()
            .any(|m| m["id"] == id && m.get("result").is_some()),
        "{received:?}"
    );
    assert!(
        received
            .iter()
            .all(|m| m["method"] != "notifications/cancelled"),
        "{received:?}"
    );
}

async fn a_listen_over_the_limit_is_refused_before_any_acknowledgement(connector: Connector) {
    let server = library();
    let pair = connect(&connector, &server, client()).await;
    let mut open = within("the acknowledgement", pair.client.subscribe(updates_of_a()))
        .await
        .unwrap();
    let refused = within("the refusal", pair.client.subscribe(updates_of_a()))
        .await
        .unwrap_err();
    assert_eq!(error_code(&refused), ErrorCode::INTERNAL_ERROR, "{refused}");
    // Only the open stream was ever acknowledged, and it goes on.
    let acknowledged = pair
        .wire
        .received_count("notifications/subscriptions/acknowledged");
    assert_eq!(acknowledged, 1);
    assert_eq!(server.notify_resource_updated("file:///a.txt").await, 1);
    let change = next_change("the update", open.next()).await;
    assert_eq!(kind(&change), "updated");
}

async fn a_reconnected_stdio_client_listens_again(connector: Connector) {
    let server = Server::builder("tools", "1.0.0").enable_tools().build();
    let (builder, _first_changes) = signalling_client(ListKind::Tools);
    let first = connect(&connector, &server, builder).await;
    assert_eq!(
        listens(&first),
        1,
        "connect listens for the lists it reacts to"
    );
    // The connection ends; the server keeps nothing of its stream.
    first.client.close().await;
    // The client connects again: it sends subscriptions/listen anew, and the changes
    // reach it on that stream.
    let (builder, mut changes) = signalling_client(ListKind::Tools);
    let second = connect(&connector, &server, builder).await;
    assert_eq!(listens(&second), 1);
    server.add_tool(text_tool("new", "new")).unwrap();
    let changed = within("the change", changes.recv()).await.unwrap();
    assert_eq!(changed, ListKind::Tools);
}

/// How many `subscriptions/listen` requests the client sent.
fn listens(pair: &crate::support::Pair) -> usize {
    pair.wire.sent_count("subscriptions/listen")
}
