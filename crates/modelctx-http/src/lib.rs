//! The streamable HTTP transport of modelctx (MCP revisions 2025-03-26 and later).
//!
//! - **Server** (feature `server`): `StreamableHttpService`, a tower service / axum
//!   router that hosts one MCP session per `Mcp-Session-Id`. It knows nothing of tools:
//!   for each new session it calls a factory with an `HttpServerTransport` and the
//!   factory starts a session on it. Stateful (default) or stateless, SSE (default) or
//!   JSON answers, resumable through an `EventStore`, and locked down by default
//!   (Origin and Host limited to loopback names, 4 MiB body cap, read timeouts, bounded
//!   queues, session cap and idle expiry). A [`modelctx_transport::Extensions`] value
//!   that a layer in front of it puts in the HTTP request's extensions travels with each
//!   message of that POST to the session's handlers (the OAuth resource server of
//!   `modelctx-oauth` passes the verified caller that way).
//! - **Client** (feature `client`): `StreamableHttpClientTransport`, a
//!   `Transport` over reqwest: POST per message, JSON or SSE answers, the standalone GET
//!   stream, session id and negotiated version kept and sent, reconnection with
//!   `Last-Event-ID`, a new session after a 404, DELETE on close, an `AuthHook`; with a
//!   `ReconnectPolicy` (`StreamableHttpClientBuilder::reconnect_policy`), refused
//!   connections tried again with backoff and idempotent requests sent again after a
//!   drop (anything else in flight fails as interrupted: it may or may not have run).
//!
//! ```
//! # #[cfg(all(feature = "server", feature = "client"))]
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use modelctx_http::{StreamableHttpClientTransport, StreamableHttpService};
//! use modelctx_transport::{MessageSink, MessageStream, Transport, TransportMessage};
//! use modelctx_types::JsonRpcMessage;
//!
//! // A "server" that answers every request with an empty result.
//! let service = StreamableHttpService::new(|transport| {
//!     let (sink, mut stream) = transport.split();
//!     tokio::spawn(async move {
//!         while let Some(Ok(m)) = stream.recv().await {
//!             if let JsonRpcMessage::Request(r) = m.message {
//!                 let reply = format!(r#"{{"jsonrpc":"2.0","id":{},"result":{{}}}}"#, r.id);
//!                 let reply = reply.parse::<JsonRpcMessage>().unwrap();
//!                 sink.send(TransportMessage::new(reply)).await.unwrap();
//!             }
//!         }
//!     });
//! });
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
//! let url = format!("http://{}/mcp", listener.local_addr().unwrap());
//! tokio::spawn(service.serve(listener, std::future::pending()));
//!
//! let (sink, mut stream) = StreamableHttpClientTransport::new(&url).unwrap().split();
//! let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;
//! sink.send(TransportMessage::new(init.parse().unwrap())).await.unwrap();
//! let reply = stream.recv().await.unwrap().unwrap();
//! assert_eq!(reply.message.id().map(|i| i.to_string()), Some("1".into()));
//! # }
//! # #[cfg(not(all(feature = "server", feature = "client")))] fn main() {}
//! ```
//!
//! | feature | what | pulls in |
//! |---|---|---|
//! | `server` | `StreamableHttpService`, `EventStore`, `cors_layer`, `hosting` | axum, tower, tower-http |
//! | `client` | `StreamableHttpClientTransport`, `AuthHook` | reqwest (no TLS) |
//!
//! | `rustls` | HTTPS: the client's default reqwest client speaks TLS (web-PKI roots, `add_root_certificate`); the server's `serve_tls`, `hosting::serve_router_tls`; the `tls` module | rustls (ring provider), tokio-rustls, webpki-roots |
//! | `rustls-native-roots` | `rustls`, and the client trusts the system's certificate store too | rustls-native-certs |
//!
//! None is on by default, and without `rustls` no TLS crate is built: the client then
//! refuses an `https` URL with an error that says so, unless you pass a
//! `reqwest::Client` of your own (built with the TLS backend of your choice) to the
//! builder's `client`.
//!
//! Tracing: the crate emits [`tracing`](https://docs.rs/tracing) events (target
//! `modelctx_http`) for every transport-level rejection, with its `status` and `reason`;
//! it never installs a subscriber.
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "client")]
mod client;
pub mod headers;
#[cfg(feature = "server")]
mod server;
#[cfg(any(feature = "client", feature = "server"))]
mod shared;
#[cfg(any(feature = "client", feature = "server"))]
pub mod sse;
#[cfg(feature = "rustls")]
pub mod tls;

#[cfg(feature = "client")]
pub use client::{
    AuthHook, HttpClientHandle, HttpClientSink, HttpClientStream, StreamableHttpClientBuilder,
    StreamableHttpClientTransport, http_status,
};
#[cfg(feature = "client")]
#[doc(hidden)]
pub use client::{BodyError, TlsRoots, client_for, error_chain, read_capped, refusal_text};
#[cfg(feature = "server")]
pub use server::{
    ErrorCallback, EventId, EventStore, HostPolicy, HttpServerSink, HttpServerStream,
    HttpServerTransport, InMemoryEventStore, InvalidEventId, Lookup, OriginPolicy, RegistryError,
    Rejection, Relayed, RelayedKind, Replay, RunState, RunStore, SessionRateLimit, SessionRegistry,
    StreamControl, StreamHold, StreamableHttpServerConfig, StreamableHttpService, TakenRun,
    cors_layer, hosting,
};
