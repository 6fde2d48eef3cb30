//! POST: the messages a client sends. A POST of the stateless era (2026-07-28) goes to
//! [`super::post_era`]; any other is of the handshake era (2025-11-25 and
//! before): an `initialize` starts a session, every other message goes to the session
//! its `Mcp-Session-Id` names (or, in session-less mode, to a session of its own).
//!
//! Session-less mode makes a session per POST; the transport tells the factory to start it
//! pre-initialised and without outbound requests. With JSON answers, a POST of one request
//! that leaves its session as it found it is lent a kept session instead (see
//! [`kept`](super::kept)): its answer is one JSON body, so nothing of the request can reach
//! a later POST, and tasks of session-less mode are bound to no session.

use std::sync::Arc;

use axum::response::Response;
use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use modelctx_transport::Extensions;
use modelctx_types::Principal;
use modelctx_types::{ErrorData, InvalidMessage, JsonRpcMessage};

use super::reply::bad_message;
use super::request::{
    VersionHeader, accepts, parse_body, protocol_version, read_body, resolve_session,
};
use super::table::Inner;
use super::{dispatch, era, hosting, post_era};

const INITIALIZE: &str = "initialize";

/// The requests of the handshake era that change their session's state: a POST carrying
/// one of them in session-less mode gets a session of its own, which ends with it.
const CHANGES_ITS_SESSION: [&str; 3] = [
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// `peer`: the client's address, when new sessions are rate-limited per address and it
/// is known.
pub(super) async fn post<B>(
    inner: &Arc<Inner>,
    headers: &HeaderMap,
    extensions: &Extensions,
    body: B,
    peer: Option<std::net::IpAddr>,
) -> Response
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let version = VersionHeader::read(headers);
    // Whether the headers alone put the POST in the stateless era (when that era is
    // served).
    let era_by_headers = inner
        .config
        .stateless_era
        .then(|| era::stateless_by_headers(headers, &version))
        .flatten();
    if !accepts(headers, ["application/json", "text/event-stream"]) {
        return inner.reject(
            StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: the client must accept both application/json and text/event-stream",
        );
    }
    if let Err(r) = hosting::check_json_content_type(headers) {
        return inner.reject(r.status, r.reason);
    }
    let bytes = match read_body(inner, body).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let (messages, batch) = match parse_body(inner, &bytes) {
        Ok(m) => m,
        Err(bad) => {
            hand_over_invalid_responses(
                inner,
                headers,
                era_by_headers,
                bad.invalid_responses,
                extensions.get::<Principal>(),
            )
            .await;
            return bad.answer;
        }
    };
    let era_request = era::is_stateless(era_by_headers, &messages)
        || era::contradicts_its_header(headers, &messages);
    if inner.config.stateless_era && era_request {
        return post_era::post(inner, headers, extensions, &version, messages, batch).await;
    }
    if !inner.config.handshake_era {
        return refuse_handshake_era(&inner.config, headers, &messages);
    }
    // Only a request starts a handshake: a notification named `initialize` is no
    // handshake, and goes to the session its POST names like any other.
    let init = messages
        .iter()
        .any(|m| matches!(m, JsonRpcMessage::Request(r) if r.method == INITIALIZE));
    if init && messages.len() > 1 {
        return inner.reject(
            StatusCode::BAD_REQUEST,
            "Bad Request: initialize must be sent on its own",
        );
    }
    let stateful = inner.config.stateful;
    let mut reservation = None;
    let session = if !stateful {
        None
    } else if init && headers.get(&era::SESSION_ID_HEADER).is_none() {
        // A new session: it holds a place under the cap until its `initialize` is
        // answered, and exists only if that succeeds.
        let place = match inner.admit_new_session(peer, extensions) {
            Ok(place) => place,
            Err(r) => return r,
        };
        if let Some(sharing) = &inner.sharing {
            match sharing.new_session(inner, Some(place)).await {
                Ok(s) => Some(s),
                Err(r) => return r,
            }
        } else {
            reservation = Some(place);
            None
        }
    } else {
        match resolve_session(inner, headers, extensions.get::<Principal>()).await {
            Ok(s) => Some(s),
            Err(r) => return r,
        }
    };
    if !init {
        let version = match protocol_version(inner, headers, &version, session.as_deref()) {
            Ok(v) => v,
            Err(r) => return r,
        };
        if batch && !version.allows_batches() {
            return bad_message(
                &inner.config,
                ErrorData::invalid_request(format!(
                    "batches are not supported in protocol version {}",
                    version.as_str()
                )),
            );
        }
    }
    if !stateful
        && !init
        && inner.config.json_response
        && let [JsonRpcMessage::Request(request)] = messages.as_slice()
        && !CHANGES_ITS_SESSION.contains(&request.method.as_ref())
    {
        let new = || inner.create_session(None, false, true, false, None, None);
        let Some(lease) = inner.kept_sessionless.acquire(true, new) else {
            return inner.reject(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the session could not be created",
            );
        };
        let session = lease.session().clone();
        return dispatch::dispatch(inner, session, messages, extensions, false, None).await;
    }
    let session = match session {
        Some(s) => s,
        None => {
            match inner.create_session(None, stateful, !stateful && !init, false, None, reservation)
            {
                Some(s) => s,
                None => {
                    return inner.reject(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "no randomness available for a session id",
                    );
                }
            }
        }
    };
    if init {
        // Bound to the caller of its `initialize` for as long as it lives.
        session.bind_owner(extensions.get::<Principal>());
    }
    dispatch::dispatch(inner, session, messages, extensions, init, None).await
}

