//! Tools: listing, calling, content kinds, structured output, errors, schemas, and the
//! high-level server's guarantees (validation, naming, generated schemas, context).

use std::sync::{Arc, Mutex};

use modelctx::client::ListKind;
use modelctx::server::schemars::JsonSchema;
use modelctx::server::{Context, Json, NoArgs, Server, ToolDef};
use modelctx::session::{Progress, RequestOptions};
use modelctx::types::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ContentBlock, ErrorCode, JsonObject,
    JsonRpcMessage, ListToolsRequest, ListToolsResult, LoggingLevel, LoggingMessageNotification,
    Tool,
};
use modelctx_conformance::{Connector, Test, conformance_test, within};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::Barrier;

use crate::pagination::page_asked;
use crate::support::{Pair, client, connect, server_with_tool, text_tool, watching};

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            a_typed_tool_is_listed_and_called,
            ["tools:capability:declared"]
        ),
        conformance_test!(
            a_typed_tool_is_listed_and_called_in_every_era => a_typed_tool_is_listed_and_called,
            ["tools:call:content:text", "tools:list:basic"]
        ),
        conformance_test!(
            every_content_kind_survives_in_order,
            [
                "tools:call:content:image",
                "tools:call:content:audio",
                "tools:call:content:embedded-resource",
                "tools:call:content:resource-link",
                "tools:call:content:mixed"
            ]
        ),
        conformance_test!(concurrent_calls_run_in_parallel, ["tools:call:concurrent"]),
        conformance_test!(
            tool_failures_are_results_not_errors,
            ["tools:call:is-error", "mcpserver:tool:handler-throws"]
        ),
        conformance_test!(
            log_messages_reach_the_callback_before_the_reply,
            ["tools:call:logging-mid-execution"]
        ),
        conformance_test!(
            progress_reaches_the_caller_before_the_reply,
            ["tools:call:progress", "mcpserver:context:progress"]
        ),
        conformance_test!(
            typed_results_are_structured_and_mirrored,
            [
                "tools:call:structured-content",
                "tools:call:structured-content:text-mirror",
                "mcpserver:tool:output-schema:model"
            ]
        ),
        conformance_test!(
            primitive_results_are_wrapped_under_result,
            ["mcpserver:tool:output-schema:wrapped"]
        ),
        conformance_test!(
            an_unknown_tool_is_a_json_rpc_error,
            ["tools:call:unknown-name", "mcpserver:tool:unknown-name"]
        ),
        conformance_test!(
            hand_written_schemas_are_listed_verbatim_and_enforced,
            [
                "tools:input-schema:json-schema-2020-12",
                "tools:input-schema:preserve-additional-properties",
                "tools:input-schema:preserve-defs",
                "tools:input-schema:preserve-schema-dialect"
            ]
        ),
        conformance_test!(tool_metadata_reaches_the_client, ["tools:list:metadata"]),
        conformance_test!(
            tools_list_cursors_travel_verbatim,
            ["tools:list:pagination"]
        ),
        conformance_test!(adding_a_tool_announces_list_changed, ["tools:list-changed"]),
    ]
}

/// A JSON object literal.
pub(crate) fn obj(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

/// Decodes a wire type from JSON.
pub(crate) fn from_json<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("valid wire JSON")
}

/// Serves `server` and connects a default client.
pub(crate) async fn connect_to(connector: &Connector, server: &Server) -> Pair {
    connect(connector, server, client()).await
}

/// Calls the tool `name` without arguments; the request succeeds (its result may
/// still report an error).
pub(crate) async fn call_without_arguments(pair: &Pair, name: &str) -> CallToolResult {
    pair.client
        .call_tool(name, JsonObject::new())
        .await
        .unwrap()
}

/// Awaits `call`, which must fail, and returns the JSON-RPC error code it failed with.
pub(crate) async fn refusal_code<T: std::fmt::Debug>(
    call: impl std::future::Future<Output = Result<T, modelctx::session::SessionError>>,
) -> ErrorCode {
    error_code(&call.await.unwrap_err())
}

