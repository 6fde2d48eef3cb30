//! `#[tool]` and `#[tools]` through the public API: a server built from macro tools,
//! a client listing and calling them over the in-memory transport.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use modelctx::client::Client;
use modelctx::macros::{tool, tools};
// The rule for user types: the facade's schemars in scope, no `#[schemars(crate)]`.
use modelctx::schemars::{self, JsonSchema};
use modelctx::server::{Context, Json, Server};
use modelctx::types::{ErrorCode, Tool};
use modelctx_test::TestClient;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Adds two numbers.
///
/// Both are integers.
#[tool]
async fn add(
    /// The first term.
    a: i64,
    /// The second term.
    b: i64,
) -> Json<i64> {
    Json(a + b)
}

/// A point on the plane.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
struct Point {
    x: f64,
    y: f64,
}

/// The arguments of `midpoint`, a struct of the user's own.
#[derive(Deserialize, JsonSchema)]
struct Segment {
    /// Where the segment starts.
    from: Point,
    /// Where it ends.
    to: Point,
}

/// The middle of a segment.
#[tool(title = "Midpoint")]
async fn midpoint(#[args] segment: Segment) -> Json<Point> {
    Json(Point {
        x: (segment.from.x + segment.to.x) / 2.0,
        y: (segment.from.y + segment.to.y) / 2.0,
    })
}

/// Divides, refusing zero.
#[tool(name = "divide-checked")]
async fn divide(
    numerator: i64,
    /// Must not be zero.
    denominator: i64,
    /// Round the quotient up instead of down.
    #[serde(default)]
    ceiling: bool,
) -> Result<String, String> {
    if denominator == 0 {
        return Err("division by zero".into());
    }
    let q = numerator.div_euclid(denominator);
    let up = ceiling && numerator.rem_euclid(denominator) != 0;
    Ok((q + i64::from(up)).to_string())
}

/// Says which request asked, and what the server's state says.
#[tool]
async fn whoami(cx: &Context, prefix: Option<String>) -> String {
    let greeting = cx
        .state::<String>()
        .map(|s| s.to_string())
        .unwrap_or_default();
    format!(
        "{}{greeting} to request {}",
        prefix.unwrap_or_default(),
        cx.request_id()
    )
}

/// Tools sharing state through `&self`.
struct Counter {
    total: Arc<AtomicU64>,
    step: u64,
}

#[tools]
impl Counter {
    /// Adds the step `times` times; returns the new total.
    #[tool]
    async fn bump(
        &self,
        /// How many steps, at most 100.
        #[schemars(range(max = 100))]
        times: u64,
        cx: Context,
    ) -> Result<Json<u64>, String> {
        if times == 0 || cx.is_cancelled() {
            return Err("bump at least once".into());
        }
        let added = self.step * times;
        Ok(Json(self.total.fetch_add(added, Ordering::SeqCst) + added))
    }

    /// The current total.
    #[tool(name = "total")]
    async fn read_total(&self) -> String {
        self.total.load(Ordering::SeqCst).to_string()
    }

    /// Not a tool: stays an ordinary method.
    fn double_step(&self) -> u64 {
        self.step * 2
    }
}

async fn connect(server: &Server) -> TestClient {
    TestClient::connect_with(server, Client::builder("macro-tests", "1.0.0")).await
}

fn server(total: Arc<AtomicU64>) -> Server {
    let counter = Counter { total, step: 3 };
    assert_eq!(counter.double_step(), 6);
    Server::builder("macros", "1.0.0")
        .state("hello".to_owned())
        .tools([add_tool(), midpoint_tool(), divide_tool(), whoami_tool()])
        .unwrap()
        .tools(counter)
        .unwrap()
        .build()
}

fn find<'a>(tools: &'a [Tool], name: &str) -> &'a Tool {
    tools
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

#[tokio::test]
async fn the_list_shows_names_descriptions_and_schemas() {
    let client = connect(&server(Arc::default())).await;
    let tools = client.list_tools().await;
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "add",
            "bump",
            "divide-checked",
            "midpoint",
            "total",
            "whoami"
        ]
    );

    let add = find(&tools, "add");
    assert_eq!(
        add.description.as_deref(),
        Some("Adds two numbers.\n\nBoth are integers.")
    );
    let schema = Value::Object(add.input_schema.clone());
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["properties"]["a"]["type"], "integer");
    assert_eq!(schema["properties"]["a"]["description"], "The first term.");
    assert_eq!(schema["properties"]["b"]["description"], "The second term.");
    assert_eq!(schema["required"], json!(["a", "b"]));
    let output = Value::Object(add.output_schema.clone().expect("an outputSchema"));
    assert_eq!(output["properties"]["result"]["type"], "integer");
    assert_eq!(output["required"], json!(["result"]));

    let midpoint = find(&tools, "midpoint");
    assert_eq!(midpoint.title.as_deref(), Some("Midpoint"));
    assert_eq!(
        midpoint.description.as_deref(),
        Some("The middle of a segment.")
    );
    let schema = Value::Object(midpoint.input_schema.clone());
    assert_eq!(
        schema["properties"]["from"]["description"],
        "Where the segment starts."
    );
    assert!(schema["$defs"]["Point"].is_object(), "{schema}");
    let output = Value::Object(midpoint.output_schema.clone().unwrap());
    assert_eq!(output["required"], json!(["x", "y"]));

    let divide = find(&tools, "divide-checked");
    let schema = Value::Object(divide.input_schema.clone());
    assert_eq!(schema["properties"]["ceiling"]["type"], "boolean");
    assert_eq!(schema["required"], json!(["numerator", "denominator"]));
    assert!(divide.output_schema.is_none());

    let whoami = find(&tools, "whoami");
    let schema = Value::Object(whoami.input_schema.clone());
    assert_eq!(
        schema["properties"].as_object().map(|p| p.len()),
        Some(1),
        "the Context is not an argument: {schema}"
    );
    assert_eq!(schema.get("required"), None);

    let bump = find(&tools, "bump");
    assert_eq!(
        bump.description.as_deref(),
        Some("Adds the step `times` times; returns the new total.")
    );
    assert_eq!(bump.input_schema["required"], json!(["times"]));
    assert_eq!(bump.input_schema["properties"]["times"]["maximum"], 100);
    let total = find(&tools, "total");
    assert_eq!(total.input_schema["type"], "object");
}

