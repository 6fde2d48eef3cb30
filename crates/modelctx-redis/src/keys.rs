//! Key names: every key starts with the configured prefix; a session's event keys share
//! one hash slot (`{session}`).

/// Declares the method of each key: its doc and attributes, its parameters, and the
/// format of what follows the prefix.
macro_rules! keys {
    ($($(#[$attr:meta])* $name:ident($($arg:ident: $ty:ty),*) => $format:literal;)*) => {
        impl Keys {
            $(
                $(#[$attr])*
                pub(crate) fn $name(&self, $($arg: $ty),*) -> String {
                    format!("{}{}", self.prefix, format_args!($format))
                }
            )*
        }
    };
}

#[derive(Debug, Clone)]
pub(crate) struct Keys {
    prefix: String,
}

impl Keys {
    pub(crate) fn new(prefix: &str) -> Self {
        Self {
            prefix: prefix.to_owned(),
        }
    }

    pub(crate) fn prefix(&self) -> &str {
        &self.prefix
    }
}

keys! {
    /// The sorted set of a session's streams.
    stream_index(session: &str) => "ev:{{{session}}}";
    /// What a stream's key starts with: the index key and a colon.
    stream_prefix(session: &str) => "ev:{{{session}}}:";
    /// The Redis Stream of one SSE stream.
    stream(session: &str, stream: u64) => "ev:{{{session}}}:{stream}";
    /// The run record of one stream (see `runs.rs`).
    run(session: &str, stream: u64) => "ev:{{{session}}}:{stream}:run";
    /// What the key saying a service is alive starts with.
    live_prefix() => "live:";
    /// The key saying service `instance` is alive.
    live(instance: &str) => "live:{instance}";
    /// One shared session's record.
    session(id: &str) => "sess:{{{id}}}";
    /// Which service holds one shared session's GET stream (`"<instance>/<n>"`).
    session_holder(id: &str) => "sess:{{{id}}}:get";
    /// The messages kept for one shared session's GET stream while no service holds it.
    session_kept(id: &str) => "sess:{{{id}}}:out";
    /// Live shared sessions (score: when the record expires, Unix ms in Redis's clock).
    sessions() => "sessions";
    /// The pub/sub channel of messages relayed to one service.
    relay_to(instance: &str) => "relay:{instance}";
    /// The pub/sub channel of messages relayed to every service.
    relay_all() => "relay";
    /// One task's record.
    task(id: &str) => "task:{id}";
    /// What a task record's key starts with.
    task_prefix() => "task:";
    /// Tasks in creation order (score: the creation number).
    task_order() => "tasks:order";
    /// Terminal tasks (score: the creation number), the first to make room.
    task_done() => "tasks:done";
    /// Tasks by expiry (score: Unix milliseconds).
    task_expiry() => "tasks:expiry";
    /// The counter that numbers tasks.
    task_counter() => "tasks:next";
    /// A registered OAuth client.
    #[cfg(feature = "oauth")]
    oauth_client(id: &str) => "oauth:client:{id}";
    /// The set of registered OAuth clients' ids.
    #[cfg(feature = "oauth")]
    oauth_clients() => "oauth:clients";
    /// What a grant's key starts with.
    #[cfg(feature = "oauth")]
    oauth_grant_prefix() => "oauth:grant:";
    /// One grant (`member` is `<kind>:<key>`).
    #[cfg(feature = "oauth")]
    oauth_grant(member: &str) => "oauth:grant:{member}";
    /// Live grants by expiry (score: Unix milliseconds).
    #[cfg(feature = "oauth")]
    oauth_grants() => "oauth:grants";
    /// A single-use id (the SHA-256 of an assertion's or a DPoP proof's `jti`) seen
    /// already, until its expiry.
    #[cfg(feature = "oauth")]
    oauth_seen(id: &str) => "oauth:seen:{id}";
    /// A single-use id (a single-use round's `requestState`) used already, until its
    /// expiry.
    used_once(id: &str) => "once:{id}";
}