/// The JSON-RPC error code of a failed call.
pub(crate) fn error_code(error: &modelctx::session::SessionError) -> ErrorCode {
    error
        .protocol_error()
        .unwrap_or_else(|| panic!("expected a JSON-RPC error, got {error:?}"))
        .code
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
struct Greet {
    /// Who to greet.
    name: String,
}

async fn a_typed_tool_is_listed_and_called(connector: Connector) {
    let greet = ToolDef::new("greet", |args: Greet, _cx: Context| async move {
        Ok::<_, String>(format!("Hello, {}!", args.name))
    })
    .description("Greets someone");
    let server = server_with_tool("tools", greet);
    let pair = connect_to(&connector, &server).await;
    assert!(pair.client.server_capabilities().tools.is_some());

    let tools = pair.client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].name, "greet");
    assert_eq!(tools[0].description.as_deref(), Some("Greets someone"));
    assert_eq!(tools[0].input_schema["type"], "object");
    assert_eq!(
        tools[0].input_schema["properties"]["name"]["type"],
        "string"
    );
    assert_eq!(tools[0].input_schema["required"], json!(["name"]));

    let result = pair
        .client
        .call_tool("greet", obj(json!({"name": "Ada"})))
        .await
        .unwrap();
    assert!(!result.is_error());
    assert_eq!(result.content, vec![ContentBlock::text("Hello, Ada!")]);
}

