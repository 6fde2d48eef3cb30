//! The client's check of `structuredContent` against a tool's `outputSchema`: the JSON
//! Schema dialect it reads a schema in (2020-12 unless the schema declares another it
//! knows), schemas it cannot use (an unknown dialect, a `$ref` it would have to fetch),
//! and, from 2026-07-28, structured content that is not an object (an array, a falsy
//! scalar, `null`). The server is a low-level one that lists the schemas a test gives and
//! answers each call with the structured content its `give` argument names.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use modelctx::server::Server;
use modelctx::types::{CallToolRequest, CallToolResult, Tool};
use modelctx_conformance::{Connector, Test, conformance_test, within};
use serde_json::{Value, json};

use crate::support::{Pair, client, connect, listing_as_given};
use crate::tools::obj;

pub(crate) fn tests() -> Vec<Test> {
    vec![
        conformance_test!(
            a_tuple_is_checked_position_by_position,
            ["client:jsonschema:2020-12:prefixItems"]
        ),
        conformance_test!(
            a_schema_is_read_as_2020_12_unless_it_declares_its_dialect,
            ["client:jsonschema:dialect:default-is-2020-12"]
        ),
        conformance_test!(
            a_schema_in_an_unknown_dialect_fails_the_call_saying_so,
            ["client:jsonschema:unsupported-dialect-graceful"]
        ),
        conformance_test!(
            a_remote_reference_is_never_fetched_and_fails_the_call,
            ["client:jsonschema:ref-resolution:no-network-fetch"]
        ),
        conformance_test!(
            falsy_structured_content_is_checked_and_returned,
            ["client:jsonschema:falsy-structured-content-validated"]
        ),
        conformance_test!(
            an_array_result_is_checked_against_an_array_schema,
            ["client:jsonschema:non-object-output"]
        ),
        conformance_test!(
            a_null_result_fits_a_null_schema,
            ["client:jsonschema:null-structured-content"]
        ),
    ]
}

/// A low-level server listing one tool per `(name, outputSchema)`, each answering with
/// its `give` argument as the structured content (no structured content without one).
fn shaped(tools: &[(&str, Value)]) -> Server {
    let tools: Vec<Tool> = tools
        .iter()
        .map(|(name, schema)| {
            let mut tool = Tool::new(*name, obj(json!({"type": "object"})));
            tool.output_schema = Some(obj(schema.clone()));
            tool
        })
        .collect();
    listing_as_given("shaped", tools)
        .request_handler::<CallToolRequest, _, _>(|params, _cx| async move {
            let args = params.arguments.unwrap_or_default();
            Ok(match args.get("give") {
                Some(given) => CallToolResult::new(vec![]).with_structured_content(given.clone()),
                None => CallToolResult::text("no structure"),
            })
        })
        .build()
}

/// Calls `tool` through the checking API, asking for `value` as the structured content:
/// the structured content the caller gets, or the refusal's text.
async fn give(pair: &Pair, tool: &str, value: Value) -> Result<Value, String> {
    let call = pair.client.call_tool(tool, json!({"give": value}));
    match within("the call", call).await {
        Ok(result) => Ok(result
            .structured_content
            .expect("a result that passed the check has structured content")),
        Err(e) => {
            assert!(e.is_refused(), "the client refuses, not the server: {e:?}");
            Err(e.to_string())
        }
    }
}

/// A result the client refused for not fitting the schema.
fn misfit(outcome: Result<Value, String>) -> String {
    let refusal = outcome.expect_err("the client refuses the result");
    assert!(refusal.contains("outputSchema"), "{refusal}");
    refusal
}

async fn a_tuple_is_checked_position_by_position(connector: Connector) {
    // A string, then an integer: a 2020-12 tuple.
    let schema = json!({
        "type": "object",
        "properties": {"at": {
            "type": "array",
            "prefixItems": [{"type": "string"}, {"type": "integer"}]
        }},
        "required": ["at"]
    });
    let pair = connect(&connector, &shaped(&[("locate", schema)]), client()).await;
    let fits = give(&pair, "locate", json!({"at": ["row", 7]})).await;
    assert_eq!(fits, Ok(json!({"at": ["row", 7]})));
    let swapped = misfit(give(&pair, "locate", json!({"at": [7, "row"]})).await);
    assert!(
        swapped.contains("/at/0"),
        "the first position is named: {swapped}"
    );
}

async fn a_schema_is_read_as_2020_12_unless_it_declares_its_dialect(connector: Connector) {
    // The same words in two dialects: `prefixItems` is 2020-12's tuple and no keyword at
    // all in draft-07, whose tuple is the array form of `items`.
    let tuple = json!({"prefixItems": [{"type": "string"}], "items": [{"type": "integer"}]});
    let plain =
        json!({"type": "object", "properties": {"at": {"prefixItems": [{"type": "string"}]}}});
    let draft7 = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"at": tuple}
    });
    let server = shaped(&[("plain", plain), ("draft7", draft7)]);
    let pair = connect(&connector, &server, client()).await;
    // No `$schema`: 2020-12, so `prefixItems` binds.
    assert_eq!(
        give(&pair, "plain", json!({"at": ["a"]})).await,
        Ok(json!({"at": ["a"]}))
    );
    misfit(give(&pair, "plain", json!({"at": [1]})).await);
    // Draft-07 declared: `items` is the tuple and `prefixItems` means nothing.
    assert_eq!(
        give(&pair, "draft7", json!({"at": [1]})).await,
        Ok(json!({"at": [1]}))
    );
    misfit(give(&pair, "draft7", json!({"at": ["a"]})).await);
}

