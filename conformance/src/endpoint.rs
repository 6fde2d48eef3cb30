//! [`HttpEndpoint`]: where a test that builds its own streamable HTTP app (the hosting,
//! resumption, client-transport and OAuth tests) serves it, once per instance of its
//! cell: one on every leg but the two-instance ones, two sharing one Redis behind a
//! round-robin reverse proxy on `streamable-http-shared`, behind nginx or HAProxy on
//! `streamable-http-nginx` and `streamable-http-haproxy`.
//!
//! An origin is bound first (an OAuth resource names itself), then `serve(config, app)`
//! builds the app once, or on a two-instance leg twice, each time from `config` given a
//! session registry and an event store of its own on the trial's Redis, behind the test
//! kit's round-robin reverse proxy (`modelctx_test::round_robin`) or a real balancer
//! (`modelctx_test::Balancer`, started at bind time in front of the instances'
//! listeners): every request goes to the next instance whatever connection it came on,
//! so a test's pooled client alternates too.
//! `sibling()` is a second origin on the same Redis (two instances of the bundled
//! authorization server sharing one store), `redis_url()` serves other stores,
//! `shared_session_count()` reads the registry (a service's own count sees only its
//! copies), and `forget_shared_sessions()` empties the Redis. Legs a test cannot run on two
//! instances (a scripted raw server, the legacy SSE flows) keep an "ours:" note.

use std::sync::Arc;
use std::time::Duration;

use modelctx_http::{SessionRegistry, StreamableHttpServerConfig};
use tokio::net::TcpListener;

use modelctx_test::RedisServer;
use modelctx_test::round_robin::RoundRobin;

use crate::front::{self, Front};

/// How long connecting to the trial's Redis may take.
const CONNECT_WITHIN: Duration = Duration::from_secs(10);

/// An HTTP origin (`http://127.0.0.1:<port>`) bound before anything is served there, so
/// an app can be built knowing its public URL (an OAuth resource names itself). Get one
/// from [`Connector::http_endpoint`](crate::Connector::http_endpoint), then
/// [`serve`](Self::serve) the app.
///
/// On a two-instance leg the origin is a reverse proxy (the forwarder, nginx or HAProxy)
/// sending each request to the next of two instances of the app, in turn (no affinity,
/// whatever connection it came on), and each instance's configuration gets a
/// `modelctx_redis::SessionRegistry` and, if it keeps events, a
/// `modelctx_redis::EventStore` on the trial's `redis-server`, as two processes would
/// have. On every other leg the app is served once, at the origin itself.
pub struct HttpEndpoint {
    origin: String,
    /// Where the app is served: the origin itself, or the two instances' listeners
    /// behind the front; empty once served.
    listeners: Vec<TcpListener>,
    shared: Option<Shared>,
}

/// A two-instance leg's parts: the trial's Redis, a registry to read its count, and the
/// balancer in front of the instances (none when the forwarder is served at the origin).
struct Shared {
    redis: Arc<RedisServer>,
    registry: Option<Arc<modelctx_redis::SessionRegistry>>,
    balancer: Option<Arc<front::Started>>,
    /// How many instances serve the app.
    instances: usize,
}

impl std::fmt::Debug for HttpEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpEndpoint")
            .field("origin", &self.origin)
            .field("instances", &self.instances())
            .finish_non_exhaustive()
    }
}

impl HttpEndpoint {
    /// Binds 127.0.0.1:0; on a two-instance leg (`front`), starts the trial's
    /// `redis-server` too, and a balancer in front of the instances' listeners.
    pub(crate) async fn bind(front: Option<Front>) -> Self {
        let redis = match front {
            Some(_) => {
                // Started on a blocking thread: it waits for the server's log and PING.
                let redis = tokio::task::spawn_blocking(RedisServer::start)
                    .await
                    .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
                Some(Arc::new(redis))
            }
            None => None,
        };
        Self::bind_on(front, redis).await
    }

    async fn bind_on(front: Option<Front>, redis: Option<Arc<RedisServer>>) -> Self {
        let (origin, listeners, balancer) = match (front, &redis) {
            (Some(front @ Front::Balancer(_)), Some(_)) => {
                let (instances, balancer) = front.start().await;
                let balancer = balancer.expect("a balancer in front");
                (balancer.origin(), instances, Some(balancer))
            }
            _ => {
                let (listener, origin) = crate::support::loopback("").await;
                (origin, vec![listener], None)
            }
        };
        let instances = front.map_or(1, Front::instances);
        Self {
            origin,
            listeners,
            shared: redis.map(|redis| Shared {
                redis,
                registry: None,
                balancer,
                instances,
            }),
        }
    }

