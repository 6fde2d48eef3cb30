//! The JSON-RPC text the raw load generators send, and the check they apply to each
//! answer. Built once per request with `format!`, the same for every target.

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::{PROTOCOL_VERSION, TEXT, TOOL};

/// The `initialize` request, with id 0.
pub fn initialize() -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{PROTOCOL_VERSION}","capabilities":{{}},"clientInfo":{{"name":"bench-load","version":"0.1.0"}}}}}}"#
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
    }
}
