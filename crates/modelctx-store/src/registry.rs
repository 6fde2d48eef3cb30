//! The registry of sessions shared by several server processes: the trait a deployment
//! implements ([`SessionRegistry`]) and the messages relayed through it.

use std::fmt;
use std::time::Duration;

use crate::SessionSnapshot;
use futures_core::future::BoxFuture;
use futures_core::stream::BoxStream;

/// Where the sessions of several streamable HTTP services (modelctx-http's
/// `StreamableHttpService`, typically processes behind one load balancer) are recorded, so that any of them can
/// serve any session's requests (`modelctx-redis` has one in Redis).
///
/// A record per session holds the server's [`SessionSnapshot`] (the negotiated
/// revision, what the client declared, whether its `notifications/initialized` arrived,
/// its log level and subscriptions) and a revision number that grows with every save. Records expire after the session's idle time
/// unless touched; every request of the session touches its record. Without a registry
/// (the default) a service keeps its sessions to itself, as before.
///
/// Every method returns a `'static` future (a remote registry does I/O); an error
/// means the registry could not be asked, and the service answers the request with 503
/// rather than guess.
pub trait SessionRegistry: Send + Sync {
    /// Records a new session with no state yet, expiring after `idle` unless touched,
    /// if fewer than `max_sessions` are recorded: `Ok(false)` at the cap.
    fn create(
        &self,
        session: &str,
        idle: Duration,
        max_sessions: usize,
    ) -> BoxFuture<'static, Result<bool, RegistryError>>;

    /// Stores the session's state and refreshes its expiry; answers the new revision
    /// (greater than any before). `Ok(None)` when the session is not recorded (deleted
    /// or expired): a state is never stored for a session that is gone.
    fn save(
        &self,
        session: &str,
        snapshot: &SessionSnapshot,
        idle: Duration,
    ) -> BoxFuture<'static, Result<Option<u64>, RegistryError>>;

    /// Refreshes the session's expiry and says what is recorded: the state when its
    /// revision is not `known` (0: none known).
    fn touch(
        &self,
        session: &str,
        idle: Duration,
        known: u64,
    ) -> BoxFuture<'static, Result<Lookup, RegistryError>>;

    /// Removes the session's record, its GET stream's holder and the messages kept for
    /// it (DELETE, or the server ended the session): every service then answers 404.
    fn remove(&self, session: &str) -> BoxFuture<'static, Result<(), RegistryError>>;

    /// How many sessions are recorded (expired ones not counted).
    fn count(&self) -> BoxFuture<'static, Result<usize, RegistryError>>;

    /// Sends `relayed` to the service called `to`, or to every service listening
    /// (`None`). At most once: a message no service hears is lost (the request it
    /// answers times out, a clear error); sent to `to` when no service listens as it (it
    /// stopped), an error says so.
    fn relay(
        &self,
        to: Option<&str>,
        relayed: Relayed,
    ) -> BoxFuture<'static, Result<(), RegistryError>>;

    /// Sends `relayed` to every service listening, like [`relay`](Self::relay) with
    /// `None`, and resolves once each of them has taken it in, or once `wait` has
    /// passed: `Ok(true)` when every one did. `from` is the sending service's instance
    /// name (the one it [`listen`](Self::listen)s as, and is counted among the
    /// listeners): the acknowledgements come back to it there. A listening service
    /// takes a message in before it asks its stream for the next, so a registry may
    /// acknowledge a message when its listener asks for the next one.
    ///
    /// What a new state of a session ([`RelayedKind::Changed`]) goes through: the
    /// request that changed it is answered only after every copy took it in, so an
    /// update raised after a `resources/unsubscribe` is answered reaches no copy that
    /// still holds the subscription. A service that does not answer (stopped, but still
    /// counted as listening) costs the request `wait`, never its answer.
    fn relay_acknowledged(
        &self,
        from: &str,
        relayed: Relayed,
        wait: Duration,
    ) -> BoxFuture<'static, Result<bool, RegistryError>>;

    /// Sends `message`, not tied to a request, to the client's standalone GET stream
    /// of `session`: relayed ([`RelayedKind::ForClient`]) to the service whose
    /// [`hold_stream`](Self::hold_stream) holds the stream, or, when none does, kept
    /// (at most `keep` messages per session, the oldest dropped; gone with the
    /// session) for the next service that opens it. `announcement`: a list change or
    /// resource update, which every service's copy of the session hears and sends:
    /// dropped when a service holds the stream (its own copy sends it), kept once
    /// (not when the same text is kept already) when none does. Dropped for a session
    /// that is gone.
    fn to_client(
        &self,
        session: &str,
        message: &str,
        announcement: bool,
        keep: usize,
    ) -> BoxFuture<'static, Result<(), RegistryError>>;

    /// Records that `holder` (`"<instance>/<n>"`: the service listening as
    /// `<instance>`) holds the session's GET stream for `lease` (renewed through
    /// [`renew_stream`](Self::renew_stream), never past the session's record), and
    /// takes the messages kept for the stream, oldest first. Only when no service
    /// holds the stream, or the holder is of the same service (which has checked that
    /// no stream of the session is open there), or `take_over` (a resumption with
    /// `Last-Event-ID`: the client lost its stream, even if its holder has not noticed
    /// yet): otherwise `None`, the stream is held elsewhere (409). The hold it
    /// replaced comes back with it ([`StreamHold::previous`]): the current one, or,
    /// when none is, the last one [released](Self::release_stream) since the previous
    /// `hold_stream` (the service taking over asks it for what it sent on the lost
    /// connection, and for what was relayed to it after its connection ended). A
    /// session that is gone: held, nothing kept.
    fn hold_stream(
        &self,
        session: &str,
        holder: &str,
        take_over: bool,
        lease: Duration,
    ) -> BoxFuture<'static, Result<Option<StreamHold>, RegistryError>>;

