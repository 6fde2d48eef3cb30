//! A real `redis-server` for the tests, one per test (the test kit's), plus the
//! connections these tests read the stores through. A test that cannot start one fails
//! and says why; it is never skipped.

use std::time::Duration;

use redis::aio::ConnectionManager;

/// Every wait of a test on the stores.
pub(crate) const WITHIN: Duration = Duration::from_secs(10);

pub(crate) struct RedisServer(modelctx_test::RedisServer);

impl RedisServer {
    /// Starts a server, or panics with what went wrong and how to fix it.
    pub(crate) fn start() -> Self {
        Self(modelctx_test::RedisServer::start())
    }

    /// Stops the server and starts a new one on the same port: what it held is gone
    /// (no persistence), as after a crash.
    pub(crate) fn restart(&mut self) {
        self.0.restart();
    }

    pub(crate) fn url(&self) -> String {
        self.0.url()
    }

    /// A fresh reconnecting connection.
    pub(crate) async fn connection(&self) -> ConnectionManager {
        tokio::time::timeout(WITHIN, modelctx_redis::connect(&self.url()))
            .await
            .expect("connecting timed out")
            .expect("cannot connect to the test's redis-server")
    }

    /// Every key, sorted.
    pub(crate) async fn keys(&self) -> Vec<String> {
        let mut conn = self.connection().await;
        let mut keys: Vec<String> = redis::cmd("KEYS")
            .arg("*")
            .query_async(&mut conn)
            .await
            .expect("KEYS");
        keys.sort();
        keys
    }
}
