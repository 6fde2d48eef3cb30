//! Extensions (SEP-2133) on the client: the capability ad that gates a server's
//! extension behaviour, result types an extension claims (finished by its resolver;
//! invalid for a client that did not declare it; never advertised in a handshake-era
//! `initialize`), and vendor notifications bound to typed handlers.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use modelctx::client::{Claimed, ClientExtension, NotificationBinding};
use modelctx::server::{Context, NoArgs, Server, ToolDef};
use modelctx::types::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientCapabilities, ErrorCode,
    ErrorData, JsonObject, JsonRpcMessage, MissingRequiredClientCapabilityError, RequestMethod,
};
use modelctx_conformance::{
    Connector, Test, conformance_test, notification_method, request_method, within,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::support::{client, connect, payload, server_with_tool, text_tool};
use modelctx::types::Tool;
use modelctx_test::apps::{ClockServer, FACE_URI, MODEL_NOTE, PLAIN, SHOW_TIME, TICK, with_ui};
use modelctx_test::text_of;

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            a_claimed_result_is_finished_by_its_extensions_resolver,
            ["extensions:client:claimed-result-resolved"]
        ),
        conformance_test!(
            a_claimed_shape_the_client_did_not_declare_is_invalid,
            ["extensions:client:claimed-result-undeclared-invalid"]
        ),
        conformance_test!(
            a_server_extension_gates_on_the_ad_and_sees_its_settings,
            ["extensions:client:capability-ad:gates-server-behaviour"]
        ),
        conformance_test!(
            the_handshake_ad_leaves_out_extensions_that_claim_results,
            ["extensions:client:capability-ad:legacy-omits-claimed"]
        ),
        conformance_test!(
            bound_notifications_are_checked_and_delivered_one_at_a_time_in_order,
            ["extensions:client:notification-binding-delivery"]
        ),
        conformance_test!(
            a_peer_without_the_extension_is_refused => a_server_extension_gates_on_the_ad_and_sees_its_settings,
            ["lifecycle:extensions:peer-unsupported-fallback"]
        ),
        conformance_test!(
            a_client_without_the_extension_gets_core_behaviour,
            ["lifecycle:extensions:peer-unsupported-fallback"]
        ),
    ]
}

/// The vendor extension these tests declare: it claims `com.example/ticket`.
const TICKETS: &str = "com.example/tickets";
/// The result type it claims: a ticket to redeem for the call's result.
const TICKET: &str = "com.example/ticket";
/// A claim-less vendor extension with settings.
const WIDGETS: &str = "com.example/widgets";

request_method!(
    /// `tools/call` as the server extension sees it: any params, any result (what a tool
    /// registry would not let it answer: a claimed shape).
    ExtendedCall = "tools/call"
);

request_method!(
    /// The extension's follow-up request: redeems a ticket for the call's result.
    Redeem = "com.example/tickets/redeem"
);

/// The extensions a request's capability ad declares, with their settings.
fn declared(cx: &Context) -> JsonObject {
    cx.client_capabilities()
        .and_then(|c| c.extensions.clone())
        .map(|e| {
            e.into_iter()
                .map(|(id, settings)| (id, Value::Object(settings)))
                .collect()
        })
        .unwrap_or_default()
}

/// A server whose tickets extension answers `tools/call` of `ticketed` with a ticket
/// (`resultType: "com.example/ticket"`) — to a request whose ad declares the extension,
/// or, `always`, to any (a server that ignores the ad) — and redeems tickets.
fn ticket_server(always: bool) -> Server {
    let ticketed = text_tool("ticketed", "never: the extension answers this tool");
    Server::builder("tickets", "1.0.0")
        .tool(ticketed)
        .unwrap()
        .request_handler::<ExtendedCall, _, _>(move |params, cx| async move {
            if always || declared(&cx).contains_key(TICKETS) {
                let ticket = format!("t-{}", params["name"].as_str().unwrap_or("?"));
                return Ok(json!({"resultType": TICKET, "ticket": ticket}));
            }
            Ok(json!({"content": [{"type": "text", "text": "no ticket"}]}))
        })
        .request_handler::<Redeem, _, _>(|params, cx| async move {
            // The follow-up carries the client's ad like any of its requests.
            assert!(declared(&cx).contains_key(TICKETS), "{params}");
            let ticket = params["ticket"].as_str().unwrap_or("?").to_owned();
            Ok(json!({"content": [{"type": "text", "text": format!("redeemed {ticket}")}]}))
        })
        .build()
}

