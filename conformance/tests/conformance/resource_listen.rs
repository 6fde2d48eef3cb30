//! Resource changes over `subscriptions/listen`: refused in the handshake era, the acknowledgement that says what the server honours, a typed stream of changes per subscription, and how a subscription ends.

use crate::resources::library;
use std::sync::Arc;

use modelctx::types::{Meta, ServerNotification, SubscriptionFilter, to_raw};
use modelctx_conformance::{Connector, Test, assert_next_change, conformance_test, within};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::support::{client, connect, next_change, refused_unsent};

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            a_subscription_says_what_the_server_honours,
            ["subscriptions:listen:client:honored-surfacing"]
        ),
        conformance_test!(
            a_subscription_is_a_stream_of_typed_changes,
            ["subscriptions:listen:client:iteration"]
        ),
        conformance_test!(
            concurrent_subscriptions_each_get_their_own_acknowledgement,
            ["subscriptions:listen:client:concurrent-demux"]
        ),
        conformance_test!(
            the_servers_closing_answer_ends_a_subscription_cleanly,
            ["subscriptions:listen:client:graceful-close"]
        ),
        conformance_test!(
            a_broken_subscription_stream_is_an_error,
            ["subscriptions:listen:client:lost"]
        ),
        conformance_test!(
            subscribing_needs_the_2026_era,
            ["subscriptions:listen:client:era-guard"]
        ),
    ]
}

/// A session of the handshake era has no `subscriptions/listen`: asking for one is
/// refused locally with a reason that names the era, and nothing is sent.
async fn subscribing_needs_the_2026_era(connector: Connector) {
    let pair = connect(&connector, &library(), client()).await;
    let filter = SubscriptionFilter::new().with_resources_list_changed(true);
    let err = refused_unsent(&pair, pair.client.subscribe(filter)).await;
    assert!(err.to_string().contains("2026-07-28"), "{err}");
}

