//! Structured output across the eras (SEP-2106): a tool registered with its natural
//! `outputSchema` (any root) and `structuredContent` (any value) serves 2026-07-28 as
//! given, with a text fallback for a non-object value, and the handshake era wrapped
//! under `result` (schema and values, references rewritten to keep resolving). And the
//! dialect a hand-written `inputSchema` is checked under when it names none.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use modelctx::server::{Context, Server, ToolDef};
use modelctx::types::{CallToolResult, ContentBlock, JsonObject, Tool};
use modelctx_conformance::{Connector, Test, conformance_test};
use serde_json::{Value, json};

use crate::support::{Pair, client, connect, server_with_tool};

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            a_non_object_schema_is_listed_wrapped_to_the_handshake_era,
            ["2025:jsonschema:non-object-output-wrapped"]
        ),
        conformance_test!(
            non_object_values_arrive_wrapped_with_their_text,
            ["2025:jsonschema:non-object-structured-content-wrapped"]
        ),
        conformance_test!(
            references_still_resolve_once_wrapped,
            ["2025:jsonschema:ref-rewrite-on-wrap"]
        ),
        conformance_test!(
            the_rewrite_keeps_to_schema_positions_and_own_bases,
            ["2025:jsonschema:ref-rewrite-scope"]
        ),
        conformance_test!(
            a_schemaless_non_object_value_is_wrapped_by_its_shape,
            ["2025:jsonschema:schemaless-non-object-sc-wrapped"]
        ),
        conformance_test!(
            a_non_object_schema_wraps_object_values_too,
            ["2025:jsonschema:wrap-follows-schema-not-value"]
        ),
        conformance_test!(
            an_array_gets_a_text_fallback_unless_the_author_gave_text,
            ["server:jsonschema:array-structured-content-textfallback"]
        ),
        conformance_test!(
            primitive_values_arrive_unwrapped_with_their_text,
            ["server:jsonschema:primitive-structured-content"]
        ),
        conformance_test!(
            a_union_schema_and_both_arms_arrive_natural,
            ["server:jsonschema:union-output-natural"]
        ),
        conformance_test!(
            arguments_are_checked_under_2020_12_when_no_dialect_is_named,
            ["mcpserver:tool:input-validation:dialect-default-2020-12"]
        ),
    ]
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

/// A tool described by hand, with `output` as its `outputSchema` (if any), answering
/// every call with `answer`.
fn raw_tool(name: &str, output: Option<Value>, answer: CallToolResult) -> ToolDef {
    let mut tool = Tool::new(name, object(json!({"type": "object"})));
    tool.output_schema = output.map(object);
    ToolDef::with_schema(tool, move |_args: JsonObject, _cx: Context| {
        let answer = answer.clone();
        async move { Ok::<_, String>(answer) }
    })
}

/// A result carrying only `value` as its structured content.
fn bare(value: Value) -> CallToolResult {
    CallToolResult::new(vec![]).with_structured_content(value)
}

/// The handshake-era listing of a natural schema `natural` (no `$schema`, no `$id`).
fn wrapped(natural: Value) -> Value {
    json!({"type": "object", "properties": {"result": natural}, "required": ["result"]})
}

/// The output schema `pair`'s client is shown for `tool`.
async fn listed_schema(pair: &Pair, tool: &str) -> Option<Value> {
    let tools = pair.client.list_all_tools().await.unwrap();
    let tool = tools
        .into_iter()
        .find(|t| t.name == tool)
        .expect("the tool is listed");
    tool.output_schema.map(Value::Object)
}

/// Calls `tool` the way an application does (listing first for its schema, whose
/// validation the answer passes) and returns the result.
async fn call(pair: &Pair, tool: &str) -> CallToolResult {
    pair.client
        .call_tool(tool, JsonObject::new())
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e:?}"))
}

/// The texts of a result's content.
fn texts(result: &CallToolResult) -> Vec<&str> {
    result
        .content
        .iter()
        .filter_map(ContentBlock::as_text)
        .collect()
}