#[tokio::test]
async fn calls_decode_typed_arguments() {
    let client = connect(&server(Arc::default())).await;
    let result = client.call_tool("add", json!({"a": 2, "b": 40})).await;
    assert!(!result.is_error());
    assert_eq!(result.structured_content, Some(json!({"result": 42})));

    let result = client
        .call_tool(
            "divide-checked",
            json!({"numerator": 7, "denominator": 2, "ceiling": true}),
        )
        .await;
    assert_eq!(result.content[0].as_text(), Some("4"));
    // `#[serde(default)]` made `ceiling` optional.
    let result = client
        .call_tool("divide-checked", json!({"numerator": 7, "denominator": 2}))
        .await;
    assert_eq!(result.content[0].as_text(), Some("3"));

    let result = client.call_tool("whoami", json!({})).await;
    let text = result.content[0].as_text().unwrap();
    assert!(text.starts_with("hello to request "), "{text}");
    let result = client.call_tool("whoami", json!({"prefix": ">> "})).await;
    assert!(result.content[0].as_text().unwrap().starts_with(">> hello"));
}

#[tokio::test]
async fn bad_arguments_and_errors_are_tool_errors() {
    let client = connect(&server(Arc::default())).await;
    // A wrong type, a missing argument, a broken constraint: the spec's tool execution
    // error (`isError: true`), with a message the model can act on.
    for (args, needle) in [(json!({"a": "two", "b": 1}), "a"), (json!({"a": 1}), "b")] {
        let result = client.call_tool("add", args).await;
        assert!(result.is_error());
        let text = result.content[0].as_text().unwrap();
        assert!(text.contains("Invalid arguments"), "{text}");
        assert!(text.contains(needle), "{text}");
    }
    // A broken constraint (`#[schemars(range(max = 100))]`).
    let result = client.call_tool("bump", json!({"times": 101})).await;
    assert!(result.is_error());
    assert!(result.content[0].as_text().unwrap().contains("times"));
    // The function's own `Err`, as the tool's text.
    let result = client
        .call_tool("divide-checked", json!({"numerator": 1, "denominator": 0}))
        .await;
    assert!(result.is_error());
    assert_eq!(result.content[0].as_text(), Some("division by zero"));
    let result = client.call_tool("bump", json!({"times": 0})).await;
    assert!(result.is_error());
    assert_eq!(result.content[0].as_text(), Some("bump at least once"));
    // An unknown tool is a protocol error.
    let error = client.try_call_tool("nope", json!({})).await.unwrap_err();
    assert_eq!(
        error.protocol_error().map(|e| e.code),
        Some(ErrorCode::INVALID_PARAMS)
    );
}

#[tokio::test]
async fn structured_output_matches_the_output_schema() {
    let client = connect(&server(Arc::default())).await;
    let tools = client.list_tools().await;
    for (name, args) in [
        ("add", json!({"a": 1, "b": 2})),
        (
            "midpoint",
            json!({"from": {"x": 0.0, "y": 0.0}, "to": {"x": 2.0, "y": 4.0}}),
        ),
        ("bump", json!({"times": 1})),
    ] {
        let tool = find(&tools, name);
        let schema = Value::Object(tool.output_schema.clone().unwrap());
        let validator = jsonschema::validator_for(&schema).unwrap();
        let result = client.call_tool(name, args).await;
        let structured = result.structured_content.expect("structuredContent");
        assert!(validator.is_valid(&structured), "{name}: {structured}");
        // The same value as JSON text, for clients that read only `content`.
        let text = result.content[0].as_text().unwrap();
        assert_eq!(serde_json::from_str::<Value>(text).unwrap(), structured);
    }
}

#[tokio::test]
async fn method_tools_share_their_value() {
    let total = Arc::new(AtomicU64::new(10));
    let client = connect(&server(total.clone())).await;
    let result = client.call_tool("bump", json!({"times": 2})).await;
    assert_eq!(result.structured_content, Some(json!({"result": 16})));
    assert_eq!(total.load(Ordering::SeqCst), 16);
    total.fetch_add(1, Ordering::SeqCst);
    let result = client.call_tool("total", json!({})).await;
    assert_eq!(result.content[0].as_text(), Some("17"));
}

#[tokio::test]
async fn a_tool_function_stays_callable() {
    assert_eq!(add(1, 2).await, Json(3));
    assert_eq!(divide(9, 3, false).await, Ok("3".to_owned()));
    // The generated definition is a plain `ToolDef`, open to the builder methods.
    let def = add_tool().title("Addition");
    assert_eq!(def.tool().name, "add");
    assert_eq!(def.tool().title.as_deref(), Some("Addition"));
}
