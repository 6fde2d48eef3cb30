//! Logging: `logging/setLevel` and `notifications/message`.

use serde_json::Value;

use crate::base::EmptyResult;

crate::envelope::requests! {
    /// Sets the lowest level of log messages the server sends.
    SetLevelRequest = SetLevel("logging/setLevel", required SetLevelRequestParams) -> EmptyResult;
}

crate::envelope::notifications! {
    /// A log message from the server.
    LoggingMessageNotification = LoggingMessage("notifications/message", required LoggingMessageNotificationParams);
}

crate::open_enum::open_enum! {
    /// The severity of a log message (RFC 5424).
    pub enum LoggingLevel {
        /// Debug-level messages.
        Debug = "debug",
        /// Informational messages.
        Info = "info",
        /// Normal but significant conditions.
        Notice = "notice",
        /// Warning conditions.
        Warning = "warning",
        /// Error conditions.
        Error = "error",
        /// Critical conditions.
        Critical = "critical",
        /// Action must be taken immediately.
        Alert = "alert",
        /// The system is unusable.
        Emergency = "emergency",
    }
}

impl LoggingLevel {
    /// The severity rank, 0 (`debug`) to 7 (`emergency`); `None` for unknown levels.
    pub fn severity(&self) -> Option<u8> {
        Some(match self {
            Self::Debug => 0,
            Self::Info => 1,
            Self::Notice => 2,
            Self::Warning => 3,
            Self::Error => 4,
            Self::Critical => 5,
            Self::Alert => 6,
            Self::Emergency => 7,
            Self::Unknown(_) => return None,
        })
    }

    /// Whether a message at this level passes a `threshold` set with
    /// `logging/setLevel` (unknown levels always pass).
    pub fn passes(&self, threshold: &LoggingLevel) -> bool {
        match (self.severity(), threshold.severity()) {
            (Some(a), Some(b)) => a >= b,
            _ => true,
        }
    }
}

crate::setters::wire_struct! {
    /// Parameters of `logging/setLevel`.
    pub struct SetLevelRequestParams {
        meta => with_meta,
        /// The lowest level to send.
        pub level: LoggingLevel,
    }
    /// Parameters setting `level`.
    new(level: LoggingLevel);
}

crate::setters::wire_struct! {
    /// Parameters of `notifications/message`.
    pub struct LoggingMessageNotificationParams {
        meta => with_meta,
        /// The severity.
        pub level: LoggingLevel,
        /// The logger's name.
        logger?: String => with_logger,
        /// The data: any JSON value.
        pub data: Value,
    }
    /// A message at `level` carrying `data`.
    new(level: LoggingLevel, data: impl Into<Value>);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn levels_order_and_unknown_kept() {
        assert!(LoggingLevel::Error.passes(&LoggingLevel::Warning));
        assert!(!LoggingLevel::Debug.passes(&LoggingLevel::Info));
        let l: LoggingLevel = serde_json::from_value(json!("trace")).unwrap();
        assert_eq!(l.as_str(), "trace");
        assert!(
            serde_json::from_value::<LoggingMessageNotificationParams>(json!({"level": "info"}))
                .is_err()
        );
        let p: LoggingMessageNotificationParams =
            serde_json::from_value(json!({"level": "info", "data": null})).unwrap();
        assert_eq!(p.data, Value::Null);
    }
}
