//! [`ConnectMode`]: how a client settles the protocol revision with a server.

use modelctx_types::{DiscoverResult, ProtocolVersion};

/// How [`ClientBuilder::connect`](crate::ClientBuilder::connect) settles the protocol
/// revision with the server.
///
/// Protocol 2026-07-28 (the stateless era) has no handshake: every request carries the
/// client's version, capabilities and identity, and `server/discover` tells what a
/// server speaks. Earlier revisions open a session with `initialize`. Whichever applies,
/// the client's API is the same, and
/// [`Client::protocol_version`](crate::Client::protocol_version),
/// [`Client::server_capabilities`](crate::Client::server_capabilities),
/// [`Client::server_info`](crate::Client::server_info) and
/// [`Client::instructions`](crate::Client::instructions) say what was learnt.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub enum ConnectMode {
    /// `server/discover` first; the `initialize` handshake when the server does not
    /// offer 2026-07-28: it answers with an error (as servers of earlier revisions do)
    /// or says nothing within the probe wait
    /// ([`ClientBuilder::probe_timeout`](crate::ClientBuilder::probe_timeout), whose
    /// documentation tells how late answers still count). A `-32022` listing 2026-07-28
    /// is asked once more; one that names a handshake revision this client speaks gets
    /// `initialize` with that revision. A request that never reached the server (a
    /// network error) is an error, not a verdict on its era. A failure says what was
    /// sent and what came back.
    #[default]
    Auto,
    /// 2026-07-28 only: `server/discover`, and an error when the server does not offer
    /// it.
    Discover,
    /// The `initialize` handshake only; `server/discover` is never sent. A `-32022`
    /// that names another handshake revision this client speaks gets `initialize`
    /// again with it.
    Handshake,
    /// No probe and no handshake: the client speaks this revision from its first
    /// request, for a caller that knows the server. Only a stateless revision
    /// (2026-07-28) can be pinned; nothing is known of the server, so no call is
    /// refused locally for a capability it might lack.
    Pin(ProtocolVersion),
    /// No probe and no handshake, with what an earlier `server/discover` answered (see
    /// [`Client::discover_result`](crate::Client::discover_result)): its capabilities,
    /// identity and instructions. When the kept answer went stale (a request is refused
    /// with `-32022`), the client sends `server/discover` again, and the request once
    /// more if the server still offers 2026-07-28; otherwise the error says what it
    /// offers now.
    Prior(Box<DiscoverResult>),
}
