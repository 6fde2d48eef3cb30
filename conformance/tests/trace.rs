//! One trace across every hop (feature `otel`): a client call made inside the caller's
//! span, through the transport — nginx or HAProxy in front of instances sharing one
//! Redis included — into the server's request span and the handler's own span, and in
//! the handshake era back out through the server's `elicitation/create` into the
//! client's handler. The spans are exported in-process (an OpenTelemetry SDK tracer with
//! an exporter written here) and read back by trace id; the metrics through a meter
//! provider with an in-memory exporter.
//!
//! Each test runs in-memory, over streamable HTTP, and behind the forwarder, nginx and
//! HAProxy, in both eras (a request of the server's own: in the handshake era, the
//! only one that has them). Not over stdio: the server is a child process there, whose
//! spans this process's exporter never sees.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use modelctx::client::{FormAnswer, RootsList};
use modelctx::server::{Context, Elicited, Server};
use modelctx::types::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ContentBlock, ListRootsRequest, Root,
};
use modelctx_conformance::support::{Work, connect};
use modelctx_conformance::{Cell, Connector, SpecVersion, TransportKind, within};
use opentelemetry::trace::{SpanId, SpanKind, TraceContextExt, TraceId, TracerProvider as _};
use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use tokio::sync::watch;
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;

/// Every span the SDK ended, and a count that wakes whoever waits for more.
#[derive(Debug, Clone)]
struct Exported {
    spans: Arc<Mutex<Vec<SpanData>>>,
    count: watch::Sender<usize>,
}

impl SpanExporter for Exported {
    fn export(&self, batch: Vec<SpanData>) -> impl Future<Output = OTelSdkResult> + Send {
        let added = batch.len();
        self.spans.lock().unwrap().extend(batch);
        self.count.send_modify(|n| *n += added);
        std::future::ready(Ok(()))
    }
}

/// The process's telemetry, installed once before any session starts (the SDK caches
/// its instruments from the global meter provider).
struct Telemetry {
    exported: Exported,
    meters: SdkMeterProvider,
    metrics: InMemoryMetricExporter,
}

fn telemetry() -> &'static Telemetry {
    static TELEMETRY: OnceLock<Telemetry> = OnceLock::new();
    TELEMETRY.get_or_init(|| {
        let exported = Exported {
            spans: Arc::default(),
            count: watch::channel(0).0,
        };
        let tracer = SdkTracerProvider::builder()
            .with_simple_exporter(exported.clone())
            .build();
        let subscriber = tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(tracer.tracer("trace-test")));
        tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
        let metrics = InMemoryMetricExporter::default();
        let meters = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(metrics.clone()).build())
            .build();
        opentelemetry::global::set_meter_provider(meters.clone());
        Telemetry {
            exported,
            meters,
            metrics,
        }
    })
}

/// The cells: every transport whose server runs in this process, in both eras.
fn cells() -> Vec<Connector> {
    [
        TransportKind::InMemory,
        TransportKind::StreamableHttp,
        TransportKind::StreamableHttpShared,
        TransportKind::StreamableHttpNginx,
        TransportKind::StreamableHttpHaproxy,
    ]
    .iter()
    .flat_map(|&t| SpecVersion::ALL.map(|v| Cell::new(t, v)))
    .map(|cell| Connector::new(cell).expect("the runner builds this transport"))
    .collect()
}

/// A tool whose handler does its work in a span of its own and asks the user inside it.
fn asking_server() -> Server {
    Server::builder("tracer", "1.0.0")
        .request_handler::<CallToolRequest, _, _>(|_call, cx: Context| {
            async move {
                let schema = serde_json::from_value(serde_json::json!({
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                }))
                .unwrap();
                let city = match cx.elicit_form_schema("Which city?", schema).await? {
                    Elicited::Accepted(values) => format!("{:?}", values["city"]),
                    Elicited::Declined | Elicited::Cancelled => "nowhere".to_owned(),
                };
                Ok(CallToolResult::new(vec![ContentBlock::text(city)]))
            }
            .instrument(tracing::info_span!("lookup"))
        })
        .build()
}

/// A client that answers the form in a span of its own.
fn answering_client() -> modelctx::client::ClientBuilder {
    modelctx_conformance::support::client().form_elicitation(|_form, _cx| {
        async move {
            let mut values = modelctx::client::FormContent::new();
            values.insert("city".to_owned(), "Lyon".into());
            Ok(FormAnswer::Accept(values))
        }
        .instrument(tracing::info_span!("asking the user"))
    })
}

