//! What stands in front of the instances of a two-instance leg: the test kit's
//! round-robin forwarder (`streamable-http-shared`), or a real load balancer, nginx or
//! HAProxy (`streamable-http-nginx`, `streamable-http-haproxy`), started per trial with
//! the test kit's configuration in front of the instances' listeners, bound first.

use std::sync::Arc;

use modelctx_test::{Balancer, BalancerKind};
use tokio::net::TcpListener;

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
}

/// Binds `count` listeners on 127.0.0.1:0 for the instances.
pub(crate) async fn instance_listeners(count: usize) -> Vec<TcpListener> {
    let mut listeners = Vec::with_capacity(count);
    for _ in 0..count {
        listeners.push(
            TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind 127.0.0.1:0"),
        );
    }
    listeners
}

/// Starts `kind` in front of `instances` (listening already: a connection waits in
/// their backlog until they are served), on a blocking thread; it runs until the last
/// clone of what is returned drops.
///
/// # Panics
///
/// When it cannot start (the message says how to install it).
pub(crate) async fn start_balancer(kind: BalancerKind, instances: &[TcpListener]) -> Arc<Balancer> {
    let addrs: Vec<_> = instances
        .iter()
        .map(|l| l.local_addr().expect("local addr"))
        .collect();
    let balancer = tokio::task::spawn_blocking(move || Balancer::start(kind, &addrs))
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
    Arc::new(balancer)
}
