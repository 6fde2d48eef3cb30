//! Two-client task isolation over streamable HTTP, for a deployment's own task store:
//! a server whose `slow` tool becomes a task and stays `working` until the test opens a
//! gate, served with an optional stand-in for an authentication layer, and raw HTTP
//! requestors of either protocol revision, each with its own connection, session and
//! (optionally) user. The requests are written by hand so that every answer is compared
//! as it came, status and body; [`check_pair`] checks that one requestor never lists,
//! nor reaches by id, a task of the other, unless the rules let it.
//!
//! ```no_run
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use modelctx_test::task_isolation::{Era, Requestor, check_pair, serve, server};
//!
//! let (open, gate) = tokio::sync::watch::channel(false);
//! let url = serve(server(&gate, None), true, true).await;
//! let alice = Requestor::connect(&url, Era::Handshake, Some("alice")).await;
//! let bob = Requestor::connect(&url, Era::Stateless, Some("bob")).await;
//! check_pair(&alice, &bob).await;
//! open.send_replace(true);
//! # }
//! ```

use std::time::Duration;

use crate::wait::within;
use modelctx_http::{StreamableHttpServerConfig, StreamableHttpService};
use modelctx_server::{Context, Server, TaskConfig, TaskStore, ToolDef};
use modelctx_types::{TaskSupport, Tool};
use serde_json::{Value, json};
use tokio::sync::watch;

/// Every wait of a check (and each request's timeout).
pub const WITHIN: Duration = Duration::from_secs(20);

/// A task id no server made: what "unknown" looks like, to compare refusals with.
pub const UNKNOWN: &str = "00000000-0000-0000-0000-000000000000";

/// The protocol revision a requestor speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// 2025-11-25: `initialize`, a session on a stateful server, the tasks utility.
    Handshake,
    /// 2026-07-28: no handshake, no session, the tasks extension.
    Stateless,
}

/// A server with tasks whose `slow` tool (a task at once in protocol 2026-07-28)
/// finishes only once `gate` opens; tasks kept in `store` (default: in memory).
pub fn server(
    gate: &watch::Receiver<bool>,
    store: Option<std::sync::Arc<dyn TaskStore>>,
) -> Server {
    let gate = gate.clone();
    let no_args = json!({"type": "object"}).as_object().unwrap().clone();
    let slow = ToolDef::with_schema(Tool::new("slow", no_args), move |_, _cx: Context| {
        let mut gate = gate.clone();
        async move {
            let _ = gate.wait_for(|open| *open).await;
            Ok::<_, String>("slow done")
        }
    })
    .task_support(TaskSupport::Optional)
    .task_window(Duration::ZERO);
    let mut builder = Server::builder("isolation", "1.0.0").tasks(
        TaskConfig::new()
            .poll_interval(Duration::from_millis(10))
            .page_size(50),
    );
    if let Some(store) = store {
        builder = builder.task_store(store);
    }
    builder.tool(slow).unwrap().build()
}

/// A stand-in for an authentication layer: the `x-user` header, when there is one,
/// becomes the caller's principal; a request without it is unauthenticated.
pub async fn as_user(
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let user = request
        .headers()
        .get("x-user")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if let Some(user) = user {
        let mut extensions = modelctx_session::Extensions::new();
        extensions.insert(modelctx_types::Principal::new(user));
        request.extensions_mut().insert(extensions);
    }
    next.run(request).await
}

/// Serves `server` on loopback, stateful or stateless, behind [`as_user`] when `auth`;
/// returns the endpoint's URL.
pub async fn serve(server: Server, stateful: bool, auth: bool) -> String {
    let config = if stateful {
        StreamableHttpServerConfig::default()
    } else {
        StreamableHttpServerConfig::default().sessionless()
    };
    let service = StreamableHttpService::with_config(config, move |transport| {
        server.serve(transport);
    });
    let mut router = service.router();
    if auth {
        router = router.layer(axum::middleware::from_fn(as_user));
    }
    let app = axum::Router::new().nest_service("/mcp", router);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// One answer as it came: the HTTP status and the JSON-RPC message answering the
/// request.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The HTTP status.
    pub status: u16,
    /// The JSON-RPC message (an SSE answer's message).
    pub message: Value,
}

impl Answer {
    /// The result, or a panic naming `what` and the answer.
    pub fn result(&self, what: &str) -> &Value {
        self.message
            .get("result")
            .unwrap_or_else(|| panic!("{what}: no result in {self:?}"))
    }

    /// Whether it is a JSON-RPC error.
    pub fn is_error(&self) -> bool {
        self.message.get("error").is_some()
    }

