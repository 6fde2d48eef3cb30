//! Bounded waits: a test waits on events, never sleeps, and a wait that does not end
//! fails the test saying what it was waiting for.

use std::future::Future;
use std::time::Duration;

/// A bound for one awaited event that suits most in-process tests.
pub const WAIT: Duration = Duration::from_secs(5);

/// Awaits `future` for at most `limit`.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use std::time::Duration;
/// use modelctx_test::within;
///
/// let answer = within(Duration::from_secs(1), "the answer", async { 42 }).await;
/// assert_eq!(answer, 42);
/// # }
/// ```
///
/// # Panics
///
/// When `future` has not finished within `limit`, naming `what` was awaited.
pub async fn within<F: Future>(limit: Duration, what: &str, future: F) -> F::Output {
    match tokio::time::timeout(limit, future).await {
        Ok(output) => output,
        Err(_) => panic!("timed out after {limit:?} waiting for {what}"),
    }
}

/// Awaits `future` for at most [`WAIT`]: [`within`] with the usual bound.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let answer = modelctx_test::soon("the answer", async { 42 }).await;
/// assert_eq!(answer, 42);
/// # }
/// ```
///
/// # Panics
///
/// When `future` has not finished within [`WAIT`], naming `what` was awaited.
pub async fn soon<F: Future>(what: &str, future: F) -> F::Output {
    within(WAIT, what, future).await
}

/// A gate a test opens when it is ready: what waits at it ([`Gate::passed`]) goes on
/// once [`Gate::open`] has been called, before or after it came. Clones share the gate.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let gate = modelctx_test::Gate::new();
/// gate.open();
/// modelctx_test::soon("the gate", gate.passed()).await;
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Gate(std::sync::Arc<tokio::sync::watch::Sender<bool>>);

impl Gate {
    /// A closed gate.
    pub fn new() -> Self {
        Self(std::sync::Arc::new(tokio::sync::watch::channel(false).0))
    }

    /// Opens the gate, for good.
    pub fn open(&self) {
        self.0.send_replace(true);
    }

    /// Waits until the gate is open.
    pub async fn passed(&self) {
        let _ = self.0.subscribe().wait_for(|open| *open).await;
    }
}

impl Default for Gate {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    #[should_panic(expected = "timed out after 10ms waiting for nothing at all")]
    async fn a_wait_that_does_not_end_names_what_it_waited_for() {
        within(
            Duration::from_millis(10),
            "nothing at all",
            std::future::pending::<()>(),
        )
        .await;
    }
}
