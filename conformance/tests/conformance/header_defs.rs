//! Tool definitions with `x-mcp-header` annotations (protocol 2026-07-28), as the client
//! takes them from `tools/list`: a definition that breaks the annotation rules (a name
//! that is empty, not an HTTP token or given twice; on a property that is not a string,
//! integer or boolean, or not reached through `properties` alone) is left out of the
//! listing with a warning, and the valid tools beside it are kept.

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};

use modelctx::server::Server;
use modelctx::types::{CallToolRequest, CallToolResult, Tool};
use modelctx_conformance::{Connector, Test, conformance_test, within};
use serde_json::{Value, json};

use crate::support::{client, connect, listing_as_given};
use crate::tools::obj;

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            invalid_header_definitions_are_left_out_and_valid_ones_kept,
            ["client:x-mcp-header:invalid-definition-rejected"]
        ),
        conformance_test!(
            a_header_name_with_control_characters_is_left_out,
            ["client:x-mcp-header:invalid-definition-rejected:control-chars"]
        ),
        conformance_test!(
            a_header_name_given_twice_in_any_case_is_left_out,
            ["client:x-mcp-header:invalid-definition-rejected:duplicate"]
        ),
        conformance_test!(
            an_empty_header_name_is_left_out,
            ["client:x-mcp-header:invalid-definition-rejected:empty"]
        ),
        conformance_test!(
            a_header_on_a_property_that_is_not_a_primitive_is_left_out,
            ["client:x-mcp-header:invalid-definition-rejected:non-primitive"]
        ),
        conformance_test!(
            a_header_name_that_is_not_a_token_is_left_out,
            ["client:x-mcp-header:invalid-definition-rejected:non-tchar"]
        ),
        conformance_test!(
            a_header_off_the_properties_chain_is_left_out,
            ["client:x-mcp-header:invalid-definition-rejected:not-statically-reachable"]
        ),
        conformance_test!(
            a_left_out_tool_is_named_in_a_warning_with_the_reason,
            ["client:x-mcp-header:invalid-tool-excluded:logs-warning"]
        ),
    ]
}

/// A low-level server listing one tool per `(name, inputSchema)` as given (a `Server`'s
/// own registry would refuse the bad ones), each answering a call with its name.
fn listing(tools: &[(&str, Value)]) -> Server {
    let tools: Vec<Tool> = tools
        .iter()
        .map(|(name, schema)| Tool::new(*name, obj(schema.clone())))
        .collect();
    listing_as_given("annotated", tools)
        .request_handler::<CallToolRequest, _, _>(|params, _cx| async move {
            Ok(CallToolResult::text(format!("ran {}", params.name)))
        })
        .build()
}

/// An object schema with these properties.
fn properties(properties: Value) -> Value {
    json!({"type": "object", "properties": properties})
}

/// A valid definition: a string property mirrored into `Mcp-Param-Region`.
fn regional() -> Value {
    properties(json!({"region": {"type": "string", "x-mcp-header": "Region"}}))
}

/// The names of the tools the client lists from a server listing `tools`.
async fn listed(connector: &Connector, tools: &[(&str, Value)]) -> Vec<String> {
    let pair = connect(connector, &listing(tools), client()).await;
    let tools = within("the listing", pair.client.list_all_tools())
        .await
        .expect("the listing succeeds despite bad definitions");
    tools.into_iter().map(|t| t.name).collect()
}

async fn invalid_header_definitions_are_left_out_and_valid_ones_kept(connector: Connector) {
    let bad = properties(json!({"region": {"type": "string", "x-mcp-header": "Bad Name"}}));
    let plain = properties(json!({"note": {"type": "string"}}));
    let server = listing(&[("before", regional()), ("bad", bad), ("plain", plain)]);
    let pair = connect(&connector, &server, client()).await;
    let tools = within("the listing", pair.client.list_all_tools())
        .await
        .expect("one bad definition does not fail the listing");
    let names: Vec<_> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["before", "plain"]);
    // A kept tool, its header included, is usable as usual.
    let result = within(
        "the call",
        pair.client
            .call_tool("before", json!({"region": "eu-west"})),
    )
    .await
    .expect("the valid tool is called");
    assert_eq!(modelctx_test::text_of(&result), "ran before");
}

async fn a_header_name_with_control_characters_is_left_out(connector: Connector) {
    let tools = [
        ("ok", regional()),
        (
            "crlf",
            properties(json!({"r": {"type": "string", "x-mcp-header": "Region\r\nX-Injected"}})),
        ),
        (
            "tab",
            properties(json!({"r": {"type": "string", "x-mcp-header": "Re\tgion"}})),
        ),
        (
            "nul",
            properties(json!({"r": {"type": "string", "x-mcp-header": "Region\u{0}"}})),
        ),
    ];
    assert_eq!(listed(&connector, &tools).await, ["ok"]);
}