async fn a_schema_in_an_unknown_dialect_fails_the_call_saying_so(connector: Connector) {
    let dialect = "https://dialects.example/house-schema";
    let exotic = json!({"$schema": dialect, "type": "object"});
    let plain = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    let server = shaped(&[("exotic", exotic), ("plain", plain)]);
    let pair = connect(&connector, &server, client()).await;
    // Whatever the result, a schema the client cannot read is no licence to pass it.
    let refusal = give(&pair, "exotic", json!({"n": 1}))
        .await
        .expect_err("a result of a tool whose schema the client cannot read is refused");
    assert!(refusal.contains("dialect"), "{refusal}");
    assert!(refusal.contains(dialect), "the dialect is named: {refusal}");
    assert!(refusal.contains("exotic"), "the tool is named: {refusal}");
    // The other tool of the same listing is unaffected.
    assert_eq!(
        give(&pair, "plain", json!({"n": 1})).await,
        Ok(json!({"n": 1}))
    );
}

async fn a_remote_reference_is_never_fetched_and_fails_the_call(connector: Connector) {
    // A schema host on this machine that counts the connections it gets.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a local port");
    let host = listener.local_addr().expect("its address");
    let connections = Arc::new(AtomicUsize::new(0));
    let counted = connections.clone();
    tokio::spawn(async move {
        while listener.accept().await.is_ok() {
            counted.fetch_add(1, Ordering::SeqCst);
        }
    });
    let remote = json!({
        "type": "object",
        "properties": {"n": {"$ref": format!("http://{host}/n.json")}}
    });
    let pair = connect(&connector, &shaped(&[("remote", remote)]), client()).await;
    let refusal = give(&pair, "remote", json!({"n": 1}))
        .await
        .expect_err("a schema with an unresolved remote reference passes nothing");
    assert!(refusal.contains("never fetched"), "{refusal}");
    assert!(refusal.contains("remote"), "the tool is named: {refusal}");
    assert_eq!(
        connections.load(Ordering::SeqCst),
        0,
        "the client never asked the schema host for the reference"
    );
}

async fn falsy_structured_content_is_checked_and_returned(connector: Connector) {
    let server = shaped(&[
        ("count", json!({"type": "integer"})),
        ("flag", json!({"type": "boolean"})),
        ("label", json!({"type": "string"})),
    ]);
    let pair = connect(&connector, &server, client()).await;
    assert_eq!(give(&pair, "count", json!(0)).await, Ok(json!(0)));
    assert_eq!(give(&pair, "flag", json!(false)).await, Ok(json!(false)));
    assert_eq!(give(&pair, "label", json!("")).await, Ok(json!("")));
    // Present, so checked: a falsy value of the wrong type is refused as a misfit, not
    // as missing.
    let wrong = misfit(give(&pair, "count", json!(false)).await);
    assert!(!wrong.contains("no structuredContent"), "{wrong}");
    let wrong = misfit(give(&pair, "label", json!(0)).await);
    assert!(!wrong.contains("no structuredContent"), "{wrong}");
}

async fn an_array_result_is_checked_against_an_array_schema(connector: Connector) {
    let series = json!({"type": "array", "items": {"type": "integer"}});
    let pair = connect(&connector, &shaped(&[("series", series)]), client()).await;
    assert_eq!(
        give(&pair, "series", json!([1, 2, 3])).await,
        Ok(json!([1, 2, 3]))
    );
    let refusal = misfit(give(&pair, "series", json!([1, "two"])).await);
    assert!(
        refusal.contains("/1"),
        "the second item is named: {refusal}"
    );
}

async fn a_null_result_fits_a_null_schema(connector: Connector) {
    let pair = connect(
        &connector,
        &shaped(&[("nothing", json!({"type": "null"}))]),
        client(),
    )
    .await;
    // `null` on the wire is a value, and it fits.
    assert_eq!(give(&pair, "nothing", Value::Null).await, Ok(Value::Null));
    let answer = pair
        .wire
        .received()
        .into_iter()
        .filter_map(|m| serde_json::to_value(m).ok())
        .find(|m| m["result"].get("structuredContent").is_some())
        .expect("the answer carried structuredContent");
    assert_eq!(answer["result"]["structuredContent"], Value::Null);
    // Checked all the same: anything else does not fit.
    misfit(give(&pair, "nothing", json!(0)).await);
    // And no structured content at all is still missing.
    let missing = pair
        .client
        .call_tool("nothing", json!({}))
        .await
        .expect_err("a result without structuredContent is refused");
    assert!(
        missing.to_string().contains("no structuredContent"),
        "{missing}"
    );
}
