//! OpenTelemetry (feature `otel`): W3C trace context in `_meta`, through the bridge from
//! `tracing` spans (`tracing-opentelemetry`), and the MCP metrics through the
//! `opentelemetry` API's global meter provider.
//!
//! Both are inert until the application installs them: without an OpenTelemetry layer in
//! its subscriber no span has a trace context to carry or adopt, and without a meter
//! provider the instruments are no-ops.

use std::sync::OnceLock;
use std::time::Instant;

use opentelemetry::metrics::{Histogram, UpDownCounter};
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use opentelemetry::{Context, KeyValue};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use super::Direction;
use crate::lifecycle::Role;

/// The `_meta` keys of W3C trace context.
const TRACEPARENT: &str = super::CARRIER_KEYS[0];
const TRACESTATE: &str = super::CARRIER_KEYS[1];

/// Takes the trace context an inbound request carries as its span's remote parent. A
/// request without one, or with a `traceparent` that cannot be read (or names the
/// invalid all-zero ids), starts a trace of its own (not its session's, which would
/// make one trace as long as the session).
pub(super) fn adopt_remote(span: &Span, traceparent: Option<&str>, tracestate: Option<&str>) {
    if span.is_disabled() {
        return;
    }
    let parent = match traceparent.and_then(|t| parse(t, tracestate)) {
        Some(remote) => Context::new().with_remote_span_context(remote),
        None => Context::new(),
    };
    // Fails only when no OpenTelemetry layer records the span: nothing to join then.
    let _ = span.set_parent(parent);
}

/// Makes the span the caller is in the parent of an outbound request's span; a call
/// made outside any span OpenTelemetry records starts a trace of its own.
pub(super) fn adopt_current(span: &Span) {
    if span.is_disabled() {
        return;
    }
    let current = Span::current();
    let context = if current.is_disabled() {
        Context::new()
    } else {
        current.context()
    };
    let parent = if context.span().span_context().is_valid() {
        context
    } else {
        Context::new()
    };
    let _ = span.set_parent(parent);
}

/// The `_meta` entries that carry the span's trace context to the peer.
pub(super) fn carried(span: &Span) -> Vec<(&'static str, String)> {
    if span.is_disabled() {
        return Vec::new();
    }
    let context = span.context();
    let span_ref = context.span();
    let sc = span_ref.span_context();
    if !sc.is_valid() {
        return Vec::new();
    }
    let mut carried = vec![(
        TRACEPARENT,
        format!(
            "00-{}-{}-{:02x}",
            sc.trace_id(),
            sc.span_id(),
            sc.trace_flags().to_u8() & TraceFlags::SAMPLED.to_u8()
        ),
    )];
    let state = sc.trace_state().header();
    if !state.is_empty() {
        carried.push((TRACESTATE, state));
    }
    carried
}

/// Reads a W3C `traceparent` (`<version>-<trace id>-<parent id>-<flags>`, lower-case
/// hex; version 00 has exactly these four fields, a later version may add more after
/// them, which are ignored, and version ff is invalid) and its `tracestate` (dropped
/// when malformed, as W3C allows).
fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<SpanContext> {
    let mut parts = traceparent.split('-');
    let (version, trace_id, span_id, flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let lower_hex = |s: &str, len: usize| {
        s.len() == len && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    };
    let more = parts.next().is_some();
    if !lower_hex(version, 2)
        || version == "ff"
        || (version == "00" && more)
        || !lower_hex(trace_id, 32)
        || !lower_hex(span_id, 16)
        || !lower_hex(flags, 2)
    {
        return None;
    }
    let trace_id = TraceId::from_hex(trace_id).ok()?;
    let span_id = SpanId::from_hex(span_id).ok()?;
    if trace_id == TraceId::INVALID || span_id == SpanId::INVALID {
        return None;
    }
    let flags = u8::from_str_radix(flags, 16).ok()? & TraceFlags::SAMPLED.to_u8();
    let state = tracestate
        .and_then(|s| s.parse::<TraceState>().ok())
        .unwrap_or_default();
    Some(SpanContext::new(
        trace_id,
        span_id,
        TraceFlags::new(flags),
        true,
        state,
    ))
}

/// The MCP instruments, made on first use from the global meter provider: install the
/// provider before the first session starts.
struct Instruments {
    /// `mcp.client.operation.duration`: a request, as its sender sees it.
    client_operation: Histogram<f64>,
    /// `mcp.server.operation.duration`: a request, as its receiver sees it.
    server_operation: Histogram<f64>,
    client_session: Histogram<f64>,
    server_session: Histogram<f64>,
    client_active: UpDownCounter<i64>,
    server_active: UpDownCounter<i64>,
}

/// The bucket boundaries the conventions give for every MCP duration, in seconds.
const BOUNDARIES: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

fn instruments() -> &'static Instruments {
    static INSTRUMENTS: OnceLock<Instruments> = OnceLock::new();
    INSTRUMENTS.get_or_init(|| {
        let meter = opentelemetry::global::meter("modelctx");
        let duration = |name: &'static str, description: &'static str| {
            meter
                .f64_histogram(name)
                .with_unit("s")
                .with_description(description)
                .with_boundaries(BOUNDARIES.to_vec())
                .build()
        };
        let active = |name: &'static str, description: &'static str| {
            meter
                .i64_up_down_counter(name)
                .with_unit("{session}")
                .with_description(description)
                .build()
        };
        Instruments {
            client_operation: duration(
                "mcp.client.operation.duration",
                "A request, from when it was sent until its answer arrived",
            ),
            server_operation: duration(
                "mcp.server.operation.duration",
                "A request, from when it was received until its answer was sent",
            ),
            client_session: duration("mcp.client.session.duration", "A client's session"),
            server_session: duration("mcp.server.session.duration", "A server's session"),
            client_active: active("mcp.client.session.active", "A client's open sessions"),
            server_active: active("mcp.server.session.active", "A server's open sessions"),
        }
    })
}

