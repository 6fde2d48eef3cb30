//! Tool checks: structured content checked against the output schema by the client and by the server, bad registrations refused, arguments checked before the function runs, and the request a tool function sees.

use crate::support::{server_with_tool, tool_names};
use crate::tools::{connect_to, error_code, obj};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use modelctx::server::schemars::JsonSchema;
use modelctx::server::{Context, Json, NoArgs, Server, ToolDef};
use modelctx::session::RequestOptions;
use modelctx::types::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ContentBlock, ErrorCode, JsonObject,
    JsonRpcMessage, ListToolsRequest, ListToolsResult, Meta, Tool,
};
use modelctx_conformance::{Connector, Direction, Test, conformance_test};
use serde::Deserialize;
use serde_json::{Value, json};

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            the_client_checks_structured_content,
            [
                "client:output-schema:validate",
                "client:output-schema:skip-on-error",
                "client:output-schema:missing-structured",
                "client:output-schema:auto-list"
            ]
        ),
        conformance_test!(
            the_server_checks_structured_content,
            [
                "mcpserver:output-schema:missing-structured",
                "mcpserver:output-schema:server-validate",
                "mcpserver:output-schema:skip-on-error"
            ]
        ),
        conformance_test!(
            bad_tool_registrations_are_refused,
            [
                "mcpserver:tool:duplicate-name",
                "mcpserver:tool:naming-validation"
            ]
        ),
        conformance_test!(
            arguments_are_checked_before_the_function_runs,
            [
                "mcpserver:tool:input-validation",
                "mcpserver:tool:schema-variants"
            ]
        ),
        conformance_test!(
            the_tool_context_exposes_the_request,
            ["mcpserver:tool:extra"]
        ),
    ]
}

/// A low-level server whose one tool advertises an output schema and answers with
/// whatever structured content `tools/call` names in its `give` argument.
fn loose_server() -> Server {
    Server::builder("loose", "1.0.0")
        .request_handler::<ListToolsRequest, _, _>(|_, _cx| async move {
            let mut tool = Tool::new("measure", obj(json!({"type": "object"})));
            tool.output_schema = Some(obj(json!({
                "type": "object",
                "properties": {"meters": {"type": "number"}},
                "required": ["meters"]
            })));
            Ok(ListToolsResult::new(vec![tool]))
        })
        .request_handler::<CallToolRequest, _, _>(|params, _cx| async move {
            let args = params.arguments.unwrap_or_default();
            if args.get("bare") == Some(&Value::Bool(true)) {
                return Ok(CallToolResult::text("no structure"));
            }
            let structured = obj(args["give"].clone());
            let result = CallToolResult::structured(structured);
            Ok(match args.get("error") {
                Some(Value::Bool(true)) => result.with_is_error(true),
                _ => result,
            })
        })
        .build()
}

async fn the_client_checks_structured_content(connector: Connector) {
    let pair = connect_to(&connector, &loose_server()).await;
    let good = pair
        .client
        .call_tool("measure", obj(json!({"give": {"meters": 3.5}})))
        .await
        .unwrap();
    assert_eq!(good.structured_content.unwrap(), json!({"meters": 3.5}));
    // The first call listed the tools to learn the output schema; no call since has.
    let lists = || pair.wire.sent_count("tools/list");
    assert_eq!(lists(), 1);

    // A declared output schema and no structuredContent: refused.
    let missing = pair
        .client
        .call_tool("measure", obj(json!({"bare": true})))
        .await
        .unwrap_err();
    assert!(missing.is_refused(), "{missing:?}");
    assert!(
        missing.to_string().contains("structuredContent"),
        "{missing}"
    );

    let bad = pair
        .client
        .call_tool("measure", obj(json!({"give": {"meters": "far"}})))
        .await
        .unwrap_err();
    assert!(bad.is_refused(), "{bad:?}");
    assert!(bad.to_string().contains("outputSchema"), "{bad}");

    let flagged = pair
        .client
        .call_tool(
            "measure",
            obj(json!({"give": {"meters": "far"}, "error": true})),
        )
        .await
        .unwrap();
    assert!(flagged.is_error());
    assert_eq!(
        flagged.structured_content.unwrap(),
        json!({"meters": "far"})
    );
    assert_eq!(lists(), 1, "the schema was listed once");
}