/// Responses POSTed for a session that could not be read: refused with 400 (the
/// caller's answer), and handed to the session named by the headers, whose runtime
/// fails the calls they name at once (as over stdio) rather than at their timeouts.
/// Nothing is handed over without a live stateful session of the era that has client
/// responses; another session, or none, is never touched.
async fn hand_over_invalid_responses(
    inner: &Arc<Inner>,
    headers: &HeaderMap,
    era_by_headers: Option<bool>,
    invalid: Vec<InvalidMessage>,
    caller: Option<&Principal>,
) {
    if invalid.is_empty()
        || !inner.config.stateful
        || (inner.config.stateless_era && era_by_headers == Some(true))
        || headers.get(&era::SESSION_ID_HEADER).is_none()
    {
        return;
    }
    let Ok(session) = resolve_session(inner, headers, caller).await else {
        return;
    };
    for invalid in invalid {
        if session.push_invalid_response(invalid).await.is_err() {
            return;
        }
    }
}

/// The answer of an endpoint that serves only the stateless era (its config's
/// `handshake_era` off) to a POST of the handshake era: `400` with `-32022`, naming the revisions it serves in `data.supported` and what the
/// POST asked for in `data.requested` (an `initialize`'s `protocolVersion`, else the
/// `MCP-Protocol-Version` header), answering the POST's first request.
fn refuse_handshake_era(
    config: &super::config::StreamableHttpServerConfig,
    headers: &HeaderMap,
    messages: &[JsonRpcMessage],
) -> Response {
    let request = messages.iter().find_map(|m| match m {
        JsonRpcMessage::Request(r) => Some(r),
        _ => None,
    });
    let from_initialize = request
        .filter(|r| r.method == "initialize")
        .and_then(|r| r.params.as_ref())
        .and_then(|p| serde_json::from_str::<serde_json::Value>(p.get()).ok())
        .and_then(|p| p["protocolVersion"].as_str().map(str::to_owned));
    let requested = from_initialize
        .or_else(|| {
            headers
                .get(crate::headers::MCP_PROTOCOL_VERSION)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        })
        .unwrap_or_default();
    let supported = [modelctx_types::ProtocolVersion::V2026_07_28.as_str()];
    let error = ErrorData::new(
        modelctx_types::ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
        format!(
            "Unsupported protocol version {requested:?}: this server serves only {}, \
             without the initialize handshake",
            supported.join(", ")
        ),
    )
    .with_data(serde_json::json!({"supported": supported, "requested": requested}));
    super::reply::report(config, StatusCode::BAD_REQUEST, error.message.to_string());
    super::reply::error_response(
        StatusCode::BAD_REQUEST,
        modelctx_types::JsonRpcErrorResponse::new(request.map(|r| r.id.clone()), error),
    )
}