    /// The answer with every occurrence of `id` spelled as the unknown id, and the
    /// request id left out: what an answer about `id` must equal, when the requestor
    /// may not reach it, to be indistinguishable from one about an unknown id.
    pub fn about_unknown(&self, id: &str) -> Answer {
        let mut message = self.message.clone();
        if let Some(object) = message.as_object_mut() {
            object.remove("id");
        }
        let text = message.to_string().replace(id, UNKNOWN);
        Answer {
            status: self.status,
            message: serde_json::from_str(&text).unwrap(),
        }
    }
}

/// A requestor with its own HTTP connection pool, of one era, as one user (or none).
#[derive(Debug)]
pub struct Requestor {
    /// Its era and user, to name it in failures.
    pub name: String,
    http: reqwest::Client,
    url: String,
    /// The protocol revision it speaks.
    pub era: Era,
    /// The user it sends requests as (`x-user`), if any.
    pub user: Option<&'static str>,
    /// The session the server gave it (protocol 2025-11-25 on a stateful server).
    pub session: Option<String>,
    next_id: std::sync::atomic::AtomicI64,
}

impl Requestor {
    /// Connects to `url`: an `initialize` and `notifications/initialized` in protocol
    /// 2025-11-25, nothing in 2026-07-28.
    pub async fn connect(url: &str, era: Era, user: Option<&'static str>) -> Self {
        let name = format!(
            "{} {}",
            match era {
                Era::Handshake => "2025-11-25",
                Era::Stateless => "2026-07-28",
            },
            user.unwrap_or("anonymous")
        );
        let mut me = Self {
            name,
            http: reqwest::Client::builder().timeout(WITHIN).build().unwrap(),
            url: url.to_owned(),
            era,
            user,
            session: None,
            next_id: std::sync::atomic::AtomicI64::new(1),
        };
        if era == Era::Handshake {
            let params = json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            });
            let (answer, session) = me.post("initialize", params, None).await;
            assert!(!answer.is_error(), "{}: initialize: {answer:?}", me.name);
            me.session = session;
            me.notify("notifications/initialized").await;
        }
        me
    }

    fn request(&self, method: &str, name: Option<&str>) -> reqwest::RequestBuilder {
        let mut rb = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(user) = self.user {
            rb = rb.header("x-user", user);
        }
        match self.era {
            Era::Handshake => {
                if method != "initialize" {
                    rb = rb.header("mcp-protocol-version", "2025-11-25");
                }
                if let Some(session) = &self.session {
                    rb = rb.header("mcp-session-id", session);
                }
            }
            Era::Stateless => {
                rb = rb
                    .header("mcp-protocol-version", "2026-07-28")
                    .header("mcp-method", method);
                if let Some(name) = name {
                    rb = rb.header("mcp-name", name);
                }
            }
        }
        rb
    }

    async fn notify(&self, method: &str) {
        let body = json!({"jsonrpc": "2.0", "method": method});
        let response = within(
            WITHIN,
            "a notification",
            self.request(method, None).body(body.to_string()).send(),
        )
        .await
        .unwrap();
        assert!(response.status().is_success(), "{}: {method}", self.name);
    }

    /// Sends request `method` (with the era's envelope in protocol 2026-07-28) and
    /// returns its answer and the session id the server gave, if any.
    async fn post(
        &self,
        method: &str,
        mut params: Value,
        name: Option<&str>,
    ) -> (Answer, Option<String>) {
        if self.era == Era::Stateless {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {
                    "extensions": {"io.modelcontextprotocol/tasks": {}}
                },
                "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
            });
        }
        let id = self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let what = format!("{}: {method}", self.name);
        let response = within(
            WITHIN,
            &what,
            self.request(method, name).body(body.to_string()).send(),
        )
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}"));
        let status = response.status().as_u16();
        let header = |name: &str| {
            response
                .headers()
                .get(name)?
                .to_str()
                .ok()
                .map(str::to_owned)
        };
        let session = header("mcp-session-id");
        let sse = header("content-type").is_some_and(|v| v.starts_with("text/event-stream"));
        let text = within(WITHIN, &what, response.text()).await.unwrap();
        let messages: Vec<Value> = if sse {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str(d.trim()).ok())
                .collect()
        } else {
            serde_json::from_str(&text).into_iter().collect()
        };
        // The answer to this request; else an error about no request (a refused body).
        let position = messages
            .iter()
            .position(|m| m.get("id") == Some(&json!(id)))
            .or_else(|| messages.iter().position(|m| m.get("error").is_some()))
            .unwrap_or_else(|| panic!("{what}: no answer in {status} {text:?}"));
        let message = messages.into_iter().nth(position).unwrap_or_default();
        (Answer { status, message }, session)
    }

    /// Sends request `method` and returns its answer.
    pub async fn send(&self, method: &str, params: Value, name: Option<&str>) -> Answer {
        self.post(method, params, name).await.0
    }

    /// Calls `slow` so that it becomes a task, and returns the task's id.
    pub async fn start_task(&self) -> String {
        let answer = match self.era {
            Era::Handshake => {
                let params = json!({"name": "slow", "arguments": {}, "task": {}});
                self.send("tools/call", params, None).await
            }
            Era::Stateless => {
                let params = json!({"name": "slow", "arguments": {}});
                self.send("tools/call", params, Some("slow")).await
            }
        };
        let result = answer.result(&format!("{}: tools/call", self.name));
        let id = match self.era {
            Era::Handshake => &result["task"]["taskId"],
            Era::Stateless => &result["taskId"],
        };
        id.as_str()
            .unwrap_or_else(|| panic!("{}: not a task: {answer:?}", self.name))
            .to_owned()
    }

    /// `tasks/get` of task `id`.
    pub async fn get(&self, id: &str) -> Answer {
        self.send("tasks/get", json!({"taskId": id}), Some(id))
            .await
    }

    /// The status of task `id` (`None`: refused).
    pub async fn status(&self, id: &str) -> Option<String> {
        let answer = self.get(id).await;
        answer.message.get("result")?["status"]
            .as_str()
            .map(str::to_owned)
    }

    /// The methods that reach one task by its id, in this era, with their params; the
    /// state-changing ones last.
    pub fn by_id_methods(&self, id: &str) -> Vec<(&'static str, Value)> {
        let task = json!({"taskId": id});
        match self.era {
            Era::Handshake => vec![
                ("tasks/get", task.clone()),
                ("tasks/result", task.clone()),
                ("tasks/cancel", task),
            ],
            Era::Stateless => vec![
                ("tasks/get", task),
                (
                    "tasks/update",
                    json!({"taskId": id, "inputResponses": {"k": {"action": "decline"}}}),
                ),
                ("tasks/cancel", json!({"taskId": id})),
            ],
        }
    }

    /// The ids of the tasks its `tasks/list` shows (`None` in protocol 2026-07-28,
    /// which has no `tasks/list`).
    pub async fn list(&self) -> Option<Vec<String>> {
        if self.era == Era::Stateless {
            return None;
        }
        let mut ids = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let answer = self.send("tasks/list", params, None).await;
            let result = answer.result(&format!("{}: tasks/list", self.name));
            for task in result["tasks"].as_array().unwrap() {
                ids.push(task["taskId"].as_str().unwrap().to_owned());
            }
            match result.get("nextCursor").and_then(Value::as_str) {
                Some(next) => cursor = Some(next.to_owned()),
                None => return Some(ids),
            }
        }
    }
}