/// The tickets extension: its resolver redeems the ticket through the session it is
/// handed; `resolved` hears of each ticket it saw.
fn tickets(resolved: mpsc::UnboundedSender<String>) -> ClientExtension {
    ClientExtension::new(TICKETS).claim(TICKET, move |claimed: Claimed| {
        let resolved = resolved.clone();
        async move {
            let ticket = claimed.result["ticket"].clone();
            let _ = resolved.send(ticket.as_str().unwrap_or_default().to_owned());
            let answer = claimed
                .client
                .request::<Redeem>(json!({ "ticket": ticket }))
                .await?;
            Ok(serde_json::from_value::<CallToolResult>(payload(answer))
                .expect("a redeemed ticket is a tool result"))
        }
    })
}

/// The methods of the requests the client sent, in order.
fn sent_methods(wire: &modelctx_conformance::Recording) -> Vec<String> {
    wire.sent()
        .iter()
        .filter_map(|m| match m {
            JsonRpcMessage::Request(r) => Some(r.method.to_string()),
            _ => None,
        })
        .collect()
}

async fn a_claimed_result_is_finished_by_its_extensions_resolver(connector: Connector) {
    let (resolved_tx, mut resolved) = mpsc::unbounded_channel();
    let pair = connect(
        &connector,
        &ticket_server(false),
        client().extension(tickets(resolved_tx)),
    )
    .await;

    // The server extension answers with a ticket because the ad declares it; the
    // resolver redeems it, and call_tool returns the redeemed result.
    let result = within(
        "the claimed call to be resolved",
        pair.client.call_tool("ticketed", JsonObject::new()),
    )
    .await
    .expect("the resolver's result");
    assert_eq!(text_of(&result), "redeemed t-ticketed");
    assert_eq!(resolved.recv().await.as_deref(), Some("t-ticketed"));

    // The follow-up went out through the session, after the call it finishes.
    let methods = sent_methods(&pair.wire);
    let call = methods.iter().position(|m| m == "tools/call").unwrap();
    let redeem = methods.iter().position(|m| m == Redeem::METHOD).unwrap();
    assert!(call < redeem, "{methods:?}");
}

async fn a_claimed_shape_the_client_did_not_declare_is_invalid(connector: Connector) {
    // A server that answers with the tickets' claimed shape whatever the ad says; the
    // client declares another extension, which claims another type: the supported set
    // is core plus what the declared extensions claim, nothing more.
    let (resolved_tx, mut resolved) = mpsc::unbounded_channel::<String>();
    let other = ClientExtension::new("com.example/vouchers").claim(
        "com.example/voucher",
        move |_claimed: Claimed| {
            let resolved = resolved_tx.clone();
            async move {
                let _ = resolved.send("voucher".to_owned());
                Ok(CallToolResult::text("never"))
            }
        },
    );
    let pair = connect(&connector, &ticket_server(true), client().extension(other)).await;
    let params = CallToolRequestParams::new("ticketed");
    let err = within("the answer", pair.client.request::<CallToolRequest>(params))
        .await
        .expect_err("a claimed shape the client did not declare");
    assert!(err.is_invalid_result(), "{err:?}");
    assert!(err.to_string().contains(TICKET), "{err}");
    // No resolver ran, and nothing followed the call.
    assert!(resolved.try_recv().is_err());
    assert!(!sent_methods(&pair.wire).iter().any(|m| m == Redeem::METHOD));
}

