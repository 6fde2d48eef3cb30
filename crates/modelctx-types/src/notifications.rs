//! Utility notifications either side may send: `notifications/cancelled` and
//! `notifications/progress`.

use serde::{Deserialize, Serialize};

use crate::common::{Meta, ProgressToken};
use crate::jsonrpc::RequestId;

/// Parameters of `notifications/cancelled`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CancelledNotificationParams {
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The request to cancel (required for non-task requests; tasks use `tasks/cancel`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<RequestId>,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl CancelledNotificationParams {
    /// Cancels `request_id`.
    pub fn new(request_id: impl Into<RequestId>) -> Self {
        Self {
            meta: None,
            request_id: Some(request_id.into()),
            reason: None,
        }
    }

    crate::setters::setters! {
        with_meta(meta: impl Into<Meta>),
        with_reason(reason: impl Into<String>),
    }
}

crate::envelope::notifications! {
    /// Cancels a request previously sent in the same direction.
    CancelledNotification = Cancelled("notifications/cancelled", required CancelledNotificationParams);
}

/// Parameters of `notifications/progress`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ProgressNotificationParams {
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The token from the request's `_meta.progressToken`.
    pub progress_token: ProgressToken,
    /// Progress so far (must increase).
    #[serde(serialize_with = "crate::base::ser_f64")]
    pub progress: f64,
    /// The total, if known.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::base::ser_opt_f64"
    )]
    pub total: Option<f64>,
    /// A description of the progress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl ProgressNotificationParams {
    /// Progress `progress` for `progress_token`.
    pub fn new(progress_token: impl Into<ProgressToken>, progress: f64) -> Self {
        Self {
            meta: None,
            progress_token: progress_token.into(),
            progress,
            total: None,
            message: None,
        }
    }

    crate::setters::setters! {
        with_meta(meta: impl Into<Meta>),
        with_total(total: impl Into<f64>),
        with_message(message: impl Into<String>),
    }
}

crate::envelope::notifications! {
    /// Reports progress of a long-running request.
    ProgressNotification = Progress("notifications/progress", required ProgressNotificationParams);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NotificationMethod;
    use serde_json::json;

    #[test]
    fn progress_round_trip_and_method_check() {
        let n =
            ProgressNotification::new(ProgressNotificationParams::new("t", 0.5).with_total(1.0));
        let v = serde_json::to_value(&n).unwrap();
        assert_eq!(
            v,
            json!({"jsonrpc": "2.0", "method": "notifications/progress",
                   "params": {"progressToken": "t", "progress": 0.5, "total": 1}})
        );
        assert_eq!(
            serde_json::from_value::<ProgressNotification>(v.clone()).unwrap(),
            n
        );
        let mut other = v;
        other["method"] = json!("notifications/cancelled");
        assert!(serde_json::from_value::<ProgressNotification>(other).is_err());
        assert_eq!(
            <CancelledNotification as NotificationMethod>::METHOD,
            "notifications/cancelled"
        );
    }
}
