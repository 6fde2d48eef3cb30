//! Handlers' panics caught as errors: a panicking handler fails its own work (its
//! request, its notification, its tool call), never the task that polls it.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{self, Poll};

/// `future` with a panic raised while it is polled caught: it resolves to `Err` with
/// the panic's payload instead. Handlers are boxed futures, so `future` is `Unpin`.
///
/// The caller asserts unwind safety: after a panic the future is dropped, never
/// polled again, and nothing it borrowed is looked at by the caller.
#[doc(hidden)]
pub fn catch_unwind<F: Future + Unpin>(future: F) -> CatchUnwind<F> {
    CatchUnwind(future)
}

/// The future [`catch_unwind`] returns.
#[doc(hidden)]
#[must_use = "futures do nothing unless polled"]
pub struct CatchUnwind<F>(F);

impl<F> fmt::Debug for CatchUnwind<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CatchUnwind").finish_non_exhaustive()
    }
}

impl<F: Future + Unpin> Future for CatchUnwind<F> {
    type Output = Result<F::Output, Box<dyn Any + Send>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut task::Context<'_>) -> Poll<Self::Output> {
        let inner = &mut self.0;
        match std::panic::catch_unwind(AssertUnwindSafe(|| Pin::new(inner).poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Err(panic) => Poll::Ready(Err(panic)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panic_while_polled_is_the_error_and_an_answer_passes_through() {
        let answered: Pin<Box<dyn Future<Output = u8> + Send>> = Box::pin(async { 7 });
        assert_eq!(catch_unwind(answered).await.ok(), Some(7));

        let panicking: Pin<Box<dyn Future<Output = u8> + Send>> = Box::pin(async {
            tokio::task::yield_now().await;
            panic!("the handler gave up")
        });
        let panic = catch_unwind(panicking)
            .await
            .expect_err("the panic is caught");
        assert_eq!(panic.downcast_ref::<&str>(), Some(&"the handler gave up"));
    }
}
