//! The error a high-level function may return, and how it becomes a JSON-RPC error.

use modelctx_types::ErrorData;

/// The error a high-level function may return: anything that converts into a boxed
/// error (`String`, `&str`, any `std::error::Error`). An [`ErrorData`] keeps its code
/// where the failure becomes a JSON-RPC error (resources, prompts, completions).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Turns a function's error into the JSON-RPC error sent for it.
pub(crate) fn into_error_data(error: BoxError, what: &str) -> ErrorData {
    match error.downcast::<ErrorData>() {
        Ok(data) => *data,
        Err(other) => ErrorData::internal_error(format!("{what}: {other}")),
    }
}
