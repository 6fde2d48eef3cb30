//! The request spans, named and described as OpenTelemetry's MCP semantic conventions
//! name them, and — with the `otel` feature — W3C trace context carried in `_meta` and
//! the MCP metrics (`otel` below).
//!
//! Without the `otel` feature and without a subscriber that wants the spans, a request
//! costs one level check here; the description of a request (its target, its trace
//! context) is read from the params only for a span something records, or for the
//! metrics.

use std::borrow::Cow;
use std::sync::OnceLock;

use modelctx_types::shallow::Shallow;
use modelctx_types::{ErrorData, RequestId};
use serde::Deserialize;
use serde_json::value::RawValue;
use tracing::Span;
use tracing::field::Empty;

#[cfg(feature = "otel")]
mod otel;

/// The `_meta` keys of W3C trace context.
pub(crate) const CARRIER_KEYS: [&str; 2] = ["traceparent", "tracestate"];

/// Which way a request travels, seen from this side of the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    /// The peer sent it: the handler runs inside its span (span kind `server`).
    Inbound,
    /// This side sends it (span kind `client`).
    Outbound,
}

impl Direction {
    fn kind(self) -> &'static str {
        match self {
            Direction::Inbound => "server",
            Direction::Outbound => "client",
        }
    }
}

/// What the params of a request say about it: the operation's target and the trace
/// context and protocol version its `_meta` carries. Fields that are absent or not
/// strings are left out.
#[derive(Deserialize, Default)]
struct Described<'a> {
    #[serde(default, borrow, deserialize_with = "lenient")]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "lenient")]
    uri: Option<Cow<'a, str>>,
    #[serde(rename = "_meta", default, borrow)]
    meta: Option<Carried<'a>>,
}

/// The keys of `_meta` this module reads.
#[derive(Deserialize, Default)]
struct Carried<'a> {
    #[cfg(feature = "otel")]
    #[serde(default, borrow, deserialize_with = "lenient")]
    traceparent: Option<Cow<'a, str>>,
    #[cfg(feature = "otel")]
    #[serde(default, borrow, deserialize_with = "lenient")]
    tracestate: Option<Cow<'a, str>>,
    #[serde(
        rename = "io.modelcontextprotocol/protocolVersion",
        default,
        borrow,
        deserialize_with = "lenient"
    )]
    protocol_version: Option<Cow<'a, str>>,
}

/// A string, or nothing when the value is anything else (a `name` that is a number is
/// the handler's problem to report, not the span's).
fn lenient<'de: 'a, 'a, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Cow<'a, str>>, D::Error> {
    match Shallow::deserialize(deserializer)? {
        Shallow::Str(s) => Ok(Some(s)),
        Shallow::Int(_) | Shallow::Other => Ok(None),
    }
}

fn describe(params: Option<&RawValue>) -> Described<'_> {
    params
        .and_then(|raw| serde_json::from_str(raw.get()).ok())
        .unwrap_or_default()
}

/// The operation's target attribute and value, for the methods that have one.
fn target<'a>(method: &str, described: &'a Described<'_>) -> Option<(&'static str, &'a str)> {
    let key = match method {
        "tools/call" => "gen_ai.tool.name",
        "prompts/get" => "gen_ai.prompt.name",
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => {
            return described
                .uri
                .as_deref()
                .map(|uri| ("mcp.resource.uri", uri));
        }
        _ => return None,
    };
    described.name.as_deref().map(|name| (key, name))
}

/// What a request's outcome is recorded with: its span (the one it runs in) and, with
/// the feature `otel`, its metric. Small, since every request's future carries it: the
/// span itself is the future's instrument, and is found again as the current span.
pub(crate) struct RequestTrace {
    /// Whether the span records: without it (and without `otel`) there is nothing to
    /// finish.
    wanted: bool,
    tool_call: bool,
    /// Finished: the outcome is recorded (a request dropped before is `cancelled`).
    done: bool,
    #[cfg(feature = "otel")]
    metric: otel::Operation,
}

