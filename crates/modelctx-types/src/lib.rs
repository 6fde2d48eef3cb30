//! Wire types of the Model Context Protocol.
//!
//! This crate holds the serde types of every message of MCP revision 2025-11-25 and
//! what differs in 2025-06-18, 2025-03-26 and 2024-11-05, the JSON-RPC envelope, the
//! error codes the specification names, and a marker type per method that ties the
//! method name to its parameter and result types. It has no async code and does no I/O:
//! it depends on serde and serde_json only.
//!
//! ```
//! use modelctx_types::{ErrorCode, JsonRpcMessage, ProtocolVersion};
//!
//! let msg = JsonRpcMessage::from_str(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap();
//! assert_eq!(msg.method(), Some("ping"));
//!
//! let err = JsonRpcMessage::from_str(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#).unwrap_err();
//! assert_eq!(err.error.code, ErrorCode::INVALID_REQUEST);
//!
//! assert!(ProtocolVersion::V2025_06_18.is_supported());
//! ```
//!
//! # Conventions
//! - Wire structs are `#[non_exhaustive]`: build them with their constructors.
//! - `_meta` and open objects keep unknown keys; enums the spec may extend keep
//!   unknown values.

mod common;
mod error;
mod jsonrpc;
mod method;
mod version;

pub use common::{Cursor, Meta, ProgressToken};
pub use error::{ErrorCode, ErrorData};
pub use jsonrpc::{
    InvalidMessage, JSONRPC_VERSION, JsonRpcErrorResponse, JsonRpcMessage, JsonRpcNotification,
    JsonRpcRequest, JsonRpcResultResponse, RequestId, to_raw,
};
pub use method::{NotificationMethod, RequestMethod};
pub use version::ProtocolVersion;

/// Re-exported so users can name the raw payload type.
pub use serde_json::value::RawValue;
