//! Shared pieces of the conformance tests: connecting a server and a client over a
//! connector, and test-only request methods whose behaviour each test decides.

use modelctx::client::{Client, ClientBuilder};
use modelctx::http::HttpServerTransport;
use modelctx::server::{Server, ServerSession};
use modelctx::session::SessionConfig;
use modelctx::transport::{BoxTransport, MessageSink, MessageStream, Transport, TransportMessage};
use modelctx::types::RequestMethod;
use modelctx::types::{JsonRpcMessage, JsonRpcResultResponse, to_raw};
use modelctx_conformance::{Connector, Recording, record, within};
use serde_json::Value;

/// A connected pair, with the client side's wire recorded.
pub(crate) struct Pair {
    pub(crate) client: Client,
    server: Option<ServerSession>,
    pub(crate) wire: Recording,
}

impl Pair {
    /// The server's session.
    ///
    /// # Panics
    ///
    /// On the stateless HTTP leg, where each POST has a session of its own: a test that
    /// needs the server's session belongs to a requirement that excludes that leg
    /// (`requires-session` or `server-initiated-request`).
    pub(crate) fn server(&self) -> &ServerSession {
        self.server.as_ref().expect(
            "no server session on the stateless HTTP leg (one per POST): the requirement \
             must exclude streamable-http-stateless",
        )
    }
}

/// The session settings a stateless POST's transport asks for: pre-initialised, and no
/// server-to-client requests (nothing could carry them).
pub(crate) fn stateless_config(transport: &HttpServerTransport) -> SessionConfig {
    let mut config = SessionConfig::server();
    if transport.needs_pre_initialized_session() {
        config = config.pre_initialized();
    }
    if !transport.allows_outbound_requests() {
        config = config.without_outbound_requests();
    }
    config
}

/// Serves `server` on the connector's server side and connects `client` to it. On the
/// stateless HTTP leg the server serves each POST on a session of its own.
pub(crate) async fn connect(connect: &Connector, server: &Server, client: ClientBuilder) -> Pair {
    if !connect.cell().has_transport_pair() {
        let per_post = server.clone();
        let client_side = connect
            .serve_stateless_http(move |transport| {
                let config = stateless_config(&transport);
                per_post.serve_with(transport, config);
            })
            .await;
        let (client_side, wire) = record(client_side);
        let client = within("the client to connect", client.connect(client_side))
            .await
            .expect("the client connects");
        return Pair {
            client,
            server: None,
            wire,
        };
    }
    let (client_side, server_side) = connect.transport_pair().await;
    let (client_side, wire) = record(client_side);
    let stateless_era = connect.version() == modelctx_conformance::SpecVersion::V2026_07_28;
    let (session, client) = if stateless_era {
        let config = SessionConfig::server().unstable_stateless_era(true);
        (
            server.serve_with(server_side, config),
            client.unstable_2026_07_28(true),
        )
    } else {
        (server.serve(server_side), client)
    };
    let client = within("the client to connect", client.connect(client_side))
        .await
        .expect("the client connects");
    if !stateless_era {
        within(
            "the server to see notifications/initialized",
            session.initialized(),
        )
        .await;
    }
    Pair {
        client,
        server: Some(session),
        wire,
    }
}

/// A server played by hand: it answers every request with `answer(method)` as the
/// result and ignores everything else. For tests that need a server no `Server` is (one
/// that answers `initialize` with an older version, say). On the stateless HTTP leg it
/// plays each POST's session the same way. Returns the client's side.
pub(crate) async fn scripted_server(
    connector: &Connector,
    answer: fn(&str) -> Value,
) -> BoxTransport {
    if connector.cell().has_transport_pair() {
        let (client_side, server_side) = connector.transport_pair().await;
        tokio::spawn(answer_every_request(server_side, answer));
        return client_side;
    }
    connector
        .serve_stateless_http(move |transport| {
            let (sink, stream) = transport.split();
            tokio::spawn(answer_every_request(
                (Box::new(sink), Box::new(stream)),
                answer,
            ));
        })
        .await
}

async fn answer_every_request((sink, mut stream): BoxTransport, answer: fn(&str) -> Value) {
    while let Some(Ok(m)) = stream.recv().await {
        if let JsonRpcMessage::Request(r) = m.message {
            let result = to_raw(&answer(&r.method)).expect("a JSON value serialises");
            let reply = JsonRpcResultResponse::new(r.id.clone(), result);
            let sent = sink
                .send(TransportMessage::new(reply.into()).related_to(Some(r.id)))
                .await;
            if sent.is_err() {
                return;
            }
        }
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