    /// Another origin of the same cell, for a second app of the test (an
    /// authorization server beside the resource): on a two-instance leg its instances
    /// share this endpoint's Redis, behind a front of the same kind.
    pub async fn sibling(&self) -> HttpEndpoint {
        let Some(shared) = &self.shared else {
            return Self::bind_on(None, None).await;
        };
        let front = match &shared.balancer {
            Some(balancer) => Front::Balancer(balancer.kind()),
            None => Front::Forwarder,
        };
        Self::bind_on(Some(front), Some(shared.redis.clone())).await
    }

    /// On a two-instance leg, the URL of the trial's Redis (`redis://127.0.0.1:<port>/`),
    /// for the app's other stores; `None` on the other legs.
    pub fn redis_url(&self) -> Option<String> {
        self.shared.as_ref().map(|s| s.redis.url())
    }

    /// `http://127.0.0.1:<port>`, without a trailing slash.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// How many instances serve the app: 2 or 3 on a two-instance leg (see the leg's
    /// front), else 1.
    pub fn instances(&self) -> usize {
        self.shared.as_ref().map_or(1, |s| s.instances)
    }

    /// Serves `app` built from `config` at [`origin`](Self::origin), once per
    /// [instance](Self::instances): on a two-instance leg `app` is called twice, each time
    /// with `config` given a session registry and (unless `config` keeps no events) an
    /// event store of its own on the trial's Redis. Build the app's
    /// `StreamableHttpService`s from the configuration `app` is handed. Everything runs
    /// until the trial's runtime ends.
    ///
    /// # Panics
    ///
    /// When called twice, or when the services cannot reach the trial's Redis.
    pub async fn serve<A>(&mut self, config: StreamableHttpServerConfig, app: A)
    where
        A: Fn(StreamableHttpServerConfig) -> axum::Router,
    {
        assert!(!self.listeners.is_empty(), "an HttpEndpoint serves one app");
        let mut listeners = std::mem::take(&mut self.listeners);
        let Some(shared) = &mut self.shared else {
            spawn_serve(listeners.remove(0), app(config));
            return;
        };
        // Behind the forwarder, the origin's listener serves it and the instances get
        // listeners of their own; behind a balancer, they were bound with it.
        let forwarder = match shared.balancer {
            Some(_) => None,
            None => Some(listeners.remove(0)),
        };
        if listeners.is_empty() {
            listeners = Front::Forwarder.start().await.0;
        }
        let aligner = front::Aligner::new();
        let count = listeners.len();
        let mut backends = Vec::new();
        for (index, backend) in listeners.into_iter().enumerate() {
            // Each instance its own connections to Redis, as two processes would have.
            let registry = Arc::new(session_registry(&shared.redis).await);
            shared.registry.get_or_insert_with(|| registry.clone());
            let mut config = config.clone().session_registry(registry);
            if config.event_store.is_some() {
                config = config.event_store(Arc::new(event_store(&shared.redis).await));
            }
            backends.push(format!(
                "http://{}",
                backend.local_addr().expect("local addr")
            ));
            // The Redis and the balancer live as long as the instances that use them:
            // until the trial's runtime ends and drops these tasks.
            let router = app(config)
                .layer(axum::Extension(shared.redis.clone()))
                .layer(axum::Extension(shared.balancer.clone()));
            spawn_serve(backend, aligner.tap(router, index));
        }
        match forwarder {
            Some(forwarder) => {
                spawn_serve(forwarder, RoundRobin::new(backends, |_, _, _| {}).router());
            }
            None => {
                let logs = || {
                    shared
                        .balancer
                        .as_ref()
                        .map(|b| b.logs())
                        .unwrap_or_default()
                };
                aligner.align(&self.origin, count, logs).await;
            }
        }
    }

    /// On a two-instance leg, empties the trial's Redis (every instance then forgets every
    /// session record and stored event, as after a Redis restart); nothing on the
    /// other legs. With each instance's local copies closed too, the endpoint has
    /// forgotten its sessions, as one service closing them all has.
    ///
    /// # Panics
    ///
    /// When the trial's Redis does not answer.
    pub async fn forget_shared_sessions(&self) {
        let Some(shared) = &self.shared else { return };
        let redis = shared.redis.clone();
        tokio::task::spawn_blocking(move || redis.flush())
            .await
            .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
            .unwrap_or_else(|e| panic!("cannot empty the trial's redis-server: {e}"));
    }

