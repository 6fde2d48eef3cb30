//! The everyday API through the prelude alone: tool functions and closures that
//! return plain values, `Result`s with any displayable error or a typed protocol
//! error, closures without a `Context`, and sync `#[tool]` functions.

use modelctx::prelude::*;
use modelctx_test::TestClient;
use serde_json::{Value, json};

/// Derived with the prelude's `schemars` in scope, and nothing else imported.
#[derive(serde::Deserialize, serde::Serialize, JsonSchema)]
struct Terms {
    a: i64,
    b: i64,
}

/// Multiplies, synchronously, returning a bare number.
#[tool]
fn times(a: i64, b: i64) -> i64 {
    a * b
}

/// Says whether `n` is even, with the context, synchronously.
#[tool]
fn even(n: u64, cx: &Context) -> bool {
    assert!(!cx.is_cancelled());
    n.is_multiple_of(2)
}

/// Does nothing and says so with no content.
#[tool]
async fn noop() {}

/// Fails with an error of a type that is only `Display`.
#[tool]
fn refuse(reason: String) -> Result<&'static str, Refusal> {
    Err(Refusal(reason))
}

/// An error type with no `std::error::Error` impl: `Display` is enough.
struct Refusal(String);

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "refused: {}", self.0)
    }
}

/// Fails the call itself with a JSON-RPC error.
#[tool]
async fn vault(name: String) -> Result<String, ToolError> {
    Err(ToolError::protocol(ErrorData::invalid_params(format!(
        "no vault named {name}"
    ))))
}

/// Answers JSON without a schema.
#[tool]
fn echo(#[args] terms: Terms) -> Value {
    json!({"a": terms.a, "b": terms.b})
}

fn server() -> Server {
    // Closures: no `Context`, no `Result`, no `Ok::<_, String>`.
    let add = ToolDef::from_fn("add", |t: Terms| async move { Json(t.a + t.b) });
    let greet = ToolDef::new("greet", |_: NoArgs, cx: Context| async move {
        format!(
            "hello {}",
            cx.client_info().map_or("?", |c| c.name.as_str())
        )
    });
    let count = ToolDef::from_fn("count", |_: NoArgs| async { 3u32 });
    let failing = ToolDef::from_fn("failing", |_: NoArgs| async {
        "nope".parse::<i32>().map(|n| n.to_string())
    });
    let boxed = ToolDef::from_fn("boxed", |_: NoArgs| async {
        let error: BoxError = Box::new(ToolError::protocol(ErrorData::invalid_request("boxed")));
        Err::<String, _>(error)
    });
    Server::builder("everyday", "1.0.0")
        .tools([add, greet, count, failing, boxed])
        .unwrap()
        .tools([
            times_tool(),
            even_tool(),
            noop_tool(),
            refuse_tool(),
            vault_tool(),
            echo_tool(),
        ])
        .unwrap()
        .build()
}

/// A client of `server` in this process, through the test kit as a user would test theirs.
async fn connect(server: &Server) -> TestClient {
    TestClient::connect_with(server, Client::builder("everyday-tests", "1.0.0")).await
}

fn text(result: &CallToolResult) -> &str {
    result.content[0].as_text().expect("a text block")
}

#[tokio::test]
async fn closures_return_plain_values_with_or_without_a_context() {
    let client = connect(&server()).await;
    let added = client.call_tool("add", json!({"a": 2, "b": 3})).await;
    assert_eq!(added.structured_content, Some(json!({"result": 5})));
    assert_eq!(
        text(&client.call_tool("greet", json!({})).await),
        "hello everyday-tests"
    );
    assert_eq!(text(&client.call_tool("count", json!({})).await), "3");

    let failed = client.call_tool("failing", json!({})).await;
    assert!(failed.is_error());
    assert_eq!(text(&failed), "invalid digit found in string");

    let boxed = client.try_call_tool("boxed", json!({})).await.unwrap_err();
    let error = boxed.protocol_error().expect("a JSON-RPC error");
    assert_eq!(error.code, ErrorCode::INVALID_REQUEST);
    assert_eq!(error.message, "boxed");
}

#[tokio::test]
async fn tool_functions_may_be_sync_and_return_what_they_mean() {
    let client = connect(&server()).await;
    let tools = client.list_tools().await;
    let times = tools.iter().find(|t| t.name == "times").unwrap();
    assert_eq!(
        times.description.as_deref(),
        Some("Multiplies, synchronously, returning a bare number.")
    );
    assert!(
        times.output_schema.is_none(),
        "a bare number is text, not structured output"
    );

    assert_eq!(
        text(&client.call_tool("times", json!({"a": 6, "b": 7})).await),
        "42"
    );
    assert_eq!(
        text(&client.call_tool("even", json!({"n": 4})).await),
        "true"
    );
    let nothing = client.call_tool("noop", json!({})).await;
    assert!(!nothing.is_error());
    assert!(nothing.content.is_empty());

    let refused = client
        .call_tool("refuse", json!({"reason": "too late"}))
        .await;
    assert!(refused.is_error());
    assert_eq!(text(&refused), "refused: too late");

    let echoed = client.call_tool("echo", json!({"a": 1, "b": 2})).await;
    assert_eq!(text(&echoed), r#"{"a":1,"b":2}"#);
    assert_eq!(echoed.structured_content, Some(json!({"a": 1, "b": 2})));
}

#[tokio::test]
async fn a_typed_protocol_error_fails_the_call_with_it() {
    let client = connect(&server()).await;
    let error = client
        .try_call_tool("vault", json!({"name": "x"}))
        .await
        .unwrap_err();
    let data = error
        .protocol_error()
        .expect("a JSON-RPC error, not an isError result");
    assert_eq!(data.code, ErrorCode::INVALID_PARAMS);
    assert_eq!(data.message, "no vault named x");
}
