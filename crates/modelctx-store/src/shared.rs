//! Sessions shared by several server processes: how a server role exports its
//! per-session state ([`SessionSnapshot`]) to the transport and imports it from it.
//!
//! modelctx-transport's `TransportInfo::shared_session` (default `None`) is the seam
//! between a transport that keeps sessions beyond one process (streamable HTTP with a
//! session registry) and the server role: a [`SharedSession`] hands the role the state
//! to continue from (`restored`), takes its changes (`save`, awaited by the role before
//! it answers the request that made the change), tells it of changes made elsewhere
//! (`on_change`), and may say which requests are safe to run again when the process
//! running them stopped before answering (`on_rerun`; by default none is).

use futures_core::future::BoxFuture;
use modelctx_types::JsonRpcRequest;

use crate::{RegistryError, SessionSnapshot};

/// Applies a [`SessionSnapshot`] changed by another process to the local session.
pub type ApplySnapshot = Box<dyn Fn(SessionSnapshot) + Send + Sync>;

/// Whether a request may run again in this process after the process that received it
/// stopped before answering (it may have run there in part, or to its end unseen).
pub type RerunCheck = Box<dyn Fn(&JsonRpcRequest) -> bool + Send + Sync>;

/// A session whose state lives beyond this process, as a transport offers it
/// (modelctx-transport's `TransportInfo::shared_session`): streamable HTTP
/// with a shared session registry, where each request may land on another process.
///
/// The server role is the only user: it starts from [`restored`](Self::restored),
/// calls [`save`](Self::save) after every change of its per-session state and awaits it
/// before answering the request that made the change (so the next request sees it,
/// wherever it lands), and registers with [`on_change`](Self::on_change) how to take in
/// a change made elsewhere.
pub trait SharedSession: Send + Sync {
    /// The state to continue from when another process started this session (the
    /// session then starts without a handshake: operational when the client's
    /// `notifications/initialized` arrived, [`SessionSnapshot::initialized`], otherwise
    /// past `initialize` and waiting for it, which the transport hands on when it
    /// arrives at any process); `None` for a new one.
    fn restored(&self) -> Option<SessionSnapshot>;

    /// Stores the session's state. An error means other processes will not see it (the
    /// request that changed it should fail), because the registry failed or the session
    /// is gone from it.
    fn save(&self, snapshot: SessionSnapshot) -> BoxFuture<'static, Result<(), RegistryError>>;

    /// How to apply state another process saved: the transport calls it before it
    /// hands on the first message after it learned of the change.
    fn on_change(&self, apply: ApplySnapshot);

    /// How to tell whether a request of this session may be run again here when the
    /// process running it stopped before answering (the transport continues its
    /// answer stream here). Without it (the default), no request is run again: the
    /// transport answers such a request with an error saying it was interrupted.
    fn on_rerun(&self, check: RerunCheck) {
        let _ = check;
    }
}
