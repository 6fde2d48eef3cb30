//! `subscriptions/listen` against a real `Server` in the 2026-07-28 era, on every
//! transport that serves it: what each stream carries (its acknowledgement first, only
//! the kinds it asked for, each stamped with its listen request's id). The client's own
//! handling of hand-played streams is in `resources.rs`.

use modelctx::server::{Context, NoArgs, PromptDef, Server};
use modelctx::types::{RequestId, ServerNotification, SubscriptionFilter};
use modelctx_conformance::{Connector, Test, assert_next_change, conformance_test, within};
use serde_json::Value;

use crate::support::{Pair, client, connect, next_change, text_resource, text_tool};

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            each_stream_gets_the_list_changes_it_asked_for,
            [
                "tools:listen:list-changed",
                "resources:listen:list-changed",
                "prompts:listen:list-changed",
                "subscriptions:listen:per-stream-filter",
                "subscriptions:listen:notification-stamped",
                "subscriptions:listen:ack-first-stamped"
            ]
        ),
        conformance_test!(
            an_update_of_a_listened_resource_arrives_with_its_uri,
            ["resources:listen:updated"]
        ),
        conformance_test!(
            the_honoured_filter_is_what_the_server_can_send,
            ["subscriptions:listen:honored-filter-narrows-to-advertised"]
        ),
    ]
}

async fn the_honoured_filter_is_what_the_server_can_send(connector: Connector) {
    // Tools only: no prompts, so no prompts list to announce changes of.
    let server = Server::builder("tools", "1.0.0").enable_tools().build();
    let pair = connect(&connector, &server, client()).await;
    let asked = SubscriptionFilter::new()
        .with_tools_list_changed(true)
        .with_prompts_list_changed(true);
    let subscription = within("the acknowledgement", pair.client.subscribe(asked))
        .await
        .unwrap();
    assert_eq!(
        subscription.honored(),
        &SubscriptionFilter::new().with_tools_list_changed(true)
    );
    let on_it = stamped(&pair, subscription.id());
    let honored = &on_it[0].1["notifications"];
    assert_eq!(honored["toolsListChanged"], true, "{honored}");
    assert!(
        honored.get("promptsListChanged").is_none_or(|v| v == false),
        "{honored}"
    );
}

const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The methods of `stamped` messages, in order.
fn methods_of(stamped: &[(String, Value)]) -> Vec<&str> {
    stamped.iter().map(|(m, _)| m.as_str()).collect()
}

/// The notifications the client received stamped with subscription `id`, in order:
/// their methods and their `params`.
pub(crate) fn stamped(pair: &Pair, id: &RequestId) -> Vec<(String, Value)> {
    let id = serde_json::to_value(id).unwrap();
    pair.wire
        .received()
        .into_iter()
        .filter_map(|m| serde_json::to_value(m).ok())
        .filter(|m| m.get("id").is_none() && m["params"]["_meta"][SUBSCRIPTION_ID] == id)
        .map(|m| {
            (
                m["method"].as_str().unwrap_or_default().to_owned(),
                m["params"].clone(),
            )
        })
        .collect()
}

pub(crate) fn dynamic() -> Server {
    Server::builder("dynamic", "1.0.0")
        .enable_tools()
        .enable_resources()
        .enable_prompts()
        .build()
}

async fn each_stream_gets_the_list_changes_it_asked_for(connector: Connector) {
    let server = dynamic();
    let pair = connect(&connector, &server, client()).await;
    let every_list = SubscriptionFilter::new()
        .with_tools_list_changed(true)
        .with_resources_list_changed(true)
        .with_prompts_list_changed(true);
    let mut all = within(
        "the first acknowledgement",
        pair.client.subscribe(every_list),
    )
    .await
    .unwrap();
    let prompts_only = SubscriptionFilter::new().with_prompts_list_changed(true);
    let mut prompts = within(
        "the second acknowledgement",
        pair.client.subscribe(prompts_only.clone()),
    )
    .await
    .unwrap();
    assert_eq!(prompts.honored(), &prompts_only);

    server.add_tool(text_tool("t", "t")).unwrap();
    assert_next_change!(
        "the tools change",
        all.next(),
        ServerNotification::ToolListChanged(_)
    );
    server
        .add_resource(text_resource("file:///r", "r", "r"))
        .unwrap();
    assert_next_change!(
        "the resources change",
        all.next(),
        ServerNotification::ResourceListChanged(_)
    );
    server
        .add_prompt(PromptDef::new("p", |_: NoArgs, _cx: Context| async move {
            Ok::<_, String>("p".to_owned())
        }))
        .unwrap();
    assert_next_change!(
        "the prompts change",
        all.next(),
        ServerNotification::PromptListChanged(_)
    );
    // The prompts-only stream's first change is the prompts one: the tools and
    // resources changes never came on it.
    assert_next_change!(
        "the prompts-only change",
        prompts.next(),
        ServerNotification::PromptListChanged(_)
    );

    // On the wire: each stream starts with its acknowledgement, and everything on it
    // names its listen request.
    assert_eq!(
        methods_of(&stamped(&pair, all.id())),
        [
            "notifications/subscriptions/acknowledged",
            "notifications/tools/list_changed",
            "notifications/resources/list_changed",
            "notifications/prompts/list_changed"
        ]
    );
    let on_prompts = stamped(&pair, prompts.id());
    assert_eq!(
        methods_of(&on_prompts),
        [
            "notifications/subscriptions/acknowledged",
            "notifications/prompts/list_changed"
        ]
    );
    // The acknowledgement carries the honoured filter.
    let honored = &on_prompts[0].1["notifications"];
    assert_eq!(honored["promptsListChanged"], true, "{honored}");
    assert!(
        honored.get("toolsListChanged").is_none_or(|v| v == false),
        "{honored}"
    );
}

async fn an_update_of_a_listened_resource_arrives_with_its_uri(connector: Connector) {
    let server = Server::builder("docs", "1.0.0")
        .resource(text_resource("file:///a.txt", "a", "a"))
        .unwrap()
        .build();
    let pair = connect(&connector, &server, client()).await;
    let filter =
        SubscriptionFilter::new().with_resource_subscriptions(vec!["file:///a.txt".to_owned()]);
    let mut subscription = within("the acknowledgement", pair.client.subscribe(filter))
        .await
        .unwrap();
    server.notify_resource_updated("file:///a.txt").await;
    let change = next_change("the update", subscription.next()).await;
    match change {
        ServerNotification::ResourceUpdated(n) => assert_eq!(n.params.uri, "file:///a.txt"),
        other => panic!("expected the update, got {other:?}"),
    }
    let on_it = stamped(&pair, subscription.id());
    let (method, params) = on_it.last().expect("the update on the wire");
    assert_eq!(method, "notifications/resources/updated");
    assert_eq!(params["uri"], "file:///a.txt");
}
