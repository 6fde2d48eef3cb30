//! The [`Connector`]: what a conformance test is handed, one per transport of the matrix.

use modelctx_transport::{BoxTransport, boxed};

use crate::kind::TransportKind;

/// Connects a client side to a server side over one transport of the matrix.
///
/// A test is written once against a `Connector` and the harness runs it once per
/// transport its requirements apply to. A test that needs the concrete transport (HTTP
/// status codes, the raw wire) checks [`kind`](Self::kind).
#[derive(Debug, Clone)]
pub struct Connector {
    backend: Backend,
}

/// How each transport is built. Adding a transport: a variant here, its arms below, and
/// its kind in [`TransportKind::SDK`].
#[derive(Debug, Clone, Copy)]
enum Backend {
    /// `modelctx_memory::pair()`.
    InMemory,
}

impl Connector {
    /// The connector for `kind`, if the SDK has that transport.
    pub fn new(kind: TransportKind) -> Option<Self> {
        let backend = match kind {
            TransportKind::InMemory => Backend::InMemory,
            _ => return None,
        };
        Some(Self { backend })
    }

    /// A connector for every transport the SDK has, in report order.
    pub fn all() -> Vec<Self> {
        TransportKind::SDK
            .iter()
            .filter_map(|&k| Self::new(k))
            .collect()
    }

    /// The transport this connector uses.
    pub fn kind(&self) -> TransportKind {
        match self.backend {
            Backend::InMemory => TransportKind::InMemory,
        }
    }

    /// A fresh connection: `(client side, server side)`. What one side sends, the other
    /// receives, in order; closing one side's sink ends the other side's stream.
    pub async fn transport_pair(&self) -> (BoxTransport, BoxTransport) {
        match self.backend {
            Backend::InMemory => {
                let (client, server) = modelctx_memory::pair();
                (boxed(client), boxed(server))
            }
        }
    }

    // Role-level helpers go here once modelctx-server and modelctx-client land, built on
    // `transport_pair` (or, for HTTP, on a server bound to 127.0.0.1:0), e.g.
    //
    //     pub async fn serve(&self, server: Server) -> Served;       // server side running
    //     impl Served { pub async fn client(self, options: ClientOptions) -> Client }
    //
    // so tests read: `let client = connect.serve(server).await.client(options).await;`.
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sdk_transport_has_a_connector_and_no_other() {
        for kind in TransportKind::ALL {
            let connector = Connector::new(kind);
            assert_eq!(connector.is_some(), kind.in_sdk(), "{kind}");
            if let Some(c) = connector {
                assert_eq!(c.kind(), kind);
            }
        }
        assert_eq!(Connector::all().len(), TransportKind::SDK.len());
    }
}