async fn a_non_object_schema_is_listed_wrapped_to_the_handshake_era(connector: Connector) {
    let natural = json!({"type": "array", "items": {"type": "integer"}});
    let with_dialect = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "string"
    });
    let server = Server::builder("lister", "1.0.0")
        .tool(raw_tool("numbers", Some(natural.clone()), bare(json!([1]))))
        .unwrap()
        .tool(raw_tool("word", Some(with_dialect), bare(json!("w"))))
        .unwrap()
        .tool(raw_tool(
            "record",
            Some(json!({"type": "object"})),
            bare(json!({})),
        ))
        .unwrap()
        .build();
    let pair = connect(&connector, &server, client()).await;

    assert_eq!(
        listed_schema(&pair, "numbers").await,
        Some(wrapped(natural))
    );
    // The dialect goes to the root of the wrapper.
    assert_eq!(
        listed_schema(&pair, "word").await,
        Some(json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {"result": {"type": "string"}},
            "required": ["result"]
        }))
    );
    // An object schema is listed as it is.
    assert_eq!(
        listed_schema(&pair, "record").await,
        Some(json!({"type": "object"}))
    );
}

/// Connects to a server named `name` with a tool for each case: the tool of the case's
/// name declares its output schema and returns its value bare.
async fn connect_returning(
    connector: &Connector,
    name: &str,
    cases: &[(&str, Value, Value)],
) -> Pair {
    let mut builder = Server::builder(name, "1.0.0");
    for (name, schema, value) in cases {
        builder = builder
            .tool(raw_tool(name, Some(schema.clone()), bare(value.clone())))
            .unwrap();
    }
    connect(connector, &builder.build(), client()).await
}

async fn non_object_values_arrive_wrapped_with_their_text(connector: Connector) {
    let cases = [
        ("numbers", json!({"type": "array"}), json!([1, 2, 3])),
        ("word", json!({"type": "string"}), json!("hello")),
        ("count", json!({"type": "integer"}), json!(7)),
        ("flag", json!({"type": "boolean"}), json!(false)),
        ("nothing", json!({"type": "null"}), Value::Null),
    ];
    let pair = connect_returning(&connector, "values", &cases).await;

    for (name, _, value) in cases {
        let result = call(&pair, name).await;
        let delivered = json!({"result": value});
        assert_eq!(result.structured_content, Some(delivered.clone()), "{name}");
        // The text fallback carries what was delivered.
        assert_eq!(texts(&result), [delivered.to_string()], "{name}");
    }
}

/// A natural schema that reaches its item type through `$defs`.
fn items_by_reference() -> Value {
    json!({
        "type": "array",
        "items": {"$ref": "#/$defs/Item"},
        "$defs": {
            "Item": {
                "type": "object",
                "properties": {"id": {"$ref": "#/$defs/Id"}},
                "required": ["id"]
            },
            "Id": {"type": "string", "minLength": 1}
        }
    })
}

async fn references_still_resolve_once_wrapped(connector: Connector) {
    let value = json!([{"id": "a"}, {"id": "b"}]);
    let server = Server::builder("refs", "1.0.0")
        .tool(raw_tool(
            "items",
            Some(items_by_reference()),
            bare(value.clone()),
        ))
        .unwrap()
        .build();
    let pair = connect(&connector, &server, client()).await;

    let listed = listed_schema(&pair, "items").await.unwrap();
    let inner = &listed["properties"]["result"];
    assert_eq!(inner["items"]["$ref"], "#/properties/result/$defs/Item");
    assert_eq!(
        inner["$defs"]["Item"]["properties"]["id"]["$ref"],
        "#/properties/result/$defs/Id"
    );
    // The client compiles the listed schema and validates the wrapped value with it:
    // a reference left dangling would fail the call.
    let result = call(&pair, "items").await;
    assert_eq!(result.structured_content, Some(json!({"result": value})));
}