modelctx_types::__debug_shows!(RequestTrace, |v| { wanted: &v.wanted, .. });

impl RequestTrace {
    /// The span of a request (`mcp.request`), a child of its session's span, which the
    /// request's future is to run in, and its trace.
    ///
    /// With the `otel` feature, the span's OpenTelemetry parent is, inbound, the W3C
    /// `traceparent` in the request's `_meta`, and outbound, the span the caller is in;
    /// without either, the request is a trace of its own. `meta` is what the sender
    /// adds to the params' `_meta` (outbound).
    pub(crate) fn start(
        (session, shared): (&Span, &SessionTrace),
        direction: Direction,
        method: &str,
        id: &RequestId,
        era: &'static str,
        (params, meta): (Option<&RawValue>, Option<&modelctx_types::Meta>),
    ) -> (Span, Self) {
        let span = tracing::info_span!(
            target: "modelctx_session",
            parent: session,
            "mcp.request",
            otel.name = Empty,
            otel.kind = direction.kind(),
            otel.status_code = Empty,
            mcp.method.name = %method,
            jsonrpc.request.id = %id,
            mcp.session.id = shared.tag.as_deref(),
            era = era,
            mcp.protocol.version = shared.version.get().map(AsRef::<str>::as_ref),
            gen_ai.tool.name = Empty,
            gen_ai.prompt.name = Empty,
            mcp.resource.uri = Empty,
            error.type = Empty,
            rpc.response.status_code = Empty,
        );
        let tool_call = method == "tools/call";
        let wanted = !span.is_disabled();
        #[cfg(not(feature = "otel"))]
        if !wanted {
            return (
                span,
                RequestTrace {
                    wanted,
                    tool_call,
                    done: false,
                },
            );
        }
        let described = describe(params);
        let target = target(method, &described);
        if wanted {
            match target {
                // A URI would make span names as many as the resources: the name is
                // the method's alone, the URI an attribute.
                Some((key @ "mcp.resource.uri", value)) => {
                    span.record("otel.name", method);
                    span.record(key, value);
                }
                Some((key, value)) => {
                    span.record("otel.name", format!("{method} {value}"));
                    span.record(key, value);
                }
                None => {
                    span.record("otel.name", method);
                }
            }
            // The version a request names: in its params, or (outbound) in the `_meta`
            // its sender adds to them.
            let named = described
                .meta
                .as_ref()
                .and_then(|m| m.protocol_version.as_deref())
                .or_else(|| meta.and_then(modelctx_types::Meta::protocol_version));
            if let Some(version) = named {
                span.record("mcp.protocol.version", version);
            }
        }
        #[cfg(feature = "otel")]
        {
            match direction {
                Direction::Inbound => {
                    if let Some(meta) = &described.meta {
                        otel::adopt_remote(
                            &span,
                            meta.traceparent.as_deref(),
                            meta.tracestate.as_deref(),
                        );
                    }
                }
                Direction::Outbound => otel::adopt_current(&span),
            }
            let metric = otel::Operation::new(direction, method, target);
            let trace = RequestTrace {
                wanted,
                tool_call,
                done: false,
                metric,
            };
            (span, trace)
        }
        #[cfg(not(feature = "otel"))]
        {
            let trace = RequestTrace {
                wanted,
                tool_call,
                done: false,
            };
            (span, trace)
        }
    }

    /// Records how the request ended — an error response (its code), a `tools/call`
    /// result with `isError` (`tool_error`), or a success — on the current span (the
    /// request's: called from inside its future), and its duration.
    #[inline]
    pub(crate) fn finish(&mut self, outcome: Outcome<'_>) {
        if self.done || (!self.wanted && !cfg!(feature = "otel")) {
            return;
        }
        self.done = true;
        self.record(outcome);
    }

