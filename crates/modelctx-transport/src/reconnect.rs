//! What a client transport does when it loses its server: how often and how fast it
//! tries again, and which requests it may send a second time.
//!
//! The backoff doubles from `initial_delay` up to `max_delay` with "equal" jitter (a draw
//! between half the wait and all of it, from std's `RandomState`: no RNG crate), for
//! `max_attempts` in a row. Requests sent again are the `IDEMPOTENT_METHODS` (lists, reads,
//! `ping`, `server/discover`, `completion/complete`, `tasks/get` and `tasks/list`) plus
//! vendor methods the caller names; never `tools/call`. A request that was sent and whose
//! connection dropped fails as `interrupted` (`-32000` with `data.interrupted`: it may or
//! may not have run), one never sent as `undelivered`.
//!
//! Reconnection lives in the transports, not in the client role, because only the transport
//! knows that a new session began (a 404, a new child) and whether a request reached the
//! wire; the client keeps its negotiated state, so nothing above notices a restart except
//! the requests that failed as interrupted.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::time::Duration;

use modelctx_types::{ErrorCode, ErrorData};

/// The methods a client transport may send again after the connection dropped while
/// they were in flight (see [`ReconnectPolicy::is_idempotent`]): they read, list or
/// probe and change nothing on the server, so a second copy is harmless even if the
/// first one ran.
///
/// Not in the list, so never re-sent: `tools/call` (a tool may have effects),
/// `initialize` (the transport repeats its own), `logging/setLevel`,
/// `resources/subscribe` / `unsubscribe`, `subscriptions/listen` (a long-lived stream),
/// the tasks methods that change a task (`tasks/cancel`, `tasks/update`), `tasks/result`
/// (it may wait for a task's end) and every method the list does not know, vendor
/// methods included, unless the caller adds it
/// ([`ReconnectPolicy::idempotent_method`]).
pub const IDEMPOTENT_METHODS: &[&str] = &[
    "ping",
    "server/discover",
    "tools/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "tasks/get",
    "tasks/list",
];

/// How a client transport reconnects after a dropped connection, a refused connection
/// or a restarted server: exponential backoff with jitter and a cap, a limit on attempts
/// in a row, and whether requests in flight at the drop are sent again.
///
/// Attempt `n` (from 1) waits `initial_delay × 2^(n-1)`, capped at `max_delay`; with
/// jitter (the default) a random delay between half of that and all of it, so clients
/// that lost the same server do not come back in step. After `max_attempts` failed
/// attempts in a row the transport gives up and says so. A request in flight when the
/// connection dropped is sent again only when its method is idempotent
/// ([`is_idempotent`](Self::is_idempotent)) and [`retry_idempotent`](Self::retry_idempotent)
/// is on; any other fails with [`interrupted`]: it may or may not have run, and sending
/// it again is the caller's decision.
///
/// ```
/// use std::time::Duration;
/// use modelctx_transport::ReconnectPolicy;
///
/// let policy = ReconnectPolicy::new()
///     .initial_delay(Duration::from_millis(200))
///     .max_delay(Duration::from_secs(10))
///     .max_attempts(8)
///     .idempotent_method("vendor/lookup");
/// assert!(policy.is_idempotent("tools/list"));
/// assert!(policy.is_idempotent("vendor/lookup"));
/// assert!(!policy.is_idempotent("tools/call"));
/// assert!(policy.delay(1) <= Duration::from_millis(200));
/// assert!(policy.delay(30) <= Duration::from_secs(10));
/// ```
#[derive(Debug, Clone)]
pub struct ReconnectPolicy {
    initial_delay: Duration,
    max_delay: Duration,
    max_attempts: u32,
    jitter: bool,
    retry_idempotent: bool,
    extra_idempotent: Arc<[Arc<str>]>,
}

impl Default for ReconnectPolicy {
    fn default() -> Self {
        Self::new()
    }
}

impl ReconnectPolicy {
    /// The default policy: first wait 100 ms, doubling up to 5 s, jittered, at most 6
    /// attempts in a row (about 10 s in all before giving up), idempotent requests sent
    /// again.
    pub fn new() -> Self {
        Self {
            initial_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(5),
            max_attempts: 6,
            jitter: true,
            retry_idempotent: true,
            extra_idempotent: Arc::from(Vec::new()),
        }
    }

    /// No reconnection: a failure is reported at once and nothing is sent again.
    pub fn never() -> Self {
        Self::new().max_attempts(0).retry_idempotent(false)
    }

    modelctx_types::__setters! {
        /// The wait before the first attempt (default 100 ms).
        initial_delay(delay: Duration) { initial_delay = delay }

        /// The longest wait between two attempts (default 5 s).
        max_delay(delay: Duration) { max_delay = delay }

        /// How many attempts in a row may fail before the transport gives up (default 6;
        /// 0 never tries again).
        max_attempts(attempts: u32) { max_attempts = attempts }

        /// Whether each wait is randomised between half of it and all of it (default true).
        jitter(jitter: bool) { jitter = jitter }

        /// Whether an idempotent request in flight when the connection dropped is sent again
        /// once the transport is back (default true).
        retry_idempotent(retry: bool) { retry_idempotent = retry }
    }

