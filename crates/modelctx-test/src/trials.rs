//! Test binaries that are also the stdio servers their tests start: such a binary runs
//! its tests with libtest-mimic (`harness = false`), because libtest would write its
//! banner on stdout, which is the protocol stream when the binary is the child.
//!
//! ```no_run
//! use std::time::Duration;
//!
//! async fn a_child_answers() {
//!     // Starts `std::env::current_exe()` with the argument `serve-stdio`...
//! }
//!
//! fn serve_stdio() {
//!     // ...which lands here: serve one session over stdin and stdout.
//! }
//!
//! fn main() {
//!     let limit = Duration::from_secs(20);
//!     modelctx_test::trials::main(
//!         serve_stdio,
//!         vec![modelctx_test::trials::trial("a_child_answers", limit, a_child_answers)],
//!     );
//! }
//! ```

use std::future::Future;
use std::time::Duration;

pub use libtest_mimic::Trial;

/// The argument with which a test starts its own binary as a stdio server.
pub const SERVE_STDIO: &str = "serve-stdio";

/// A trial named `name` that runs `test` on a runtime of its own (two worker threads, so
/// that a child's pipes and the test make progress together), and fails when it has not
/// finished within `limit`.
pub fn trial<F, Fut>(name: &'static str, limit: Duration, test: F) -> Trial
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = ()>,
{
    Trial::test(name, move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        runtime
            .block_on(async { tokio::time::timeout(limit, test()).await })
            .map_err(|_| format!("{name} did not finish within {limit:?}").into())
    })
}

/// Runs `serve`, the child's side (a stdio server until its session ends), on a
/// current-thread runtime of its own.
pub fn serve_on_runtime(serve: impl Future<Output = ()>) {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(serve);
}

/// The `main` of such a binary: started with [`SERVE_STDIO`] as its first argument, it
/// runs `serve` and returns; otherwise it runs `trials` as `cargo test` asks and exits
/// with their outcome.
pub fn main(serve: impl FnOnce(), trials: Vec<Trial>) {
    if std::env::args().nth(1).as_deref() == Some(SERVE_STDIO) {
        serve();
        return;
    }
    libtest_mimic::run(&libtest_mimic::Arguments::from_args(), trials).exit();
}
