//! The legacy HTTP+SSE transport of modelctx (MCP 2024-11-05), which many deployed
//! servers and hosts still speak. It carries the handshake era (any revision a session
//! negotiates with `initialize`); protocol 2026-07-28 is not served over it.
//!
//! - **Server** (feature `server`): [`SseService`], an axum router: `GET /sse` opens a
//!   session's event stream, whose first event, `endpoint`, names the URL to POST
//!   messages to (`/messages?session_id=<random id>`); every server message travels on
//!   the stream as a `message` event. The protections are streamable HTTP's, shared
//!   through `modelctx_http::hosting` and on by default. The session ends when its
//!   stream disconnects. Merge its router with a `StreamableHttpService`'s to serve
//!   both transports from one listener and one server.
//! - **Client** (feature `client`): [`SseClientTransport`] connects to the stream,
//!   waits (bounded) for `endpoint`, resolves it on the stream's own origin and POSTs
//!   there. [`FallbackClientTransport`] is the streamable HTTP client with the spec's
//!   backwards-compatibility fallback: an `initialize` POST answered 400, 404 or 405
//!   moves it to the legacy transport on the same URL.
//!
//! ```
//! # #[cfg(all(feature = "server", feature = "client"))]
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use modelctx_sse::{SseClientTransport, SseService};
//! use modelctx_transport::{MessageSink, MessageStream, Transport, TransportMessage};
//! use modelctx_types::JsonRpcMessage;
//!
//! // A "server" that answers every request with an empty result.
//! let service = SseService::new(|transport| {
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
//! let url = format!("http://{}/sse", listener.local_addr().unwrap());
//! tokio::spawn(service.serve(listener, std::future::pending()));
//!
//! let transport = SseClientTransport::connect(&url).await.unwrap();
//! assert!(transport.endpoint().contains("/messages?session_id="));
//! let (sink, mut stream) = transport.split();
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
//! | `server` | `SseService`, `SseServerConfig`, `SseServerTransport` | axum, modelctx-http's server |
//! | `client` | `SseClientTransport`, `FallbackClientTransport` | reqwest (no TLS), modelctx-http's client |
//!
//! Neither is on by default. TLS for the client comes from the `reqwest::Client` you
//! pass in.
//!
#![cfg_attr(docsrs, feature(doc_cfg))]
// Without a feature its items do not exist: the links above then point at this page.
#![cfg_attr(
    not(feature = "server"),
    doc = "[`SseService`]: crate \"needs the server feature\""
)]
#![cfg_attr(
    not(feature = "client"),
    doc = "[`SseClientTransport`]: crate \"needs the client feature\""
)]
#![cfg_attr(
    not(feature = "client"),
    doc = "[`FallbackClientTransport`]: crate \"needs the client feature\""
)]

#[cfg(feature = "client")]
mod client;
#[cfg(feature = "server")]
mod server;

#[cfg(feature = "client")]
pub use client::{
    ActiveTransport, FallbackClientBuilder, FallbackClientTransport, FallbackHandle, FallbackSink,
    FallbackStream, SseClientBuilder, SseClientSink, SseClientStream, SseClientTransport,
};
#[cfg(feature = "server")]
pub use server::{SseServerConfig, SseServerSink, SseServerStream, SseServerTransport, SseService};