    /// Counts `method` as idempotent besides [`IDEMPOTENT_METHODS`] (a vendor method
    /// that only reads).
    #[must_use]
    pub fn idempotent_method(mut self, method: impl Into<String>) -> Self {
        let mut methods = self.extra_idempotent.to_vec();
        methods.push(Arc::from(method.into()));
        self.extra_idempotent = Arc::from(methods);
        self
    }

    /// How many attempts in a row may fail.
    pub fn attempts(&self) -> u32 {
        self.max_attempts
    }

    /// Whether a request of `method` in flight at a drop may be sent again: the policy
    /// retries idempotent requests and `method` is one of [`IDEMPOTENT_METHODS`] or was
    /// added with [`idempotent_method`](Self::idempotent_method).
    pub fn is_idempotent(&self, method: &str) -> bool {
        self.retry_idempotent
            && (IDEMPOTENT_METHODS.contains(&method)
                || self.extra_idempotent.iter().any(|m| &**m == method))
    }

    /// The wait before attempt `attempt` (counted from 1), jittered when the policy
    /// says so.
    pub fn delay(&self, attempt: u32) -> Duration {
        let random = if self.jitter {
            RandomState::new().build_hasher().finish()
        } else {
            u64::MAX
        };
        self.delay_with(attempt, random)
    }

    /// [`delay`](Self::delay) with the random draw given: `u64::MAX` is the full wait,
    /// 0 half of it.
    fn delay_with(&self, attempt: u32, random: u64) -> Duration {
        let doublings = attempt.saturating_sub(1).min(32);
        let full = self
            .initial_delay
            .saturating_mul(1u32 << doublings.min(31))
            .min(self.max_delay);
        if !self.jitter {
            return full;
        }
        let half = full / 2;
        let spread = (full - half).as_nanos();
        let extra = spread * u128::from(random) / u128::from(u64::MAX);
        half + Duration::from_nanos(u64::try_from(extra).unwrap_or(u64::MAX))
    }
}

/// Where a reconnecting client transport stands, as it reports it to whoever watches
/// (a pool's health, a status line).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConnectionState {
    /// Connected, or not known to be otherwise (the last exchange with the server
    /// worked, or there was none yet).
    Connected,
    /// The connection was lost (or refused): attempt `attempt` of the policy's
    /// [`max_attempts`](ReconnectPolicy::max_attempts) is waiting or under way.
    Reconnecting {
        /// The attempt, counted from 1.
        attempt: u32,
    },
    /// The last attempts all failed (HTTP: a later request starts over; a restarted
    /// child process: the limit is reached, the transport is closed), with the reason.
    Failed(String),
}

impl std::fmt::Display for ConnectionState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Connected => f.write_str("connected"),
            Self::Reconnecting { attempt } => write!(f, "reconnecting (attempt {attempt})"),
            Self::Failed(reason) => write!(f, "gave up reconnecting: {reason}"),
        }
    }
}

/// The error a client transport answers a request with, locally, when the connection
/// dropped while the request was in flight and it will not be sent again: the server
/// may or may not have run it. Code `-32000`, `data: {"interrupted": true}`; the
/// reason should say so in words as well.
pub fn interrupted(reason: impl Into<String>) -> ErrorData {
    ErrorData::new(ErrorCode(-32000), reason.into())
        .with_data(serde_json::json!({ "interrupted": true }))
}

/// Whether `error` is a transport's [`interrupted`] report rather than a peer's answer.
pub fn is_interrupted(error: &ErrorData) -> bool {
    error.code == ErrorCode(-32000)
        && error
            .data
            .as_ref()
            .and_then(|d| d.get("interrupted"))
            .and_then(serde_json::Value::as_bool)
            == Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_doubles_up_to_the_cap_and_jitter_stays_within_half_of_it() {
        let policy = ReconnectPolicy::new()
            .initial_delay(Duration::from_millis(100))
            .max_delay(Duration::from_secs(1))
            .jitter(false);
        let waits: Vec<_> = (1..=6).map(|n| policy.delay(n).as_millis()).collect();
        assert_eq!(waits, [100, 200, 400, 800, 1000, 1000]);
        assert_eq!(policy.delay(u32::MAX), Duration::from_secs(1));

        let jittered = policy.clone().jitter(true);
        assert_eq!(jittered.delay_with(3, 0), Duration::from_millis(200));
        assert_eq!(jittered.delay_with(3, u64::MAX), Duration::from_millis(400));
        for _ in 0..100 {
            let d = jittered.delay(4);
            assert!(
                d >= Duration::from_millis(400) && d <= Duration::from_millis(800),
                "{d:?}"
            );
        }
    }

    #[test]
    fn only_reads_and_lists_are_idempotent_and_never_retries_nothing() {
        let policy = ReconnectPolicy::new();
        for m in IDEMPOTENT_METHODS {
            assert!(policy.is_idempotent(m), "{m}");
        }
        for m in [
            "tools/call",
            "initialize",
            "subscriptions/listen",
            "tasks/cancel",
            "x/y",
        ] {
            assert!(!policy.is_idempotent(m), "{m}");
        }
        assert!(!ReconnectPolicy::never().is_idempotent("tools/list"));
        assert_eq!(ReconnectPolicy::never().attempts(), 0);
    }

    #[test]
    fn an_interrupted_report_is_recognised() {
        let e = interrupted("gone");
        assert!(is_interrupted(&e));
        assert!(!crate::is_undelivered(&e));
        assert!(!is_interrupted(&crate::undelivered("never sent")));
    }
}
