//! The raw baselines: the physical limit of each path on this machine, with no SDK.
//!
//! - in-memory: a serde_json request/response round trip through a tokio mpsc pair,
//!   answers routed back to callers by id (the least any in-process JSON-RPC can do);
//! - stdio: a newline echo over pipes to a child process ([`echo_lines`]);
//! - HTTP: a bare hyper server answering the same JSON-RPC result ([`serve_http`]).

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::sync::{mpsc, oneshot};

use crate::{ASK_KEY, ASK_TOOL, TEXT, TOOL};

#[derive(Serialize, Deserialize)]
struct CallRequest<'a> {
    jsonrpc: &'a str,
    id: u64,
    method: &'a str,
    params: CallParams<'a>,
}

#[derive(Serialize, Deserialize)]
struct CallParams<'a> {
    name: &'a str,
    arguments: EchoArguments,
}

#[derive(Serialize, Deserialize)]
struct EchoArguments {
    text: String,
}

#[derive(Serialize, Deserialize)]
struct CallResponse<'a> {
    jsonrpc: &'a str,
    id: u64,
    result: CallResult,
}

#[derive(Serialize, Deserialize)]
struct CallResult {
    content: Vec<TextBlock>,
    #[serde(rename = "isError")]
    is_error: bool,
}

#[derive(Serialize, Deserialize)]
struct TextBlock {
    #[serde(rename = "type")]
    kind: String,
    text: String,
}

/// The answer to an echo call with id `id`, as JSON text.
fn answer(id: u64, text: String) -> String {
    let response = CallResponse {
        jsonrpc: "2.0",
        id,
        result: CallResult {
            content: vec![TextBlock {
                kind: "text".into(),
                text,
            }],
            is_error: false,
        },
    };
    serde_json::to_string(&response).unwrap_or_default()
}

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<String>>>>;

/// The in-memory baseline's client end: requests go out as JSON text through one mpsc
/// channel, a server task parses each, answers through another, and a reader task
/// routes each answer to its caller by id.
#[derive(Debug, Clone)]
pub struct MemoryClient {
    tx: mpsc::Sender<String>,
    pending: Pending,
    next_id: Arc<std::sync::atomic::AtomicU64>,
}

impl MemoryClient {
    /// Starts the server and reader tasks on the current runtime.
    pub fn start(capacity: usize) -> Self {
        let (tx, mut server_rx) = mpsc::channel::<String>(capacity);
        let (answer_tx, mut answer_rx) = mpsc::channel::<String>(capacity);
        tokio::spawn(async move {
            while let Some(text) = server_rx.recv().await {
                let Ok(request) = serde_json::from_str::<CallRequest<'_>>(&text) else {
                    continue;
                };
                if request.params.name != TOOL {
                    continue;
                }
                let reply = answer(request.id, request.params.arguments.text);
                if answer_tx.send(reply).await.is_err() {
                    break;
                }
            }
        });
        let pending: Pending = Arc::default();
        let routes = pending.clone();
        tokio::spawn(async move {
            while let Some(text) = answer_rx.recv().await {
                let Ok(response) = serde_json::from_str::<CallResponse<'_>>(&text) else {
                    continue;
                };
                let waiter = routes.lock().ok().and_then(|mut p| p.remove(&response.id));
                if let Some(waiter) = waiter {
                    let _ = waiter.send(text);
                }
            }
        });
        Self {
            tx,
            pending,
            next_id: Arc::new(1.into()),
        }
    }

    /// One echo round trip; returns the echoed text.
    pub async fn call(&self) -> Result<String, String> {
        let id = self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let request = CallRequest {
            jsonrpc: "2.0",
            id,
            method: "tools/call",
            params: CallParams {
                name: TOOL,
                arguments: EchoArguments { text: TEXT.into() },
            },
        };
        let text = serde_json::to_string(&request).map_err(|e| e.to_string())?;
        let (waiter, answer) = oneshot::channel();
        self.pending
            .lock()
            .map_err(|_| "poisoned".to_owned())?
            .insert(id, waiter);
        self.tx.send(text).await.map_err(|_| "server gone")?;
        let text = answer.await.map_err(|_| "answer lost")?;
        let mut response: CallResponse<'_> =
            serde_json::from_str(&text).map_err(|e| e.to_string())?;
        response
            .result
            .content
            .pop()
            .map(|b| b.text)
            .ok_or_else(|| "empty answer".to_owned())
    }
}

