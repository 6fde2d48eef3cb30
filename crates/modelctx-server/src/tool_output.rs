//! What a tool function may return ([`IntoToolOutcome`]): a plain value, or a `Result`
//! whose error is either reported to the model (`isError`) or fails the call with a
//! JSON-RPC error ([`ToolError`]).

use std::any::Any;
use std::fmt;

use modelctx_types::{CallToolResult, ContentBlock, ErrorCode, ErrorData, JsonObject};
use serde_json::Value;

use crate::tool_content::IntoToolResult;

/// How a tool call failed, said explicitly: a tool function returns it as the error of
/// its `Result` (`Result<T, ToolError>`, or boxed in a `BoxError`) to choose between the
/// two kinds of failure MCP knows.
///
/// Any other error type that implements `Display` is an execution error described by
/// its message; so is an [`ErrorData`], except the one the spec lets a tool raise as
/// such (`-32042`, URL elicitation required), which stays a JSON-RPC error.
///
/// ```
/// use modelctx_server::{Server, ToolDef, ToolError};
/// use modelctx_types::ErrorData;
/// # use modelctx_server::NoArgs;
///
/// let vault = ToolDef::from_fn("open-vault", |_: NoArgs| async move {
///     // The caller asked for something that does not exist: a JSON-RPC error.
///     Err::<String, _>(ToolError::protocol(ErrorData::invalid_params("no such vault")))
/// });
/// let server = Server::builder("vaults", "1.0.0").tool(vault)?.build();
/// # Ok::<(), modelctx_server::RegistrationError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ToolError {
    /// A tool execution error: the call answers with a result whose `isError` is true
    /// and whose text is this message, for the model to read (and perhaps correct its
    /// arguments).
    Execution(String),
    /// A protocol error: the call fails with this JSON-RPC error, as an unknown tool
    /// or invalid request would. For a caller that cannot go on, not for the model.
    Protocol(ErrorData),
}

impl ToolError {
    /// An execution error with `message` (an `isError` result).
    pub fn execution(message: impl Into<String>) -> Self {
        Self::Execution(message.into())
    }

    /// A protocol error: the call fails with `error` as its JSON-RPC error.
    pub fn protocol(error: ErrorData) -> Self {
        Self::Protocol(error)
    }

    /// How an error from a tool function is reported: a [`ToolError`] as it says, an
    /// [`ErrorData`] with code `-32042` as a JSON-RPC error, anything else as an
    /// execution error described by its message. Errors boxed as a `BoxError` (or a
    /// `Box<dyn Error>`) are looked into.
    pub(crate) fn classify<E: fmt::Display + 'static>(error: &E) -> Self {
        let any: &dyn Any = error;
        if let Some(error) = any.downcast_ref::<ToolError>() {
            return error.clone();
        }
        if let Some(data) = any.downcast_ref::<ErrorData>() {
            return Self::from_error_data(data);
        }
        let boxed: Option<&(dyn std::error::Error + 'static)> =
            if let Some(boxed) = any.downcast_ref::<crate::error::BoxError>() {
                Some(&**boxed)
            } else if let Some(boxed) = any.downcast_ref::<Box<dyn std::error::Error>>() {
                Some(&**boxed)
            } else {
                None
            };
        if let Some(inner) = boxed {
            if let Some(error) = inner.downcast_ref::<ToolError>() {
                return error.clone();
            }
            if let Some(data) = inner.downcast_ref::<ErrorData>() {
                return Self::from_error_data(data);
            }
        }
        Self::Execution(error.to_string())
    }

    fn from_error_data(data: &ErrorData) -> Self {
        if data.code == ErrorCode::URL_ELICITATION_REQUIRED {
            Self::Protocol(data.clone())
        } else {
            Self::Execution(data.to_string())
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Execution(message) => f.write_str(message),
            Self::Protocol(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for ToolError {}

impl From<ErrorData> for ToolError {
    /// A protocol error: the tool means the JSON-RPC error it names.
    fn from(error: ErrorData) -> Self {
        Self::Protocol(error)
    }
}

/// What a tool function may return: the output of a [`ToolDef`](crate::ToolDef)'s
/// future, or of a `#[tool]` function.
///
/// - any [`IntoToolResult`] value, as is: text (`String`, `&'static str`), a number,
///   `bool` or `()` (as text, or no content for `()`), a `serde_json::Value` (JSON
///   text; an object is also the `structuredContent`), content blocks, a whole
///   `CallToolResult`, or `Json<T>` for structured output with an `outputSchema`;
/// - a `Result` of one of them whose error implements `Display`: an `Err` is an
///   execution error (an `isError` result with the error's message), unless it is a
///   [`ToolError::Protocol`] (or an `ErrorData` with code `-32042`), which fails the
///   call with that JSON-RPC error.
///
/// Implemented for every type above; implement [`IntoToolResult`] for a type of your
/// own rather than this trait.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not something a tool can return",
    label = "a tool's function returns this",
    note = "return text (`String`, `&'static str`), a number, `bool`, `()`, a `serde_json::Value`, `Json<T>` for structured output, content blocks or a `CallToolResult`, or a `Result` of one of them whose error implements `Display`",
    note = "implement `IntoToolResult` for a type of your own"
)]
pub trait IntoToolOutcome: 'static {
    /// The JSON Schema of the structured output, if the value's type has one.
    fn output_schema() -> Option<JsonObject>;

    /// Converts the value; `wrap` says the output schema is not an object schema, so
    /// a structured value goes under a `result` key.
    fn into_outcome(self, wrap: bool) -> Result<CallToolResult, ToolError>;
}

impl<T: IntoToolResult> IntoToolOutcome for T {
    fn output_schema() -> Option<JsonObject> {
        T::output_schema()
    }

