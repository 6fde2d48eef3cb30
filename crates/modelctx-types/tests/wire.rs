//! Snapshots of the exact wire form: the JSON-RPC envelope, and one message of each family
//! built through the public constructors. A snapshot pins the compact bytes, so a change of
//! key order, a renamed field or a newly emitted `null` shows up in review.

use std::fmt::Debug;
use std::sync::LazyLock;

use insta::assert_snapshot;
use jsonschema::{Draft, ValidatorMap};
use modelctx_types::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientCapabilities, ContentBlock,
    CreateMessageRequest, CreateMessageRequestParams, ElicitRequest, ElicitRequestFormParams,
    ElicitRequestUrlParams, ErrorCode, ErrorData, GetPromptResult, Implementation,
    InitializeRequest, InitializeRequestParams, InitializeResult, JsonObject, JsonRpcErrorResponse,
    JsonRpcMessage, JsonRpcNotification, JsonRpcRequest, JsonRpcResultResponse, ListRootsResult,
    LoggingLevel, LoggingMessageNotification, LoggingMessageNotificationParams, Meta, ModelHint,
    ModelPreferences, NumberSchema, NumberType, ProgressNotification, ProgressNotificationParams,
    PromptMessage, ProtocolVersion, ReadResourceResult, RequestId, RequestedSchema, ResourceLink,
    Role, Root, SamplingMessage, ServerCapabilities, StringSchema, Task, TaskMetadata, TaskStatus,
    TaskStatusNotification, TaskStatusNotificationParams, TextResourceContents,
    UntitledSingleSelectEnumSchema, to_raw,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// The official 2025-11-25 schema, compiled once (the copy the schema proof uses).
static SCHEMA: LazyLock<ValidatorMap> = LazyLock::new(|| {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/official-schema/2025-11-25/schema.json"
    );
    let text = std::fs::read_to_string(path).expect("the official schema is checked in");
    let document: Value = serde_json::from_str(&text).expect("the official schema is JSON");
    jsonschema::options()
        .with_draft(Draft::Draft202012)
        .should_validate_formats(true)
        .build_map(&document)
        .expect("the official schema compiles")
});

/// The compact JSON of a message built through constructors: it must validate against
/// `definition`, and read back into an equal value.
fn typed_wire<T>(definition: &str, value: &T) -> String
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    let text = wire(value);
    let json: Value = serde_json::from_str(&text).expect("wire output is JSON");
    let validator = SCHEMA
        .get(&format!("#/$defs/{definition}"))
        .unwrap_or_else(|| panic!("no definition {definition}"));
    let errors: Vec<String> = validator
        .iter_errors(&json)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{definition} {text}: {errors:?}");
    let back: T = serde_json::from_str(&text).expect("wire output reads back");
    assert_eq!(&back, value);
    text
}

/// A result as the response that carries it; the result must validate against `definition`.
fn result_response<T>(id: i64, definition: &str, result: &T) -> String
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    typed_wire(definition, result);
    wire_message(JsonRpcResultResponse::new(
        RequestId::from(id),
        to_raw(result).expect("results serialise"),
    ))
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

/// The compact JSON a value is sent as.
fn wire<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("wire types always serialise")
}

/// The compact JSON of a message, which must also parse back to the same bytes.
fn wire_message(message: impl Into<JsonRpcMessage>) -> String {
    let message = message.into();
    let bytes = String::from_utf8(message.to_vec()).expect("UTF-8");
    let reparsed = JsonRpcMessage::from_slice(bytes.as_bytes()).expect("our own output parses");
    assert_eq!(String::from_utf8(reparsed.to_vec()).expect("UTF-8"), bytes);
    bytes
}

#[test]
fn envelope_request() {
    let params = to_raw(&json!({"name": "get_forecast", "arguments": {"city": "Porto"}})).unwrap();
    assert_snapshot!(wire_message(JsonRpcRequest::new(
        RequestId::from(7),
        "tools/call",
        Some(params)
    )));
}