    /// On a two-instance leg, how many sessions the shared registry records (every
    /// instance's, each once); `None` on the other legs, where the app's own service
    /// counts them.
    ///
    /// # Panics
    ///
    /// When the trial's Redis does not answer, or before [`serve`](Self::serve).
    pub async fn shared_session_count(&self) -> Option<usize> {
        let shared = self.shared.as_ref()?;
        let registry = shared
            .registry
            .as_ref()
            .expect("shared_session_count after serve");
        Some(
            registry
                .count()
                .await
                .expect("the trial's redis-server answers"),
        )
    }
}

fn spawn_serve(listener: TcpListener, router: axum::Router) {
    let listener = axum::serve::ListenerExt::tap_io(listener, |s| {
        let _ = s.set_nodelay(true);
    });
    tokio::spawn(async move { axum::serve(listener, router).await });
}

/// A session registry on `redis`, as one process of the app has (the shared leg's
/// endpoint and connector each connect their own).
///
/// # Panics
///
/// When the server cannot be reached within [`CONNECT_WITHIN`].
pub(crate) async fn session_registry(redis: &RedisServer) -> modelctx_redis::SessionRegistry {
    let config = modelctx_redis::SessionRegistryConfig::default();
    redis_connected(modelctx_redis::SessionRegistry::connect(
        &redis.url(),
        config,
    ))
    .await
}

/// An event store on `redis`, as one process of the app has.
///
/// # Panics
///
/// When the server cannot be reached within [`CONNECT_WITHIN`].
pub(crate) async fn event_store(redis: &RedisServer) -> modelctx_redis::EventStore {
    let config = modelctx_redis::EventStoreConfig::default();
    redis_connected(modelctx_redis::EventStore::connect(&redis.url(), config)).await
}

/// What `connecting` to the trial's Redis gives (a store of the app's, say), within
/// ten seconds.
///
/// # Panics
///
/// When the server cannot be reached in that time, or refuses the connection.
pub async fn redis_connected<T, E: std::fmt::Debug>(
    connecting: impl std::future::Future<Output = Result<T, E>>,
) -> T {
    tokio::time::timeout(CONNECT_WITHIN, connecting)
        .await
        .expect("connecting to the trial's redis-server timed out")
        .expect("the trial's redis-server accepts a connection")
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// Serves an app answering which instance it is; six requests on one pooled
    /// client's connection.
    async fn six_answers(front: Option<Front>) -> (Vec<String>, Option<usize>) {
        let shared = front.is_some();
        let mut endpoint = HttpEndpoint::bind(front).await;
        let built = Arc::new(AtomicUsize::new(0));
        let count = built.clone();
        endpoint
            .serve(StreamableHttpServerConfig::default(), move |config| {
                assert_eq!(config.session_registry.is_some(), shared);
                assert!(config.event_store.is_some());
                let me = count.fetch_add(1, Ordering::Relaxed);
                axum::Router::new().fallback(move || async move { me.to_string() })
            })
            .await;
        assert_eq!(built.load(Ordering::Relaxed), endpoint.instances());
        let http = reqwest::Client::new();
        let mut answers = Vec::new();
        for _ in 0..6 {
            let r = http
                .get(format!("{}/any/path?q=1", endpoint.origin()))
                .send()
                .await
                .expect("an answer");
            answers.push(r.text().await.expect("a body"));
        }
        (answers, endpoint.shared_session_count().await)
    }

    #[test]
    fn the_shared_endpoint_sends_each_request_to_the_next_instance() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async {
            assert_eq!(six_answers(None).await, (vec!["0".to_owned(); 6], None));
            for front in [
                Front::Forwarder,
                Front::Balancer(modelctx_test::BalancerKind::Nginx),
                Front::Balancer(modelctx_test::BalancerKind::Haproxy),
            ] {
                let (answers, count) = six_answers(Some(front)).await;
                // Per request, not per connection: never the same instance twice in a
                // row, every instance in turn (behind nginx, the request that met the
                // refusing upstream went on to the next instance).
                assert!(
                    answers.windows(2).all(|w| w[0] != w[1]),
                    "{front:?}: {answers:?}"
                );
                let mut served: Vec<_> = answers.clone();
                served.sort();
                served.dedup();
                let all: Vec<_> = (0..front.instances()).map(|i| i.to_string()).collect();
                assert_eq!(served, all, "{front:?}: {answers:?}");
                assert_eq!(count, Some(0), "the shared registry is counted");
            }
        });
    }
}