    /// [`finish`](Self::finish)'s work, when there is some.
    fn record(&self, outcome: Outcome<'_>) {
        let span = if self.wanted {
            Span::current()
        } else {
            Span::none()
        };
        let error_type: Option<Cow<'static, str>> = match outcome {
            Outcome::Result(raw) if self.tool_call && is_tool_error(raw) => {
                Some(Cow::Borrowed("tool_error"))
            }
            Outcome::Result(_) => None,
            Outcome::Error(error) => {
                let code = error.code.to_string();
                span.record("rpc.response.status_code", code.as_str());
                Some(Cow::Owned(code))
            }
            Outcome::Failed(kind) => Some(Cow::Borrowed(kind)),
        };
        if let Some(error_type) = &error_type {
            span.record("error.type", error_type.as_ref());
            span.record("otel.status_code", "ERROR");
        }
        #[cfg(feature = "otel")]
        self.metric.record(error_type.as_deref());
    }
}

/// The trace context to carry in an outbound request's `_meta` (`traceparent`, then
/// `tracestate` when there is one) from its `span`: none without the `otel` feature, or
/// when no OpenTelemetry layer records the span.
#[cfg_attr(not(feature = "otel"), inline(always))]
pub(crate) fn carried(span: &Span) -> Vec<(&'static str, String)> {
    #[cfg(feature = "otel")]
    {
        otel::carried(span)
    }
    #[cfg(not(feature = "otel"))]
    {
        let _ = span;
        Vec::new()
    }
}

impl Drop for RequestTrace {
    /// A request whose future is dropped before its outcome (its caller gave up, its
    /// session ended) is recorded `cancelled`. The future's instrument enters the
    /// request's span while it drops it.
    fn drop(&mut self) {
        self.finish(Outcome::Failed("cancelled"));
    }
}

