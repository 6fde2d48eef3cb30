//! Key names: every key starts with the configured prefix; a session's event keys share
//! one hash slot (`{session}`).

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

    /// The sorted set of a session's streams.
    pub(crate) fn stream_index(&self, session: &str) -> String {
        format!("{}ev:{{{session}}}", self.prefix)
    }

    /// What a stream's key starts with: the index key and a colon.
    pub(crate) fn stream_prefix(&self, session: &str) -> String {
        format!("{}ev:{{{session}}}:", self.prefix)
    }

    /// The Redis Stream of one SSE stream.
    pub(crate) fn stream(&self, session: &str, stream: u64) -> String {
        format!("{}ev:{{{session}}}:{stream}", self.prefix)
    }

    /// The run record of one stream (see `runs.rs`).
    pub(crate) fn run(&self, session: &str, stream: u64) -> String {
        format!("{}ev:{{{session}}}:{stream}:run", self.prefix)
    }

    /// What the key saying a service is alive starts with.
    pub(crate) fn live_prefix(&self) -> String {
        format!("{}live:", self.prefix)
    }

    /// The key saying service `instance` is alive.
    pub(crate) fn live(&self, instance: &str) -> String {
        format!("{}live:{instance}", self.prefix)
    }

    /// One shared session's record.
    pub(crate) fn session(&self, id: &str) -> String {
        format!("{}sess:{{{id}}}", self.prefix)
    }

    /// Which service holds one shared session's GET stream (`"<instance>/<n>"`).
    pub(crate) fn session_holder(&self, id: &str) -> String {
        format!("{}sess:{{{id}}}:get", self.prefix)
    }

    /// The messages kept for one shared session's GET stream while no service holds it.
    pub(crate) fn session_kept(&self, id: &str) -> String {
        format!("{}sess:{{{id}}}:out", self.prefix)
    }

    /// Live shared sessions (score: when the record expires, Unix ms in Redis's clock).
    pub(crate) fn sessions(&self) -> String {
        format!("{}sessions", self.prefix)
    }

    /// The pub/sub channel of messages relayed to one service.
    pub(crate) fn relay_to(&self, instance: &str) -> String {
        format!("{}relay:{instance}", self.prefix)
    }

    /// The pub/sub channel of messages relayed to every service.
    pub(crate) fn relay_all(&self) -> String {
        format!("{}relay", self.prefix)
    }

    /// One task's record.
    pub(crate) fn task(&self, id: &str) -> String {
        format!("{}task:{id}", self.prefix)
    }

    /// What a task record's key starts with.
    pub(crate) fn task_prefix(&self) -> String {
        format!("{}task:", self.prefix)
    }

    /// Tasks in creation order (score: the creation number).
    pub(crate) fn task_order(&self) -> String {
        format!("{}tasks:order", self.prefix)
    }

    /// Terminal tasks (score: the creation number), the first to make room.
    pub(crate) fn task_done(&self) -> String {
        format!("{}tasks:done", self.prefix)
    }

    /// Tasks by expiry (score: Unix milliseconds).
    pub(crate) fn task_expiry(&self) -> String {
        format!("{}tasks:expiry", self.prefix)
    }

    /// The counter that numbers tasks.
    pub(crate) fn task_counter(&self) -> String {
        format!("{}tasks:next", self.prefix)
    }

    /// A registered OAuth client.
    #[cfg(feature = "oauth")]
    pub(crate) fn oauth_client(&self, id: &str) -> String {
        format!("{}oauth:client:{id}", self.prefix)
    }

    /// The set of registered OAuth clients' ids.
    #[cfg(feature = "oauth")]
    pub(crate) fn oauth_clients(&self) -> String {
        format!("{}oauth:clients", self.prefix)
    }

    /// What a grant's key starts with.
    #[cfg(feature = "oauth")]
    pub(crate) fn oauth_grant_prefix(&self) -> String {
        format!("{}oauth:grant:", self.prefix)
    }

    /// One grant (`member` is `<kind>:<key>`).
    #[cfg(feature = "oauth")]
    pub(crate) fn oauth_grant(&self, member: &str) -> String {
        format!("{}oauth:grant:{member}", self.prefix)
    }

    /// Live grants by expiry (score: Unix milliseconds).
    #[cfg(feature = "oauth")]
    pub(crate) fn oauth_grants(&self) -> String {
        format!("{}oauth:grants", self.prefix)
    }

    /// A single-use id (the SHA-256 of an assertion's or a DPoP proof's `jti`) seen
    /// already, until its expiry.
    #[cfg(feature = "oauth")]
    pub(crate) fn oauth_seen(&self, id: &str) -> String {
        format!("{}oauth:seen:{id}", self.prefix)
    }

    /// A single-use id (a single-use round's `requestState`) used already, until its
    /// expiry.
    pub(crate) fn used_once(&self, id: &str) -> String {
        format!("{}once:{id}", self.prefix)
    }
}
