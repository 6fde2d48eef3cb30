//! The HTTP header names of the streamable HTTP transport (lower case, as `http` wants).

/// The session id header (`Mcp-Session-Id`).
pub const MCP_SESSION_ID: &str = "mcp-session-id";
/// The negotiated revision header (`MCP-Protocol-Version`).
pub const MCP_PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// The SSE resumption header (`Last-Event-ID`).
pub const LAST_EVENT_ID: &str = "last-event-id";
