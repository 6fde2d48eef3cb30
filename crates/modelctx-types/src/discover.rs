//! `server/discover` (2026-07-28): the server's revisions, capabilities and identity,
//! asked for without a handshake.

use serde::{Deserialize, Serialize};

use crate::base::{RequestParams, ResultType};
use crate::cache::CacheScope;
use crate::capabilities::ServerCapabilities;
use crate::jsonrpc::RequestId;
use crate::method::RequestMethod;
use crate::tag::{JsonRpcTag, RequestTag};

/// Asks the server which revisions it speaks, its capabilities and instructions
/// (2026-07-28; servers must implement it, clients may call it first).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct DiscoverRequest {
    jsonrpc: JsonRpcTag,
    /// The request id.
    pub id: RequestId,
    method: RequestTag<DiscoverRequest>,
    /// The parameters: `_meta` with the request's revision and client capabilities.
    /// Required by the schema; `None` is still read, and not written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<RequestParams>,
}

impl DiscoverRequest {
    /// The method name, `"server/discover"`.
    pub const METHOD: &'static str = <Self as RequestMethod>::METHOD;

    /// A request with an id and no parameters.
    pub fn new(id: impl Into<RequestId>) -> Self {
        Self {
            jsonrpc: JsonRpcTag::new(),
            id: id.into(),
            method: RequestTag::new(),
            params: None,
        }
    }

    /// Sets the parameters.
    #[must_use]
    pub fn with_params(mut self, params: RequestParams) -> Self {
        self.params = Some(params);
        self
    }
}

impl RequestMethod for DiscoverRequest {
    const METHOD: &'static str = "server/discover";
    type Params = Option<RequestParams>;
    type Result = DiscoverResult;
}

crate::setters::wire_struct! {
    /// The answer to `server/discover`.
    pub struct DiscoverResult {
        /// Metadata (`io.modelcontextprotocol/serverInfo`, ...).
        meta => with_meta,
        /// The kind of result (`complete`).
        pub result_type: ResultType = ResultType::Complete,
        /// How long the client may cache this answer, in milliseconds.
        #[serde(deserialize_with = "crate::cache::ttl")]
        pub ttl_ms: u64,
        /// Who may cache it.
        pub cache_scope: CacheScope,
        /// The revisions the server speaks; the client picks one for its requests.
        pub supported_versions: Vec<String>,
        /// The server's capabilities.
        pub capabilities: ServerCapabilities,
        /// Guidance on using the server, e.g. for a system prompt.
        instructions?: String => with_instructions,
    }
    /// A complete answer listing these revisions and capabilities, fresh for `ttl_ms`
    /// milliseconds within `cache_scope`.
    new(
        supported_versions: Vec<String>,
        capabilities: ServerCapabilities,
        ttl_ms: u64,
        cache_scope: impl Into<CacheScope>,
    );
}