async fn every_content_kind_survives_in_order(connector: Connector) {
    let blocks: Vec<ContentBlock> = from_json(json!([
        {"type": "text", "text": "first"},
        {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
        {"type": "audio", "data": "UklGRiQAAABXQVZF", "mimeType": "audio/wav"},
        {"type": "resource_link", "uri": "file:///notes.txt", "name": "notes", "mimeType": "text/plain"},
        {"type": "resource", "resource": {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "alpha"}},
        {"type": "resource", "resource": {"uri": "file:///b.bin", "mimeType": "application/octet-stream", "blob": "AAEC"}},
        {"type": "text", "text": "last"}
    ]));
    let expected = blocks.clone();
    let tool = ToolDef::new("media", move |_: NoArgs, _cx: Context| {
        let blocks = blocks.clone();
        async move { Ok::<_, String>(blocks) }
    });
    let server = server_with_tool("tools", tool);
    let pair = connect_to(&connector, &server).await;
    let result = call_without_arguments(&pair, "media").await;
    assert_eq!(result.content, expected);
    let kinds: Vec<&str> = result.content.iter().map(ContentBlock::kind).collect();
    assert_eq!(
        kinds,
        [
            "text",
            "image",
            "audio",
            "resource_link",
            "resource",
            "resource",
            "text"
        ]
    );
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
struct Tag {
    tag: String,
}

async fn concurrent_calls_run_in_parallel(connector: Connector) {
    // Each call waits until both are inside the tool: serial execution would hang.
    let barrier = Arc::new(Barrier::new(2));
    let tool = ToolDef::new("rendezvous", move |args: Tag, _cx: Context| {
        let barrier = barrier.clone();
        async move {
            barrier.wait().await;
            Ok::<_, String>(args.tag)
        }
    });
    let server = server_with_tool("tools", tool);
    let pair = connect_to(&connector, &server).await;
    let a = pair
        .client
        .call_tool("rendezvous", obj(json!({"tag": "a"})));
    let b = pair
        .client
        .call_tool("rendezvous", obj(json!({"tag": "b"})));
    let (a, b) = within("both calls", futures::future::join(a, b)).await;
    assert_eq!(a.unwrap().content, vec![ContentBlock::text("a")]);
    assert_eq!(b.unwrap().content, vec![ContentBlock::text("b")]);
    let ids: Vec<_> = pair
        .wire
        .sent_of("tools/call")
        .iter()
        .filter_map(|m| match m {
            JsonRpcMessage::Request(r) => Some(r.id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(ids.len(), 2);
    assert_ne!(ids[0], ids[1]);
}

#[derive(Debug)]
struct DiskFull;

impl std::fmt::Display for DiskFull {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the disk is full")
    }
}

impl std::error::Error for DiskFull {}

async fn tool_failures_are_results_not_errors(connector: Connector) {
    let server = Server::builder("tools", "1.0.0")
        .tool(ToolDef::new("fails", |_: NoArgs, _cx: Context| async move {
            Err::<String, _>("the weather service is down")
        }))
        .unwrap()
        .tool(ToolDef::new("fails-typed", |_: NoArgs, _cx: Context| async move {
            Err::<String, _>(DiskFull)
        }))
        .unwrap()
        .tool(ToolDef::new("panics", |_: NoArgs, _cx: Context| async move {
            if true {
                panic!("boom");
            }
            Ok::<String, String>(String::new())
        }))
        .unwrap()
        .tool(text_tool("fine", "still here"))
        .unwrap()
        .build();
    let pair = connect_to(&connector, &server).await;
    for (tool, message) in [
        ("fails", "the weather service is down"),
        ("fails-typed", "the disk is full"),
        ("panics", "panicked"),
    ] {
        let result = pair
            .client
            .call_tool(tool, JsonObject::new())
            .await
            .unwrap();
        assert!(result.is_error(), "{tool}: {result:?}");
        let text = result.content[0].as_text().unwrap_or_default();
        assert!(text.contains(message), "{tool}: {text}");
    }
    // On the wire every answer was a result, never a JSON-RPC error.
    let received = pair.wire.received();
    assert!(
        !received
            .iter()
            .any(|m| matches!(m, JsonRpcMessage::Error(_)))
    );
    // The session lives on.
    let fine = call_without_arguments(&pair, "fine").await;
    assert_eq!(fine.content, vec![ContentBlock::text("still here")]);
}

async fn progress_reaches_the_caller_before_the_reply(connector: Connector) {
    let tool = ToolDef::new("work", |_: NoArgs, cx: Context| async move {
        for step in 1..=3 {
            cx.report_progress(
                Progress::new(f64::from(step))
                    .with_total(3.0)
                    .with_message(format!("step {step}")),
            )
            .await
            .map_err(|e| e.to_string())?;
        }
        Ok::<_, String>("done")
    });
    let server = server_with_tool("tools", tool);
    let pair = connect_to(&connector, &server).await;

    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let options = RequestOptions::new().on_progress(move |p| sink.lock().unwrap().push(p.progress));
    let result = pair
        .client
        .call_tool_with(CallToolRequestParams::new("work"), options)
        .await
        .unwrap();
    assert_eq!(result.content, vec![ContentBlock::text("done")]);
    assert_eq!(*seen.lock().unwrap(), [1.0, 2.0, 3.0]);
    let progress = pair.wire.received_params("notifications/progress");
    let tokens: Vec<Value> = progress
        .iter()
        .map(|p| p["progressToken"].clone())
        .collect();
    // Each carries the token the client put in the request's `_meta`.
    let call = pair.wire.first_sent("tools/call").unwrap();
    let token = serde_json::to_value(&call).unwrap()["params"]["_meta"]["progressToken"].clone();
    assert!(!token.is_null());
    assert_eq!(tokens, vec![token.clone(), token.clone(), token]);

    // Without a token the same tool reports nothing and still succeeds.
    let before = pair.wire.received().len();
    let result = call_without_arguments(&pair, "work").await;
    assert!(!result.is_error());
    let after = pair.wire.received();
    assert!(
        !after[before..]
            .iter()
            .any(|m| m.method() == Some("notifications/progress"))
    );
}

async fn log_messages_reach_the_callback_before_the_reply(connector: Connector) {
    let tool = ToolDef::new("busy", |_: NoArgs, cx: Context| async move {
        for step in 0..5 {
            cx.info(json!({"step": step}))
                .await
                .map_err(|e| e.to_string())?;
        }
        Ok::<_, String>("done")
    });
    let server = server_with_tool("tools", tool);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    // A slow callback: the reply must still wait for it.
    let builder =
        client().notification_handler::<LoggingMessageNotification, _, _>(move |params, _peer| {
            let sink = sink.clone();
            async move {
                for _ in 0..20 {
                    tokio::task::yield_now().await;
                }
                sink.lock().unwrap().push(params.data);
            }
        });
    let pair = connect(&connector, &server, builder).await;
    // Asked for: in 2026-07-28 a request that does not opt in gets no log messages.
    pair.client
        .set_logging_level(LoggingLevel::Debug)
        .await
        .unwrap();
    for round in 0..3 {
        let result = call_without_arguments(&pair, "busy").await;
        assert_eq!(result.content, vec![ContentBlock::text("done")]);
        // No waiting here: the messages were handled before the reply came back.
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 5 * (round + 1), "{seen:?}");
        assert_eq!(seen[5 * round + 4], json!({"step": 4}));
    }
}

#[derive(Serialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
struct Weather {
    city: String,
    celsius: f64,
    sunny: bool,
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
struct City {
    city: String,
}

async fn typed_results_are_structured_and_mirrored(connector: Connector) {
    let tool = ToolDef::new("weather", |args: City, _cx: Context| async move {
        Ok::<_, String>(Json(Weather {
            city: args.city,
            celsius: 21.5,
            sunny: true,
        }))
    });
    let server = server_with_tool("tools", tool);
    let pair = connect_to(&connector, &server).await;
    let tools = pair.client.list_all_tools().await.unwrap();
    let schema = tools[0].output_schema.clone().expect("an outputSchema");
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["properties"]["city"]["type"], "string");
    assert_eq!(schema["properties"]["celsius"]["type"], "number");
    assert_eq!(schema["properties"]["sunny"]["type"], "boolean");

    let result = pair
        .client
        .call_tool("weather", obj(json!({"city": "Lyon"})))
        .await
        .unwrap();
    let structured = result.structured_content.clone().unwrap();
    assert_eq!(
        structured,
        json!({"city": "Lyon", "celsius": 21.5, "sunny": true})
    );
    let mirror: Value = serde_json::from_str(result.content[0].as_text().unwrap()).unwrap();
    assert_eq!(mirror, structured);
}

async fn primitive_results_are_wrapped_under_result(connector: Connector) {
    let server = Server::builder("tools", "1.0.0")
        .tool(ToolDef::new(
            "count",
            |_: NoArgs, _cx: Context| async move { Ok::<_, String>(Json(42)) },
        ))
        .unwrap()
        .tool(ToolDef::new(
            "letters",
            |_: NoArgs, _cx: Context| async move { Ok::<_, String>(Json(vec!["a", "b"])) },
        ))
        .unwrap()
        .build();
    let pair = connect_to(&connector, &server).await;
    for tool in pair.client.list_all_tools().await.unwrap() {
        let schema = tool.output_schema.unwrap();
        assert_eq!(schema["type"], "object", "{}", tool.name);
        assert_eq!(schema["required"], json!(["result"]));
        let properties = schema["properties"].as_object().unwrap();
        assert_eq!(properties.keys().collect::<Vec<_>>(), ["result"]);
    }
    let count = call_without_arguments(&pair, "count").await;
    assert_eq!(count.structured_content.unwrap(), json!({"result": 42}));
    let letters = call_without_arguments(&pair, "letters").await;
    assert_eq!(
        letters.structured_content.unwrap(),
        json!({"result": ["a", "b"]})
    );
}

async fn an_unknown_tool_is_a_json_rpc_error(connector: Connector) {
    let server = Server::builder("tools", "1.0.0")
        .tool(ToolDef::new(
            "known",
            |_: NoArgs, _cx: Context| async move { Ok::<_, String>("ok") },
        ))
        .unwrap()
        .build();
    let pair = connect_to(&connector, &server).await;
    let error = pair
        .client
        .request::<CallToolRequest>(CallToolRequestParams::new("never-registered"))
        .await
        .unwrap_err();
    assert_eq!(error_code(&error), ErrorCode::INVALID_PARAMS);
    assert!(
        error
            .protocol_error()
            .unwrap()
            .message
            .contains("never-registered")
    );
    let last = pair.wire.received().pop().unwrap();
    assert!(matches!(last, JsonRpcMessage::Error(_)), "{last:?}");
}

async fn hand_written_schemas_are_listed_verbatim_and_enforced(connector: Connector) {
    let input = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "origin": {"$ref": "#/$defs/point"},
            "route": {"type": "object", "properties": {
                "stops": {"type": "array", "items": {"$ref": "#/$defs/point"}}
            }, "required": ["stops"]}
        },
        "required": ["origin"],
        "additionalProperties": false,
        "$defs": {"point": {"type": "object", "properties": {
            "x": {"type": "number"}, "y": {"type": "number"}
        }, "required": ["x", "y"], "additionalProperties": false}}
    });
    let tool = Tool::new("plan", obj(input.clone()));
    let def = ToolDef::with_schema(tool, |args: JsonObject, _cx: Context| async move {
        Ok::<_, String>(format!("origin at x={}", args["origin"]["x"]))
    });
    let server = Server::builder("tools", "1.0.0").tool(def).unwrap().build();
    let pair = connect_to(&connector, &server).await;
    let tools = pair.client.list_all_tools().await.unwrap();
    assert_eq!(Value::Object(tools[0].input_schema.clone()), input);

    let ok = pair
        .client
        .call_tool(
            "plan",
            obj(json!({"origin": {"x": 1, "y": 2}, "route": {"stops": [{"x": 3, "y": 4}]}})),
        )
        .await
        .unwrap();
    assert_eq!(ok.content, vec![ContentBlock::text("origin at x=1")]);
    let extra = pair
        .client
        .call_tool(
            "plan",
            obj(json!({"origin": {"x": 1, "y": 2}, "unexpected": true})),
        )
        .await
        .unwrap();
    assert!(extra.is_error(), "{extra:?}");
    let nested = pair
        .client
        .call_tool(
            "plan",
            obj(json!({"origin": {"x": 1, "y": 2}, "route": {"stops": [{"x": "far"}]}})),
        )
        .await
        .unwrap();
    assert!(nested.is_error(), "{nested:?}");
}