async fn the_server_checks_structured_content(connector: Connector) {
    let mut tool = Tool::new("measure", obj(json!({"type": "object"})));
    tool.output_schema = Some(obj(json!({
        "type": "object",
        "properties": {"meters": {"type": "number"}},
        "required": ["meters"]
    })));
    let def = ToolDef::with_schema(tool, |args: JsonObject, _cx: Context| async move {
        let result = match args.get("mode").and_then(Value::as_str) {
            Some("text-only") => CallToolResult::text("no structure"),
            Some("wrong") => CallToolResult::structured(obj(json!({"meters": "far"}))),
            Some("flagged") => {
                CallToolResult::structured(obj(json!({"meters": "far"}))).with_is_error(true)
            }
            _ => CallToolResult::structured(obj(json!({"meters": 2}))),
        };
        Ok::<_, String>(result)
    });
    let server = Server::builder("tools", "1.0.0").tool(def).unwrap().build();
    let pair = connect_to(&connector, &server).await;
    let call = |mode: &str| {
        let params =
            CallToolRequestParams::new("measure").with_arguments(obj(json!({"mode": mode})));
        pair.client.request::<CallToolRequest>(params)
    };
    let missing = call("text-only").await.unwrap_err();
    assert_eq!(error_code(&missing), ErrorCode::INTERNAL_ERROR);
    assert!(
        missing.to_string().contains("structuredContent"),
        "{missing}"
    );
    let wrong = call("wrong").await.unwrap_err();
    assert_eq!(error_code(&wrong), ErrorCode::INTERNAL_ERROR);
    assert!(wrong.to_string().contains("outputSchema"), "{wrong}");
    let flagged = call("flagged").await.unwrap();
    assert!(flagged.is_error());
    let fine = call("fine").await.unwrap();
    assert_eq!(fine.structured_content.unwrap(), json!({"meters": 2}));
}

