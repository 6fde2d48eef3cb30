//! The stateless era (protocol 2026-07-28) served by the same server as the handshake
//! era: a scripted client (`MockPeer`) sends raw messages, and each test reads in the
//! order of the conversation. Every wait is bounded by the mock's timeout.

use modelctx_memory::MockPeer;
use modelctx_server::{Context, Server, ToolDef};
use modelctx_types::{CallToolResult, ErrorCode, RequestId, Tool};
use serde_json::{Value, json};

use crate::support::{envelope, handshake, serve};

/// The envelope every request of the era carries in `_meta`, plus `extra` keys.
fn meta(extra: Value) -> Value {
    let mut meta = envelope(json!({}));
    if let (Value::Object(m), Value::Object(e)) = (&mut meta, extra) {
        m.extend(e);
    }
    meta
}

/// Sends request `id` of the era: `params` with the envelope in `_meta`.
async fn send_in_era(mock: &MockPeer, id: i64, method: &'static str, mut params: Value) {
    params["_meta"] = envelope(json!({}));
    mock.request(id, method, params).await;
}

/// Sends request `id` of the era and awaits its result.
async fn ask(mock: &mut MockPeer, id: i64, method: &'static str, params: Value) -> Value {
    send_in_era(mock, id, method, params).await;
    mock.expect_result(id).await
}

/// Reads `uri` in the era and returns the result.
async fn read_in_era(mock: &mut MockPeer, id: i64, uri: &str) -> Value {
    ask(mock, id, "resources/read", json!({ "uri": uri })).await
}

/// The text of the first content of request `id`'s result.
async fn result_text(mock: &mut MockPeer, id: i64) -> Value {
    mock.expect_result(id).await["content"][0]["text"].clone()
}

fn logging_tool() -> ToolDef {
    let tool = Tool::new(
        "chatty",
        json!({"type": "object"}).as_object().unwrap().clone(),
    );
    ToolDef::with_schema(tool, |_args, cx: Context| async move {
        cx.info(json!("working")).await.map_err(|e| e.to_string())?;
        Ok::<_, String>(CallToolResult::text("done"))
    })
}

fn server(stateless: bool) -> Server {
    let builder = Server::builder("era-server", "2.0.0")
        .instructions("Serves both eras.")
        .tool(logging_tool())
        .unwrap()
        .enable_resources();
    let builder = builder.stateless_era(stateless);
    builder.build()
}

#[tokio::test]
async fn discover_answers_versions_capabilities_and_identity_without_a_handshake() {
    let (_session, mut mock) = serve(&server(true));
    let result = ask(&mut mock, 1, "server/discover", json!({})).await;
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["supportedVersions"], json!(["2026-07-28"]));
    assert!(result["capabilities"]["tools"].is_object());
    assert_eq!(result["instructions"], "Serves both eras.");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"],
        json!({"name": "era-server", "version": "2.0.0"})
    );
    assert_eq!(result["ttlMs"], 0);
    assert_eq!(result["cacheScope"], "private");
}

