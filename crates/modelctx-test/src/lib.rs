//! The test kit of modelctx, for this workspace's tests and for users testing their own
//! servers.
//!
//! - [`within`]: bounded waits that fail the test naming what was awaited.
//! - [`text_of`]: the text of a tool result.
//! - `TestClient` (feature `client`, on by default): an in-process client of a
//!   `modelctx_server::Server` with typed calls, and the [`Transcript`] of its
//!   conversation to snapshot with `insta::assert_snapshot!`.
//! - [`record`]: a transport wrapper that records every message crossing it.
//! - [`free_loopback_addr`]: a port for a server run as a child process to bind;
//!   `start_listening` and `listening` (feature `process`): start one there and wait
//!   until it accepts connections.
//! - `RedisServer` (feature `redis`): a `redis-server` per test.
//! - `Balancer` (feature `balancer`): nginx or HAProxy in front of several instances,
//!   round robin with no affinity, configured by the files in `balancers/`.
//! - `round_robin::RoundRobin` (feature `round-robin`): an HTTP forwarder with no
//!   affinity, standing for a load balancer in front of several instances.
//! - `task_isolation` (feature `task-isolation`): requestors of either protocol
//!   revision that check two clients keep their tasks apart over streamable HTTP.
//! - `trials` (feature `trials`): the `main` of a test binary that is also the stdio
//!   server its tests start, its tests run with libtest-mimic, each bounded.
//! - `TestCa` (feature `tls`): a certificate authority and a server certificate.
//! - `TokenPerUser` and `Browser` (feature `oauth`): a stand-in token verifier for the
//!   resource server and a headless browser for the client's authorization flow
//!   (`redirect_of`: where an approval at once lands); `jose`:
//!   ES256 JWTs signed by a key of the test's own, its JWK and thumbprint.
//!
//! A server under test, its conversation snapshotted:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use modelctx_server::{Context, Server, ToolDef};
//! use modelctx_test::TestClient;
//! use modelctx_types::{JsonObject, Tool};
//! use serde_json::json;
//!
//! let ping = ToolDef::with_schema(
//!     Tool::without_arguments("ping"),
//!     |_: JsonObject, _: Context| async { Ok::<_, String>("pong") },
//! );
//! let server = Server::builder("pinger", "1.0.0").tool(ping).unwrap().build();
//! let client = TestClient::connect(&server).await;
//! client.call_tool("ping", json!({})).await;
//! let transcript = client.transcript().to_string();
//! // insta::assert_snapshot!(transcript);
//! assert!(transcript.contains("<-- response #"));
//! # }
//! ```
//!
//! | feature | what it adds |
//! |---|---|
//! | `client` (default) | `TestClient`, `Transcript` |
//! | `process` | `listening` |
//! | `redis` | `RedisServer` |
//! | `balancer` | `Balancer`, `BalancerKind` |
//! | `round-robin` | `round_robin::RoundRobin` |
//! | `task-isolation` | `task_isolation` |
//! | `trials` | `trials` |
//! | `tls` | `TestCa` |
//! | `oauth` | `TokenPerUser`, `Browser`, `redirect_of`, `form_fields`, `private_key_jwt_client`, `jose` |
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "apps")]
pub mod apps;
#[cfg(feature = "balancer")]
mod balancer;
#[cfg(feature = "client")]
mod client;
#[cfg(any(feature = "client", feature = "task-isolation"))]
mod elicit;
#[cfg(feature = "oauth")]
pub mod jose;
#[cfg(feature = "process")]
mod listen;
#[cfg(feature = "oauth")]
mod oauth;
mod port;
pub mod record;
#[cfg(feature = "redis")]
mod redis;
#[cfg(feature = "round-robin")]
pub mod round_robin;
#[cfg(feature = "skills")]
pub mod skills;
#[cfg(feature = "task-isolation")]
pub mod task_isolation;
mod text;
#[cfg(feature = "tls")]
mod tls;
mod transcript;
#[cfg(feature = "trials")]
pub mod trials;
mod wait;

#[cfg(feature = "balancer")]
pub use balancer::{Balancer, BalancerKind};
#[cfg(feature = "client")]
pub use client::{TestClient, one_tool_server};
#[cfg(any(feature = "client", feature = "task-isolation"))]
pub use elicit::{ask_for_name, pay_tool};
#[cfg(feature = "process")]
pub use listen::{listening, start_listening};
#[cfg(feature = "oauth")]
pub use oauth::{
    Browser, Hold, ISSUER, REDIRECT_URI, TokenPerUser, form_fields, private_key_jwt_client,
    redirect_of,
};
pub use port::free_loopback_addr;
#[cfg(feature = "redis")]
pub use redis::RedisServer;
pub use text::text_of;
#[cfg(feature = "tls")]
pub use tls::TestCa;
pub use transcript::Transcript;
pub use wait::{Gate, WAIT, soon, within};
