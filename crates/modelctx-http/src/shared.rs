//! Pieces both halves of the transport use.

use modelctx_types::{JsonRpcMessage, RequestId};

/// The request a `notifications/cancelled` names, if `message` is one.
pub(crate) fn cancelled_id(message: &JsonRpcMessage) -> Option<RequestId> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Cancelled {
        request_id: RequestId,
    }
    match message {
        JsonRpcMessage::Notification(n) if n.method == "notifications/cancelled" => n
            .params
            .as_deref()
            .and_then(|p| serde_json::from_str::<Cancelled>(p.get()).ok())
            .map(|c| c.request_id),
        _ => None,
    }
}