/// The ended spans of one trace, waited for until `complete` holds of them.
async fn trace_of(
    trace_id: TraceId,
    what: &str,
    complete: impl Fn(&[SpanData]) -> bool,
) -> Vec<SpanData> {
    let exported = &telemetry().exported;
    let mut count = exported.count.subscribe();
    let of_trace = || -> Vec<SpanData> {
        exported
            .spans
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.span_context.trace_id() == trace_id)
            .cloned()
            .collect()
    };
    let waited = within(what, async {
        loop {
            if complete(&of_trace()) {
                break;
            }
            count.changed().await.expect("the exporter lives");
        }
    });
    waited.await;
    of_trace()
}

fn named<'a>(spans: &'a [SpanData], name: &str, kind: SpanKind) -> Vec<&'a SpanData> {
    spans
        .iter()
        .filter(|s| s.name == name && s.span_kind == kind)
        .collect()
}

fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

fn parent_of<'a>(spans: &'a [SpanData], child: &SpanData) -> Option<&'a SpanData> {
    spans
        .iter()
        .find(|s| s.span_context.span_id() == child.parent_span_id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_is_one_trace_from_the_caller_into_the_handler() {
    telemetry();
    for connector in cells() {
        let cell = connector.cell();
        let era_2026 = connector.version() == SpecVersion::V2026_07_28;
        let version = connector.version().name();
        let pair = connect(&connector, &asking_server(), answering_client()).await;
        let root = tracing::info_span!("agent turn");
        let root_context = root.context();
        let root_span = root_context.span().span_context().clone();
        let result = within(
            "the call",
            pair.client
                .request::<CallToolRequest>(CallToolRequestParams::new("weather"))
                .instrument(root.clone()),
        )
        .await
        .unwrap();
        assert_eq!(
            result.content[0].as_text(),
            Some("String(\"Lyon\")"),
            "{cell}"
        );
        drop(root);

        let expected_lookups = if era_2026 { 2 } else { 1 };
        let spans = trace_of(root_span.trace_id(), "the trace's spans", |spans| {
            named(spans, "lookup", SpanKind::Internal).len() >= expected_lookups
                && named(spans, "asking the user", SpanKind::Internal).len() == 1
                && named(spans, "tools/call weather", SpanKind::Server).len()
                    >= expected_lookups
                && spans.iter().any(|s| s.name == "agent turn")
                // The client's request span for the question ends after its answer went.
                && (era_2026 || named(spans, "elicitation/create", SpanKind::Server).len() == 1)
        })
        .await;

        // The caller's span holds the client's request span(s) (2026-07-28: the call
        // and its retry carrying the answer).
        let client_calls = named(&spans, "tools/call weather", SpanKind::Client);
        assert_eq!(client_calls.len(), expected_lookups, "{cell}: {spans:#?}");
        for call in &client_calls {
            assert_eq!(call.parent_span_id, root_span.span_id(), "{cell}");
            assert_eq!(
                attribute(call, "mcp.method.name"),
                Some(&Value::from("tools/call")),
                "{cell}"
            );
            assert_eq!(
                attribute(call, "mcp.protocol.version"),
                Some(&Value::from(version)),
                "{cell}"
            );
            assert_eq!(
                attribute(call, "gen_ai.tool.name"),
                Some(&Value::from("weather")),
                "{cell}"
            );
        }
        // The server's request span is the remote child of a client request span, and
        // the handler's span is its child.
        for server_call in named(&spans, "tools/call weather", SpanKind::Server) {
            assert!(server_call.parent_span_is_remote, "{cell}");
            let parent = parent_of(&spans, server_call).expect("the client's span");
            assert_eq!(parent.name, "tools/call weather", "{cell}");
            assert_eq!(parent.span_kind, SpanKind::Client, "{cell}");
            assert!(
                attribute(server_call, "jsonrpc.request.id").is_some(),
                "{cell}"
            );
            // Whichever instance served it, the session's protocol version (and behind a
            // balancer, the session's tag).
            assert_eq!(
                attribute(server_call, "mcp.protocol.version"),
                Some(&Value::from(version)),
                "{cell}"
            );
            if cell.shares_sessions() {
                assert!(attribute(server_call, "mcp.session.id").is_some(), "{cell}");
            }
        }
        for lookup in named(&spans, "lookup", SpanKind::Internal) {
            let parent = parent_of(&spans, lookup).expect("the server's request span");
            assert_eq!(parent.name, "tools/call weather", "{cell}");
            assert_eq!(parent.span_kind, SpanKind::Server, "{cell}");
        }
        let asking = named(&spans, "asking the user", SpanKind::Internal)[0];
        let asked_in = parent_of(&spans, asking)
            .unwrap_or_else(|| panic!("{cell}: no parent of {asking:#?} in {spans:#?}"));
        if era_2026 {
            // The question came back in the call's `input_required` result: the client
            // answered it inside the caller's span, before the retry.
            assert_eq!(
                asked_in.span_context.span_id(),
                root_span.span_id(),
                "{cell}"
            );
        } else {
            // The question was a request of the server's, sent from inside the handler's
            // span and answered in the client's request span, its remote child.
            assert_eq!(asked_in.name, "elicitation/create", "{cell}");
            assert_eq!(asked_in.span_kind, SpanKind::Server, "{cell}");
            assert!(asked_in.parent_span_is_remote, "{cell}");
            let sent_by = parent_of(&spans, asked_in).expect("the server's request span");
            assert_eq!(sent_by.name, "elicitation/create", "{cell}");
            assert_eq!(sent_by.span_kind, SpanKind::Client, "{cell}");
            let sent_from = parent_of(&spans, sent_by).expect("the handler's span");
            assert_eq!(sent_from.name, "lookup", "{cell}");
        }
        pair.client.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_traceparent_the_caller_set_is_kept_and_a_malformed_one_ignored() {
    telemetry();
    let connector = Connector::new(Cell::new(TransportKind::InMemory, SpecVersion::V2025_11_25))
        .expect("in-memory");
    let server = Server::builder("tracer", "1.0.0")
        .request_handler::<CallToolRequest, _, _>(|_call, _cx: Context| {
            async move { Ok(CallToolResult::new(vec![ContentBlock::text("done")])) }
                .instrument(tracing::info_span!("work"))
        })
        .build();
    let pair = connect(&connector, &server, modelctx_conformance::support::client()).await;
    let cases = [
        // A caller that propagates its own context: the server joins that trace.
        (
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            true,
        ),
        // Not W3C version 00: the server starts a trace of its own.
        (
            "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
            false,
        ),
    ];
    for (traceparent, joined) in cases {
        let mut params = CallToolRequestParams::new(format!("case-{joined}"));
        let mut meta = modelctx::types::Meta::default();
        meta.insert("traceparent", serde_json::json!(traceparent));
        params.meta = Some(meta);
        within("the call", pair.client.request::<CallToolRequest>(params))
            .await
            .unwrap();
        let name = format!("tools/call case-{joined}");
        let wanted = TraceId::from_hex("0af7651916cd43dd8448eb211c80319c").unwrap();
        let spans: Vec<SpanData> = if joined {
            trace_of(wanted, "the server's span in the caller's trace", |spans| {
                !named(spans, &name, SpanKind::Server).is_empty()
            })
            .await
        } else {
            let exported = &telemetry().exported;
            let mut count = exported.count.subscribe();
            within("the server's span", async {
                loop {
                    let found = exported
                        .spans
                        .lock()
                        .unwrap()
                        .iter()
                        .any(|s| s.name == name && s.span_kind == SpanKind::Server);
                    if found {
                        break;
                    }
                    count.changed().await.unwrap();
                }
            })
            .await;
            exported.spans.lock().unwrap().clone()
        };
        let server_call = named(&spans, &name, SpanKind::Server)[0];
        if joined {
            assert_eq!(
                server_call.parent_span_id,
                SpanId::from_hex("b7ad6b7169203331").unwrap()
            );
            assert!(server_call.parent_span_is_remote);
        } else {
            // A trace of its own: the request's span is a root, not a child of its
            // session's (which would make one trace as long as the session).
            assert_ne!(server_call.span_context.trace_id(), wanted);
            assert_eq!(server_call.parent_span_id, SpanId::INVALID);
        }
    }
    pair.client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_and_sessions_are_measured_on_both_sides() {
    let telemetry = telemetry();
    let connector = Connector::new(Cell::new(TransportKind::InMemory, SpecVersion::V2025_11_25))
        .expect("in-memory");
    let (started_tx, mut started) = tokio::sync::mpsc::unbounded_channel();
    let server = Server::builder("measured", "1.0.0")
        .request_handler::<CallToolRequest, _, _>(move |call, _cx: Context| {
            let started = started_tx.clone();
            async move {
                match call.name.as_str() {
                    "fails" => Ok(CallToolResult::error("no")),
                    "hangs" => {
                        let _ = started.send(());
                        std::future::pending().await
                    }
                    _ => Ok(CallToolResult::new(vec![ContentBlock::text("yes")])),
                }
            }
        })
        .build();
    let pair = connect(&connector, &server, modelctx_conformance::support::client()).await;
    for name in ["measured-ok", "fails"] {
        within(
            "the call",
            pair.client
                .request::<CallToolRequest>(CallToolRequestParams::new(name)),
        )
        .await
        .unwrap();
    }
    // A method the server does not have: one series for every such method.
    let unknown = pair.client.request::<Work>(serde_json::json!({}));
    let refused = within("the unknown method", unknown).await.unwrap_err();
    assert_eq!(refused.protocol_error().map(|e| e.code.0), Some(-32601));
    // A call given up (its future dropped) once the tool runs.
    let hanging = pair
        .client
        .request::<CallToolRequest>(CallToolRequestParams::new("hangs"));
    within("the tool to start", async {
        tokio::select! {
            _ = hanging => panic!("the hanging tool answered"),
            _ = started.recv() => {}
        }
    })
    .await;
    // Histogram points per (metric, method, tool, error type): their counts.
    let points = || -> HashMap<[String; 4], u64> {
        telemetry.metrics.reset();
        telemetry.meters.force_flush().unwrap();
        let mut points = HashMap::new();
        for resource in telemetry.metrics.get_finished_metrics().unwrap() {
            for scope in resource.scope_metrics() {
                for metric in scope.metrics() {
                    let AggregatedMetrics::F64(MetricData::Histogram(h)) = metric.data() else {
                        continue;
                    };
                    for point in h.data_points() {
                        let get = |key: &str| {
                            point
                                .attributes()
                                .find(|kv: &&KeyValue| kv.key.as_str() == key)
                                .map(|kv| kv.value.to_string())
                                .unwrap_or_default()
                        };
                        let key = [
                            metric.name().to_owned(),
                            get("mcp.method.name"),
                            get("gen_ai.tool.name"),
                            get("error.type"),
                        ];
                        points.insert(key, point.count());
                    }
                }
            }
        }
        points
    };
    let point = |metric: &str, method: &str, tool: &str, error: &str| {
        [metric, method, tool, error].map(str::to_owned)
    };
    let seen = points();
    for side in [
        "mcp.client.operation.duration",
        "mcp.server.operation.duration",
    ] {
        let ok = point(side, "tools/call", "measured-ok", "");
        assert_eq!(seen.get(&ok), Some(&1), "{side}: {seen:#?}");
        let failed = point(side, "tools/call", "fails", "tool_error");
        assert_eq!(seen.get(&failed), Some(&1), "{side}: {seen:#?}");
    }
    let other = point("mcp.server.operation.duration", "_OTHER", "", "-32601");
    assert_eq!(seen.get(&other), Some(&1), "{seen:#?}");
    let given_up = point(
        "mcp.client.operation.duration",
        "tools/call",
        "hangs",
        "cancelled",
    );
    assert_eq!(seen.get(&given_up), Some(&1), "{seen:#?}");

    pair.client.close().await;
    // The session's end is measured before it is announced.
    within("the server's session to end", pair.server().closed()).await;
    let ended = points()
        .into_keys()
        .any(|[name, ..]| name == "mcp.server.session.duration");
    assert!(ended, "the server's session duration");
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_of_the_servers_own_is_answered_in_the_trace_it_was_sent_from() {
    telemetry();
    // The handshake era's requests from server to client, over the session's GET stream
    // (behind a balancer, relayed through Redis when another instance holds it).
    let cells = cells()
        .into_iter()
        .filter(|c| c.version() == SpecVersion::V2025_11_25);
    for connector in cells {
        let cell = connector.cell();
        let roots = RootsList::new(vec![Root::new("file:///work").with_name("Work")]).unwrap();
        let client = modelctx_conformance::support::client().roots(roots, false);
        let pair = connect(&connector, &asking_server(), client).await;
        let job = tracing::info_span!("server job");
        let job_context = job.context();
        let job_span = job_context.span().span_context().clone();
        within(
            "roots/list",
            pair.server()
                .request::<ListRootsRequest>(None)
                .instrument(job.clone()),
        )
        .await
        .unwrap();
        drop(job);
        let spans = trace_of(job_span.trace_id(), "the trace's spans", |spans| {
            named(spans, "roots/list", SpanKind::Server).len() == 1
                && named(spans, "roots/list", SpanKind::Client).len() == 1
        })
        .await;
        let answered = named(&spans, "roots/list", SpanKind::Server)[0];
        assert!(answered.parent_span_is_remote, "{cell}");
        let asked = parent_of(&spans, answered).expect("the server's request span");
        assert_eq!(asked.name, "roots/list", "{cell}");
        assert_eq!(asked.span_kind, SpanKind::Client, "{cell}");
        assert_eq!(asked.parent_span_id, job_span.span_id(), "{cell}");
        pair.client.close().await;
    }
}
