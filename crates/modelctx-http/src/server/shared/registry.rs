//! The registry of sessions shared by several server processes: the trait a deployment
//! implements ([`SessionRegistry`]) and the messages relayed through it (their home is
//! modelctx-store), and what the service hands its relay task.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
pub use modelctx_store::{
    Lookup, RegistryError, Relayed, RelayedKind, SessionRegistry, StreamHold,
};

/// What a service's shared sessions hand its relay task, in order.
pub(crate) enum Outgoing {
    /// A message for the session's GET stream, not held here
    /// ([`SessionRegistry::to_client`]).
    ToClient {
        session: Arc<str>,
        message: String,
        announcement: bool,
    },
    /// This service's hold on the session's GET stream ended; released once `flushed`
    /// (the event store's barrier, [`EventStore::flushed`](crate::EventStore::flushed))
    /// resolves, so the hold's stored events are readable before another service can
    /// take the stream as no one's.
    Release {
        session: Arc<str>,
        holder: Arc<str>,
        flushed: BoxFuture<'static, ()>,
    },
}

/// The idle time of a shared session whose service keeps sessions until DELETE
/// (`session_idle_timeout: None`): a shared record must expire some day.
pub(crate) const IDLE_WITHOUT_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

/// How long a request that changed a shared session's state waits for every service
/// to acknowledge the new state before it is answered anyway
/// ([`SessionRegistry::relay_acknowledged`]): a round trip through the registry when
/// every service is well; only a service that stopped answering costs this much.
pub(crate) const CHANGE_WAIT: Duration = Duration::from_secs(2);
