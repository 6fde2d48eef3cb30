//! Shared pieces of the conformance tests: connecting a server and a client over a
//! connector, and test-only request methods whose behaviour each test decides.

use modelctx::client::{Client, ClientBuilder};
use modelctx::server::{Server, ServerSession};
use modelctx::types::RequestMethod;
use modelctx_conformance::{Connector, Recording, record, within};
use serde_json::Value;

/// A connected pair, with the client side's wire recorded.
pub(crate) struct Pair {
    pub(crate) client: Client,
    pub(crate) server: ServerSession,
    pub(crate) wire: Recording,
}

/// Serves `server` on the connector's server side and connects `client` to it.
pub(crate) async fn connect(connect: &Connector, server: &Server, client: ClientBuilder) -> Pair {
    let (client_side, server_side) = connect.transport_pair().await;
    let (client_side, wire) = record(client_side);
    let session = server.serve(server_side);
    let client = within("the client to connect", client.connect(client_side))
        .await
        .expect("the client connects");
    within(
        "the server to see notifications/initialized",
        session.initialized(),
    )
    .await;
    Pair {
        client,
        server: session,
        wire,
    }
}

/// A client with default settings.
pub(crate) fn client() -> ClientBuilder {
    Client::builder("conformance-client", "1.0.0")
}

/// Declares a test-only request method taking and returning any JSON (on a wire, params
/// must be an object or an array, as JSON-RPC requires: wrap a scalar in an array).
macro_rules! test_method {
    ($name:ident = $method:literal) => {
        #[doc = concat!("The test-only request `", $method, "`.")]
        pub(crate) struct $name;
        impl RequestMethod for $name {
            const METHOD: &'static str = $method;
            type Params = Value;
            type Result = Value;
        }
    };
}

test_method!(Echo = "test/echo");
test_method!(Block = "test/block");
test_method!(Work = "test/work");

/// Sends `value` on `tx` when dropped: proves a handler future was stopped, since a
/// cancelled handler is dropped rather than resumed.
pub(crate) struct DropSignal<T> {
    tx: tokio::sync::mpsc::UnboundedSender<T>,
    value: Option<T>,
}

impl<T> DropSignal<T> {
    pub(crate) fn new(tx: tokio::sync::mpsc::UnboundedSender<T>, value: T) -> Self {
        Self {
            tx,
            value: Some(value),
        }
    }
}

impl<T> Drop for DropSignal<T> {
    fn drop(&mut self) {
        if let Some(value) = self.value.take() {
            let _ = self.tx.send(value);
        }
    }
}
