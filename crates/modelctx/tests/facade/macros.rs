//! The macros through the public API: a server built from `#[tool]`, `#[tools]`,
//! `#[prompt]`, `#[resource]`, `#[resource_template]` and `#[primitives]` definitions,
//! a client listing and using them over the in-memory transport.

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

// ---- Tool options, prompts, resources, templates and `#[primitives]` ----

mod primitives {
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    use modelctx::RegisterPrimitives;
    use modelctx::client::{Client, ConnectMode};
    use modelctx::macros::{primitives, prompt, resource, resource_template, tool};
    use modelctx::server::{Blob, CompletionInput, Context, Server};
    use modelctx::types::{
        CallToolResult, CompletionReference, ContentBlock, ErrorCode, ErrorData, JsonObject, Meta,
        PromptMessage, PromptReference, ResourceTemplateReference, TaskSupport,
    };
    use serde_json::{Value, json};

    use super::find;
    use modelctx_test::soon;

    fn obj(value: Value) -> JsonObject {
        value.as_object().cloned().unwrap_or_default()
    }

    fn trash_meta() -> Meta {
        Meta::from(obj(json!({"example.com/audit": true})))
    }

    fn forecast_schema() -> JsonObject {
        obj(json!({
            "type": "object",
            "properties": {"summary": {"type": "string"}},
            "required": ["summary"]
        }))
    }

