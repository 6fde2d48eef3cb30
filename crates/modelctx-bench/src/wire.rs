//! The JSON-RPC text the raw load generators send, and the check they apply to each
//! answer. Built once per request with `format!`, the same for every target.

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::{ASK_TOOL, PROTOCOL_VERSION, TEXT, TOOL};

/// The sender of one HTTP/1.1 connection the raw load generators send on.
pub type Http1Sender = hyper::client::conn::http1::SendRequest<http_body_util::Full<bytes::Bytes>>;

/// Opens one HTTP/1.1 connection to `addr` (no delay on its socket), its connection
/// task spawned: the sender to send on.
pub async fn open_http1(addr: &str) -> Result<Http1Sender, String> {
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("cannot connect: {e}"))?;
    let _ = stream.set_nodelay(true);
    let (sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(|e| e.to_string())?;
    tokio::spawn(connection);
    Ok(sender)
}

/// The protocol version of the 2026 scenarios.
pub const PROTOCOL_2026: &str = "2026-07-28";

/// The `_meta` envelope every 2026-07-28 request carries (form elicitation declared).
const ENVELOPE_2026: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}},"io.modelcontextprotocol/clientInfo":{"name":"bench-load","version":"0.1.0"}}"#;

/// The `initialize` request, with id 0.
pub fn initialize() -> String {
    initialize_at(PROTOCOL_VERSION)
}

/// The `initialize` request asking for protocol `version`, with id 0.
pub fn initialize_at(version: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{version}","capabilities":{{}},"clientInfo":{{"name":"bench-load","version":"0.1.0"}}}}}}"#
    )
}

/// The `notifications/initialized` notification.
pub fn initialized() -> &'static str {
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#
}

/// A `tools/call` of the echo tool with request id `id`.
pub fn call(id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{TOOL}","arguments":{{"text":"{TEXT}"}}}}}}"#
    )
}

/// A 2026-07-28 `tools/call` of `tool` (the echo tool or [`ASK_TOOL`]) with request id
/// `id`: its envelope in `_meta`, no handshake before it.
pub fn call_2026(id: u64, tool: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{"text":"{TEXT}"}},{ENVELOPE_2026}}}}}"#
    )
}

/// The retry of a [`ASK_TOOL`] call: the user's confirmation under `key`, and the
/// server's `requestState` echoed back.
pub fn retry_2026(id: u64, key: &str, state: &str) -> Result<String, String> {
    let key = serde_json::to_string(key).map_err(|e| e.to_string())?;
    let state = serde_json::to_string(state).map_err(|e| e.to_string())?;
    Ok(format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{ASK_TOOL}","arguments":{{"text":"{TEXT}"}},"inputResponses":{{{key}:{{"action":"accept","content":{{"confirm":true}}}}}},"requestState":{state},{ENVELOPE_2026}}}}}"#
    ))
}

/// The protocol version of the task scenario (tasks came with 2025-11-25).
pub const PROTOCOL_TASKS: &str = "2025-11-25";

/// The `initialize` request of the task scenario, with id 0.
pub fn initialize_tasks() -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{PROTOCOL_TASKS}","capabilities":{{}},"clientInfo":{{"name":"bench-load","version":"0.1.0"}}}}}}"#
    )
}

/// A task-augmented `tools/call` of the echo tool (protocol 2025-11-25).
pub fn task_call(id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{TOOL}","arguments":{{"text":"{TEXT}"}},"task":{{"ttl":60000}}}}}}"#
    )
}

/// `tasks/result` for `task`, with request id `id`.
pub fn task_result(id: u64, task: &str) -> Result<String, String> {
    let task = serde_json::to_string(task).map_err(|e| e.to_string())?;
    Ok(format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tasks/result","params":{{"taskId":{task}}}}}"#
    ))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CreatedTask {
    task_id: String,
}

#[derive(Deserialize)]
struct CreateTaskResult {
    task: CreatedTask,
}

#[derive(Deserialize)]
struct CreateTaskAnswer {
    id: Option<u64>,
    result: Option<CreateTaskResult>,
}