/// A server extension behaviour gated on the ad: `gated` runs only for a request that
/// declares the widgets extension, and answers with the settings it was declared with;
/// anything else is refused with -32021 naming the extension.
fn gated_server() -> Server {
    let gated = text_tool("gated", "never: the extension answers this tool");
    Server::builder("gated", "1.0.0")
        .tool(gated)
        .unwrap()
        .request_handler::<ExtendedCall, _, _>(|_params, cx| async move {
            let Some(settings) = declared(&cx).get(WIDGETS).cloned() else {
                let needed = ClientCapabilities::new().with_extension(WIDGETS, JsonObject::new());
                return Err(MissingRequiredClientCapabilityError::new(
                    Some(cx.request_id().clone()),
                    "gated needs the widgets extension",
                    needed,
                )
                .to_error_data());
            };
            Ok(json!({"content": [], "structuredContent": {"settings": settings}}))
        })
        .build()
}

fn widget_settings() -> JsonObject {
    let mut settings = JsonObject::new();
    settings.insert("flavour".into(), json!("mint"));
    settings.insert("sizes".into(), json!([1, 2]));
    settings
}

async fn a_server_extension_gates_on_the_ad_and_sees_its_settings(connector: Connector) {
    let server = gated_server();
    let params = || CallToolRequestParams::new("gated");

    // Declared: the server's behaviour runs and sees the declared settings.
    let widgets = ClientExtension::new(WIDGETS).settings(widget_settings());
    let declaring = connect(&connector, &server, client().extension(widgets)).await;
    let result = within(
        "the gated call",
        declaring.client.request::<CallToolRequest>(params()),
    )
    .await
    .expect("the extension's behaviour runs for a declaring client");
    assert_eq!(
        result.structured_content,
        Some(json!({"settings": widget_settings()}))
    );
    // Every request carried the ad with the identifier and its settings.
    for message in declaring.wire.sent() {
        let JsonRpcMessage::Request(request) = message else {
            continue;
        };
        let params: Value = serde_json::from_str(request.params.as_deref().unwrap().get()).unwrap();
        assert_eq!(
            params["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"][WIDGETS],
            json!(widget_settings()),
            "{}",
            request.method
        );
    }

    // Not declared: refused with -32021, naming what was missing.
    let plain = connect(&connector, &server, client()).await;
    let err = within(
        "the refusal",
        plain.client.request::<CallToolRequest>(params()),
    )
    .await
    .expect_err("a client without the extension is refused");
    let error: &ErrorData = err.protocol_error().expect("a protocol error");
    assert_eq!(error.code, ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY);
    assert!(
        error.data.as_ref().unwrap()["requiredCapabilities"]["extensions"]
            .get(WIDGETS)
            .is_some(),
        "{error:?}"
    );
}

async fn the_handshake_ad_leaves_out_extensions_that_claim_results(connector: Connector) {
    let (resolved_tx, mut resolved) = mpsc::unbounded_channel();
    let builder = client()
        .extension(tickets(resolved_tx))
        .extension(ClientExtension::new(WIDGETS).settings(widget_settings()));
    let pair = connect(&connector, &ticket_server(true), builder).await;

    // `initialize` advertised the claim-less extension with its settings, and not the
    // one that claims a result type.
    let declared = pair
        .server()
        .client_capabilities()
        .and_then(|c| c.extensions.clone())
        .unwrap_or_default();
    assert_eq!(declared.get(WIDGETS), Some(&widget_settings()));
    assert!(!declared.contains_key(TICKETS), "{declared:?}");
    let initialize = &pair.wire.sent_params("initialize")[0];
    assert!(!initialize.to_string().contains(TICKETS), "{initialize}");

    // No claim activates in this era: a claimed shape is never handed to the resolver.
    let params = CallToolRequestParams::new("ticketed");
    let _ = within("the answer", pair.client.request::<CallToolRequest>(params)).await;
    assert!(resolved.try_recv().is_err(), "no resolver runs");
    assert!(!sent_methods(&pair.wire).iter().any(|m| m == Redeem::METHOD));
}

#[derive(Debug, Serialize, Deserialize)]
struct WidgetChange {
    seq: u32,
}

notification_method!(
    /// A vendor notification bound by the widgets extension.
    WidgetChanged = "com.example/widgets/changed", WidgetChange
);

notification_method!(
    /// The same method with params of any shape: what a server may send that the binding's
    /// type does not accept.
    WidgetChangedAnyhow = "com.example/widgets/changed"
);