/// How a request ended, as [`RequestTrace::finish`] records it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Outcome<'a> {
    /// A result (a `tools/call` result may still report the tool's failure).
    Result(&'a RawValue),
    /// An error response.
    Error(&'a ErrorData),
    /// No response: `cancelled`, `timeout`, `closed` or `transport`.
    Failed(&'static str),
}

/// Whether a `tools/call` result reports the tool's failure (`isError: true`).
fn is_tool_error(raw: &RawValue) -> bool {
    #[derive(Deserialize)]
    struct Flag {
        #[serde(rename = "isError", default)]
        is_error: bool,
    }
    raw.get().contains("isError")
        && serde_json::from_str::<Flag>(raw.get()).is_ok_and(|f| f.is_error)
}

/// What a session's request spans and metrics share: the session's tag, the protocol
/// version once the handshake settled it, and (`otel`) the session in the metrics.
#[derive(Debug)]
pub(crate) struct SessionTrace {
    /// Whether anything records: the session's span is enabled, or the metrics are in.
    wanted: bool,
    /// The first 8 characters of the session id (HTTP and SSE servers): the id admits
    /// whoever holds it, its start tells sessions apart.
    tag: Option<Box<str>>,
    /// The protocol version the handshake agreed on (2025 era).
    version: OnceLock<Box<str>>,
    #[cfg(feature = "otel")]
    metric: Option<otel::Session>,
}

impl SessionTrace {
    /// A session of `role` starts under `span` (`counted`: a conversation, not one
    /// stateless request); its id (read only when something records) is tagged.
    pub(crate) fn start(
        span: &Span,
        role: crate::lifecycle::Role,
        counted: bool,
        session_id: impl FnOnce() -> Option<String>,
        agreed_version: Option<&str>,
    ) -> Self {
        let wanted = !span.is_disabled() || cfg!(feature = "otel");
        let tag = wanted
            .then(session_id)
            .flatten()
            .map(|id| id.chars().take(8).collect::<String>().into_boxed_str());
        if let Some(tag) = &tag {
            span.record("mcp.session.id", tag.as_ref());
        }
        let version = OnceLock::new();
        if let Some(agreed) = agreed_version.filter(|_| wanted) {
            let _ = version.set(agreed.into());
            span.record("mcp.protocol.version", agreed);
        }
        #[cfg(not(feature = "otel"))]
        let _ = (role, counted);
        SessionTrace {
            wanted,
            tag,
            version,
            #[cfg(feature = "otel")]
            metric: counted.then(|| otel::Session::start(role)),
        }
    }

    /// Learns the protocol version from an `initialize` result, for the spans of the
    /// session's later requests.
    pub(crate) fn learn_version(&self, span: &Span, result: &RawValue) {
        if !self.wanted {
            return;
        }
        #[derive(Deserialize)]
        struct Agreed<'a> {
            #[serde(rename = "protocolVersion", borrow, deserialize_with = "lenient")]
            protocol_version: Option<Cow<'a, str>>,
        }
        if let Ok(Agreed {
            protocol_version: Some(version),
        }) = serde_json::from_str(result.get())
        {
            let _ = self.version.set(version.as_ref().into());
            span.record("mcp.protocol.version", version.as_ref());
        }
    }

    /// The session ended.
    pub(crate) fn end(&self) {
        #[cfg(feature = "otel")]
        if let Some(session) = &self.metric {
            session.end();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target_of(method: &str, params: &str) -> Option<(&'static str, String)> {
        let raw = RawValue::from_string(params.to_owned()).unwrap();
        let described = describe(Some(&raw));
        target(method, &described).map(|(key, value)| (key, value.to_owned()))
    }

    #[test]
    fn the_operation_target_is_the_tool_the_prompt_or_the_resource() {
        assert_eq!(
            target_of("tools/call", r#"{"name":"add","arguments":{"a":1}}"#),
            Some(("gen_ai.tool.name", "add".to_owned()))
        );
        assert_eq!(
            target_of("prompts/get", r#"{"name":"review"}"#),
            Some(("gen_ai.prompt.name", "review".to_owned()))
        );
        assert_eq!(
            target_of("resources/read", r#"{"uri":"file:///a.txt"}"#),
            Some(("mcp.resource.uri", "file:///a.txt".to_owned()))
        );
        assert_eq!(target_of("tools/list", r#"{"cursor":"x"}"#), None);
    }

    #[test]
    fn params_the_span_cannot_read_leave_the_target_out() {
        // A name that is no string is the handler's to refuse, not the span's.
        assert_eq!(target_of("tools/call", r#"{"name":7}"#), None);
        for name in ["null", "true", "-1.5", r#"{"a":["b"]}"#, r#"[{"c":1},"d"]"#] {
            let params = format!(r#"{{"name":{name},"uri":"u"}}"#);
            assert_eq!(target_of("tools/call", &params), None, "{name}");
            // The value is read through: the members after it still count.
            assert_eq!(
                target_of("resources/read", &params),
                Some(("mcp.resource.uri", "u".to_owned())),
                "{name}"
            );
        }
        assert_eq!(target_of("tools/call", r#"[1,2]"#), None);
        assert_eq!(target_of("tools/call", r#"{"_meta":3,"name":"x"}"#), None);
        // Escapes are read, not copied raw.
        assert_eq!(
            target_of("tools/call", r#"{"name":"a\"b"}"#),
            Some(("gen_ai.tool.name", "a\"b".to_owned()))
        );
    }

    #[test]
    fn a_tool_error_is_read_from_the_result() {
        let raw = |s: &str| RawValue::from_string(s.to_owned()).unwrap();
        assert!(is_tool_error(&raw(r#"{"content":[],"isError":true}"#)));
        assert!(!is_tool_error(&raw(r#"{"content":[],"isError":false}"#)));
        assert!(!is_tool_error(&raw(
            r#"{"content":[{"type":"text","text":"isError"}]}"#
        )));
    }
}
