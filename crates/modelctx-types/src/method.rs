//! Marker traits tying a method name to its parameter and result types.
//!
//! Every request of the protocol has a type implementing [`RequestMethod`], so a typed
//! call returns the method's result type by construction: there is no run-time
//! "unexpected response" branch anywhere in the SDK.

use serde::Serialize;
use serde::de::DeserializeOwned;

/// A request method: its name, parameter type and result type.
pub trait RequestMethod: Send + Sync + 'static {
    /// The JSON-RPC method name, e.g. `"tools/call"`.
    const METHOD: &'static str;
    /// The `params` member. `Option<_>` for methods whose parameters may be omitted.
    type Params: Serialize + DeserializeOwned + Send + Sync + 'static;
    /// The `result` member of a successful response.
    type Result: Serialize + DeserializeOwned + Send + Sync + 'static;
}

/// A notification method: its name and parameter type.
pub trait NotificationMethod: Send + Sync + 'static {
    /// The JSON-RPC method name, e.g. `"notifications/progress"`.
    const METHOD: &'static str;
    /// The `params` member. `Option<_>` for notifications whose parameters may be omitted.
    type Params: Serialize + DeserializeOwned + Send + Sync + 'static;
}
