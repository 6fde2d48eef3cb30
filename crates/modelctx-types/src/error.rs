//! Protocol errors: the JSON-RPC error object with the spec's codes as named constants.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A JSON-RPC error code.
///
/// The codes the MCP specification names are associated constants; any other integer
/// (application-defined codes, the `-32000..=-32099` server range) is kept as is. An
/// `i64`: JSON-RPC and the MCP schema bound a code no further than "integer", and a
/// peer's code beyond 32 bits once made its whole error response unreadable, so the
/// call it answered got nothing (found by the property tests).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ErrorCode(pub i64);

impl ErrorCode {
    /// `-32700`: the message is not valid JSON.
    pub const PARSE_ERROR: Self = Self(-32700);
    /// `-32600`: the JSON is not a valid JSON-RPC message.
    pub const INVALID_REQUEST: Self = Self(-32600);
    /// `-32601`: the method does not exist or is not available.
    pub const METHOD_NOT_FOUND: Self = Self(-32601);
    /// `-32602`: invalid method parameters.
    pub const INVALID_PARAMS: Self = Self(-32602);
    /// `-32603`: internal error of the receiver.
    pub const INTERNAL_ERROR: Self = Self(-32603);
    /// `-32002`: the requested resource does not exist (2025-11-25 and earlier; clients
    /// still accept it from such servers). 2026-07-28 answers with
    /// [`ErrorCode::RESOURCE_NOT_FOUND_V2026_07_28`] instead.
    pub const RESOURCE_NOT_FOUND: Self = Self(-32002);
    /// `-32602`: the requested resource does not exist, from 2026-07-28 on (SEP-2164):
    /// the invalid-params code, with the URI in `data.uri`.
    pub const RESOURCE_NOT_FOUND_V2026_07_28: Self = Self::INVALID_PARAMS;
    /// `-32020`: an HTTP header disagrees with the message body (2026-07-28).
    pub const HEADER_MISMATCH: Self = Self(-32020);
    /// `-32021`: the request needs a client capability the client did not declare;
    /// `data.requiredCapabilities` names it (2026-07-28).
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: Self = Self(-32021);
    /// `-32022`: the server does not speak the request's protocol version;
    /// `data.supported` lists what it speaks, `data.requested` echoes the request
    /// (2026-07-28).
    pub const UNSUPPORTED_PROTOCOL_VERSION: Self = Self(-32022);
    /// `-32042`: the server needs the user to complete one or more URL elicitations first.
    pub const URL_ELICITATION_REQUIRED: Self = Self(-32042);
    /// `-1`: the user rejected a sampling request (the code the spec's examples use).
    pub const USER_REJECTED: Self = Self(-1);
    /// `-32800`: the request was cancelled (`notifications/cancelled`). Not a code the
    /// specification names: the streamable HTTP server answers a cancelled request with
    /// it so that the request's POST completes (every other transport sends nothing).
    pub const REQUEST_CANCELLED: Self = Self(-32800);

    /// The name of a code the specification defines, if it is one.
    pub fn name(self) -> Option<&'static str> {
        Some(match self {
            Self::PARSE_ERROR => "parse error",
            Self::INVALID_REQUEST => "invalid request",
            Self::METHOD_NOT_FOUND => "method not found",
            Self::INVALID_PARAMS => "invalid params",
            Self::INTERNAL_ERROR => "internal error",
            Self::RESOURCE_NOT_FOUND => "resource not found",
            Self::URL_ELICITATION_REQUIRED => "URL elicitation required",
            Self::HEADER_MISMATCH => "header mismatch",
            Self::MISSING_REQUIRED_CLIENT_CAPABILITY => "missing required client capability",
            Self::UNSUPPORTED_PROTOCOL_VERSION => "unsupported protocol version",
            Self::REQUEST_CANCELLED => "request cancelled",
            _ => return None,
        })
    }
}

impl fmt::Debug for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "ErrorCode({} {name})", self.0),
            None => write!(f, "ErrorCode({})", self.0),
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl From<i32> for ErrorCode {
    fn from(code: i32) -> Self {
        Self(code.into())
    }
}

impl From<i64> for ErrorCode {
    fn from(code: i64) -> Self {
        Self(code)
    }
}

