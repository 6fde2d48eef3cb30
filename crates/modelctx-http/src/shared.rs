//! Pieces both halves of the transport use.

use modelctx_types::{JsonRpcMessage, RequestId};

/// The request a `notifications/cancelled` names, if `message` is one.
pub(crate) fn cancelled_id(message: &JsonRpcMessage) -> Option<RequestId> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Cancelled {
        request_id: RequestId,
    }
    notification_params::<Cancelled>(message, "notifications/cancelled").map(|c| c.request_id)
}

/// The params of `message` read as `P`, when it is a notification of `method` whose
/// params read so.
pub(crate) fn notification_params<P: serde::de::DeserializeOwned>(
    message: &JsonRpcMessage,
    method: &str,
) -> Option<P> {
    match message {
        JsonRpcMessage::Notification(n) if n.method == method => n
            .params
            .as_deref()
            .and_then(|p| serde_json::from_str::<P>(p.get()).ok()),
        _ => None,
    }
}
