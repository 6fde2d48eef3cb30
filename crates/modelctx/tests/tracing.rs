//! What the SDK tells a `tracing` subscriber: a span per session and per request (named
//! as OpenTelemetry's MCP conventions name them: the operation, the method, the request
//! id, the tool; and the era), and an event for every transport-level rejection (with
//! its status). A small subscriber written here records them; no tracing-subscriber.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use modelctx::client::{Client, ConnectMode};
use modelctx::server::Server;
use modelctx::types::JsonObject;
use modelctx_http::{StreamableHttpClientTransport, StreamableHttpService};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

const LIMIT: Duration = Duration::from_secs(20);

/// A span or an event, with its fields as text.
#[derive(Debug, Clone)]
struct Seen {
    name: String,
    fields: BTreeMap<String, String>,
    /// The span's parent (spans only; events record their message as a field).
    parent: Option<u64>,
    id: Option<u64>,
}

/// Records every span and event; spans get their later `record`ed fields too.
#[derive(Default)]
struct Recorder {
    next: AtomicU64,
    spans: Mutex<BTreeMap<u64, Seen>>,
    events: Mutex<Vec<Seen>>,
    /// The span each thread is in (enter/exit), for the parents of contextual spans.
    stack: Mutex<Vec<u64>>,
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

#[derive(Clone, Default)]
struct Shared(Arc<Recorder>);

impl Subscriber for Shared {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let id = self.0.next.fetch_add(1, Ordering::Relaxed) + 1;
        let mut fields = BTreeMap::new();
        span.record(&mut Fields(&mut fields));
        let parent = match span.parent() {
            Some(p) => Some(p.into_u64()),
            None if span.is_contextual() => self.0.stack.lock().unwrap().last().copied(),
            None => None,
        };
        self.0.spans.lock().unwrap().insert(
            id,
            Seen {
                name: span.metadata().name().to_owned(),
                fields,
                parent,
                id: Some(id),
            },
        );
        Id::from_u64(id)
    }

    fn record(&self, span: &Id, values: &Record<'_>) {
        if let Some(seen) = self.0.spans.lock().unwrap().get_mut(&span.into_u64()) {
            values.record(&mut Fields(&mut seen.fields));
        }
    }

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        self.0.events.lock().unwrap().push(Seen {
            name: event.metadata().target().to_owned(),
            fields,
            parent: None,
            id: None,
        });
    }

    fn enter(&self, span: &Id) {
        self.0.stack.lock().unwrap().push(span.into_u64());
    }

    fn exit(&self, span: &Id) {
        let mut stack = self.0.stack.lock().unwrap();
        if let Some(i) = stack.iter().rposition(|s| *s == span.into_u64()) {
            stack.remove(i);
        }
    }
}

impl Shared {
    fn spans_named(&self, name: &str) -> Vec<Seen> {
        let spans = self.0.spans.lock().unwrap();
        spans.values().filter(|s| s.name == name).cloned().collect()
    }

    fn span(&self, id: u64) -> Option<Seen> {
        self.0.spans.lock().unwrap().get(&id).cloned()
    }
}

fn server() -> Server {
    modelctx_test::one_tool_server("traced-server", "traced", "done")
}

/// One thread, one runtime, the recorder as that thread's default subscriber: every
/// task of the test (server and client) runs where the recorder sees it.
#[test]
fn sessions_requests_and_rejections_are_traced() {
    let recorder = Shared::default();
    let _guard = tracing::subscriber::set_default(recorder.clone());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let server = server();
        let service = StreamableHttpService::new(move |t| {
            server.serve(t);
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        tokio::spawn(service.serve(listener, std::future::pending()));

        // A 2025-era session: initialize, then a tool call.
        let transport = StreamableHttpClientTransport::new(&url).unwrap();
        let client = tokio::time::timeout(
            LIMIT,
            Client::builder("traced-client", "1.0.0")
                .mode(ConnectMode::Handshake)
                .connect(transport),
        )
        .await
        .unwrap()
        .unwrap();
        tokio::time::timeout(LIMIT, client.call_tool("traced", JsonObject::new()))
            .await
            .unwrap()
            .unwrap();

        // A transport-level rejection: a foreign Origin gets 403 before any session.
        let refused = reqwest::Client::new()
            .post(&url)
            .header("origin", "https://evil.example")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
            .send();
        let refused = tokio::time::timeout(LIMIT, refused).await.unwrap().unwrap();
        assert_eq!(refused.status(), 403);
        client.close().await;
    });

    // The server's request span for the call: method, id, era, inside its session's
    // span, which names the transport and the session id.
    let requests = recorder.spans_named("mcp.request");
    let call = requests
        .iter()
        .find(|s| {
            s.fields.get("mcp.method.name").map(String::as_str) == Some("tools/call")
                && s.fields.get("otel.kind").map(String::as_str) == Some("server")
        })
        .unwrap_or_else(|| panic!("no inbound tools/call span in {requests:#?}"));
    assert_eq!(call.fields["era"], "2025");
    assert_eq!(call.fields["otel.name"], "tools/call traced");
    assert_eq!(call.fields["gen_ai.tool.name"], "traced");
    assert!(call.fields.contains_key("jsonrpc.request.id"), "{call:?}");
    let session = recorder
        .span(call.parent.expect("the request span has a parent"))
        .unwrap();
    assert_eq!(session.name, "mcp.session");
    assert_eq!(session.fields["role"], "server");
    assert_eq!(session.fields["transport"], "streamable-http");
    assert_eq!(session.fields["era"], "2025");
    assert!(
        session
            .fields
            .get("mcp.session.id")
            .is_some_and(|id| id.chars().count() == 8),
        "{session:?}"
    );
    // The client's side of the same call.
    assert!(
        requests.iter().any(|s| {
            s.fields.get("mcp.method.name").map(String::as_str) == Some("tools/call")
                && s.fields.get("otel.kind").map(String::as_str) == Some("client")
        }),
        "no outbound tools/call span in {requests:#?}"
    );
    assert!(requests.iter().all(|s| s.id.is_some()));

    // The rejection: its status and reason.
    let events = recorder.0.events.lock().unwrap();
    let rejection = events
        .iter()
        .find(|e| {
            e.name == "modelctx_http" && e.fields.get("status").map(String::as_str) == Some("403")
        })
        .unwrap_or_else(|| panic!("no 403 rejection event in {events:#?}"));
    assert!(
        rejection.fields["reason"].contains("origin"),
        "{rejection:?}"
    );
}