#[tokio::test]
async fn each_request_stands_on_its_own_envelope() {
    let (session, mut mock) = serve(&server(true));
    let listed = ask(&mut mock, 1, "tools/list", json!({})).await;
    assert_eq!(listed["tools"][0]["name"], "chatty");
    assert_eq!(listed["resultType"], "complete");
    assert_eq!(listed["ttlMs"], 0);
    assert_eq!(listed["cacheScope"], "private");
    assert_eq!(
        listed["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "era-server"
    );
    assert!(session.is_initialized(), "no handshake is needed");

    // No log level on the request: the handler's log message is not sent.
    let called = ask(
        &mut mock,
        2,
        "tools/call",
        json!({"name": "chatty", "arguments": {}}),
    )
    .await;
    assert_eq!(called["content"][0]["text"], "done");
    assert_eq!(called["resultType"], "complete");
    assert!(called.get("ttlMs").is_none(), "tools/call is not cacheable");

    // With one, it is, before the result.
    mock.request(
        3,
        "tools/call",
        json!({"name": "chatty", "arguments": {},
            "_meta": meta(json!({"io.modelcontextprotocol/logLevel": "debug"}))}),
    )
    .await;
    let log = mock.expect_notification("notifications/message").await;
    let params: Value = serde_json::from_str(log.params.unwrap().get()).unwrap();
    assert_eq!(params["data"], "working");
    assert_eq!(result_text(&mut mock, 3).await, "done");
}

#[tokio::test]
async fn a_bad_envelope_is_refused_with_the_spec_error() {
    let (_session, mut mock) = serve(&server(true));
    mock.request(
        1,
        "tools/list",
        json!({"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2099-01-01",
            "io.modelcontextprotocol/clientCapabilities": {},
        }}),
    )
    .await;
    let error = mock.expect_error(Some(RequestId::from(1))).await;
    assert_eq!(error.code, ErrorCode::UNSUPPORTED_PROTOCOL_VERSION);
    assert_eq!(
        error.data,
        Some(json!({"supported": ["2026-07-28"], "requested": "2099-01-01"}))
    );

    mock.request(
        2,
        "tools/list",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}),
    )
    .await;
    let error = mock.expect_error(Some(RequestId::from(2))).await;
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    assert!(error.message.contains("clientCapabilities"), "{error}");

    // Once the session serves the era, a request without the envelope is refused too.
    mock.request(3, "tools/list", json!({})).await;
    let error = mock.expect_error(Some(RequestId::from(3))).await;
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
}

#[tokio::test]
async fn methods_the_era_removed_are_unknown_methods() {
    let (_session, mut mock) = serve(&server(true));
    for (id, method) in [
        (1, "ping"),
        (2, "logging/setLevel"),
        (3, "resources/subscribe"),
        (4, "initialize"),
    ] {
        send_in_era(&mock, id, method, json!({})).await;
        let error = mock.expect_error(Some(RequestId::from(id))).await;
        assert_eq!(error.code, ErrorCode::METHOD_NOT_FOUND, "{method}");
    }
}

#[tokio::test]
async fn a_missing_resource_is_invalid_params_with_its_uri() {
    let (_session, mut mock) = serve(&server(true));
    send_in_era(&mock, 1, "resources/read", json!({"uri": "test://nowhere"})).await;
    let error = mock.expect_error(Some(RequestId::from(1))).await;
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    assert_eq!(error.data, Some(json!({"uri": "test://nowhere"})));
}

#[tokio::test]
async fn the_handshake_era_is_unchanged_on_the_same_server() {
    let (session, mut mock) = serve(&server(true));
    let init = handshake(&mut mock, json!({})).await;
    assert_eq!(init["protocolVersion"], "2025-11-25");
    assert!(init.get("resultType").is_none());
    mock.request(1, "ping", json!({})).await;
    assert_eq!(mock.expect_result(1).await, json!({}));
    mock.request(2, "tools/list", json!({})).await;
    let listed = mock.expect_result(2).await;
    assert!(listed.get("resultType").is_none());
    assert!(listed.get("ttlMs").is_none());
    assert_eq!(session.protocol_version().unwrap().as_str(), "2025-11-25");
}

#[tokio::test]
async fn without_the_era_switched_on_an_envelope_is_no_handshake() {
    let (_session, mut mock) = serve(&server(false));
    send_in_era(&mock, 1, "server/discover", json!({})).await;
    let error = mock.expect_error(Some(RequestId::from(1))).await;
    assert_eq!(error.code, ErrorCode::INVALID_REQUEST);
}

#[tokio::test]
async fn read_results_carry_caching_hints() {
    let server = server(true);
    server
        .add_resource(modelctx_server::ResourceDef::new(
            "test://here",
            "here",
            |_cx: Context| async move { Ok::<_, String>("hello") },
        ))
        .unwrap();
    let (_session, mut mock) = serve(&server);
    let read = read_in_era(&mut mock, 1, "test://here").await;
    assert_eq!(read["contents"][0]["text"], "hello");
    assert_eq!(read["ttlMs"], 0);
    assert_eq!(read["cacheScope"], "private");
    assert_eq!(read["resultType"], "complete");
}