/// The `error.type` of an unknown method and of invalid params.
const METHOD_NOT_FOUND: &str = "-32601";
const INVALID_PARAMS: &str = "-32602";

/// A request being timed: its start and the attributes its duration is recorded with.
pub(super) struct Operation {
    direction: Direction,
    started: Instant,
    attributes: Vec<KeyValue>,
}

impl Operation {
    pub(super) fn new(
        direction: Direction,
        method: &str,
        target: Option<(&'static str, &str)>,
    ) -> Self {
        let mut attributes = vec![KeyValue::new("mcp.method.name", method.to_owned())];
        // The resource URI is left out of the metric: one series per URI is unbounded.
        if let Some((key, value)) = target.filter(|(key, _)| *key != "mcp.resource.uri") {
            attributes.push(KeyValue::new(key, value.to_owned()));
        }
        Operation {
            direction,
            started: Instant::now(),
            attributes,
        }
    }

    pub(super) fn record(&self, error_type: Option<&str>) {
        let seconds = self.started.elapsed().as_secs_f64();
        let instruments = instruments();
        let histogram = match self.direction {
            Direction::Outbound => &instruments.client_operation,
            Direction::Inbound => &instruments.server_operation,
        };
        let Some(error_type) = error_type else {
            histogram.record(seconds, &self.attributes);
            return;
        };
        // The peer chooses the method and the tool or prompt name: one it does not
        // have (method not found, invalid params) is not a series of its own, or a
        // peer could make the metric grow without bound.
        let mut attributes = match error_type {
            METHOD_NOT_FOUND => vec![KeyValue::new("mcp.method.name", "_OTHER")],
            INVALID_PARAMS => self.attributes[..1].to_vec(),
            _ => self.attributes.clone(),
        };
        attributes.push(KeyValue::new("error.type", error_type.to_owned()));
        histogram.record(seconds, &attributes);
    }
}

/// A session, counted among the open ones from its start to its end.
#[derive(Debug)]
pub(super) struct Session {
    role: Role,
    started: Instant,
    ended: std::sync::atomic::AtomicBool,
}

impl Session {
    pub(super) fn start(role: Role) -> Self {
        let instruments = instruments();
        match role {
            Role::Client => instruments.client_active.add(1, &[]),
            Role::Server => instruments.server_active.add(1, &[]),
        }
        Session {
            role,
            started: Instant::now(),
            ended: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Records the session's duration and counts it out, once.
    pub(super) fn end(&self) {
        if self.ended.swap(true, std::sync::atomic::Ordering::AcqRel) {
            return;
        }
        let seconds = self.started.elapsed().as_secs_f64();
        let instruments = instruments();
        match self.role {
            Role::Client => {
                instruments.client_active.add(-1, &[]);
                instruments.client_session.record(seconds, &[]);
            }
            Role::Server => {
                instruments.server_active.add(-1, &[]);
                instruments.server_session.record(seconds, &[]);
            }
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // A session whose receive loop never ran to its end (its runtime dropped) still
        // leaves the count of open ones.
        self.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_well_formed_traceparent_is_read_with_its_state() {
        let sc = parse(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            Some("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"),
        )
        .unwrap();
        assert_eq!(
            sc.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(sc.span_id().to_string(), "00f067aa0ba902b7");
        assert!(sc.is_sampled());
        assert!(sc.is_remote());
        assert_eq!(sc.trace_state().get("congo"), Some("t61rcWkgMzE"));
    }

    #[test]
    fn a_malformed_traceparent_is_ignored() {
        for bad in [
            "",
            "00",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "0-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-+bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert!(parse(bad, None).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn a_later_version_is_read_by_its_first_four_fields() {
        let sc = parse(
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-comes-next",
            None,
        )
        .unwrap();
        assert_eq!(sc.span_id().to_string(), "00f067aa0ba902b7");
    }

    #[test]
    fn a_malformed_tracestate_is_dropped_not_the_parent() {
        let sc = parse(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
            Some("not a list member"),
        )
        .unwrap();
        assert!(!sc.is_sampled());
        assert_eq!(sc.trace_state().header(), "");
    }
}
