//! The named errors of 2026-07-28: the JSON-RPC error objects with a fixed code
//! (`ParseError`, `InvalidRequestError`, `MethodNotFoundError`, `InvalidParamsError`,
//! `InternalError`) and the MCP error responses with typed `data`
//! (`HeaderMismatchError`, `MissingRequiredClientCapabilityError`,
//! `UnsupportedProtocolVersionError`).
//!
//! Each reads only its own code and converts to and from the generic [`ErrorData`] /
//! [`JsonRpcErrorResponse`], which is what the runtime sends and receives.

use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::capabilities::ClientCapabilities;
use crate::error::{ErrorCode, ErrorData};
use crate::jsonrpc::{JsonRpcErrorResponse, RequestId};

/// Reads an error object and checks its code.
fn read_error<'de, D: Deserializer<'de>>(
    deserializer: D,
    code: ErrorCode,
) -> Result<ErrorData, D::Error> {
    let error = ErrorData::deserialize(deserializer)?;
    if error.code == code {
        Ok(error)
    } else {
        Err(de::Error::custom(format!(
            "expected error code {code}, found {}",
            error.code
        )))
    }
}

/// Reads an error response and checks its code.
fn read_response<'de, D: Deserializer<'de>>(
    deserializer: D,
    code: ErrorCode,
) -> Result<JsonRpcErrorResponse, D::Error> {
    let response = JsonRpcErrorResponse::deserialize(deserializer)?;
    if response.error.code == code {
        Ok(response)
    } else {
        Err(de::Error::custom(format!(
            "expected error code {code}, found {}",
            response.error.code
        )))
    }
}

/// The `data` of an error decoded as `T`.
fn read_data<T: for<'a> Deserialize<'a>, E: de::Error>(error: &ErrorData) -> Result<T, E> {
    let data = error
        .data
        .as_ref()
        .ok_or_else(|| E::missing_field("data"))?;
    T::deserialize(data).map_err(E::custom)
}