async fn the_rewrite_keeps_to_schema_positions_and_own_bases(connector: Connector) {
    let natural = json!({
        "type": "array",
        "items": {"anyOf": [{"$ref": "#/$defs/Name"}, {"$ref": "#/$defs/Leafy"}]},
        "examples": [[{"$ref": "#/$defs/Name"}]],
        "$defs": {
            "Name": {
                "type": "string",
                "default": {"$ref": "#/not/a/reference"},
                "enum": ["ada", "grace", {"$ref": "#/data"}]
            },
            "Leafy": {
                "$id": "https://example.test/schemas/leafy",
                "$ref": "#/$defs/Leaf",
                "$defs": {"Leaf": {"type": "integer"}}
            }
        }
    });
    let value = json!(["ada", 3]);
    let server = server_with_tool(
        "scoped",
        raw_tool("names", Some(natural), bare(value.clone())),
    );
    let pair = connect(&connector, &server, client()).await;

    let listed = listed_schema(&pair, "names").await.unwrap();
    let inner = &listed["properties"]["result"];
    // References in schema positions follow the move...
    assert_eq!(
        inner["items"]["anyOf"][0]["$ref"],
        "#/properties/result/$defs/Name"
    );
    assert_eq!(
        inner["items"]["anyOf"][1]["$ref"],
        "#/properties/result/$defs/Leafy"
    );
    // ...literal data that looks like one does not...
    assert_eq!(inner["examples"], json!([[{"$ref": "#/$defs/Name"}]]));
    let name = &inner["$defs"]["Name"];
    assert_eq!(name["default"], json!({"$ref": "#/not/a/reference"}));
    assert_eq!(name["enum"][2], json!({"$ref": "#/data"}));
    // ...and a subtree with its own `$id` resolves against that base, untouched.
    assert_eq!(inner["$defs"]["Leafy"]["$ref"], "#/$defs/Leaf");
    // Both arms validate on the client.
    let result = call(&pair, "names").await;
    assert_eq!(result.structured_content, Some(json!({"result": value})));
}