async fn bound_notifications_are_checked_and_delivered_one_at_a_time_in_order(
    connector: Connector,
) {
    // The tool sends 0 and 1, one whose params do not fit the binding's type, then 2..=4,
    // all before it answers.
    let emit = ToolDef::new("emit", |_: NoArgs, cx: Context| async move {
        for seq in 0..2 {
            cx.notify::<WidgetChanged>(WidgetChange { seq })
                .await
                .unwrap();
        }
        cx.notify::<WidgetChangedAnyhow>(json!({"seq": "three"}))
            .await
            .unwrap();
        for seq in 2..5 {
            cx.notify::<WidgetChanged>(WidgetChange { seq })
                .await
                .unwrap();
        }
        Ok::<_, String>("sent")
    });
    let server = server_with_tool("emitter", emit);

    // Each handler runs through several suspension points; a handler that started
    // before the previous one ended would interleave in the log.
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let running = Arc::new(AtomicBool::new(false));
    let (done_tx, mut done) = mpsc::unbounded_channel();
    let binding = {
        let log = log.clone();
        NotificationBinding::new::<WidgetChanged, _, _>(move |change, _peer| {
            let (log, running, done) = (log.clone(), running.clone(), done_tx.clone());
            async move {
                assert!(!running.swap(true, Ordering::SeqCst), "one at a time");
                log.lock().unwrap().push(format!("start {}", change.seq));
                for _ in 0..3 {
                    tokio::task::yield_now().await;
                }
                log.lock().unwrap().push(format!("end {}", change.seq));
                running.store(false, Ordering::SeqCst);
                let _ = done.send(change.seq);
            }
        })
    };
    let widgets = ClientExtension::new(WIDGETS).bind(binding);
    let pair = connect(&connector, &server, client().extension(widgets)).await;
    let params = CallToolRequestParams::new("emit");
    within("the call", pair.client.request::<CallToolRequest>(params))
        .await
        .unwrap();

    let mut seen = Vec::new();
    while seen.len() < 5 {
        seen.push(within("a bound notification", done.recv()).await.unwrap());
    }
    assert_eq!(
        seen,
        vec![0, 1, 2, 3, 4],
        "in dispatch order, the misfit dropped"
    );
    let expected: Vec<String> = (0..5)
        .flat_map(|n| [format!("start {n}"), format!("end {n}")])
        .collect();
    assert_eq!(*log.lock().unwrap(), expected, "serially");
}

/// Reverting to core behaviour: a server with MCP Apps (`io.modelcontextprotocol/ui`)
/// gives a client that declared the extension its tools' UI links, and one that did
/// not plain tools: no `_meta.ui`, no tool meant for apps only, and text results.
async fn a_client_without_the_extension_gets_core_behaviour(connector: Connector) {
    let clock = ClockServer::new();
    let server = clock.server();
    let names = |tools: &[Tool]| tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>();

    let host = connect(&connector, &server, with_ui(client())).await;
    let tools = within("tools/list", host.client.list_all_tools())
        .await
        .unwrap();
    let show = tools.iter().find(|t| t.name == SHOW_TIME).unwrap();
    assert_eq!(
        show.meta.as_ref().unwrap().get("ui").unwrap()["resourceUri"],
        FACE_URI
    );
    assert!(names(&tools).contains(&TICK.to_owned()), "{tools:?}");

    let plain = connect(&connector, &server, client()).await;
    let tools = within("tools/list", plain.client.list_all_tools())
        .await
        .unwrap();
    assert!(tools.iter().all(|t| t.meta.is_none()), "{tools:?}");
    assert_eq!(names(&tools), [MODEL_NOTE, PLAIN, SHOW_TIME]);
    let result = within("tools/call", plain.client.call_tool(SHOW_TIME, json!({})))
        .await
        .expect("the linked tool answers in plain text");
    assert!(result.structured_content.is_none(), "{result:?}");
    assert!(!text_of(&result).is_empty(), "{result:?}");
    assert_eq!(clock.calls(), [SHOW_TIME]);
}
