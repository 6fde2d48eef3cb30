//! Failing fast while Redis does not answer.
//!
//! Every round trip is bounded (5 s), but under load a Redis that stopped answering
//! would still hold every request that asks it for those 5 s, and the requests would
//! pile up for as long as it is away. So once a round trip gets no answer (it timed
//! out, or the connection was refused or broke), Redis is taken as *away*: round trips
//! fail at once, without being sent, and one task asks Redis (`PING`) until it answers,
//! [`PROBE_EVERY`] after each try that got no answer (each try bounded like any round
//! trip: while Redis stalls, a try lasts the 5 s). Its first answer ends it. A Redis that
//! answers with an error (a script error, a full memory, a `PING` its ACL refuses) is
//! not away.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::future::BoxFuture;

/// The pause between two probes that got no answer.
pub(crate) const PROBE_EVERY: Duration = Duration::from_millis(250);

/// Whether Redis is away, and how to ask it whether it is back.
pub(crate) struct Breaker {
    away: AtomicBool,
    /// One round trip to Redis: true when it answered.
    probe: Box<dyn Fn() -> BoxFuture<'static, bool> + Send + Sync>,
}

/// What a round trip did not get.
pub(crate) enum Failed {
    /// Redis is away: not sent.
    Away,
    /// Sent; Redis answered with an error, or did not answer.
    Redis(redis::RedisError),
}

impl Breaker {
    /// A breaker that asks `probe` whether Redis is back.
    pub(crate) fn new(
        probe: impl Fn() -> BoxFuture<'static, bool> + Send + Sync + 'static,
    ) -> Arc<Self> {
        Arc::new(Self {
            away: AtomicBool::new(false),
            probe: Box::new(probe),
        })
    }

    /// A breaker that asks Redis on `conn` (`PING`; once more at once when the
    /// connection broke, since the manager then reconnects to a Redis that may be back).
    pub(crate) fn pinging(conn: redis::aio::ConnectionManager) -> Arc<Self> {
        Self::new(move || {
            let mut conn = conn.clone();
            Box::pin(async move {
                let ping = redis::cmd("PING");
                let answered = |r: redis::RedisResult<String>| {
                    r.as_ref().map_or_else(|e| !no_answer(e), |_| true)
                };
                match ping.query_async::<String>(&mut conn).await {
                    Err(e) if !e.is_timeout() && (e.is_connection_dropped() || e.is_io_error()) => {
                        answered(ping.query_async::<String>(&mut conn).await)
                    }
                    first => answered(first),
                }
            })
        })
    }

    /// Runs `trip`, one round trip to Redis, unless Redis is away.
    pub(crate) async fn run<T>(
        self: &Arc<Self>,
        trip: impl Future<Output = Result<T, redis::RedisError>>,
    ) -> Result<T, Failed> {
        if self.away.load(Ordering::Acquire) {
            return Err(Failed::Away);
        }
        match trip.await {
            Err(e) if no_answer(&e) => {
                if !self.away.swap(true, Ordering::AcqRel) {
                    tokio::spawn(probe(Arc::downgrade(self)));
                }
                Err(Failed::Redis(e))
            }
            answered => answered.map_err(Failed::Redis),
        }
    }
}

/// Asks Redis until it answers, then ends its absence; stops early once the breaker is
/// dropped.
async fn probe(breaker: Weak<Breaker>) {
    loop {
        let Some(asking) = breaker.upgrade().map(|b| (b.probe)()) else {
            return;
        };
        let answered = asking.await;
        let Some(b) = breaker.upgrade() else { return };
        if answered {
            b.away.store(false, Ordering::Release);
            return;
        }
        drop(b);
        tokio::time::sleep(PROBE_EVERY).await;
    }
}

/// Whether `e` says Redis gave no answer at all.
fn no_answer(e: &redis::RedisError) -> bool {
    e.is_timeout() || e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::mpsc;

    fn timed_out() -> redis::RedisError {
        std::io::Error::new(std::io::ErrorKind::TimedOut, "no answer").into()
    }

    /// A breaker whose probes are answered through the returned channel, one each
    /// (true: Redis answered).
    fn answered_by_hand() -> (Arc<Breaker>, mpsc::UnboundedSender<bool>) {
        let (answer, answers) = mpsc::unbounded_channel::<bool>();
        let answers = Arc::new(tokio::sync::Mutex::new(answers));
        let breaker = Breaker::new(move || {
            let answers = answers.clone();
            Box::pin(async move { answers.lock().await.recv().await.unwrap_or(false) })
        });
        (breaker, answer)
    }

    async fn ok(breaker: &Arc<Breaker>, n: u32) -> Result<u32, Failed> {
        breaker
            .run(async move { Ok::<_, redis::RedisError>(n) })
            .await
    }

    #[tokio::test]
    async fn once_redis_gives_no_answer_round_trips_fail_at_once_until_a_probe_is_answered() {
        let (breaker, answer) = answered_by_hand();
        assert!(matches!(ok(&breaker, 1).await, Ok(1)));
        assert!(matches!(
            breaker.run(async { Err::<(), _>(timed_out()) }).await,
            Err(Failed::Redis(_))
        ));
        // Not sent: the trip would answer.
        assert!(matches!(ok(&breaker, 2).await, Err(Failed::Away)));
        answer.send(true).unwrap();
        let back = async {
            while breaker.away.load(Ordering::Acquire) {
                tokio::task::yield_now().await;
            }
        };
        tokio::time::timeout(Duration::from_secs(10), back)
            .await
            .expect("the probe's answer ends the absence");
        assert!(matches!(ok(&breaker, 3).await, Ok(3)));
    }

    #[tokio::test]
    async fn an_error_redis_answered_is_not_an_absence() {
        let (breaker, _answer) = answered_by_hand();
        let refused =
            redis::RedisError::from((redis::ErrorKind::UnexpectedReturnType, "not a number"));
        assert!(matches!(
            breaker.run(async { Err::<(), _>(refused) }).await,
            Err(Failed::Redis(_))
        ));
        assert!(matches!(ok(&breaker, 4).await, Ok(4)));
    }
}