async fn a_header_name_given_twice_in_any_case_is_left_out(connector: Connector) {
    let tools = [
        ("ok", regional()),
        (
            "twice",
            properties(json!({
                "region": {"type": "string", "x-mcp-header": "Region"},
                "zone": {"type": "string", "x-mcp-header": "REGION"}
            })),
        ),
        (
            "twice-nested",
            properties(json!({
                "region": {"type": "string", "x-mcp-header": "Region"},
                "place": {"type": "object", "properties": {
                    "region": {"type": "string", "x-mcp-header": "region"}
                }}
            })),
        ),
        (
            "distinct",
            properties(json!({
                "region": {"type": "string", "x-mcp-header": "Region"},
                "zone": {"type": "string", "x-mcp-header": "Zone"}
            })),
        ),
    ];
    assert_eq!(listed(&connector, &tools).await, ["ok", "distinct"]);
}

async fn an_empty_header_name_is_left_out(connector: Connector) {
    let tools = [
        ("ok", regional()),
        (
            "empty",
            properties(json!({"r": {"type": "string", "x-mcp-header": ""}})),
        ),
    ];
    assert_eq!(listed(&connector, &tools).await, ["ok"]);
}

async fn a_header_on_a_property_that_is_not_a_primitive_is_left_out(connector: Connector) {
    let on = |kind: &str| properties(json!({"v": {"type": kind, "x-mcp-header": "V"}}));
    let tools = [
        ("string", on("string")),
        ("integer", on("integer")),
        ("boolean", on("boolean")),
        ("number", on("number")),
        ("object", on("object")),
        ("array", on("array")),
        ("untyped", properties(json!({"v": {"x-mcp-header": "V"}}))),
    ];
    assert_eq!(
        listed(&connector, &tools).await,
        ["string", "integer", "boolean"]
    );
}

async fn a_header_name_that_is_not_a_token_is_left_out(connector: Connector) {
    let named = |name: &str| properties(json!({"r": {"type": "string", "x-mcp-header": name}}));
    let tools = [
        ("token", named("X-Region_2.b~!#$%&'*+^`|")),
        ("space", named("Bad Name")),
        ("colon", named("Region:")),
        ("slash", named("a/b")),
        ("non-ascii", named("Región")),
        ("quote", named("\"Region\"")),
    ];
    assert_eq!(listed(&connector, &tools).await, ["token"]);
}

async fn a_header_off_the_properties_chain_is_left_out(connector: Connector) {
    let tools = [
        (
            "nested",
            properties(json!({"where": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"}
            }}})),
        ),
        (
            "under-items",
            properties(json!({"regions": {"type": "array", "items": {
                "type": "string", "x-mcp-header": "Region"
            }}})),
        ),
        (
            "under-any-of",
            json!({"type": "object", "anyOf": [{"properties": {
                "region": {"type": "string", "x-mcp-header": "Region"}
            }}]}),
        ),
        (
            "under-defs",
            json!({"type": "object",
                   "properties": {"region": {"$ref": "#/$defs/region"}},
                   "$defs": {"region": {"type": "string", "x-mcp-header": "Region"}}}),
        ),
    ];
    assert_eq!(listed(&connector, &tools).await, ["nested"]);
}

/// A `tracing` event the client emitted, as its fields in text.
type Event = BTreeMap<String, String>;

/// The warnings of target `modelctx_client` this process has emitted, recorded by a
/// global subscriber installed on first use (and interested in nothing else).
fn client_warnings() -> &'static Mutex<Vec<Event>> {
    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Level, Metadata, Subscriber};

    static SEEN: OnceLock<&'static Mutex<Vec<Event>>> = OnceLock::new();

    struct Fields<'a>(&'a mut Event);
    impl Visit for Fields<'_> {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            self.0.insert(field.name().to_owned(), format!("{value:?}"));
        }
        fn record_str(&mut self, field: &Field, value: &str) {
            self.0.insert(field.name().to_owned(), value.to_owned());
        }
    }

    struct Warnings(&'static Mutex<Vec<Event>>);
    impl Subscriber for Warnings {
        fn enabled(&self, metadata: &Metadata<'_>) -> bool {
            metadata.is_event()
                && metadata.target() == "modelctx_client"
                && *metadata.level() == Level::WARN
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, event: &tracing::Event<'_>) {
            let mut fields = Event::new();
            event.record(&mut Fields(&mut fields));
            self.0
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(fields);
        }
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }

    SEEN.get_or_init(|| {
        let seen: &'static Mutex<Vec<Event>> = Box::leak(Box::default());
        tracing::subscriber::set_global_default(Warnings(seen))
            .expect("no other global subscriber in the conformance tests");
        seen
    })
}

async fn a_left_out_tool_is_named_in_a_warning_with_the_reason(connector: Connector) {
    let warnings = client_warnings();
    // A name no other trial lists, so the warning found is this trial's.
    static TRIAL: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let tool = format!(
        "ledger-{}",
        TRIAL.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    );
    let bad = properties(json!({"amount": {"type": "number", "x-mcp-header": "Amount"}}));
    let names = listed(&connector, &[(tool.as_str(), bad), ("ok", regional())]).await;
    assert_eq!(names, ["ok"]);
    let warning = warnings
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .find(|w| w.get("tool") == Some(&tool))
        .cloned()
        .expect("a warning names the left-out tool");
    let reason = warning.get("reason").expect("the warning gives the reason");
    assert!(
        reason.contains("Amount") && reason.contains("string, integer or boolean"),
        "{warning:?}"
    );
    assert!(
        warning
            .get("message")
            .is_some_and(|m| m.contains("x-mcp-header")),
        "{warning:?}"
    );
}