crate::setters::wire_struct! {
    /// The error object of a JSON-RPC error response (the schema's `Error`).
    pub struct ErrorData {
        /// The error code.
        pub code: ErrorCode,
        /// A short description of the error, ideally one sentence.
        pub message: Cow<'static, str>,
        /// Additional information defined by the sender (`Some(Value::Null)` when it sent
        /// `"data": null`).
        #[serde(deserialize_with = "crate::common::null_is_a_value")]
        data?: Value,
    }
    /// An error with any code and message.
    new(code: ErrorCode, message: impl Into<Cow<'static, str>>);

    /// Attaches `data` to the error.
    #[must_use]
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// `-32700`: the bytes received are not valid JSON.
    pub fn parse_error(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorCode::PARSE_ERROR, message)
    }

    /// `-32600`: the JSON received is not a valid JSON-RPC message.
    pub fn invalid_request(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorCode::INVALID_REQUEST, message)
    }

    /// `-32601`: the method does not exist or is not available; the message names it.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )
    }

    /// `-32602`: the parameters are invalid.
    pub fn invalid_params(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorCode::INVALID_PARAMS, message)
    }

    /// `-32603`: the receiver failed while handling the request.
    pub fn internal_error(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorCode::INTERNAL_ERROR, message)
    }

    /// `-32002`: no resource has this URI; the URI travels in `data.uri`.
    pub fn resource_not_found(uri: &str) -> Self {
        Self::new(
            ErrorCode::RESOURCE_NOT_FOUND,
            format!("Resource not found: {uri}"),
        )
        .with_data(serde_json::json!({ "uri": uri }))
    }

    /// Resource not found the 2026-07-28 way (SEP-2164): `-32602` with the URI in
    /// `data.uri`.
    pub fn resource_not_found_v2026_07_28(uri: &str) -> Self {
        Self::new(
            ErrorCode::RESOURCE_NOT_FOUND_V2026_07_28,
            format!("Resource not found: {uri}"),
        )
        .with_data(serde_json::json!({ "uri": uri }))
    }

    /// Whether this error says a resource does not exist: `-32002` (up to 2025-11-25),
    /// or `-32602` with a string `data.uri` (2026-07-28).
    pub fn is_resource_not_found(&self) -> bool {
        self.code == ErrorCode::RESOURCE_NOT_FOUND
            || (self.code == ErrorCode::RESOURCE_NOT_FOUND_V2026_07_28
                && self
                    .data
                    .as_ref()
                    .and_then(|d| d.get("uri"))
                    .is_some_and(Value::is_string))
    }

    /// `-32800`: the request was cancelled before it was answered (see
    /// [`ErrorCode::REQUEST_CANCELLED`]).
    pub fn request_cancelled(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorCode::REQUEST_CANCELLED, message)
    }

    /// `-32020`: an HTTP header disagrees with the body (2026-07-28).
    pub fn header_mismatch(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorCode::HEADER_MISMATCH, message)
    }
}

impl fmt::Display for ErrorData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {})", self.message, self.code.0)
    }
}

impl std::error::Error for ErrorData {}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the property tests (issue 25, `tests/schema/properties.rs`): `"data":
    /// null` was read as no data and dropped when written back.
    #[test]
    fn data_null_survives_a_round_trip() {
        for text in [
            r#"{"code":-32600,"message":"m","data":null}"#,
            r#"{"code":-32600,"message":"m","data":{"a":1}}"#,
            r#"{"code":-32600,"message":"m"}"#,
        ] {
            let error: ErrorData = serde_json::from_str(text).unwrap();
            assert_eq!(serde_json::to_string(&error).unwrap(), text);
        }
        let error: ErrorData =
            serde_json::from_str(r#"{"code":1,"message":"m","data":null}"#).unwrap();
        assert_eq!(error.data, Some(Value::Null));
    }

    /// Found by the property tests (issue 25): a code beyond 32 bits (the schema says
    /// "integer") made the error, and so its whole response, unreadable.
    #[test]
    fn codes_beyond_32_bits_are_read() {
        for code in [2_147_483_648_i64, -2_147_483_649, i64::MAX, i64::MIN] {
            let text = format!(r#"{{"code":{code},"message":"m"}}"#);
            let error: ErrorData = serde_json::from_str(&text).unwrap();
            assert_eq!(error.code, ErrorCode(code));
            assert_eq!(serde_json::to_string(&error).unwrap(), text);
        }
        let response = crate::JsonRpcMessage::from_slice(
            br#"{"jsonrpc":"2.0","id":5,"error":{"code":2147483648,"message":"m"}}"#,
        )
        .unwrap();
        assert!(
            matches!(&response, crate::JsonRpcMessage::Error(e) if e.error.code == ErrorCode(2_147_483_648)),
            "{response:?}"
        );
    }
}