/// `greet`: asks the user's name (under the key `user_name`), then greets them. The same
/// handler serves both eras.
fn greeter() -> Server {
    let schema = modelctx_server::form_schema::<NameForm>().unwrap();
    let tool = Tool::new(
        "greet",
        json!({"type": "object"}).as_object().unwrap().clone(),
    );
    let greet = ToolDef::with_schema(tool, move |_args, cx: Context| {
        let schema = schema.clone();
        async move {
            let answer = cx
                .with_input_key("user_name")
                .elicit_form_schema("What is your name?", schema)
                .await
                .map_err(|e| e.to_string())?;
            let name = answer
                .accepted()
                .and_then(|form| form.get("name").cloned())
                .map(|v| serde_json::to_value(v).unwrap())
                .unwrap_or(json!("stranger"));
            Ok::<_, String>(CallToolResult::text(format!(
                "Hello, {}!",
                name.as_str().unwrap_or("?")
            )))
        }
    });
    let tool = Tool::new(
        "survey",
        json!({"type": "object"}).as_object().unwrap().clone(),
    );
    let survey = ToolDef::with_schema(tool, |_args, cx: Context| async move {
        let params = modelctx_types::CreateMessageRequestParams::new(
            vec![modelctx_types::SamplingMessage::new(
                modelctx_types::Role::User,
                modelctx_types::SamplingMessageContentBlock::text("Say hi"),
            )],
            20,
        );
        let (sampled, roots) = futures::join!(cx.sample(params), cx.list_roots());
        let sampled = sampled.map_err(|e| e.to_string())?;
        let roots = roots.map_err(|e| e.to_string())?;
        Ok::<_, String>(CallToolResult::text(format!(
            "{} / {} roots",
            sampled.model,
            roots.len()
        )))
    });
    Server::builder("mrtr", "1.0.0")
        .tool(greet)
        .unwrap()
        .tool(survey)
        .unwrap()
        .build()
}

#[derive(serde::Deserialize, modelctx_server::schemars::JsonSchema)]
#[schemars(crate = "modelctx_server::schemars")]
#[allow(dead_code)]
struct NameForm {
    /// Your name.
    name: String,
}

fn with_caps(caps: Value) -> Value {
    meta(json!({"io.modelcontextprotocol/clientCapabilities": caps}))
}

#[tokio::test]
async fn a_handler_asks_for_input_in_rounds_in_the_stateless_era() {
    let (_session, mut mock) = serve(&greeter());
    let caps = json!({"elicitation": {}});
    mock.request(
        1,
        "tools/call",
        json!({"name": "greet", "arguments": {}, "_meta": with_caps(caps.clone())}),
    )
    .await;
    let interim = mock.expect_result(1).await;
    assert_eq!(interim["resultType"], "input_required");
    let asked = &interim["inputRequests"]["user_name"];
    assert_eq!(asked["method"], "elicitation/create");
    assert_eq!(asked["params"]["message"], "What is your name?");
    assert!(interim.get("ttlMs").is_none());
    let state = interim["requestState"].clone();
    assert!(state.is_string());

    // The retry: a new id, the answers by key, the state echoed; an extra answer is
    // ignored.
    mock.request(
        2,
        "tools/call",
        json!({"name": "greet", "arguments": {}, "_meta": with_caps(caps.clone()),
            "inputResponses": {
                "user_name": {"action": "accept", "content": {"name": "Ada"}},
                "unasked": {"action": "decline"}},
            "requestState": state}),
    )
    .await;
    let done = mock.expect_result(2).await;
    assert_eq!(done["resultType"], "complete");
    assert_eq!(done["content"][0]["text"], "Hello, Ada!");

    // A tampered state is refused, never trusted.
    let tampered = format!("{}x", state.as_str().unwrap());
    mock.request(
        3,
        "tools/call",
        json!({"name": "greet", "arguments": {}, "_meta": with_caps(caps.clone()),
            "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Eve"}}},
            "requestState": tampered}),
    )
    .await;
    let error = mock.expect_error(Some(RequestId::from(3))).await;
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);

    // An answer of the wrong shape is refused too.
    mock.request(
        4,
        "tools/call",
        json!({"name": "greet", "arguments": {}, "_meta": with_caps(caps),
            "inputResponses": {"user_name": 12345},
            "requestState": state}),
    )
    .await;
    let error = mock.expect_error(Some(RequestId::from(4))).await;
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
}