/// The stdio baseline server: copies each line of stdin to stdout, flushing whenever no
/// more input is buffered (as the SDKs' writers do), until stdin closes.
pub async fn echo_lines() -> std::io::Result<()> {
    let mut input = BufReader::new(tokio::io::stdin());
    let mut output = BufWriter::new(tokio::io::stdout());
    let mut line = Vec::new();
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line).await? == 0 {
            output.flush().await?;
            return Ok(());
        }
        output.write_all(&line).await?;
        if input.buffer().is_empty() {
            output.flush().await?;
        }
    }
}

#[derive(Deserialize)]
struct AnyRequest<'a> {
    id: Option<u64>,
    #[serde(borrow)]
    method: &'a str,
    #[serde(borrow)]
    params: Option<AnyParams<'a>>,
}

#[derive(Deserialize)]
struct AnyParams<'a> {
    #[serde(borrow)]
    name: Option<&'a str>,
    arguments: Option<EchoArguments>,
    #[serde(rename = "inputResponses")]
    input_responses: Option<serde::de::IgnoredAny>,
}

/// The first answer to a call of the confirming tool: one form elicitation and a state
/// (the baseline neither seals it nor reads the answer: the physical limit of the two
/// POSTs).
fn input_required(id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"resultType":"input_required","inputRequests":{{"{ASK_KEY}":{{"method":"elicitation/create","params":{{"mode":"form","message":"Echo it?","requestedSchema":{{"type":"object","properties":{{"confirm":{{"type":"boolean"}}}},"required":["confirm"]}}}}}}}},"requestState":"baseline"}}}}"#
    )
}

/// Session ids handed out by the HTTP baseline (so the stateful load runs unchanged).
static SESSIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

async fn answer_http(request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let reply = |status: StatusCode, body: String| {
        let mut response = Response::new(Full::new(Bytes::from(body)));
        *response.status_mut() = status;
        response.headers_mut().insert(
            hyper::header::CONTENT_TYPE,
            hyper::header::HeaderValue::from_static("application/json"),
        );
        response
    };
    // Ending a session: the baseline keeps none, so there is nothing to end.
    if request.method() == hyper::Method::DELETE {
        return Ok(reply(StatusCode::NO_CONTENT, String::new()));
    }
    let Ok(body) = request.into_body().collect().await else {
        return Ok(reply(StatusCode::BAD_REQUEST, String::new()));
    };
    let body = body.to_bytes();
    let Ok(message) = serde_json::from_slice::<AnyRequest<'_>>(&body) else {
        return Ok(reply(StatusCode::BAD_REQUEST, String::new()));
    };
    let Some(id) = message.id else {
        return Ok(reply(StatusCode::ACCEPTED, String::new()));
    };
    let text = match message.params {
        Some(AnyParams {
            name: Some(name),
            input_responses: None,
            ..
        }) if name == ASK_TOOL => return Ok(reply(StatusCode::OK, input_required(id))),
        Some(AnyParams {
            name: Some(name),
            arguments: Some(args),
            ..
        }) if name == TOOL || name == ASK_TOOL => args.text,
        _ => String::new(),
    };
    let mut response = reply(StatusCode::OK, answer(id, text));
    if message.method == "initialize" {
        let session = SESSIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Ok(value) = hyper::header::HeaderValue::from_str(&format!("baseline-{session}")) {
            response.headers_mut().insert("mcp-session-id", value);
        }
    }
    Ok(response)
}

/// The HTTP baseline server: bare hyper (HTTP/1.1, keep-alive) answering each POST with
/// the echo result as `application/json` (an `initialize` also gets an `Mcp-Session-Id`,
/// so the stateful load runs unchanged), every notification with 202, a DELETE with 204.
pub async fn serve_http(listener: tokio::net::TcpListener) -> std::io::Result<()> {
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, hyper::service::service_fn(answer_http))
                .await;
        });
    }
}