async fn tool_metadata_reaches_the_client(connector: Connector) {
    let described: Tool = from_json(json!({
        "name": "described",
        "title": "A Described Tool",
        "description": "Has everything",
        "inputSchema": {"type": "object"},
        "outputSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
        "annotations": {"title": "Described", "readOnlyHint": true, "destructiveHint": false,
                        "idempotentHint": true, "openWorldHint": false},
        "icons": [{"src": "https://example.com/icon.png", "mimeType": "image/png", "sizes": ["48x48"]}],
        "_meta": {"example.com/owner": "team-a"}
    }));
    let def = ToolDef::with_schema(
        described.clone(),
        |_: JsonObject, _cx: Context| async move {
            Ok::<_, String>(CallToolResult::structured(obj(json!({"ok": true}))))
        },
    );
    let server = Server::builder("tools", "1.0.0").tool(def).unwrap().build();
    let pair = connect_to(&connector, &server).await;
    let tools = pair.client.list_all_tools().await.unwrap();
    assert_eq!(tools, vec![described]);
}

async fn tools_list_cursors_travel_verbatim(connector: Connector) {
    // Cursors deliberately look like nothing a client could interpret.
    let cursors = ["c1/§ page=2 ", "{\"offset\": 7}", ""];
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let server = Server::builder("tools", "1.0.0")
        .request_handler::<ListToolsRequest, _, _>(move |params, _cx| {
            let log = log.clone();
            async move {
                let index = page_asked(&log, params, cursors.iter().map(|c| Some(*c)));
                let tool = Tool::new(format!("tool-{index}"), obj(json!({"type": "object"})));
                let mut page = ListToolsResult::new(vec![tool]);
                page.next_cursor = cursors
                    .get(index)
                    .filter(|_| index < 2)
                    .map(|c| (*c).into());
                Ok(page)
            }
        })
        .build();
    let pair = connect_to(&connector, &server).await;
    let tools = pair.client.list_all_tools().await.unwrap();
    let names: Vec<_> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["tool-0", "tool-1", "tool-2"]);
    assert_eq!(
        *seen.lock().unwrap(),
        [
            None,
            Some(cursors[0].to_owned()),
            Some(cursors[1].to_owned())
        ]
    );
}

async fn adding_a_tool_announces_list_changed(connector: Connector) {
    let server = Server::builder("tools", "1.0.0").enable_tools().build();
    let (pair, mut rx) = watching(&connector, &server, ListKind::Tools).await;
    let caps = pair.client.server_capabilities();
    assert_eq!(caps.tools.as_ref().unwrap().list_changed, Some(true));
    assert!(pair.client.list_all_tools().await.unwrap().is_empty());

    server.add_tool(text_tool("late", "here")).unwrap();
    assert_eq!(
        within("the list_changed callback", rx.recv()).await,
        Some(ListKind::Tools)
    );
    assert!(pair.wire.received_count("notifications/tools/list_changed") > 0);
    let tools = pair.client.list_all_tools().await.unwrap();
    assert_eq!(tools[0].name, "late");
}