    fn into_outcome(self, wrap: bool) -> Result<CallToolResult, ToolError> {
        self.into_tool_result(wrap).map_err(ToolError::Execution)
    }
}

impl<T, E> IntoToolOutcome for Result<T, E>
where
    T: IntoToolResult,
    E: fmt::Display + 'static,
{
    fn output_schema() -> Option<JsonObject> {
        T::output_schema()
    }

    fn into_outcome(self, wrap: bool) -> Result<CallToolResult, ToolError> {
        match self {
            Ok(value) => value.into_tool_result(wrap).map_err(ToolError::Execution),
            Err(error) => Err(ToolError::classify(&error)),
        }
    }
}

macro_rules! as_text {
    ($($ty:ty),* $(,)?) => {$(
        impl IntoToolResult for $ty {
            fn into_tool_result(self, _wrap: bool) -> Result<CallToolResult, String> {
                Ok(CallToolResult::text(self.to_string()))
            }
        }
    )*};
}

as_text!(
    bool, char, i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize, f32, f64,
);

impl IntoToolResult for std::borrow::Cow<'static, str> {
    fn into_tool_result(self, _wrap: bool) -> Result<CallToolResult, String> {
        Ok(CallToolResult::text(self.into_owned()))
    }
}

/// Nothing to say: a successful result with no content.
impl IntoToolResult for () {
    fn into_tool_result(self, _wrap: bool) -> Result<CallToolResult, String> {
        Ok(CallToolResult::new(Vec::new()))
    }
}

/// JSON without a schema: its text is the content; an object is also the
/// `structuredContent` (the tool declares no `outputSchema`, so nothing checks it).
impl IntoToolResult for Value {
    fn into_tool_result(self, _wrap: bool) -> Result<CallToolResult, String> {
        let text = self.to_string();
        let result = CallToolResult::new(vec![ContentBlock::text(text)]);
        Ok(match self {
            Value::Object(map) => result.with_structured_content(map),
            _ => result,
        })
    }
}

/// A JSON object without a schema: its text is the content and it is the
/// `structuredContent`.
impl IntoToolResult for JsonObject {
    fn into_tool_result(self, wrap: bool) -> Result<CallToolResult, String> {
        Value::Object(self).into_tool_result(wrap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome<T: IntoToolOutcome>(value: T) -> Result<CallToolResult, ToolError> {
        value.into_outcome(false)
    }

    #[test]
    fn plain_values_are_text() {
        assert_eq!(outcome(42u8).unwrap().content[0].as_text(), Some("42"));
        assert_eq!(outcome(-1.5f64).unwrap().content[0].as_text(), Some("-1.5"));
        assert_eq!(outcome(true).unwrap().content[0].as_text(), Some("true"));
        assert!(outcome(()).unwrap().content.is_empty());
        let object = outcome(serde_json::json!({"a": 1})).unwrap();
        assert_eq!(object.content[0].as_text(), Some(r#"{"a":1}"#));
        assert_eq!(object.structured_content, Some(serde_json::json!({"a": 1})));
        let list = outcome(serde_json::json!([1])).unwrap();
        assert!(list.structured_content.is_none());
    }

    #[test]
    fn errors_are_sorted_by_type() {
        let displayed = outcome(Err::<String, _>(std::fmt::Error)).unwrap_err();
        assert_eq!(
            displayed,
            ToolError::Execution("an error occurred when formatting an argument".into())
        );
        let data = ErrorData::invalid_params("no such vault");
        assert_eq!(
            outcome(Err::<String, _>(data.clone())).unwrap_err(),
            ToolError::Execution(data.to_string())
        );
        assert_eq!(
            outcome(Err::<String, _>(ToolError::protocol(data.clone()))).unwrap_err(),
            ToolError::Protocol(data.clone())
        );
        let boxed: crate::error::BoxError = Box::new(ToolError::protocol(data.clone()));
        assert_eq!(
            outcome(Err::<String, _>(boxed)).unwrap_err(),
            ToolError::Protocol(data.clone())
        );
        let unsendable: Box<dyn std::error::Error> = Box::new(ToolError::protocol(data.clone()));
        assert_eq!(
            ToolError::classify(&unsendable),
            ToolError::Protocol(data.clone())
        );
        let elicit = ErrorData::new(ErrorCode::URL_ELICITATION_REQUIRED, "sign in");
        assert_eq!(
            outcome(Err::<String, _>(elicit.clone())).unwrap_err(),
            ToolError::Protocol(elicit)
        );
        assert_eq!(
            outcome(Err::<String, _>("plain")).unwrap_err(),
            ToolError::Execution("plain".into())
        );
    }
}
