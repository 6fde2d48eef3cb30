//! What stands in front of the instances of a two-instance leg: the test kit's
//! round-robin forwarder (`streamable-http-shared`), or a real load balancer, nginx or
//! HAProxy (`streamable-http-nginx`, `streamable-http-haproxy`), started per trial with
//! the test kit's configuration in front of the instances' listeners, bound first.
//!
//! The balancer legs differ in what the balancer faces: nginx has two instances and a
//! third upstream that refuses every connection (an instance that is down and not yet
//! known to be), so the balancer retries each request that lands there on another
//! (nginx then leaves it out for its `fail_timeout`); HAProxy has three instances.
//!
//! Tests read "the first instance" as the one the first request reaches, as the
//! forwarder does. A balancer's round robin may start anywhere, so before the test's
//! first request the harness [aligns](Aligner::align) it: each instance answers a probe
//! path itself ([`Aligner::tap`]) and probes go through the balancer until the last
//! instance has answered one.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::IntoResponse;
use modelctx_test::{Balancer, BalancerKind};
use tokio::net::{TcpListener, TcpSocket};

use crate::kind::TransportKind;

/// The front of a two-instance leg.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Front {
    /// The test kit's forwarder, written here.
    Forwarder,
    /// A real load balancer.
    Balancer(BalancerKind),
}

impl Front {
    /// The front of `kind`'s instances, if it is a two-instance leg.
    pub(crate) fn of(kind: TransportKind) -> Option<Self> {
        match kind {
            TransportKind::StreamableHttpShared => Some(Front::Forwarder),
            TransportKind::StreamableHttpNginx => Some(Front::Balancer(BalancerKind::Nginx)),
            TransportKind::StreamableHttpHaproxy => Some(Front::Balancer(BalancerKind::Haproxy)),
            _ => None,
        }
    }

    /// How many instances serve behind it.
    pub(crate) fn instances(self) -> usize {
        match self {
            Front::Balancer(BalancerKind::Haproxy) => 3,
            _ => 2,
        }
    }

    /// Whether an upstream that refuses connections stands among the instances.
    fn has_dead_upstream(self) -> bool {
        self == Front::Balancer(BalancerKind::Nginx)
    }

    /// Binds the instances' listeners on 127.0.0.1:0 and, for a balancer, starts it in
    /// front of them (a connection waits in a listener's backlog until it is served).
    ///
    /// # Panics
    ///
    /// When the balancer cannot start (the message says how to install it).
    pub(crate) async fn start(self) -> (Vec<TcpListener>, Option<Arc<Started>>) {
        let mut listeners = Vec::with_capacity(self.instances());
        for _ in 0..self.instances() {
            listeners.push(
                TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("bind 127.0.0.1:0"),
            );
        }
        let Front::Balancer(kind) = self else {
            return (listeners, None);
        };
        let mut upstreams: Vec<_> = listeners
            .iter()
            .map(|l| l.local_addr().expect("local addr"))
            .collect();
        // Bound, never listening: the port stays ours and every connection is refused.
        let dead = self.has_dead_upstream().then(|| {
            let socket = TcpSocket::new_v4().expect("a socket");
            socket
                .bind(([127, 0, 0, 1], 0).into())
                .expect("bind 127.0.0.1:0");
            upstreams.push(socket.local_addr().expect("local addr"));
            socket
        });
        let balancer = tokio::task::spawn_blocking(move || Balancer::start(kind, &upstreams))
            .await
            .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
        let started = Started {
            balancer,
            _dead: dead,
        };
        (listeners, Some(Arc::new(started)))
    }
}

/// A running balancer and the dead upstream it faces, if any; both end when the last
/// clone drops.
#[derive(Debug)]
pub(crate) struct Started {
    balancer: Balancer,
    _dead: Option<TcpSocket>,
}

impl Started {
    /// The balancer's origin, `http://127.0.0.1:<port>`.
    pub(crate) fn origin(&self) -> String {
        self.balancer.origin()
    }

    /// Which balancer it is.
    pub(crate) fn kind(&self) -> BalancerKind {
        self.balancer.kind()
    }

    /// What the balancer has logged so far.
    pub(crate) fn logs(&self) -> String {
        self.balancer.logs()
    }
}

/// The path an instance answers itself (`204`), never reaching the app.
const PROBE: &str = "/.front-probe";

/// Puts a balancer's round robin where the forwarder's starts: on the first instance.
#[derive(Debug, Clone)]
pub(crate) struct Aligner {
    /// The index of the instance that answered the last probe.
    last: Arc<AtomicUsize>,
}

impl Aligner {
    pub(crate) fn new() -> Self {
        Self {
            last: Arc::new(AtomicUsize::new(usize::MAX)),
        }
    }

    /// `router` as instance `index` serves it: it answers the probe path itself.
    pub(crate) fn tap(&self, router: axum::Router, index: usize) -> axum::Router {
        let last = self.last.clone();
        router.layer(axum::middleware::from_fn(
            move |request: Request, next: Next| {
                let last = last.clone();
                async move {
                    if request.uri().path() == PROBE {
                        last.store(index, Ordering::SeqCst);
                        return StatusCode::NO_CONTENT.into_response();
                    }
                    next.run(request).await
                }
            },
        ))
    }

    /// Sends probes to `origin` until the last of `instances` answers one: the next
    /// request goes to the first.
    ///
    /// # Panics
    ///
    /// When a probe fails, or no probe reaches the last instance within four rounds (the
    /// message then carries `logs()`, the balancer's own account).
    pub(crate) async fn align(
        &self,
        origin: &str,
        instances: usize,
        logs: impl FnOnce() -> String,
    ) {
        let http = reqwest::Client::new();
        for _ in 0..4 * instances {
            let answer: Result<reqwest::Response, _> =
                crate::within("a probe", http.get(format!("{origin}{PROBE}")).send()).await;
            let answer = answer.unwrap_or_else(|e| panic!("a probe through the balancer: {e}"));
            assert_eq!(
                answer.status(),
                reqwest::StatusCode::NO_CONTENT,
                "{answer:?}"
            );
            if self.last.load(Ordering::SeqCst) == instances - 1 {
                return;
            }
        }
        panic!(
            "{} probes never reached the last of {instances} instances; the balancer's log:\n{}",
            4 * instances,
            logs()
        );
    }
}
