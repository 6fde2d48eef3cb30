//! The unions of every message each side sends: [`ClientRequest`], [`ServerRequest`],
//! [`ClientNotification`], [`ServerNotification`], [`ClientResult`], [`ServerResult`].
//!
//! Requests and notifications are tagged by `method`: an unknown method is an error
//! (use [`ClientRequest::from_json_rpc`] and friends to get the JSON-RPC error that
//! answers it). Results carry no tag, so their deserialisation follows a fixed rule
//! based on which members are present (documented on each enum); when the request's
//! method is known, [`ServerResult::from_method`] / [`ClientResult::from_method`] decode
//! exactly the expected type instead.
//!
//! The unions' conversions (`from_parts`, `to_json_rpc`, `from_method`, ...) are
//! `#[inline]`: each one instantiates the serde code of every type of its union, so it
//! is compiled only into the crates that call it, not into every build of this crate.

mod notifications;
mod requests;
mod results;
mod union;

pub use notifications::{ClientNotification, ServerNotification};
pub use requests::{ClientRequest, ServerRequest};
pub use results::{ClientResult, ServerResult};

use serde_json::Value;
use serde_json::value::RawValue;

use crate::base::JsonObject;
use crate::error::ErrorData;
use crate::jsonrpc::{JSONRPC_VERSION, RequestId, to_raw};

/// Builds `{"jsonrpc","id"?,"method","params"?}` from envelope parts.
fn envelope(
    id: Option<&RequestId>,
    method: &str,
    params: Option<&RawValue>,
) -> Result<JsonObject, ErrorData> {
    let mut map = JsonObject::new();
    map.insert("jsonrpc".to_owned(), Value::from(JSONRPC_VERSION));
    if let Some(id) = id {
        map.insert(
            "id".to_owned(),
            serde_json::to_value(id).map_err(|e| ErrorData::internal_error(e.to_string()))?,
        );
    }
    map.insert("method".to_owned(), Value::from(method));
    if let Some(params) = params {
        let params: Value = serde_json::from_str(params.get())
            .map_err(|e| ErrorData::invalid_params(format!("Invalid params: {e}")))?;
        map.insert("params".to_owned(), params);
    }
    Ok(map)
}

fn params_of(map: &mut JsonObject) -> Result<Option<Box<RawValue>>, serde_json::Error> {
    map.remove("params").map(|p| to_raw(&p)).transpose()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ErrorCode, JsonRpcMessage};
    use serde_json::json;

    #[test]
    fn request_union_dispatch_and_errors() {
        let msg: JsonRpcMessage =
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"x"}}"#
                .parse()
                .unwrap();
        let JsonRpcMessage::Request(req) = msg else {
            panic!()
        };
        let r = ClientRequest::from_json_rpc(&req).unwrap();
        assert_eq!(r.method(), "tools/call");
        assert_eq!(r.id(), Some(&RequestId::Number(5)));
        let back = r.to_json_rpc().unwrap();
        assert_eq!(back.params.unwrap().get(), r#"{"name":"x"}"#);

        let err = ClientRequest::from_parts(Some(&RequestId::Number(1)), "nope", None).unwrap_err();
        assert_eq!(err.code, ErrorCode::METHOD_NOT_FOUND);
        let err =
            ClientRequest::from_parts(Some(&RequestId::Number(1)), "tools/call", None).unwrap_err();
        assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
        // A server request is not a client request.
        assert!(
            serde_json::from_value::<ClientRequest>(
                json!({"jsonrpc":"2.0","id":1,"method":"roots/list"})
            )
            .is_err()
        );
        let s: ServerRequest =
            serde_json::from_value(json!({"jsonrpc":"2.0","id":1,"method":"roots/list"})).unwrap();
        assert!(matches!(s, ServerRequest::ListRoots(_)));
    }

    #[test]
    fn notification_union() {
        let n: ServerNotification = serde_json::from_value(json!({
            "jsonrpc": "2.0", "method": "notifications/message",
            "params": {"level": "info", "data": "x"}
        }))
        .unwrap();
        assert_eq!(n.method(), "notifications/message");
        let env = n.to_json_rpc().unwrap();
        assert_eq!(env.method, "notifications/message");
        let c = ClientNotification::from_parts("notifications/initialized", None).unwrap();
        assert!(matches!(c, ClientNotification::Initialized(_)));
    }

    #[test]
    fn result_rules() {
        let r: ServerResult = serde_json::from_value(json!({})).unwrap();
        assert!(matches!(r, ServerResult::Empty(_)));
        let r: ServerResult =
            serde_json::from_value(json!({"content": [], "isError": true})).unwrap();
        assert!(matches!(r, ServerResult::CallTool(_)));
        let r: ServerResult = serde_json::from_value(json!({"tools": []})).unwrap();
        assert!(matches!(r, ServerResult::ListTools(_)));
        let r: ServerResult = serde_json::from_value(json!({"taskId": "t", "status": "working",
            "createdAt": "a", "lastUpdatedAt": "b", "ttl": null}))
        .unwrap();
        assert!(matches!(r, ServerResult::GetTask(_)));
        let raw = to_raw(&json!({"taskId": "t", "status": "cancelled",
            "createdAt": "a", "lastUpdatedAt": "b", "ttl": null}))
        .unwrap();
        assert!(matches!(
            ServerResult::from_method("tasks/cancel", &raw).unwrap(),
            ServerResult::CancelTask(_)
        ));
        let raw = to_raw(&json!({"task": {"taskId": "t", "status": "working",
            "createdAt": "a", "lastUpdatedAt": "b", "ttl": 1000}}))
        .unwrap();
        assert!(matches!(
            ServerResult::from_method("tools/call", &raw).unwrap(),
            ServerResult::CreateTask(_)
        ));
        let c: ClientResult = serde_json::from_value(json!({"action": "decline"})).unwrap();
        assert!(matches!(c, ClientResult::Elicit(_)));
        let c: ClientResult = serde_json::from_value(json!({"role": "assistant", "model": "m",
            "content": {"type": "text", "text": "x"}}))
        .unwrap();
        assert!(matches!(c, ClientResult::CreateMessage(_)));
    }
}