#[tokio::test]
async fn inputs_asked_together_come_in_one_round() {
    let (_session, mut mock) = serve(&greeter());
    let caps = json!({"sampling": {}, "roots": {}});
    mock.request(
        1,
        "tools/call",
        json!({"name": "survey", "arguments": {}, "_meta": with_caps(caps.clone())}),
    )
    .await;
    let interim = mock.expect_result(1).await;
    let asked = interim["inputRequests"].as_object().unwrap();
    let methods: Vec<&str> = asked
        .values()
        .map(|r| r["method"].as_str().unwrap())
        .collect();
    assert_eq!(methods, ["sampling/createMessage", "roots/list"]);
    let keys: Vec<&String> = asked.keys().collect();
    mock.request(
        2,
        "tools/call",
        json!({"name": "survey", "arguments": {}, "_meta": with_caps(caps),
            "inputResponses": {
                keys[0].as_str(): {"role": "assistant", "content": {"type": "text", "text": "hi"},
                    "model": "m-1"},
                keys[1].as_str(): {"roots": [{"uri": "file:///a"}]}},
            "requestState": interim["requestState"]}),
    )
    .await;
    assert_eq!(result_text(&mut mock, 2).await, "m-1 / 1 roots");
}

#[tokio::test]
async fn input_the_client_cannot_give_fails_the_request_with_missing_capability() {
    let (_session, mut mock) = serve(&greeter());
    mock.request(
        1,
        "tools/call",
        json!({"name": "greet", "arguments": {}, "_meta": with_caps(json!({}))}),
    )
    .await;
    let error = mock.expect_error(Some(RequestId::from(1))).await;
    assert_eq!(error.code, ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY);
    assert_eq!(
        error.data,
        Some(json!({"requiredCapabilities": {"elicitation": {"form": {}}}}))
    );
}

#[tokio::test]
async fn the_same_handler_sends_a_request_in_a_session() {
    let (_session, mut mock) = serve(&greeter());
    handshake(&mut mock, json!({"elicitation": {}})).await;
    mock.request(1, "tools/call", json!({"name": "greet", "arguments": {}}))
        .await;
    let asked = mock.expect_request("elicitation/create").await;
    mock.respond(
        asked.id,
        json!({"action": "accept", "content": {"name": "Grace"}}),
    )
    .await;
    assert_eq!(result_text(&mut mock, 1).await, "Hello, Grace!");
}

#[tokio::test]
async fn a_server_may_let_clients_keep_its_lists() {
    let server = Server::builder("cacheable", "1.0.0")
        .tool(logging_tool())
        .unwrap()
        .cache_hints(
            std::time::Duration::from_secs(300),
            modelctx_types::CacheScope::Public,
        )
        .build();
    let (_session, mut mock) = serve(&server);
    let listed = ask(&mut mock, 1, "tools/list", json!({})).await;
    assert_eq!(listed["ttlMs"], 300_000);
    assert_eq!(listed["cacheScope"], "public");
    let found = ask(&mut mock, 2, "server/discover", json!({})).await;
    assert_eq!(found["ttlMs"], 300_000);
    assert_eq!(found["cacheScope"], "public");
}

/// A result's caching hints: `ttlMs` and `cacheScope`.
fn hints_of(result: &Value) -> (Value, Value) {
    (result["ttlMs"].clone(), result["cacheScope"].clone())
}