/// What the hand-played server of the subscription tests does with a
/// `subscriptions/listen`: acknowledge `honored`, send `changes`, then answer (the
/// server's closing of the subscription) or break the stream; `barrier` holds the
/// acknowledgement until as many listens are in flight.
#[derive(Clone)]
struct Listening {
    honored: Option<Value>,
    changes: Vec<(&'static str, Value)>,
    end: End,
    barrier: Option<Arc<tokio::sync::Barrier>>,
}

impl Listening {
    /// Acknowledges what was asked, sends `changes`, then ends as `end`.
    fn sending(changes: Vec<(&'static str, Value)>, end: End) -> Self {
        Self {
            honored: None,
            changes,
            end,
            barrier: None,
        }
    }
}

#[derive(Clone)]
enum End {
    Open,
    Answer,
    /// Break the stream when told.
    Break(Arc<tokio::sync::Notify>),
}

fn listening_script(listening: Listening) -> crate::support::Script {
    Arc::new(move |request: modelctx::types::JsonRpcRequest| {
        let listening = listening.clone();
        Box::pin(async move {
            use modelctx::types::{JsonRpcMessage, JsonRpcNotification, JsonRpcResultResponse};
            let params: Value = request.params.as_deref().map_or(Value::Null, |p| {
                serde_json::from_str(p.get()).unwrap_or_default()
            });
            if request.method != "subscriptions/listen" {
                let answer = json!({"resultType": "complete", "content": [], "tools": []});
                let reply = JsonRpcResultResponse::new(request.id, to_raw(&answer).unwrap());
                return (vec![JsonRpcMessage::from(reply)], None);
            }
            if let Some(barrier) = &listening.barrier {
                barrier.wait().await;
            }
            let tag = json!({Meta::SUBSCRIPTION_ID: request.id});
            let honored = listening
                .honored
                .clone()
                .unwrap_or_else(|| params["notifications"].clone());
            let notify = |method: &'static str, mut params: Value| {
                params["_meta"] = tag.clone();
                JsonRpcMessage::from(JsonRpcNotification::new(
                    method,
                    Some(to_raw(&params).unwrap()),
                ))
            };
            let mut messages = vec![notify(
                "notifications/subscriptions/acknowledged",
                json!({"notifications": honored}),
            )];
            for (method, params) in &listening.changes {
                messages.push(notify(method, params.clone()));
            }
            match listening.end {
                // No answer: the subscription stays open.
                End::Open => (messages, None),
                End::Answer => {
                    let answer = json!({"resultType": "complete", "_meta": tag});
                    let reply = JsonRpcResultResponse::new(request.id, to_raw(&answer).unwrap());
                    messages.push(reply.into());
                    (messages, None)
                }
                // Once the client has seen what came before: a stream that broke before
                // the acknowledgement arrived would fail the subscribe instead.
                End::Break(when) => {
                    let close: crate::support::Close =
                        Box::pin(async move { when.notified().await });
                    (messages, Some(close))
                }
            }
        }) as futures::future::BoxFuture<'static, _>
    })
}

/// A client pinned to 2026-07-28 (nothing to negotiate with a hand-played server)
/// over a server that plays `listening`.
async fn subscriber(
    connector: &Connector,
    listening: Listening,
    builder: modelctx::client::ClientBuilder,
) -> modelctx::client::Client {
    let transport = crate::support::raw_server(connector, listening_script(listening)).await;
    let pinned = modelctx::client::ConnectMode::Pin(modelctx::types::ProtocolVersion::V2026_07_28);
    within(
        "the client to connect",
        builder.mode(pinned).connect(transport),
    )
    .await
    .unwrap()
}

/// Subscribes `client` to what `filter` names, and waits for the acknowledgement.
async fn acknowledged(
    client: &modelctx::client::Client,
    filter: SubscriptionFilter,
) -> modelctx::client::Subscription {
    within("the acknowledgement", client.subscribe(filter))
        .await
        .unwrap()
}

async fn a_subscription_says_what_the_server_honours(connector: Connector) {
    let listening = Listening {
        honored: Some(json!({"toolsListChanged": true})),
        changes: vec![],
        end: End::Open,
        barrier: None,
    };
    let client = subscriber(&connector, listening, client()).await;
    let asked = SubscriptionFilter::new()
        .with_tools_list_changed(true)
        .with_prompts_list_changed(true);
    let subscription = acknowledged(&client, asked).await;
    // Only the subset the server acknowledged, to compare with what was asked.
    assert_eq!(
        subscription.honored(),
        &SubscriptionFilter::new().with_tools_list_changed(true)
    );
}

async fn a_subscription_is_a_stream_of_typed_changes(connector: Connector) {
    let changes = vec![
        ("notifications/tools/list_changed", json!({})),
        (
            "notifications/resources/updated",
            json!({"uri": "file:///a"}),
        ),
    ];
    let listening = Listening::sending(changes, End::Open);
    let (seen_tx, mut seen) = mpsc::unbounded_channel();
    let observer = client()
        .notification_handler::<modelctx::types::ToolListChangedNotification, _, _>(
            move |_params, _peer| {
                let seen_tx = seen_tx.clone();
                async move {
                    let _ = seen_tx.send(());
                }
            },
        );
    let client = subscriber(&connector, listening, observer).await;
    let filter = SubscriptionFilter::new()
        .with_tools_list_changed(true)
        .with_resource_subscriptions(vec!["file:///a".to_owned()]);
    let mut subscription = acknowledged(&client, filter).await;
    assert_next_change!(
        "the first change",
        subscription.next(),
        ServerNotification::ToolListChanged(_)
    );
    let second = next_change("the second change", subscription.next()).await;
    match second {
        ServerNotification::ResourceUpdated(n) => assert_eq!(n.params.uri, "file:///a"),
        other => panic!("{other:?}"),
    }
    // The same change reached the client's own handler.
    within("the handler", seen.recv()).await.unwrap();
}

async fn concurrent_subscriptions_each_get_their_own_acknowledgement(connector: Connector) {
    // Both listens are in flight before either is acknowledged.
    let listening = Listening {
        honored: None,
        changes: vec![],
        end: End::Open,
        barrier: Some(Arc::new(tokio::sync::Barrier::new(2))),
    };
    let client = subscriber(&connector, listening, client()).await;
    let tools = SubscriptionFilter::new().with_tools_list_changed(true);
    let prompts = SubscriptionFilter::new().with_prompts_list_changed(true);
    let (a, b) = within(
        "both acknowledgements",
        futures::future::join(
            client.subscribe(tools.clone()),
            client.subscribe(prompts.clone()),
        ),
    )
    .await;
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_ne!(a.id(), b.id());
    assert_eq!(a.honored(), &tools);
    assert_eq!(b.honored(), &prompts);
}

async fn the_servers_closing_answer_ends_a_subscription_cleanly(connector: Connector) {
    let changes = vec![("notifications/prompts/list_changed", json!({}))];
    let client = subscriber(
        &connector,
        Listening::sending(changes, End::Answer),
        client(),
    )
    .await;
    let filter = SubscriptionFilter::new().with_prompts_list_changed(true);
    let mut subscription = acknowledged(&client, filter).await;
    // The change sent before the end is delivered, then the end: no error.
    assert_next_change!(
        "the change",
        subscription.next(),
        ServerNotification::PromptListChanged(_)
    );
    assert!(within("the end", subscription.next()).await.is_none());
    assert!(subscription.next().await.is_none());
}

async fn a_broken_subscription_stream_is_an_error(connector: Connector) {
    let breaker = Arc::new(tokio::sync::Notify::new());
    let changes = vec![("notifications/tools/list_changed", json!({}))];
    let listening = Listening::sending(changes, End::Break(breaker.clone()));
    let client = subscriber(&connector, listening, client()).await;
    let filter = SubscriptionFilter::new().with_tools_list_changed(true);
    let mut subscription = acknowledged(&client, filter).await;
    assert_next_change!(
        "the change",
        subscription.next(),
        ServerNotification::ToolListChanged(_)
    );
    breaker.notify_one();
    // The stream ended without the server's answer: reported, and nothing reopens it.
    let lost = within("the loss", subscription.next()).await;
    assert!(matches!(lost, Some(Err(_))), "{lost:?}");
    assert!(subscription.next().await.is_none());
}