/// Whether requestor `b` may reach, by its id, a task `a` created: the same user;
/// else, neither authenticated, only when neither has a session either (the id is the
/// capability). Two requestors never share a session.
pub fn reaches(a: &Requestor, b: &Requestor) -> bool {
    match (a.user, b.user) {
        (Some(x), Some(y)) => x == y,
        (None, None) => a.session.is_none() && b.session.is_none(),
        _ => false,
    }
}

/// Whether `b`'s `tasks/list` shows a task `a` created: only the same user's.
pub fn lists(a: &Requestor, b: &Requestor) -> bool {
    matches!((a.user, b.user), (Some(x), Some(y)) if x == y)
}

/// `a` creates a task; then `b` lists tasks and reaches for it by id with every method
/// of its era: when `b` may not reach it, each answer equals the one about an unknown
/// id and the task goes on untouched; when it may, `tasks/get` finds it. `a` always
/// finds its own task, and lists it when it has a session or a user.
pub async fn check_pair(a: &Requestor, b: &Requestor) {
    let pair = format!("{} -> {}", a.name, b.name);
    let id = a.start_task().await;
    assert_eq!(a.status(&id).await.as_deref(), Some("working"), "{pair}");
    if let Some(listed) = a.list().await {
        let own = a.user.is_some() || a.session.is_some();
        assert_eq!(listed.contains(&id), own, "{pair}: the creator's list");
    }
    if let Some(listed) = b.list().await {
        assert_eq!(
            listed.contains(&id),
            lists(a, b),
            "{pair}: the other's list"
        );
    }
    if reaches(a, b) {
        assert_eq!(b.status(&id).await.as_deref(), Some("working"), "{pair}");
        return;
    }
    let unknown_methods = b.by_id_methods(UNKNOWN);
    for ((method, params), (_, unknown_params)) in
        b.by_id_methods(&id).into_iter().zip(unknown_methods)
    {
        let theirs = b.send(method, params, Some(&id)).await;
        assert!(theirs.is_error(), "{pair}: {method} answered {theirs:?}");
        let unknown = b.send(method, unknown_params, Some(UNKNOWN)).await;
        assert_eq!(
            theirs.about_unknown(&id),
            unknown.about_unknown(UNKNOWN),
            "{pair}: {method} on another's task answers as on an unknown one"
        );
    }
    assert_eq!(
        a.status(&id).await.as_deref(),
        Some("working"),
        "{pair}: the task goes on untouched"
    );
}
