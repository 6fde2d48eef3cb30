//! A real `redis-server` for the tests, one per test (the test kit's), plus the
//! connections these tests read the stores through. A test that cannot start one fails
//! and says why; it is never skipped.

use std::future::Future;
use std::time::Duration;

use modelctx::client::ClientBuilder;
use modelctx::http::StreamableHttpService;
use modelctx::types::NotificationMethod;
use redis::aio::ConnectionManager;
use tokio::sync::mpsc;

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
        connected(modelctx_redis::connect(&self.url())).await
    }

    /// Two stores of this server, as two processes have them: each made by `store` on
    /// a connection of its own.
    pub(crate) async fn two_stores<S>(
        &self,
        store: impl Fn(ConnectionManager) -> S,
    ) -> (std::sync::Arc<S>, std::sync::Arc<S>) {
        let a = store(self.connection().await);
        let b = store(self.connection().await);
        (std::sync::Arc::new(a), std::sync::Arc::new(b))
    }

    /// What `command` (`PTTL`, `LLEN`, `GET`…) answers about `key`.
    pub(crate) async fn query_key<T: redis::FromRedisValue>(&self, command: &str, key: &str) -> T {
        let mut conn = self.connection().await;
        redis::cmd(command)
            .arg(key)
            .query_async(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("{command} {key}: {e}"))
    }

    /// A session registry on this server, its keys under `prefix`.
    pub(crate) async fn session_registry(&self, prefix: &str) -> modelctx_redis::SessionRegistry {
        let config = modelctx_redis::SessionRegistryConfig::default().prefix(prefix);
        connected(modelctx_redis::SessionRegistry::connect(
            &self.url(),
            config,
        ))
        .await
    }

    /// An announcement bus on this server, its channel under `prefix`.
    pub(crate) async fn announcements(&self, prefix: &str) -> modelctx_redis::Announcements {
        let config = modelctx_redis::AnnouncementsConfig::default().prefix(prefix);
        connected(modelctx_redis::Announcements::connect(&self.url(), config)).await
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

/// A call of a store, bounded by [`WITHIN`].
pub(crate) async fn store_call<F: Future>(call: F) -> F::Output {
    modelctx_test::within(WITHIN, "a store call", call).await
}

/// Runs `a` and `b` at once, each a task of its own (as two processes would), bounded
/// by [`WITHIN`]: their outputs.
pub(crate) async fn race<A, B>(a: A, b: B) -> (A::Output, B::Output)
where
    A: Future + Send + 'static,
    A::Output: Send + 'static,
    B: Future + Send + 'static,
    B::Output: Send + 'static,
{
    let (a, b) = modelctx_test::within(WITHIN, "both at once", async {
        tokio::join!(tokio::spawn(a), tokio::spawn(b))
    })
    .await;
    (a.unwrap(), b.unwrap())
}

/// What `connecting` to the test's `redis-server` gives, bounded by [`WITHIN`].
async fn connected<T, E: std::fmt::Debug>(connecting: impl Future<Output = Result<T, E>>) -> T {
    tokio::time::timeout(WITHIN, connecting)
        .await
        .expect("connecting timed out")
        .expect("cannot connect to the test's redis-server")
}

/// Serves `service` on a free loopback port for the rest of the test: its origin.
pub(crate) async fn serve(service: StreamableHttpService) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(service.serve(listener, std::future::pending::<()>()));
    origin
}

/// `client` handing the params of each `N` notification it gets to the receiver.
pub(crate) fn hearing<N: NotificationMethod>(
    client: ClientBuilder,
) -> (ClientBuilder, mpsc::UnboundedReceiver<N::Params>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let client = client.notification_handler::<N, _, _>(move |params, _| {
        let tx = tx.clone();
        async move {
            let _ = tx.send(params);
        }
    });
    (client, rx)
}

/// Declares the request method `$method` of the tests' servers, its params and result
/// any JSON.
macro_rules! json_request {
    ($(#[$doc:meta])* $name:ident, $method:literal) => {
        $(#[$doc])*
        struct $name;
        impl modelctx::types::RequestMethod for $name {
            const METHOD: &'static str = $method;
            type Params = serde_json::Value;
            type Result = serde_json::Value;
        }
    };
}
pub(crate) use json_request;

/// POSTs `body` as JSON to `url`, accepting JSON or an event stream, with `headers`
/// besides: the response, bounded by [`WITHIN`].
pub(crate) async fn post_json(
    url: &str,
    headers: &[(&str, &str)],
    body: &serde_json::Value,
) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    tokio::time::timeout(WITHIN, request.body(body.to_string()).send())
        .await
        .expect("the POST is answered in time")
        .expect("the POST reaches the service")
}