async fn a_schemaless_non_object_value_is_wrapped_by_its_shape(connector: Connector) {
    let authored = CallToolResult::text("two numbers").with_structured_content(json!([1, 2]));
    let server = Server::builder("shapes", "1.0.0")
        .tool(raw_tool("pair", None, authored))
        .unwrap()
        .tool(raw_tool("bare-pair", None, bare(json!([1, 2]))))
        .unwrap()
        .tool(raw_tool("record", None, bare(json!({"a": 1}))))
        .unwrap()
        .build();
    let pair = connect(&connector, &server, client()).await;

    assert_eq!(
        listed_schema(&pair, "pair").await,
        None,
        "no schema is made up"
    );
    let result = call(&pair, "pair").await;
    assert_eq!(result.structured_content, Some(json!({"result": [1, 2]})));
    assert_eq!(
        texts(&result),
        ["two numbers"],
        "the author's text stays alone"
    );
    let result = call(&pair, "bare-pair").await;
    assert_eq!(result.structured_content, Some(json!({"result": [1, 2]})));
    assert_eq!(texts(&result), [r#"{"result":[1,2]}"#]);
    // An object is already the era's shape.
    let result = call(&pair, "record").await;
    assert_eq!(result.structured_content, Some(json!({"a": 1})));
    assert!(result.content.is_empty(), "{result:?}");
}

/// A schema that takes an object or a list of numbers.
fn object_or_numbers() -> Value {
    json!({"anyOf": [
        {"type": "object", "properties": {"total": {"type": "integer"}}, "required": ["total"]},
        {"type": "array", "items": {"type": "integer"}}
    ]})
}

/// A server with a tool of [`object_or_numbers`] per arm.
fn union_server() -> Server {
    Server::builder("unions", "1.0.0")
        .tool(raw_tool(
            "total",
            Some(object_or_numbers()),
            bare(json!({"total": 6})),
        ))
        .unwrap()
        .tool(raw_tool(
            "parts",
            Some(object_or_numbers()),
            bare(json!([1, 2, 3])),
        ))
        .unwrap()
        .build()
}

async fn a_non_object_schema_wraps_object_values_too(connector: Connector) {
    let pair = connect(&connector, &union_server(), client()).await;
    assert_eq!(
        listed_schema(&pair, "total").await,
        Some(wrapped(object_or_numbers()))
    );
    // The object arm is wrapped like the array arm: the listed schema says so.
    let result = call(&pair, "total").await;
    assert_eq!(
        result.structured_content,
        Some(json!({"result": {"total": 6}}))
    );
    assert_eq!(texts(&result), [r#"{"result":{"total":6}}"#]);
    let result = call(&pair, "parts").await;
    assert_eq!(
        result.structured_content,
        Some(json!({"result": [1, 2, 3]}))
    );
}

async fn an_array_gets_a_text_fallback_unless_the_author_gave_text(connector: Connector) {
    let schema = json!({"type": "array", "items": {"type": "string"}});
    let authored =
        CallToolResult::text("two fruits").with_structured_content(json!(["fig", "kiwi"]));
    let server = Server::builder("arrays", "1.0.0")
        .tool(raw_tool(
            "fruits",
            Some(schema.clone()),
            bare(json!(["fig", "kiwi"])),
        ))
        .unwrap()
        .tool(raw_tool("described", Some(schema.clone()), authored))
        .unwrap()
        .build();
    let pair = connect(&connector, &server, client()).await;

    assert_eq!(listed_schema(&pair, "fruits").await, Some(schema));
    let result = call(&pair, "fruits").await;
    assert_eq!(result.structured_content, Some(json!(["fig", "kiwi"])));
    assert_eq!(texts(&result), [r#"["fig","kiwi"]"#]);
    let result = call(&pair, "described").await;
    assert_eq!(result.structured_content, Some(json!(["fig", "kiwi"])));
    assert_eq!(
        texts(&result),
        ["two fruits"],
        "no fallback beside the author's"
    );
}

async fn primitive_values_arrive_unwrapped_with_their_text(connector: Connector) {
    let cases = [
        ("word", json!({"type": "string"}), json!("hello")),
        ("count", json!({"type": "number"}), json!(2.5)),
        ("flag", json!({"type": "boolean"}), json!(true)),
        ("nothing", json!({"type": "null"}), Value::Null),
    ];
    let pair = connect_returning(&connector, "primitives", &cases).await;

    for (name, _, value) in cases {
        let result = call(&pair, name).await;
        assert_eq!(result.structured_content, Some(value.clone()), "{name}");
        assert_eq!(texts(&result), [value.to_string()], "{name}");
    }
}

async fn a_union_schema_and_both_arms_arrive_natural(connector: Connector) {
    let pair = connect(&connector, &union_server(), client()).await;
    assert_eq!(
        listed_schema(&pair, "parts").await,
        Some(object_or_numbers()),
        "the typeless anyOf root as registered"
    );
    let result = call(&pair, "total").await;
    assert_eq!(result.structured_content, Some(json!({"total": 6})));
    let result = call(&pair, "parts").await;
    assert_eq!(result.structured_content, Some(json!([1, 2, 3])));
    assert_eq!(
        texts(&result),
        ["[1,2,3]"],
        "the fallback for the array arm"
    );
}

async fn arguments_are_checked_under_2020_12_when_no_dialect_is_named(connector: Connector) {
    // `prefixItems` with `items: false` means "a string then an integer, nothing more"
    // in 2020-12; an older draft would ignore `prefixItems` and refuse every item.
    let input = json!({
        "type": "object",
        "properties": {"pair": {
            "type": "array",
            "prefixItems": [{"type": "string"}, {"type": "integer"}],
            "items": false
        }},
        "required": ["pair"]
    });
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let tool = Tool::new("pair", object(input.clone()));
    let def = ToolDef::with_schema(tool, move |args: JsonObject, _cx: Context| {
        counted.fetch_add(1, Ordering::SeqCst);
        async move { Ok::<_, String>(format!("got {}", args["pair"])) }
    });
    let server = server_with_tool("dialects", def);
    let pair = connect(&connector, &server, client()).await;
    let listed = pair.client.list_all_tools().await.unwrap();
    assert_eq!(Value::Object(listed[0].input_schema.clone()), input);

    let fits = pair
        .client
        .call_tool("pair", json!({"pair": ["a", 1]}))
        .await
        .unwrap();
    assert_eq!(texts(&fits), [r#"got ["a",1]"#]);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    for misfit in [json!(["a", "b"]), json!([1, "a"]), json!(["a", 1, 2])] {
        let refused = pair
            .client
            .call_tool("pair", json!({"pair": misfit}))
            .await
            .unwrap();
        assert!(refused.is_error(), "{misfit}: {refused:?}");
        assert!(
            texts(&refused)[0].contains("Invalid arguments"),
            "{misfit}: {refused:?}"
        );
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1, "no misfit reached the tool");
}