/// Reads the answer to a task-augmented call `id`: the created task's id.
pub fn created_task(text: &str, id: u64) -> Result<String, String> {
    let answer: CreateTaskAnswer =
        serde_json::from_str(text).map_err(|e| format!("not a CreateTaskResult ({e}): {text}"))?;
    match (answer.id, answer.result) {
        (Some(got), Some(result)) if got == id => Ok(result.task.task_id),
        _ => Err(format!("expected a task for {id}: {text}")),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InputRequired {
    result_type: String,
    input_requests: std::collections::BTreeMap<String, serde::de::IgnoredAny>,
    request_state: String,
}

#[derive(Deserialize)]
struct InterimAnswer {
    id: Option<u64>,
    result: Option<InputRequired>,
}

/// Reads the first answer to a [`ASK_TOOL`] call: it must be answer `id` with
/// `resultType` `input_required`, one input request and a `requestState`; returns the
/// request's key and the state.
pub fn input_required(text: &str, id: u64) -> Result<(String, String), String> {
    let answer: InterimAnswer = serde_json::from_str(text)
        .map_err(|e| format!("not an input_required answer ({e}): {text}"))?;
    let result = match (answer.id, answer.result) {
        (Some(got), Some(result)) if got == id && result.result_type == "input_required" => result,
        _ => return Err(format!("expected input_required for {id}: {text}")),
    };
    let mut keys = result.input_requests.into_keys();
    match (keys.next(), keys.next()) {
        (Some(key), None) => Ok((key, result.request_state)),
        _ => Err(format!("expected one input request: {text}")),
    }
}

#[derive(Deserialize)]
struct Answer<'a> {
    id: Option<u64>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
}

/// Reads one JSON-RPC message: `Ok(Some(id))` for an answer that carries the echoed
/// text and no error, `Ok(None)` for a message without an id (a notification), an error
/// for anything else.
pub fn answer_id(text: &str) -> Result<Option<u64>, String> {
    let answer: Answer<'_> =
        serde_json::from_str(text).map_err(|e| format!("unreadable answer ({e}): {text}"))?;
    if let Some(error) = answer.error {
        return Err(format!("error answer: {}", error.get()));
    }
    match answer.id {
        Some(id) if id > 0 && !text.contains(TEXT) => {
            Err(format!("answer {id} lacks the echoed text: {text}"))
        }
        id => Ok(id),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_checked() {
        let ok = format!(
            r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":[{{"type":"text","text":"{TEXT}"}}]}}}}"#
        );
        assert_eq!(answer_id(&ok), Ok(Some(7)));
        assert_eq!(answer_id(initialized()), Ok(None));
        assert!(answer_id(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#).is_err());
        assert!(answer_id(r#"{"jsonrpc":"2.0","id":7,"error":{"code":1}}"#).is_err());
        assert!(answer_id("not json").is_err());
        // The requests themselves parse as answers (the stdio baseline echoes them).
        assert_eq!(answer_id(&call(3)), Ok(Some(3)));
        assert_eq!(answer_id(&call_2026(4, TOOL)), Ok(Some(4)));
        let retry = retry_2026(5, "input-0", "sealed\"state").unwrap();
        let parsed: serde_json::Value = serde_json::from_str(&retry).unwrap();
        assert_eq!(parsed["params"]["requestState"], "sealed\"state");
        assert_eq!(
            parsed["params"]["inputResponses"]["input-0"]["content"]["confirm"],
            true
        );
        let interim = r#"{"jsonrpc":"2.0","id":6,"result":{"resultType":"input_required","inputRequests":{"k":{"method":"elicitation/create"}},"requestState":"s"}}"#;
        assert_eq!(input_required(interim, 6), Ok(("k".into(), "s".into())));
        assert!(input_required(interim, 7).is_err());
        assert!(input_required(&ok, 7).is_err());
        let created =
            r#"{"jsonrpc":"2.0","id":8,"result":{"task":{"taskId":"t-1","status":"working"}}}"#;
        assert_eq!(created_task(created, 8), Ok("t-1".into()));
        assert!(created_task(created, 9).is_err());
        let fetch: serde_json::Value =
            serde_json::from_str(&task_result(9, "t\"1").unwrap()).unwrap();
        assert_eq!(fetch["params"]["taskId"], "t\"1");
        let call: serde_json::Value = serde_json::from_str(&task_call(10)).unwrap();
        assert_eq!(call["params"]["task"]["ttl"], 60000);
    }
}
