//! Handing a POST's messages to its session and answering the POST: a JSON body, an
//! SSE stream, or `202` when it carried no request (both eras).

use std::sync::Arc;

use axum::response::Response;
use bytes::Bytes;
use futures::StreamExt;
use http::StatusCode;
use modelctx_transport::{EraRead, Extensions};
use modelctx_types::{ErrorData, JsonRpcMessage, RequestId};

use super::era;
use super::reply::{bad_message, json_response, sse_response, status_only};
use super::session::{Answer, EraAnswer, HandshakeGuard, Messages, SessionState, guarded};
use super::shared::registry_unavailable;
use super::table::Inner;
use crate::shared::cancelled_id;

/// The method of the client's note that its handshake is done.
const INITIALIZED: &str = "notifications/initialized";

/// Hands a POST's messages to its session and answers the POST. `stateless_era`: the
/// answer's HTTP status follows the JSON-RPC error it carries, when it is known before
/// the head goes out (see [`era::status_of`]).
pub(super) async fn dispatch(
    inner: &Inner,
    session: Arc<SessionState>,
    mut messages: Messages,
    extensions: &Extensions,
    init: bool,
    mut era: Option<EraRead>,
) -> Response {
    let stateless_era = era.is_some();
    // A new session's handshake fails if this POST ends before its answer.
    let mut handshake =
        (init && session.handshake_pending()).then(|| HandshakeGuard(session.clone()));
    if session.shared.is_some()
        && let Some(sharing) = &inner.sharing
    {
        messages = sharing.relay_foreign(inner, &session, messages).await;
    }
    // The ids of the POST's requests: a POST of one request (the usual one) keeps its
    // id without a vector.
    let request_ids = || {
        messages.iter().filter_map(|m| match m {
            JsonRpcMessage::Request(r) => Some(&r.id),
            _ => None,
        })
    };
    let mut found = request_ids();
    let (one, many): (Option<RequestId>, Vec<RequestId>) = match (found.next(), found.next()) {
        (Some(id), None) => (Some(id.clone()), Vec::new()),
        _ => (None, request_ids().cloned().collect()),
    };
    let ids: &[RequestId] = match &one {
        Some(id) => std::slice::from_ref(id),
        None => &many,
    };
    if let Some(dup) = ids.iter().find(|id| session.is_in_flight(id)) {
        return bad_message(
            &inner.config,
            ErrorData::invalid_request(format!("request id {dup} is already in flight")),
        );
    }
    let cancelled: Vec<RequestId> = messages.iter().filter_map(cancelled_id).collect();
    session.note_from_client(&messages);
    let note = session.shared.is_some() && messages.iter().any(|m| m.method() == Some(INITIALIZED));
    if init && let Some(id) = ids.first() {
        session.expect_initialize(id.clone());
    }
    // The stateless era's one request: its answer is JSON unless something must be
    // streamed, and the stream is built only then (see `Route::Era`). (In JSON-response
    // mode it is JSON in any case.) Its session offers direct delivery, so a handler
    // that answers at once has answered when `push` returns; one whose message was
    // queued (a transport user that starts its session later) gets its stream at once,
    // and the answer follows on it.
    if stateless_era
        && !inner.config.json_response
        && let [id] = ids
    {
        let answer = session.open_era_answer(id);
        if session
            .push_era(messages, None, extensions, era)
            .await
            .is_err()
        {
            return inner.reject(StatusCode::NOT_FOUND, "Not Found: the session has ended");
        }
        return match session.settle_era_answer(id, answer) {
            Some(EraAnswer::Json(body, error)) => json_response(era::status_for(error), body),
            Some(EraAnswer::Stream(events)) => era_stream(&session, ids, events),
            None => era_stream(&session, ids, futures::stream::empty().boxed()),
        };
    }
    let mut answer = (!ids.is_empty()).then(|| session.open_answer(ids));
    let stream = match &answer {
        Some(Answer::Sse { stream, .. }) => Some(*stream),
        _ => None,
    };
    // A request of a shared session still running once the POST is handled is
    // recorded, so another service can finish its answer if this one stops.
    let run_request: Option<Arc<str>> = (!init && ids.len() == 1 && session.records_runs())
        .then(|| {
            messages
                .iter()
                .find(|m| matches!(m, JsonRpcMessage::Request(_)))
        })
        .flatten()
        .and_then(|m| serde_json::to_string(m).ok())
        .map(Arc::from);
    // A shared session's runtime still waiting for the client's
    // `notifications/initialized`, which the registry says went to another service,
    // takes one in its place first: only then (see `SessionState::missed_initialized`).
    let gate = session.hand_note_first(&mut messages).await;
    let pushed = session
        .push_era(messages, stream, extensions, era.take())
        .await;
    drop(gate);
    let Ok(queued) = pushed else {
        return inner.reject(StatusCode::NOT_FOUND, "Not Found: the session has ended");
    };
    if note && let Some(shared) = &session.shared {
        // The client's `notifications/initialized`, handed to the runtime here first
        // (it then has the time the registry takes to take it in: a request of its own
        // right after the 202 finds it operational), is recorded before the POST is
        // answered: a new revision every copy takes in. Until then each copy refuses
        // the client's requests but `ping` (as one service does before the note) and
        // sends nothing but pings and logging; after it, every copy serves the session.
        // Nothing to record on a session whose `initialize` is not answered yet.
        if let Err(e) = shared.record_initialized().await {
            return registry_unavailable(&inner.config, &e);
        }
    }
    // The head of an SSE answer waits until the runtime has handled the POST's
    // messages (or the stream's first event, or its end): a handler that answers at
    // once has then queued its event and ended the stream, and hyper writes head, event
    // and end in one write instead of three, each a wake-up of the client. A handler
    // still running leaves the stream open and the head goes out. Messages the runtime
    // took directly were handled before `push` returned.
    if queued && let Some(Answer::Sse { handled, .. }) = &mut answer {
        let _ = handled.await;
    }
    if let (Some(request), Some(stream)) = (run_request, stream) {
        session.begin_run(stream, request);
    }
    for id in &cancelled {
        session.cancel_request(id);
    }
    let mut response = match answer {
        None => {
            if !session.stateful {
                session.finish_inbound();
            }
            status_only(StatusCode::ACCEPTED)
        }
        Some(Answer::Sse { events, .. }) if stateless_era => {
            era_stream(&session, ids, events.boxed())
        }
        Some(Answer::Sse { events, .. }) => match handshake.take() {
            Some(guard) => sse_response(guarded(events.boxed(), guard)),
            None => sse_response(events),
        },
        Some(Answer::Json(first, rest)) => {
            // One request (the usual POST): its answer is the body, with no list to join.
            let single = first.is_some() && rest.is_empty();
            let mut out = Vec::with_capacity(if single { 0 } else { rest.len() + 1 });
            let mut body = String::new();
            let mut error = None;
            for rx in first.into_iter().chain(rest) {
                match rx.await {
                    Ok((m, code)) if single => (body, error) = (m, code),
                    Ok((m, code)) => {
                        out.push(m);
                        error = code;
                    }
                    Err(_) => {
                        return inner.reject(
                            StatusCode::NOT_FOUND,
                            "Not Found: the session ended before answering",
                        );
                    }
                }
            }
            if !single {
                body = format!("[{}]", out.join(","));
            }
            // The era has no batches: its one answer's error sets the status.
            let status = if stateless_era && single {
                era::status_for(error)
            } else {
                StatusCode::OK
            };
            json_response(status, body)
        }
    };
    if let Some(v) = &session.id_header {
        response
            .headers_mut()
            .insert(era::SESSION_ID_HEADER.clone(), v.clone());
    }
    response
}

/// The answer of the stateless era's request(s) `ids` on `events` (see
/// [`era::response`]): closing the response stream cancels them (protocol 2026-07-28).
fn era_stream(
    session: &Arc<SessionState>,
    ids: &[RequestId],
    events: futures::stream::BoxStream<'static, Bytes>,
) -> Response {
    era::response(events, || {
        let session = session.clone();
        let ids = ids.to_vec();
        Box::new(move || {
            let Ok(runtime) = tokio::runtime::Handle::try_current() else {
                return;
            };
            runtime.spawn(async move {
                let notices = ids.iter().map(era::cancelled).collect();
                let _ = session.push(notices, None, &Extensions::new()).await;
                // A cancelled request gets no answer: its route goes now, so that the
                // session (which serves no other request) ends.
                for id in &ids {
                    session.cancel_request(id);
                }
            });
        })
    })
}
