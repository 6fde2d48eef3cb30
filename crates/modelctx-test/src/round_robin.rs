//! A round-robin HTTP forwarder for tests, standing for a load balancer with no
//! affinity: every request goes to the next of its backends in turn, whatever connection
//! it came on, over a connection of its own; the answer streams back as it comes.
//! Requests pass unchanged (`Host` and `Origin` included) but for what belongs to one
//! connection; redirects are passed back, not followed; the client going away drops the
//! request to the backend. A backend that refuses the connection (it stopped) is skipped
//! for the next one, as a load balancer's passive health check does.
//!
//! [`RoundRobin::serve_logged`] serves one that keeps a log of which instance served
//! which MCP method:
//!
//! ```no_run
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use modelctx_test::round_robin::{RoundRobin, served};
//!
//! let backends = vec!["http://127.0.0.1:8001".to_owned(), "http://127.0.0.1:8002".to_owned()];
//! let (origin, log) = RoundRobin::serve_logged(backends).await;
//! // ... a client on format!("{origin}/mcp") ...
//! let calls = served(&log.borrow(), "tools/call");
//! # drop((origin, calls));
//! # }
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tokio::sync::watch;

/// What the forwarder is told of each request a backend answered: the backend's index,
/// the request's head and its body.
type Note = Box<dyn Fn(usize, &Parts, &Bytes) + Send + Sync>;

/// The forwarder: its backends, the next one's turn, and what it notes.
pub struct RoundRobin {
    client: reqwest::Client,
    backends: Vec<String>,
    next: AtomicUsize,
    note: Note,
}

impl RoundRobin {
    /// A forwarder in front of `backends` (origins, `http://127.0.0.1:<port>`); `note`
    /// hears of every request a backend answered, before its answer goes back.
    pub fn new(
        backends: Vec<String>,
        note: impl Fn(usize, &Parts, &Bytes) + Send + Sync + 'static,
    ) -> Self {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("a reqwest client");
        Self {
            client,
            backends,
            next: AtomicUsize::new(0),
            note: Box::new(note),
        }
    }

    /// The forwarder as an app, to serve where the caller chooses.
    pub fn router(self) -> axum::Router {
        axum::Router::new()
            .fallback(forward)
            .with_state(Arc::new(self))
    }

    /// Serves the forwarder on 127.0.0.1:0 until the runtime ends; its origin,
    /// `http://127.0.0.1:<port>`.
    pub async fn serve(self) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let origin = format!("http://{}", listener.local_addr().expect("local addr"));
        let router = self.router();
        tokio::spawn(async move { axum::serve(listener, router).await });
        origin
    }

    /// Serves a forwarder in front of `backends` on 127.0.0.1:0 (as
    /// [`serve`](Self::serve)); its origin, and its log: what each request a backend
    /// answered was.
    pub async fn serve_logged(backends: Vec<String>) -> (String, watch::Receiver<Vec<Served>>) {
        let (log, seen) = watch::channel(Vec::new());
        let forwarder = Self::new(backends, move |instance, request, body| {
            // `Mcp-Method` (2026-07-28), else the body's.
            let method = request
                .headers
                .get("mcp-method")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
                .or_else(|| {
                    let message: serde_json::Value = serde_json::from_slice(body).ok()?;
                    Some(message.get("method")?.as_str()?.to_owned())
                })
                .unwrap_or_default();
            log.send_modify(|log| {
                log.push(Served {
                    instance,
                    http: request.method.to_string(),
                    method,
                });
            });
        });
        (forwarder.serve().await, seen)
    }
}

impl std::fmt::Debug for RoundRobin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoundRobin")
            .field("backends", &self.backends)
            .finish_non_exhaustive()
    }
}

/// What a logged forwarder noted of one request: the backend that served it (its index),
/// the HTTP method and the MCP method (`Mcp-Method`, else the body's; empty for none).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Served {
    /// The index of the backend that answered.
    pub instance: usize,
    /// The HTTP method.
    pub http: String,
    /// The MCP method.
    pub method: String,
}

impl Served {
    /// What an instance served: its index, the HTTP method and the MCP method (empty
    /// for none), for a log kept another way (an instance's own access log, say).
    pub fn new(instance: usize, http: impl Into<String>, method: impl Into<String>) -> Self {
        Self {
            instance,
            http: http.into(),
            method: method.into(),
        }
    }
}

/// The backends that served `method`, in order.
pub fn served(log: &[Served], method: &str) -> Vec<usize> {
    log.iter()
        .filter(|s| s.method == method)
        .map(|s| s.instance)
        .collect()
}

async fn forward(State(proxy): State<Arc<RoundRobin>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, usize::MAX).await else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let mut headers = parts.headers.clone();
    strip_hop_by_hop(&mut headers);
    let mut failure = None;
    for _ in 0..proxy.backends.len() {
        let turn = proxy.next.fetch_add(1, Ordering::Relaxed) % proxy.backends.len();
        let upstream = proxy
            .client
            .request(
                parts.method.clone(),
                format!("{}{path}", proxy.backends[turn]),
            )
            .headers(headers.clone())
            .body(body.clone())
            .send()
            .await;
        match upstream {
            Ok(upstream) => {
                (proxy.note)(turn, &parts, &body);
                return stream_back(upstream);
            }
            Err(e) if e.is_connect() => failure = Some(e),
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    let failure = failure.map_or_else(|| "no backend".to_owned(), |e| e.to_string());
    (
        StatusCode::BAD_GATEWAY,
        format!("the proxy's backend: {failure}"),
    )
        .into_response()
}

/// The backend's answer as the forwarder's, its body streaming through.
fn stream_back(upstream: reqwest::Response) -> Response {
    let status = upstream.status();
    let mut headers = upstream.headers().clone();
    strip_hop_by_hop(&mut headers);
    let mut response = Response::new(Body::from_stream(upstream.bytes_stream()));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

/// Removes what belongs to one connection (and the length, which the next hop sets).
fn strip_hop_by_hop(headers: &mut HeaderMap) {
    for name in [
        header::CONNECTION,
        header::TRANSFER_ENCODING,
        header::CONTENT_LENGTH,
        header::TE,
        header::TRAILER,
        header::UPGRADE,
        header::PROXY_AUTHORIZATION,
    ] {
        headers.remove(name);
    }
    headers.remove("keep-alive");
}
