//! What stands in front of the instances of a two-instance leg: the test kit's
//! round-robin forwarder (`streamable-http-shared`), or a real load balancer, nginx or
//! HAProxy (`streamable-http-nginx`, `streamable-http-haproxy`), started per trial with
//! the test kit's configuration in front of the instances' listeners, bound first.
//!
//! The balancer legs differ in what the balancer faces: nginx has two instances and a
//! third upstream that refuses every connection (an instance that is down and not yet
//! known to be), so the balancer retries each request that lands there on another
//! (nginx then leaves it out for its `fail_timeout`); HAProxy has three instances.

use std::sync::Arc;

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
}