/// A server whose entries carry caching hints of their own: `stable` (five minutes,
/// public), `fresh` (one second, public) and `mine` (no hints: the server's ten seconds,
/// public), listed two per page; a resource and a template with hints of their own.
fn hinted_server() -> Server {
    use modelctx_server::{PromptDef, ResourceDef, TemplateDef};
    use modelctx_types::CacheScope;
    use std::time::Duration;
    let tool = |name: &str| {
        ToolDef::with_schema(
            Tool::new(name, json!({"type": "object"}).as_object().unwrap().clone()),
            |_args, _cx: Context| async move { Ok::<_, String>(CallToolResult::text("ok")) },
        )
    };
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Name {
        name: String,
    }
    Server::builder("hinted", "1.0.0")
        .page_size(2)
        .cache_hints(Duration::from_secs(10), CacheScope::Public)
        .tool(tool("stable").cache_hints(Duration::from_secs(300), CacheScope::Public))
        .unwrap()
        .tool(tool("fresh").cache_hints(Duration::from_secs(1), CacheScope::Public))
        .unwrap()
        .tool(tool("mine"))
        .unwrap()
        .prompt(
            PromptDef::new("per-user", |_a: Name, _cx: Context| async move {
                Ok::<_, String>("hi".to_owned())
            })
            .cache_hints(Duration::from_secs(60), CacheScope::Private),
        )
        .unwrap()
        .resource(
            ResourceDef::new("test://motd", "motd", |_cx: Context| async move {
                Ok::<_, String>("hello")
            })
            .cache_hints(Duration::from_secs(30), CacheScope::Public),
        )
        .unwrap()
        .resource_template(
            TemplateDef::new(
                "test://users/{name}",
                "user",
                |a: Name, _cx: Context| async move { Ok::<_, String>(format!("user {}", a.name)) },
            )
            .cache_hints(Duration::from_secs(5), CacheScope::Private),
        )
        .unwrap()
        .build()
}

#[tokio::test]
async fn entries_with_hints_of_their_own_set_the_hints_of_the_lists_and_reads_they_are_in() {
    let (_session, mut mock) = serve(&hinted_server());

    // Page one (`fresh`, `mine`): fresh for the shorter of one second and the server's
    // ten; every tool of the list is public, so the page is.
    let first = ask(&mut mock, 1, "tools/list", json!({})).await;
    assert_eq!(first["tools"][0]["name"], "fresh");
    assert_eq!(first["ttlMs"], 1_000);
    assert_eq!(first["cacheScope"], "public");

    // Page two (`stable`) has its own five minutes.
    let cursor = first["nextCursor"].clone();
    let second = ask(&mut mock, 2, "tools/list", json!({"cursor": cursor})).await;
    assert_eq!(second["tools"][0]["name"], "stable");
    assert_eq!(second["ttlMs"], 300_000);
    assert_eq!(second["cacheScope"], "public");

    // A private prompt makes its list private.
    let prompts = ask(&mut mock, 3, "prompts/list", json!({})).await;
    assert_eq!(prompts["ttlMs"], 60_000);
    assert_eq!(prompts["cacheScope"], "private");

    // A resource's hints cover its listing and its reads.
    let listed = ask(&mut mock, 4, "resources/list", json!({})).await;
    assert_eq!(hints_of(&listed), (json!(30_000), json!("public")));
    let read = read_in_era(&mut mock, 5, "test://motd").await;
    assert_eq!(read["contents"][0]["text"], "hello");
    assert_eq!(hints_of(&read), (json!(30_000), json!("public")));

    // And a template's cover its listing and every read it serves.
    let templates = ask(&mut mock, 6, "resources/templates/list", json!({})).await;
    assert_eq!(hints_of(&templates), (json!(5_000), json!("private")));
    let user = read_in_era(&mut mock, 7, "test://users/ada").await;
    assert_eq!(user["contents"][0]["text"], "user ada");
    assert_eq!(hints_of(&user), (json!(5_000), json!("private")));
}

#[tokio::test]
async fn entries_with_hints_of_their_own_add_nothing_in_the_handshake_era() {
    let (_session, mut mock) = serve(&hinted_server());
    handshake(&mut mock, json!({})).await;
    for (id, method, params) in [
        (1, "tools/list", json!({})),
        (2, "prompts/list", json!({})),
        (3, "resources/templates/list", json!({})),
        (4, "resources/read", json!({"uri": "test://motd"})),
    ] {
        mock.request(id, method, params).await;
        let result = mock.expect_result(id).await;
        assert!(result.get("ttlMs").is_none(), "{method}: {result}");
        assert!(result.get("cacheScope").is_none(), "{method}: {result}");
    }
}
