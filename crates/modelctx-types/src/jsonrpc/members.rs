//! The envelope's string members read without a copy where none is needed: `jsonrpc`
//! only compared with [`JSONRPC_VERSION`], `method` borrowed when it names a method of
//! the protocol (a request's name then costs no allocation).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, Visitor};

use super::JSONRPC_VERSION;

/// The `jsonrpc` member, a string: whether it is [`JSONRPC_VERSION`], read without a
/// copy of it.
pub(super) struct Version(pub(super) bool);

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Text;
        impl Visitor<'_> for Text {
            type Value = Version;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Version, E> {
                Ok(Version(v == JSONRPC_VERSION))
            }
            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Version, E> {
                let text = utf8(v, &self)?;
                self.visit_str(text)
            }
        }
        deserializer.deserialize_str(Text)
    }
}

/// The `method` member, a string: a name of the protocol borrowed from
/// [`KNOWN_METHODS`], any other name copied.
pub(super) struct MethodName(pub(super) Cow<'static, str>);

impl<'de> Deserialize<'de> for MethodName {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Text;
        impl Visitor<'_> for Text {
            type Value = MethodName;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<MethodName, E> {
                Ok(MethodName(match known_method(v) {
                    Some(known) => Cow::Borrowed(known),
                    None => Cow::Owned(v.to_owned()),
                }))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<MethodName, E> {
                Ok(MethodName(match known_method(&v) {
                    Some(known) => Cow::Borrowed(known),
                    None => Cow::Owned(v),
                }))
            }
            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<MethodName, E> {
                let text = utf8(v, &self)?;
                self.visit_str(text)
            }
        }
        deserializer.deserialize_string(Text)
    }
}

/// Bytes given for a string, read as `String`'s own reader reads them: UTF-8 or refused.
fn utf8<'a, E: de::Error>(v: &'a [u8], expected: &dyn de::Expected) -> Result<&'a str, E> {
    std::str::from_utf8(v).map_err(|_| E::invalid_value(de::Unexpected::Bytes(v), expected))
}

/// The methods of the protocol (each marker of [`crate::methods`] names one), the most
/// frequent first.
const KNOWN_METHODS: [&str; 31] = [
    "tools/call",
    "tools/list",
    "ping",
    "initialize",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "resources/read",
    "resources/list",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "notifications/resources/list_changed",
    "notifications/resources/updated",
    "prompts/get",
    "prompts/list",
    "notifications/prompts/list_changed",
    "notifications/tools/list_changed",
    "completion/complete",
    "logging/setLevel",
    "notifications/message",
    "sampling/createMessage",
    "elicitation/create",
    "notifications/elicitation/complete",
    "roots/list",
    "notifications/roots/list_changed",
    "tasks/get",
    "tasks/result",
    "tasks/list",
    "tasks/cancel",
    "notifications/tasks/status",
];

/// The protocol's method name equal to `name`, if it is one.
fn known_method(name: &str) -> Option<&'static str> {
    KNOWN_METHODS.into_iter().find(|known| *known == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;
    use crate::jsonrpc::{InvalidMessage, JsonRpcMessage};

    fn parse(s: &str) -> Result<JsonRpcMessage, InvalidMessage> {
        s.parse()
    }

    /// Every method of the protocol reads as its marker's own name, borrowed; any other
    /// name is copied as sent.
    #[test]
    fn method_names_of_the_protocol_are_borrowed() {
        use crate::method::{NotificationMethod, RequestMethod};
        use crate::methods::*;
        let markers = [
            CallTool::METHOD,
            ListTools::METHOD,
            Ping::METHOD,
            Initialize::METHOD,
            Initialized::METHOD,
            Cancelled::METHOD,
            Progress::METHOD,
            ReadResource::METHOD,
            ListResources::METHOD,
            ListResourceTemplates::METHOD,
            Subscribe::METHOD,
            Unsubscribe::METHOD,
            ResourceListChanged::METHOD,
            ResourceUpdated::METHOD,
            GetPrompt::METHOD,
            ListPrompts::METHOD,
            PromptListChanged::METHOD,
            ToolListChanged::METHOD,
            Complete::METHOD,
            SetLevel::METHOD,
            LoggingMessage::METHOD,
            CreateMessage::METHOD,
            Elicit::METHOD,
            ElicitationComplete::METHOD,
            ListRoots::METHOD,
            RootsListChanged::METHOD,
            GetTask::METHOD,
            GetTaskPayload::METHOD,
            ListTasks::METHOD,
            CancelTask::METHOD,
            TaskStatusChanged::METHOD,
        ];
        let mut known = KNOWN_METHODS.to_vec();
        let mut marked = markers.to_vec();
        known.sort_unstable();
        marked.sort_unstable();
        assert_eq!(known, marked);
        for method in markers.into_iter().chain(["vendor/thing", "tools/cal"]) {
            let text = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}"}}"#);
            let Ok(JsonRpcMessage::Request(request)) = parse(&text) else {
                panic!("{text} is a request");
            };
            assert_eq!(request.method, method);
            let borrowed = matches!(request.method, Cow::Borrowed(_));
            assert_eq!(borrowed, markers.contains(&method), "{method}");
        }
        // Escaped, the name is still the protocol's.
        let text = r#"{"jsonrpc":"2.0","id":1,"method":"tools\/call"}"#;
        let Ok(JsonRpcMessage::Request(request)) = parse(text) else {
            panic!("{text} is a request");
        };
        assert!(matches!(request.method, Cow::Borrowed("tools/call")));
    }

    /// `jsonrpc` is read without a copy, and refused as before: another string, or no
    /// string at all.
    #[test]
    fn jsonrpc_must_be_the_string_two_point_zero() {
        assert!(parse(r#"{"jsonrpc":"2\u002e0","id":1,"method":"ping"}"#).is_ok());
        for text in [
            r#"{"jsonrpc":"2.1","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":null,"id":1,"method":"ping"}"#,
            r#"{"id":1,"method":"ping"}"#,
        ] {
            let err = parse(text).unwrap_err();
            assert_eq!(err.error.code, ErrorCode::INVALID_REQUEST, "{text}");
            assert_eq!(err.error.message, "jsonrpc must be \"2.0\"", "{text}");
        }
        let err = parse(r#"{"jsonrpc":2,"id":1,"method":"ping"}"#).unwrap_err();
        assert_eq!(err.error.code, ErrorCode::INVALID_REQUEST);
        assert!(
            err.error.message.contains("expected a string"),
            "{}",
            err.error.message
        );
    }
}