    /// Deletes a file.
    #[tool(
        title = "Delete",
        destructive,
        idempotent,
        open_world = false,
        icon = "https://example.com/trash.png",
        icon = "https://example.com/trash-dark.png",
        task_support = "optional",
        meta = trash_meta
    )]
    fn delete(
        /// Where the file lives.
        #[header]
        region: String,
        /// The file.
        #[header("Path")]
        file_path: String,
        /// Not mirrored.
        reason: Option<String>,
    ) -> String {
        format!(
            "deleted {file_path} in {region} ({})",
            reason.unwrap_or_default()
        )
    }

    /// Tomorrow's weather, structured by hand.
    #[tool(read_only, output_schema = forecast_schema)]
    async fn forecast(city: String) -> CallToolResult {
        CallToolResult::new(vec![ContentBlock::text("sunny")])
            .with_structured_content(json!({"summary": format!("sunny in {city}")}))
    }

    /// The `candidates` that start with `prefix`, in order.
    fn starting_with(candidates: &[&str], prefix: &str) -> Vec<String> {
        candidates
            .iter()
            .filter(|c| c.starts_with(prefix))
            .map(|c| (*c).to_owned())
            .collect()
    }

    async fn languages(input: CompletionInput, _cx: Context) -> Result<Vec<String>, String> {
        Ok(starting_with(&["rust", "ruby", "python"], &input.value))
    }

    /// Asks for a code review.
    #[prompt(title = "Code review", complete(language = languages))]
    async fn review(
        /// The language of the code.
        language: String,
        /// What to look at.
        focus: Option<String>,
        /// How many points to make.
        points: Option<u32>,
    ) -> Vec<PromptMessage> {
        vec![
            PromptMessage::user_text(format!(
                "Review this {language} code; look at {}, in {} points.",
                focus.as_deref().unwrap_or("anything"),
                points.unwrap_or(3)
            )),
            PromptMessage::assistant_text("Paste the code."),
        ]
    }

    /// Greets someone by name.
    #[prompt(name = "greet")]
    fn greeting(name: String) -> Result<String, String> {
        if name.is_empty() {
            return Err("a name, please".into());
        }
        Ok(format!("Say hello to {name}."))
    }

    /// The shopping list.
    #[resource(uri = "file:///notes.txt", mime_type = "text/plain", title = "Notes")]
    async fn notes() -> &'static str {
        "buy milk"
    }

    /// A tiny image.
    #[resource(uri = "file:///dot.png", name = "dot", mime_type = "image/png")]
    fn dot(cx: &Context) -> Result<Blob, String> {
        let _ = cx.request_id();
        Ok(Blob(vec![0x89, b'P', b'N', b'G']))
    }

    async fn user_ids(input: CompletionInput, _cx: Context) -> Result<Vec<String>, String> {
        Ok(starting_with(&["7", "42", "420"], &input.value))
    }

    /// A user's profile.
    #[resource_template(
        uri_template = "users://{id}/profile",
        mime_type = "application/json",
        complete(id = user_ids)
    )]
    fn profile(id: u32) -> Result<String, String> {
        if id == 0 {
            return Err("user 0 does not exist".into());
        }
        Ok(json!({"id": id, "name": format!("user {id}")}).to_string())
    }

    /// A page of a book, in a language if asked.
    #[resource_template(uri_template = "books://{book}/pages/{page}{?lang}")]
    async fn page(book: String, page: u16, lang: Option<String>, _cx: Context) -> String {
        format!("{book} p{page} [{}]", lang.as_deref().unwrap_or("en"))
    }

    /// A library: state shared by tools, prompts and resources.
    struct Library {
        loans: Mutex<Vec<String>>,
    }

    #[primitives]
    impl Library {
        /// Lends a book.
        #[tool(idempotent)]
        fn lend(&self, title: String) -> String {
            let mut loans = self.loans.lock().unwrap();
            loans.push(title);
            format!("{} on loan", loans.len())
        }

        /// Asks what to read next.
        #[prompt]
        async fn next_read(&self, genre: Option<String>) -> String {
            let loans = self.loans.lock().unwrap().join(", ");
            format!(
                "I read {loans}; what {} next?",
                genre.unwrap_or("book".into())
            )
        }

        /// The books on loan, one a line.
        #[resource(uri = "library://loans")]
        fn loans(&self) -> String {
            self.loans.lock().unwrap().join("\n")
        }

        /// One loan, by its number.
        #[resource_template(uri_template = "library://loans/{number}")]
        fn loan(&self, number: usize) -> Result<String, String> {
            let loans = self.loans.lock().unwrap();
            loans
                .get(number.wrapping_sub(1))
                .cloned()
                .ok_or_else(|| format!("no loan {number}"))
        }

        /// Not registered: stays an ordinary method.
        fn count(&self) -> usize {
            self.loans.lock().unwrap().len()
        }
    }

    fn server() -> Server {
        let library = Library {
            loans: Mutex::new(vec!["Dune".into()]),
        };
        assert_eq!(library.count(), 1);
        Server::builder("primitives", "1.0.0")
            .tools([delete_tool(), forecast_tool()])
            .unwrap()
            .prompt(review_prompt())
            .unwrap()
            .prompt(greeting_prompt())
            .unwrap()
            .resource(notes_resource())
            .unwrap()
            .resource(dot_resource())
            .unwrap()
            .resource_template(profile_template())
            .unwrap()
            .resource_template(page_template())
            .unwrap()
            .primitives(library)
            .unwrap()
            .build()
    }

    /// A client of `server` in each era: the 2025 handshake and 2026-07-28.
    async fn clients(server: &Server) -> Vec<Client> {
        let mut clients = Vec::new();
        for mode in [ConnectMode::Handshake, ConnectMode::Auto] {
            let (client_side, server_side) = modelctx::memory::pair();
            let _session = server.serve(server_side);
            let client = soon(
                "connect",
                Client::builder("macro-tests", "1.0.0")
                    .mode(mode)
                    .connect(client_side),
            )
            .await
            .unwrap();
            clients.push(client);
        }
        clients
    }

    /// Reads `uri`: its first contents, as JSON.
    async fn first_contents(client: &Client, uri: &str) -> Value {
        let read = soon(uri, client.read_resource(uri)).await.unwrap();
        serde_json::to_value(&read.contents[0]).unwrap()
    }

    /// Reads `uri`, which the server refuses: the protocol error.
    async fn refused_read(client: &Client, uri: &str) -> ErrorData {
        let error = soon(uri, client.read_resource(uri)).await.unwrap_err();
        error.protocol_error().unwrap().clone()
    }

    /// The completions of `argument` from `value` for `reference`, with no context.
    async fn completed(
        client: &Client,
        reference: impl Into<CompletionReference>,
        argument: &str,
        value: &str,
    ) -> Vec<String> {
        let got = soon(
            "complete",
            client.complete(reference, argument, value, args(&[])),
        )
        .await
        .unwrap();
        got.completion.values
    }

    fn args(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[tokio::test]
    async fn tool_options_appear_in_the_list() {
        for client in clients(&server()).await {
            let tools = soon("list", client.list_all_tools()).await.unwrap();
            let delete = find(&tools, "delete");
            assert_eq!(delete.title.as_deref(), Some("Delete"));
            assert_eq!(delete.description.as_deref(), Some("Deletes a file."));
            let hints = delete.annotations.as_ref().expect("annotations");
            assert_eq!(hints.destructive_hint, Some(true));
            assert_eq!(hints.idempotent_hint, Some(true));
            assert_eq!(hints.open_world_hint, Some(false));
            assert_eq!(hints.read_only_hint, None);
            let icons: Vec<&str> = delete
                .icons
                .iter()
                .flatten()
                .map(|i| i.src.as_str())
                .collect();
            assert_eq!(
                icons,
                [
                    "https://example.com/trash.png",
                    "https://example.com/trash-dark.png"
                ]
            );
            assert_eq!(
                delete
                    .meta
                    .as_ref()
                    .and_then(|m| m.get("example.com/audit")),
                Some(&json!(true))
            );
            assert_eq!(
                delete
                    .execution
                    .as_ref()
                    .and_then(|e| e.task_support.clone()),
                Some(TaskSupport::Optional)
            );
            let schema = Value::Object(delete.input_schema.clone());
            assert_eq!(schema["properties"]["region"]["x-mcp-header"], "Region");
            assert_eq!(schema["properties"]["file_path"]["x-mcp-header"], "Path");
            assert_eq!(
                schema["properties"]["file_path"]["description"],
                "The file."
            );
            assert!(schema["properties"]["reason"].get("x-mcp-header").is_none());

            let forecast = find(&tools, "forecast");
            assert_eq!(
                forecast.annotations.as_ref().and_then(|a| a.read_only_hint),
                Some(true)
            );
            assert_eq!(forecast.output_schema, Some(forecast_schema()));

            let result = soon(
                "delete",
                client.call_tool(
                    "delete",
                    obj(json!({"region": "eu", "file_path": "/tmp/x"})),
                ),
            )
            .await
            .unwrap();
            assert_eq!(result.content[0].as_text(), Some("deleted /tmp/x in eu ()"));
            let result = soon(
                "forecast",
                client.call_tool("forecast", obj(json!({"city": "Oslo"}))),
            )
            .await
            .unwrap();
            assert_eq!(
                result.structured_content,
                Some(json!({"summary": "sunny in Oslo"}))
            );
            client.close().await;
        }
    }

    #[tokio::test]
    async fn prompts_list_their_arguments_and_fill_in() {
        for client in clients(&server()).await {
            let prompts = soon("list", client.list_all_prompts()).await.unwrap();
            let review = prompts.iter().find(|p| p.name == "review").unwrap();
            assert_eq!(review.title.as_deref(), Some("Code review"));
            assert_eq!(
                review.description.as_deref(),
                Some("Asks for a code review.")
            );
            let arguments = review.arguments.as_deref().unwrap();
            let argument = |name: &str| arguments.iter().find(|a| a.name == name).unwrap();
            assert_eq!(argument("language").required, Some(true));
            assert_eq!(
                argument("language").description.as_deref(),
                Some("The language of the code.")
            );
            assert_eq!(argument("focus").required, Some(false));
            assert_eq!(argument("points").required, Some(false));
            assert!(prompts.iter().any(|p| p.name == "greet"));
            assert!(prompts.iter().any(|p| p.name == "next_read"));

            let got = soon(
                "review",
                client.get_prompt("review", args(&[("language", "rust"), ("points", "2")])),
            )
            .await
            .unwrap();
            assert_eq!(
                got.messages[0].content.as_text(),
                Some("Review this rust code; look at anything, in 2 points.")
            );
            assert_eq!(got.messages.len(), 2);
            // A missing required argument, and a value of the wrong type, are refused.
            for bad in [args(&[]), args(&[("language", "rust"), ("points", "many")])] {
                let error = soon("review", client.get_prompt("review", bad))
                    .await
                    .unwrap_err();
                assert_eq!(
                    error.protocol_error().map(|e| e.code),
                    Some(ErrorCode::INVALID_PARAMS)
                );
            }
            let got = soon(
                "greet",
                client.get_prompt("greet", args(&[("name", "Ada")])),
            )
            .await
            .unwrap();
            assert_eq!(got.messages[0].content.as_text(), Some("Say hello to Ada."));
            let error = soon("greet", client.get_prompt("greet", args(&[("name", "")])))
                .await
                .unwrap_err();
            let message = error.protocol_error().map(|e| e.message.clone());
            assert!(message.unwrap().contains("a name, please"));

            let values = completed(&client, PromptReference::new("review"), "language", "r").await;
            assert_eq!(values, ["rust", "ruby"]);
            client.close().await;
        }
    }

    #[tokio::test]
    async fn resources_are_listed_and_read() {
        for client in clients(&server()).await {
            let resources = soon("list", client.list_all_resources()).await.unwrap();
            let notes = resources
                .iter()
                .find(|r| r.uri == "file:///notes.txt")
                .unwrap();
            assert_eq!(notes.name, "notes");
            assert_eq!(notes.title.as_deref(), Some("Notes"));
            assert_eq!(notes.description.as_deref(), Some("The shopping list."));
            assert_eq!(notes.mime_type.as_deref(), Some("text/plain"));
            assert!(resources.iter().any(|r| r.name == "dot"));

            let text = first_contents(&client, "file:///notes.txt").await;
            assert_eq!(text["text"], "buy milk");
            assert_eq!(text["mimeType"], "text/plain");
            let blob = first_contents(&client, "file:///dot.png").await;
            assert_eq!(blob["blob"], "iVBORw==");
            assert_eq!(blob["mimeType"], "image/png");
            client.close().await;
        }
    }

    #[tokio::test]
    async fn templates_parse_their_variables() {
        for client in clients(&server()).await {
            let templates = soon("list", client.list_all_resource_templates())
                .await
                .unwrap();
            let profile = templates.iter().find(|t| t.name == "profile").unwrap();
            assert_eq!(profile.uri_template, "users://{id}/profile");
            assert_eq!(profile.description.as_deref(), Some("A user's profile."));
            assert_eq!(profile.mime_type.as_deref(), Some("application/json"));

            let contents = first_contents(&client, "users://42/profile").await;
            let body: Value = serde_json::from_str(contents["text"].as_str().unwrap()).unwrap();
            assert_eq!(body, json!({"id": 42, "name": "user 42"}));
            assert_eq!(contents["mimeType"], "application/json");

            // A variable that does not parse: `-32602`, naming it, its value and type.
            let error = refused_read(&client, "users://abc/profile").await;
            assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
            assert!(
                error.message.contains("Invalid variable id")
                    && error.message.contains("\"abc\"")
                    && error.message.contains("u32"),
                "{}",
                error.message
            );
            // The function's own `Err`.
            let message = refused_read(&client, "users://0/profile").await.message;
            assert!(message.contains("user 0 does not exist"), "{message}");

            let text = first_contents(&client, "books://dune/pages/12?lang=fr").await;
            assert_eq!(text["text"], "dune p12 [fr]");
            let text = first_contents(&client, "books://dune/pages/3").await;
            assert_eq!(text["text"], "dune p3 [en]");

            let profile = ResourceTemplateReference::new("users://{id}/profile");
            assert_eq!(completed(&client, profile, "id", "4").await, ["42", "420"]);
            client.close().await;
        }
    }

    #[tokio::test]
    async fn an_impl_block_registers_every_kind() {
        // A server of its own in each era: the loans change.
        for era in 0..2 {
            let client = clients(&server()).await.swap_remove(era);
            let result = soon(
                "lend",
                client.call_tool("lend", obj(json!({"title": "Emma"}))),
            )
            .await
            .unwrap();
            assert_eq!(result.content[0].as_text(), Some("2 on loan"));
            let tools = soon("list", client.list_all_tools()).await.unwrap();
            assert_eq!(
                find(&tools, "lend")
                    .annotations
                    .as_ref()
                    .and_then(|a| a.idempotent_hint),
                Some(true)
            );

            let got = soon(
                "next_read",
                client.get_prompt("next_read", args(&[("genre", "poetry")])),
            )
            .await
            .unwrap();
            let text = got.messages[0].content.as_text().unwrap();
            assert!(text.starts_with("I read Dune, Emma"), "{text}");
            assert!(text.ends_with("what poetry next?"), "{text}");

            let text = first_contents(&client, "library://loans").await;
            assert!(text["text"].as_str().unwrap().starts_with("Dune\nEmma"));
            let text = first_contents(&client, "library://loans/1").await;
            assert_eq!(text["text"], "Dune");
            let message = refused_read(&client, "library://loans/99").await.message;
            assert!(message.contains("no loan 99"), "{message}");
            client.close().await;
        }
    }

    #[tokio::test]
    async fn the_functions_stay_callable() {
        assert_eq!(
            delete("eu".into(), "a".into(), Some("old".into())),
            "deleted a in eu (old)"
        );
        assert_eq!(greeting("Ada".into()), Ok("Say hello to Ada.".to_owned()));
        assert_eq!(notes().await, "buy milk");
        assert_eq!(profile(0), Err("user 0 does not exist".to_owned()));
        // The definitions are plain values, open to their builder methods.
        let def = review_prompt().title("Review");
        assert_eq!(def.prompt().title.as_deref(), Some("Review"));
        assert_eq!(profile_template().template().name, "profile");
        assert_eq!(notes_resource().resource().uri, "file:///notes.txt");
    }
}