#[test]
fn envelope_request_with_string_id_and_no_params() {
    assert_snapshot!(wire_message(JsonRpcRequest::new(
        RequestId::from("ping-1"),
        "ping",
        None
    )));
}

#[test]
fn envelope_notification() {
    let params = to_raw(&json!({"progressToken": "p-1", "progress": 3, "total": 10})).unwrap();
    assert_snapshot!(wire_message(JsonRpcNotification::new(
        "notifications/progress",
        Some(params)
    )));
}

#[test]
fn envelope_notification_without_params() {
    assert_snapshot!(wire_message(JsonRpcNotification::new(
        "notifications/initialized",
        None
    )));
}

#[test]
fn envelope_result_response() {
    let result = to_raw(&json!({"tools": []})).unwrap();
    assert_snapshot!(wire_message(JsonRpcResultResponse::new(
        RequestId::from(7),
        result
    )));
}

#[test]
fn envelope_error_response_with_id() {
    let error = ErrorData::method_not_found("tools/rename");
    assert_snapshot!(wire_message(JsonRpcErrorResponse::new(
        Some(RequestId::from("req-3")),
        error
    )));
}

#[test]
fn envelope_error_response_without_id() {
    // A parse error: the request id could not be read, so the response has none.
    let error = ErrorData::parse_error("Parse error").with_data(json!({"offset": 1}));
    let response = JsonRpcErrorResponse::new(None, error);
    assert_eq!(response.error.code, ErrorCode::PARSE_ERROR);
    assert_snapshot!(wire_message(response));
}

#[test]
fn envelope_error_response_for_a_missing_resource() {
    let error = ErrorData::resource_not_found("file:///srv/missing.txt");
    assert_eq!(error.code, ErrorCode::RESOURCE_NOT_FOUND);
    assert_snapshot!(wire(&JsonRpcErrorResponse::new(
        Some(RequestId::from(12)),
        error
    )));
}

#[test]
fn initialize_request() {
    let capabilities = ClientCapabilities::new()
        .with_roots(true)
        .with_sampling()
        .with_elicitation_form()
        .with_elicitation_url();
    let client = Implementation::new("harbour-desktop", "2.3.0").with_title("Harbour Desktop");
    let params = InitializeRequestParams::new(ProtocolVersion::V2025_11_25, capabilities, client);
    assert_snapshot!(typed_wire(
        "InitializeRequest",
        &InitializeRequest::new(0, params)
    ));
}

#[test]
fn initialize_result() {
    let capabilities = ServerCapabilities::new()
        .with_tools(true)
        .with_resources(true, false)
        .with_prompts(false)
        .with_logging()
        .with_completions()
        .with_tool_tasks();
    let server = Implementation::new("tidewater-server", "0.9.1");
    let result = InitializeResult::new(ProtocolVersion::V2025_11_25, capabilities, server)
        .with_instructions("Call get_forecast before planning a passage.");
    assert_snapshot!(result_response(0, "InitializeResult", &result));
}

#[test]
fn tools_call_request() {
    let params = CallToolRequestParams::new("get_forecast")
        .with_arguments(object(json!({"city": "Porto", "days": 2})));
    assert_snapshot!(typed_wire(
        "CallToolRequest",
        &CallToolRequest::new(1, params)
    ));
}

#[test]
fn tools_call_request_as_a_task() {
    let params = CallToolRequestParams::new("export_stations")
        .with_task(TaskMetadata::new().with_ttl(600_000u64));
    assert_snapshot!(typed_wire(
        "CallToolRequest",
        &CallToolRequest::new("call-9", params)
    ));
}

#[test]
fn tools_call_result() {
    let result = CallToolResult::new(vec![ContentBlock::text("Porto: 19°C, wind NW 12 km/h.")])
        .with_structured_content(object(json!({"city": "Porto", "temperatureC": 19})));
    assert_snapshot!(result_response(1, "CallToolResult", &result));
}

#[test]
fn tools_call_error_result() {
    let result = CallToolResult::error("Unknown marina 'east'.");
    assert!(result.is_error());
    assert_snapshot!(result_response(2, "CallToolResult", &result));
}

