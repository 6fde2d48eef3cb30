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
    /// The params key whose (string) value the request's `Mcp-Name` HTTP header mirrors
    /// in protocol 2026-07-28, for a vendor method that names a target the way
    /// `tools/call` names its tool (`Some("widgetId")`). The HTTP client transport
    /// mirrors it with no registration of the method; `None` (the default) sends no
    /// `Mcp-Name`. The core methods need none: the transport knows theirs.
    const NAME_PARAM: Option<&'static str> = None;
    /// Where the params keep their `_meta`, for a server that has read the request's
    /// `_meta` already: it then decodes the params without it and hands it over (see
    /// [`MetaSlot`]). `None` (the default) decodes the params whole. Unstable: set by
    /// the protocol's own methods.
    #[doc(hidden)]
    const UNSTABLE_META_SLOT: Option<MetaSlot<Self::Params>> = None;
}

/// Reaches the `_meta` field of decoded params `P` (`None` when the params have no
/// place for it, such as absent optional params). Unstable.
#[doc(hidden)]
pub type MetaSlot<P> = fn(&mut P) -> Option<&mut Option<crate::Meta>>;

/// A notification method: its name and parameter type.
pub trait NotificationMethod: Send + Sync + 'static {
    /// The JSON-RPC method name, e.g. `"notifications/progress"`.
    const METHOD: &'static str;
    /// The `params` member. `Option<_>` for notifications whose parameters may be omitted.
    type Params: Serialize + DeserializeOwned + Send + Sync + 'static;
}