/// Declares a JSON-RPC error object with a fixed code and no typed `data`: the
/// message, any `data`, and the conversions to and from [`ErrorData`] and JSON.
macro_rules! code_error {
    ($(#[$doc:meta])* $name:ident, $code:ident, $code_text:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq)]
        #[non_exhaustive]
        pub struct $name {
            /// A short description of the error.
            pub message: String,
            /// Additional information defined by the sender.
            pub data: Option<Value>,
        }

        impl $name {
            #[doc = concat!("The code, `", $code_text, "`.")]
            pub const CODE: ErrorCode = ErrorCode::$code;

            /// An error with this message and no data.
            pub fn new(message: impl Into<String>) -> Self {
                Self {
                    message: message.into(),
                    data: None,
                }
            }

            /// Sets `data`.
            #[must_use]
            pub fn with_data(mut self, data: Value) -> Self {
                self.data = Some(data);
                self
            }

            #[doc = concat!("Reads it from a generic error, if the code is `", $code_text, "`.")]
            pub fn from_error_data(error: &ErrorData) -> Option<Self> {
                (error.code == Self::CODE).then(|| Self {
                    message: error.message.clone().into_owned(),
                    data: error.data.clone(),
                })
            }

            /// The generic error object.
            pub fn to_error_data(&self) -> ErrorData {
                let error = ErrorData::new(Self::CODE, self.message.clone());
                match &self.data {
                    Some(data) => error.with_data(data.clone()),
                    None => error,
                }
            }
        }

        impl From<$name> for ErrorData {
            fn from(error: $name) -> Self {
                error.to_error_data()
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                self.to_error_data().serialize(serializer)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let error = read_error(deserializer, Self::CODE)?;
                Ok(Self {
                    message: error.message.into_owned(),
                    data: error.data,
                })
            }
        }
    };
}

/// Declares an MCP error response with a fixed code and typed `data`: the request id, the
/// message, the data, and the conversions to and from [`JsonRpcErrorResponse`] and JSON.
/// Each constructor is written beside it.
macro_rules! data_error {
    (
        $(#[$doc:meta])* $name:ident, $data:ident, $code:ident, $code_text:literal,
        $(#[$data_doc:meta])*
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq)]
        #[non_exhaustive]
        pub struct $name {
            /// The id of the request this answers, when it could be read.
            pub id: Option<RequestId>,
            /// The error message.
            pub message: String,
            $(#[$data_doc])*
            pub data: $data,
        }

        impl $name {
            #[doc = concat!("The code, `", $code_text, "`.")]
            pub const CODE: ErrorCode = ErrorCode::$code;

            /// The generic error object.
            #[inline]
            pub fn to_error_data(&self) -> ErrorData {
                let mut error = ErrorData::new(Self::CODE, self.message.clone());
                error.data = serde_json::to_value(&self.data).ok();
                error
            }

            /// The generic error response.
            #[inline]
            pub fn to_response(&self) -> JsonRpcErrorResponse {
                JsonRpcErrorResponse::new(self.id.clone(), self.to_error_data())
            }

            #[doc = concat!("Reads it from a generic error response, if it is a well-formed `", $code_text, "`.")]
            #[inline]
            pub fn from_response(response: &JsonRpcErrorResponse) -> Option<Self> {
                if response.error.code != Self::CODE {
                    return None;
                }
                Some(Self {
                    id: response.id.clone(),
                    message: response.error.message.clone().into_owned(),
                    data: read_data::<_, serde_json::Error>(&response.error).ok()?,
                })
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                self.to_response().serialize(serializer)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let response = read_response(deserializer, Self::CODE)?;
                let data = read_data(&response.error)?;
                Ok(Self {
                    id: response.id,
                    message: response.error.message.into_owned(),
                    data,
                })
            }
        }
    };
}

code_error!(
    /// A `-32700` error object: the message is not valid JSON (the schema's `ParseError`).
    ParseError, PARSE_ERROR, "-32700"
);
code_error!(
    /// A `-32600` error object: the JSON is not a valid JSON-RPC request (the schema's
    /// `InvalidRequestError`).
    InvalidRequestError, INVALID_REQUEST, "-32600"
);
code_error!(
    /// A `-32601` error object: the method does not exist or is not available (the
    /// schema's `MethodNotFoundError`).
    MethodNotFoundError, METHOD_NOT_FOUND, "-32601"
);
code_error!(
    /// A `-32602` error object: the parameters are invalid (also: a resource does not
    /// exist, from 2026-07-28) (the schema's `InvalidParamsError`).
    InvalidParamsError, INVALID_PARAMS, "-32602"
);
code_error!(
    /// A `-32603` error object: the receiver failed while handling the request (the
    /// schema's `InternalError`).
    InternalError, INTERNAL_ERROR, "-32603"
);

/// A `-32020` error response: an HTTP header (`MCP-Protocol-Version`, `Mcp-Method`,
/// `Mcp-Name`, ...) disagrees with the message body (the schema's
/// `HeaderMismatchError`, 2026-07-28).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct HeaderMismatchError {
    /// The id of the request this answers, when it could be read.
    pub id: Option<RequestId>,
    /// The error message.
    pub message: String,
    /// Additional information defined by the sender.
    pub data: Option<Value>,
}

impl HeaderMismatchError {
    /// The code, `-32020`.
    pub const CODE: ErrorCode = ErrorCode::HEADER_MISMATCH;

    /// An error answering `id`.
    pub fn new(id: Option<RequestId>, message: impl Into<String>) -> Self {
        Self {
            id,
            message: message.into(),
            data: None,
        }
    }

    crate::setters::setters! {
        with_data(data: Value),
    }

    /// The generic error response.
    pub fn to_response(&self) -> JsonRpcErrorResponse {
        let mut error = ErrorData::new(Self::CODE, self.message.clone());
        error.data = self.data.clone();
        JsonRpcErrorResponse::new(self.id.clone(), error)
    }

    /// Reads it from a generic error response, if the code is `-32020`.
    pub fn from_response(response: &JsonRpcErrorResponse) -> Option<Self> {
        (response.error.code == Self::CODE).then(|| Self {
            id: response.id.clone(),
            message: response.error.message.clone().into_owned(),
            data: response.error.data.clone(),
        })
    }
}

impl Serialize for HeaderMismatchError {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_response().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for HeaderMismatchError {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let response = read_response(deserializer, Self::CODE)?;
        Ok(Self {
            id: response.id,
            message: response.error.message.into_owned(),
            data: response.error.data,
        })
    }
}

crate::setters::wire_struct! {
    /// The `data` of a `-32021` error: the capabilities the request needs.
    pub struct MissingRequiredClientCapabilityData {
        /// The client capabilities the request requires.
        pub required_capabilities: ClientCapabilities,
        ..
        /// Other keys.
        extra,
    }
    /// Data naming these capabilities.
    new(required_capabilities: ClientCapabilities);
}

data_error!(
    /// A `-32021` error response: the request needs a client capability the request's
    /// `_meta` did not declare (the schema's `MissingRequiredClientCapabilityError`,
    /// 2026-07-28).
    MissingRequiredClientCapabilityError, MissingRequiredClientCapabilityData,
    MISSING_REQUIRED_CLIENT_CAPABILITY, "-32021",
    /// The capabilities that were needed.
);

impl MissingRequiredClientCapabilityError {
    /// An error answering `id`, naming the capabilities it needed.
    pub fn new(
        id: Option<RequestId>,
        message: impl Into<String>,
        required_capabilities: ClientCapabilities,
    ) -> Self {
        Self {
            id,
            message: message.into(),
            data: MissingRequiredClientCapabilityData::new(required_capabilities),
        }
    }
}

crate::setters::wire_struct! {
    /// The `data` of a `-32022` error: what the server speaks and what was asked for.
    pub struct UnsupportedProtocolVersionData {
        /// The revisions the server speaks.
        pub supported: Vec<String>,
        /// The revision the request asked for.
        pub requested: String,
        ..
        /// Other keys.
        extra,
    }
    /// Data listing `supported` and echoing `requested`.
    new(supported: Vec<String>, requested: impl Into<String>);
}

data_error!(
    /// A `-32022` error response: the server does not speak the request's protocol
    /// revision (the schema's `UnsupportedProtocolVersionError`, 2026-07-28).
    UnsupportedProtocolVersionError, UnsupportedProtocolVersionData,
    UNSUPPORTED_PROTOCOL_VERSION, "-32022",
    /// The supported and the requested revisions.
);

impl UnsupportedProtocolVersionError {
    /// An error answering `id`: `requested` is not among `supported`.
    pub fn new(
        id: Option<RequestId>,
        supported: Vec<String>,
        requested: impl Into<String>,
    ) -> Self {
        let data = UnsupportedProtocolVersionData::new(supported, requested);
        Self {
            id,
            message: format!("Unsupported protocol version: {}", data.requested),
            data,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_reads_only_its_code() {
        let v = json!({"code": -32700, "message": "Parse error"});
        assert!(serde_json::from_value::<ParseError>(v.clone()).is_ok());
        assert!(serde_json::from_value::<InternalError>(v).is_err());
        let e = InvalidParamsError::new("bad").with_data(json!({"uri": "file:///x"}));
        assert!(ErrorData::from(e).is_resource_not_found());
    }

    #[test]
    fn unsupported_protocol_version_round_trip() {
        let e = UnsupportedProtocolVersionError::new(
            Some(RequestId::Number(1)),
            vec!["2026-07-28".to_owned()],
            "2024-01-01",
        );
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["error"]["code"], json!(-32022));
        assert_eq!(v["error"]["data"]["requested"], json!("2024-01-01"));
        let back = UnsupportedProtocolVersionError::from_response(&e.to_response()).unwrap();
        assert_eq!(back, e);
        let generic: JsonRpcErrorResponse = serde_json::from_value(v).unwrap();
        assert!(MissingRequiredClientCapabilityError::from_response(&generic).is_none());
        assert_eq!(
            ErrorCode::UNSUPPORTED_PROTOCOL_VERSION.name(),
            Some("unsupported protocol version")
        );
    }
}