    /// Extends `holder`'s hold on the session's GET stream by `lease`; a hold that
    /// lapsed with no other holder since is taken again (with the messages kept
    /// meanwhile, oldest first). `None`: another holder has the stream now (a
    /// resumption elsewhere took it over) or the session is gone.
    fn renew_stream(
        &self,
        session: &str,
        holder: &str,
        lease: Duration,
    ) -> BoxFuture<'static, Result<Option<Vec<String>>, RegistryError>>;

    /// Forgets `holder`'s hold on the session's GET stream (its connection ended),
    /// unless another holder replaced it: later messages are kept again, and the next
    /// [`hold_stream`](Self::hold_stream) answers `holder` as the hold it replaced.
    fn release_stream(
        &self,
        session: &str,
        holder: &str,
    ) -> BoxFuture<'static, Result<(), RegistryError>>;

    /// What is relayed to the service called `instance` or to every service. The
    /// future resolves once listening: a message relayed after that is in the stream.
    /// The stream ends when the registry loses its connection (the service then
    /// listens again). The service takes each message in before it polls the stream
    /// for the next one (what [`relay_acknowledged`](Self::relay_acknowledged)
    /// counts on).
    fn listen(
        &self,
        instance: &str,
    ) -> BoxFuture<'static, Result<BoxStream<'static, Relayed>, RegistryError>>;
}

/// What [`SessionRegistry::hold_stream`] recorded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamHold {
    /// The messages kept for the stream while no service held it, oldest first.
    pub kept: Vec<String>,
    /// The hold this one replaced: one that still had the stream (a take-over), or
    /// the last one released since the hold before.
    pub previous: Option<String>,
}

impl StreamHold {
    /// A hold that took `kept` and replaced `previous`.
    pub fn new(kept: Vec<String>, previous: Option<String>) -> Self {
        Self { kept, previous }
    }
}

/// A message of a shared session sent on to another service through
/// [`SessionRegistry::relay`] (or, for the GET stream, through
/// [`SessionRegistry::to_client`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Relayed {
    /// The session's id.
    pub session: String,
    /// The JSON-RPC message, as JSON text (empty for [`RelayedKind::Ended`]).
    pub message: String,
    /// What the message is.
    pub kind: RelayedKind,
}

/// What a [`Relayed`] message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RelayedKind {
    /// From the client: its response to a request a handler sent (the id names the
    /// service that sent it), progress on such a request, or a cancellation of a
    /// request running elsewhere. (Its `notifications/initialized` is recorded in the
    /// session's state instead, and goes out as [`Changed`](Self::Changed); one relayed
    /// as this kind is taken in all the same.)
    FromClient,
    /// For the client's standalone GET stream, held by the service it is sent to.
    ForClient,
    /// The session has ended (DELETE, or the server closed it): every service ends its
    /// copy, and the requests that copy holds.
    Ended,
    /// A service saved a new state of the session: `{"revision": n, "state": ..}`
    /// (the [`SessionSnapshot`]), for every other copy to take in at once (a
    /// subscription made through one copy holds for the copy holding the GET stream).
    Changed,
    /// A service took the session's GET stream over from the hold named in the
    /// message, which the service it is sent to had, or opened it after that hold was
    /// released: that service stops sending on it and answers
    /// ([`HandedOver`](Self::HandedOver)) with what the new hold sends first.
    /// `{"holder", "to", "stream", "after", "resumed"}`: the old hold, the new one, the
    /// last event the client has (the new holder replayed up to it), and whether the
    /// client resumed the stream (`Last-Event-ID`; absent: true). In a resumption, what
    /// the old hold sent that the client may have missed; in either case, what was
    /// relayed to the old hold after its connection ended.
    HandOver,
    /// The answer to a [`HandOver`](Self::HandOver), to the new holder's service:
    /// `{"holder": <the new hold>, "events": [<message>, ..]}`, oldest first.
    HandedOver,
}

impl Relayed {
    /// A message the client sent in `session`.
    pub fn new(session: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            session: session.into(),
            message: message.into(),
            kind: RelayedKind::FromClient,
        }
    }

    /// A message for the client's GET stream of `session`.
    pub fn for_client(session: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            kind: RelayedKind::ForClient,
            ..Self::new(session, message)
        }
    }

    /// The end of `session`.
    pub fn ended(session: impl Into<String>) -> Self {
        Self {
            kind: RelayedKind::Ended,
            ..Self::new(session, String::new())
        }
    }

    /// A new state of `session` (see [`RelayedKind::Changed`]).
    pub fn changed(session: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            kind: RelayedKind::Changed,
            ..Self::new(session, message)
        }
    }

    /// A message of `kind` in `session`.
    pub fn of_kind(
        kind: RelayedKind,
        session: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            kind,
            ..Self::new(session, message)
        }
    }
}

/// What [`SessionRegistry::touch`] found.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Lookup {
    /// No such session: never created, deleted, or expired.
    Missing,
    /// The session is recorded but has no state yet (its `initialize` is not answered).
    Uninitialized,
    /// The session's state is still at the revision the caller knows.
    Unchanged,
    /// The session's state, at `revision`.
    State {
        /// The revision of `snapshot`.
        revision: u64,
        /// The state.
        snapshot: Box<SessionSnapshot>,
    },
}

/// A [`SessionRegistry`] that could not be asked (its store is unreachable, or
/// answered something unexpected).
#[derive(Debug, Clone)]
pub struct RegistryError {
    message: String,
}

impl RegistryError {
    /// An error that says `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "session registry: {}", self.message)
    }
}

impl std::error::Error for RegistryError {}