#[test]
fn resources_read_result() {
    let contents = TextResourceContents::new("file:///srv/harbour/README.md", "# Harbour\n")
        .with_mime_type("text/markdown");
    let result = ReadResourceResult::new(vec![contents.into()]);
    assert_snapshot!(result_response(3, "ReadResourceResult", &result));
}

#[test]
fn prompts_get_result() {
    let link = ResourceLink::new("file:///srv/harbour/tides.rs", "tides.rs");
    let result = GetPromptResult::new(vec![
        PromptMessage::user_text("Plan a passage leaving Porto tomorrow."),
        PromptMessage::new(Role::Assistant, link),
    ])
    .with_description("Passage plan");
    assert_snapshot!(result_response(4, "GetPromptResult", &result));
}

#[test]
fn sampling_create_message_request() {
    let preferences = ModelPreferences::new()
        .with_hints(vec![ModelHint::new("claude-sonnet")])
        .with_speed_priority(0.75);
    let params = CreateMessageRequestParams::new(
        vec![SamplingMessage::user_text(
            "Which harbour is calmer tomorrow?",
        )],
        400,
    )
    .with_system_prompt("You are a careful sailing assistant.")
    .with_model_preferences(preferences);
    assert_snapshot!(typed_wire(
        "CreateMessageRequest",
        &CreateMessageRequest::new(5, params)
    ));
}

#[test]
fn elicitation_create_form_request() {
    let schema = RequestedSchema::new()
        .with_property("boat", StringSchema::new().with_title("Boat name"), true)
        .with_property(
            "lengthM",
            NumberSchema::new(NumberType::Number).with_minimum(2.5),
            true,
        )
        .with_property(
            "marina",
            UntitledSingleSelectEnumSchema::new(vec!["north".into(), "south".into()]),
            false,
        );
    let params = ElicitRequestFormParams::new("Describe your boat.", schema);
    assert_snapshot!(typed_wire(
        "ElicitRequest",
        &ElicitRequest::new(6, params.into())
    ));
}

#[test]
fn elicitation_create_url_request() {
    let params = ElicitRequestUrlParams::new(
        "Sign in to Tidewater.",
        "elic-3d8a2f",
        "https://auth.tidewater.example/connect?session=3d8a2f",
    );
    assert_snapshot!(typed_wire(
        "ElicitRequest",
        &ElicitRequest::new(7, params.into())
    ));
}

#[test]
fn roots_list_result() {
    let result = ListRootsResult::new(vec![
        Root::new("file:///home/ana/projects/harbour").with_name("harbour"),
        Root::new("file:///srv/shared"),
    ]);
    assert_snapshot!(result_response(8, "ListRootsResult", &result));
}

#[test]
fn logging_message_notification() {
    let params = LoggingMessageNotificationParams::new(
        LoggingLevel::Warning,
        json!({"message": "station 17 is late", "station": 17}),
    )
    .with_logger("tidewater.feed");
    assert_snapshot!(typed_wire(
        "LoggingMessageNotification",
        &LoggingMessageNotification::new(params)
    ));
}

#[test]
fn progress_notification() {
    let params = ProgressNotificationParams::new("prog-1", 3.0)
        .with_total(12.0)
        .with_message("Read 3 of 12 stations");
    assert_snapshot!(typed_wire(
        "ProgressNotification",
        &ProgressNotification::new(params)
    ));
}

#[test]
fn task_status_notification() {
    let task = Task::new(
        "task-5c1d9e",
        TaskStatus::InputRequired,
        "2025-11-25T10:30:00Z",
        "2025-11-25T10:31:12Z",
        None,
    )
    .with_status_message("Waiting for the user to pick a marina")
    .with_poll_interval(2_000u64);
    let mut meta = Meta::new();
    meta.insert("com.example/seq", json!(4));
    let params = TaskStatusNotificationParams::new(task).with_meta(meta);
    assert_snapshot!(typed_wire(
        "TaskStatusNotification",
        &TaskStatusNotification::new(params)
    ));
}
