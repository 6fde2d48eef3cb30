//! Bounded waits: tests wait on events, never sleep.

use std::future::Future;
use std::time::Duration;

/// How long a test waits for one event before it fails.
pub const WAIT_TIMEOUT: Duration = modelctx_test::WAIT;

/// Awaits `future`, failing the test if it does not finish within [`WAIT_TIMEOUT`].
///
/// # Panics
///
/// On timeout, naming `what` was awaited.
pub async fn within<F: Future>(what: &str, future: F) -> F::Output {
    modelctx_test::within(WAIT_TIMEOUT, what, future).await
}
