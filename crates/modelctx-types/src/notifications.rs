//! Utility notifications either side may send: `notifications/cancelled` and
//! `notifications/progress`.

use crate::common::ProgressToken;
use crate::jsonrpc::RequestId;

crate::envelope::notifications! {
    /// Cancels a request previously sent in the same direction.
    CancelledNotification = Cancelled("notifications/cancelled", required CancelledNotificationParams);
    /// Reports progress of a long-running request.
    ProgressNotification = Progress("notifications/progress", required ProgressNotificationParams);
}

crate::setters::wire_struct! {
    /// Parameters of `notifications/cancelled`.
    #[derive(Default)]
    pub struct CancelledNotificationParams {
        meta => with_meta,
        /// The request to cancel (required for non-task requests; tasks use `tasks/cancel`).
        request_id?: RequestId,
        /// Why.
        reason?: String => with_reason,
    }
    /// Cancels `request_id`.
    pub fn new(request_id: impl Into<RequestId>) -> Self {
        Self {
            meta: None,
            request_id: Some(request_id.into()),
            reason: None,
        }
    }
}

crate::setters::wire_struct! {
    /// Parameters of `notifications/progress`.
    pub struct ProgressNotificationParams {
        meta => with_meta,
        /// The token from the request's `_meta.progressToken`.
        pub progress_token: ProgressToken,
        /// Progress so far (must increase).
        #[serde(serialize_with = "crate::setters::ser_f64")]
        pub progress: f64,
        /// The total, if known.
        total?: f64 => with_total,
        /// A description of the progress.
        message?: String => with_message,
    }
    /// Progress `progress` for `progress_token`.
    new(progress_token: impl Into<ProgressToken>, progress: f64);
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