async fn bad_tool_registrations_are_refused(connector: Connector) {
    let tool = |name: &str| {
        ToolDef::new(name, |_: NoArgs, _cx: Context| async move {
            Ok::<_, String>("ok")
        })
    };
    let builder = Server::builder("tools", "1.0.0")
        .tool(tool("unique"))
        .unwrap();
    let duplicate = builder.tool(tool("unique")).unwrap_err();
    assert!(duplicate.is_duplicate(), "{duplicate}");
    assert!(duplicate.to_string().contains("unique"));

    let server = server_with_tool("tools", tool("unique"));
    let long = "x".repeat(129);
    for bad in [
        "",
        "has space",
        "slash/name",
        "émoji",
        "comma,name",
        long.as_str(),
    ] {
        let error = server.add_tool(tool(bad)).unwrap_err();
        assert!(error.is_invalid(), "{bad:?}: {error}");
    }
    assert!(server.add_tool(tool("unique")).unwrap_err().is_duplicate());
    server.add_tool(tool(&"y".repeat(128))).unwrap();
    server.add_tool(tool("ok_name-1.2")).unwrap();

    let pair = connect_to(&connector, &server).await;
    let mut names = tool_names(&pair.client).await;
    names.sort();
    assert_eq!(
        names,
        [
            "ok_name-1.2".to_owned(),
            "unique".to_owned(),
            "y".repeat(128)
        ]
    );
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
#[serde(tag = "kind", rename_all = "lowercase")]
enum Shape {
    Circle { radius: f64 },
    Square { side: f64 },
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
struct Style {
    #[schemars(length(min = 1, max = 16))]
    color: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "modelctx::server::schemars")]
struct Draw {
    shape: Shape,
    style: Style,
    #[schemars(range(min = 1, max = 10))]
    copies: u8,
}

async fn arguments_are_checked_before_the_function_runs(connector: Connector) {
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    let tool = ToolDef::new("draw", move |args: Draw, _cx: Context| {
        counter.fetch_add(1, Ordering::SeqCst);
        async move {
            let area = match args.shape {
                Shape::Circle { radius } => 3.0 * radius * radius,
                Shape::Square { side } => side * side,
            };
            Ok::<_, String>(format!("{} x {} {area}", args.copies, args.style.color))
        }
    });
    let server = server_with_tool("tools", tool);
    let pair = connect_to(&connector, &server).await;
    let schema = &pair.client.list_all_tools().await.unwrap()[0].input_schema;
    assert_eq!(schema["properties"]["copies"]["maximum"], 10);

    let valid = pair
        .client
        .call_tool(
            "draw",
            obj(json!({"shape": {"kind": "square", "side": 2.0}, "style": {"color": "red"}, "copies": 3})),
        )
        .await
        .unwrap();
    assert_eq!(valid.content, vec![ContentBlock::text("3 x red 4")]);
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    for (bad, problem) in [
        (
            json!({"shape": {"kind": "triangle"}, "style": {"color": "red"}, "copies": 1}),
            "shape",
        ),
        (
            json!({"shape": {"kind": "circle", "radius": 1.0}, "style": {"color": ""}, "copies": 1}),
            "color",
        ),
        (
            json!({"shape": {"kind": "circle", "radius": 1.0}, "style": {"color": "red"}, "copies": 11}),
            "copies",
        ),
        (
            json!({"shape": {"kind": "circle", "radius": 1.0}, "style": {"color": "red"}}),
            "copies",
        ),
        (
            json!({"shape": {"kind": "circle", "radius": "big"}, "style": {"color": "red"}, "copies": 1}),
            "shape",
        ),
    ] {
        let result = pair
            .client
            .call_tool("draw", obj(bad.clone()))
            .await
            .unwrap();
        assert!(result.is_error(), "{bad}: {result:?}");
        let text = result.content[0].as_text().unwrap();
        assert!(
            text.contains("Invalid arguments") && text.contains(problem),
            "{bad}: {text}"
        );
    }
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "no invalid call reached the function"
    );
}

struct AppState {
    greeting: &'static str,
}

async fn the_tool_context_exposes_the_request(connector: Connector) {
    let tool = ToolDef::new("introspect", |_: NoArgs, cx: Context| async move {
        let state = cx.state::<AppState>().ok_or("no state")?;
        let session = cx.session();
        Ok::<_, String>(Json(json!({
            "requestId": serde_json::to_value(cx.request_id()).unwrap(),
            "meta": cx.meta().and_then(|m| m.get("example.com/trace")).cloned(),
            "client": cx.client_info().map(|i| i.name.clone()),
            "sessionClient": session.client_info().map(|i| i.name.clone()),
            "protocol": cx.protocol_version().map(ToString::to_string),
            "state": state.greeting,
        })))
    });
    let server = Server::builder("tools", "1.0.0")
        .state(AppState {
            greeting: "from the lifespan",
        })
        .tool(tool)
        .unwrap()
        .build();
    let pair = connect_to(&connector, &server).await;
    let mut meta = Meta::new();
    meta.insert("example.com/trace", json!("t-77"));
    let result = pair
        .client
        .call_tool_with(
            CallToolRequestParams::new("introspect"),
            RequestOptions::new().meta(meta),
        )
        .await
        .unwrap();
    let seen = result.structured_content.unwrap()["result"].clone();
    let sent_id = pair
        .wire
        .messages()
        .iter()
        .filter(|r| r.direction == Direction::Sent)
        .find_map(|r| match &r.message.message {
            JsonRpcMessage::Request(q) if q.method == "tools/call" => Some(q.id.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(seen["requestId"], serde_json::to_value(&sent_id).unwrap());
    assert_eq!(seen["meta"], "t-77");
    assert_eq!(seen["client"], "conformance-client");
    assert_eq!(seen["sessionClient"], "conformance-client");
    assert_eq!(seen["protocol"], pair.client.protocol_version().to_string());
    assert_eq!(seen["state"], "from the lifespan");
}
