//! The client's HTTP exchanges: POSTs, SSE reading, reconnection, session loss.

use crate::shared::cancelled_id;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use http::{HeaderMap, Method, StatusCode, header};
use modelctx_transport::{ConnectionState, TransportError, TransportMessage};
use modelctx_types::{
    JsonRpcErrorResponse, JsonRpcMessage, JsonRpcNotification, JsonRpcRequest, RequestId,
};

use super::body::read_capped;
use super::era::{era_headers, learn_param_headers, param_headers};
use super::failure::{
    ANSWERED, BrokenBody, INTERRUPTED, SESSION_GONE, after_send_error, body_reason,
    event_too_large, fail_request, fail_request_with, status_reason,
};
use super::standalone::maybe_start_standalone;
use super::{ClientInner, is_response};
use crate::headers::{LAST_EVENT_ID, MCP_PROTOCOL_VERSION, MCP_SESSION_ID};
use crate::sse::{SseParser, SseTooLarge};

/// How long closing waits for the server to acknowledge the session's DELETE.
const DELETE_TIMEOUT: Duration = Duration::from_secs(5);

pub(super) async fn send(
    inner: Arc<ClientInner>,
    message: TransportMessage,
) -> Result<(), TransportError> {
    if inner.closed.is_cancelled() {
        return Err(TransportError::closed());
    }
    let token = message.resumption_token.clone();
    let name_param = message.name_param;
    // The revision a request of the stateless era names, read once: it picks the path
    // and is the `MCP-Protocol-Version` header of every attempt.
    let era = match &message.message {
        JsonRpcMessage::Request(request) => request.envelope_version(),
        _ => None,
    };
    match (message.message, era) {
        (JsonRpcMessage::Request(request), Some(version)) => {
            // The stateless era (2026-07-28): no session, the headers mirror the body.
            // The state stays locked until the task is registered, so it cannot finish
            // (and forget itself) before it is known.
            let mut st = inner.state();
            st.stateless_era = true;
            st.inflight.insert(request.id.clone(), 0);
            if request.method == "tools/list" {
                st.tool_lists.insert(request.id.clone());
            }
            let task_inner = inner.clone();
            let id = request.id.clone();
            let task = tokio::spawn(async move {
                let id = request.id.clone();
                let outcome = tokio::select! {
                    biased;
                    () = task_inner.closed.cancelled() => Ok(()),
                    r = run_stateless_retrying(&task_inner, request, &version, name_param) => r,
                };
                let broken = {
                    let mut st = task_inner.state();
                    st.stateless_posts.remove(&id);
                    st.broken_bodies.remove(&id)
                };
                if let Err(reason) = outcome {
                    fail_request_with(&task_inner, id, reason, broken).await;
                }
            });
            st.stateless_posts.insert(id, task.abort_handle());
            Ok(())
        }
        (JsonRpcMessage::Request(request), None) => {
            if request.method == "initialize" {
                let mut st = inner.state();
                if !std::mem::take(&mut st.attached) {
                    st.session_id = None;
                }
                st.protocol_version = None;
                st.generation += 1;
                st.expired = false;
                st.tokens.clear();
                st.standalone_started = false;
                st.init_id = Some(request.id.clone());
                st.initialize_status = None;
                st.init_request = Some(request.clone());
            } else if inner.state().expired {
                reinitialize(&inner).await?;
            }
            let retryable = inner.policy.is_idempotent(&request.method);
            let generation = {
                let mut st = inner.state();
                st.replay.sent(&request);
                let g = st.generation;
                st.inflight.insert(request.id.clone(), g);
                if retryable {
                    st.retryable.insert(request.id.clone());
                }
                g
            };
            let task_inner = inner.clone();
            tokio::spawn(async move {
                let id = request.id.clone();
                let outcome = tokio::select! {
                    biased;
                    () = task_inner.closed.cancelled() => Ok(()),
                    r = run_request_retrying(&task_inner, request, token, generation, retryable) => r,
                };
                let broken = {
                    let mut st = task_inner.state();
                    if retryable {
                        st.retryable.remove(&id);
                    }
                    st.broken_bodies.remove(&id)
                };
                match outcome {
                    Ok(()) => maybe_start_standalone(&task_inner),
                    Err(reason) => fail_request_with(&task_inner, id, reason, broken).await,
                }
            });
            Ok(())
        }
        (other, _) => {
            let cancellation = cancelled_id(&other);
            if let Some(id) = cancellation.clone() {
                let post = {
                    let mut st = inner.state();
                    st.inflight.remove(&id);
                    st.tool_lists.remove(&id);
                    st.stateless_posts.remove(&id)
                };
                if let Some(post) = post {
                    // Protocol 2026-07-28 over HTTP: closing the request's stream is the
                    // cancellation; there is nothing to POST.
                    post.abort();
                    return Ok(());
                }
                let st = inner.state();
                if st.stateless_era && st.session_id.is_none() {
                    // No open stream for it: nothing is running to stop, and the era has
                    // no notifications from the client to say so with.
                    return Ok(());
                }
            }
            let initialized = other.method() == Some("notifications/initialized");
            if inner.state().expired && !initialized {
                reinitialize(&inner).await?;
            }
            if cancellation.is_some() {
                // A cancellation goes out on its own: it may have to wait (behind an
                // authorization the auth hook is running, say), and the request it
                // cancels is already given up — its caller (a timeout) must not wait.
                let task_inner = inner.clone();
                tokio::spawn(async move {
                    tokio::select! {
                        biased;
                        () = task_inner.closed.cancelled() => {}
                        _ = post_message(&task_inner, &other) => {}
                    }
                });
                return Ok(());
            }
            post_message(&inner, &other).await?;
            maybe_start_standalone(&inner);
            Ok(())
        }
    }
}

pub(super) async fn close(inner: Arc<ClientInner>) {
    if inner.closed.is_cancelled() {
        return;
    }
    inner.closed.cancel();
    let session = inner.state().session_id.clone();
    if session.is_some() {
        // 405 means the server does not end sessions on request: fine either way. A
        // server that does not answer does not hold the close up for long.
        let delete = request(&inner, Method::DELETE, None, None, None);
        let _ = tokio::time::timeout(DELETE_TIMEOUT, delete).await;
    }
}

/// Sends one HTTP request with the session headers, custom headers and credentials;
/// retries (once, or as often as the hook allows) when the auth hook asks to after a
/// 401/403.
pub(super) async fn request(
    inner: &ClientInner,
    method: Method,
    body: Option<bytes::Bytes>,
    last_event_id: Option<&str>,
    for_request: Option<&RequestId>,
) -> Result<reqwest::Response, TransportError> {
    let mut retries = 0;
    let mut attempt = 0;
    loop {
        let (session, version, generation) = {
            let st = inner.state();
            (
                st.session_id.clone(),
                st.protocol_version.clone(),
                st.generation,
            )
        };
        let mut rb = authenticated(inner, &method).await?;
        let accept = if method == Method::POST {
            "application/json, text/event-stream"
        } else {
            "text/event-stream"
        };
        // The transport's own headers replace any of the same name configured with the
        // builder (`RequestBuilder::headers` replaces, `header` would add a second line:
        // a header of one meaning is never sent twice).
        let mut own = Vec::with_capacity(5);
        if method != Method::DELETE {
            own.push((header::ACCEPT.as_str(), accept));
        }
        if let Some(s) = &session {
            own.push((MCP_SESSION_ID, s.as_str()));
        }
        if let Some(v) = &version {
            own.push((MCP_PROTOCOL_VERSION, v.as_str()));
        }
        if let Some(id) = last_event_id {
            own.push((LAST_EVENT_ID, id));
        }
        if body.is_some() {
            own.push((header::CONTENT_TYPE.as_str(), "application/json"));
        }
        rb = with_headers(rb, own);
        if let Some(b) = &body {
            rb = rb.body(b.clone());
        }
        let response = match rb.send().await {
            Ok(response) => response,
            Err(e) => {
                after_send_error(inner, &e, &mut attempt)
                    .await
                    .map_err(TransportError::other)?;
                continue;
            }
        };
        inner.set_connection(ConnectionState::Connected);
        if auth_retries(inner, &response, &mut retries, for_request).await {
            continue;
        }
        let status = response.status();
        if status == StatusCode::NOT_FOUND && session.is_some() {
            // Only the session this request named is gone (a newer one may exist). A
            // request whose own POST was refused never ran: it is spared, to be sent
            // again in the new session (see `run_request`).
            let spare =
                for_request.filter(|_| method == Method::POST && !inner.close_on_session_end);
            session_lost(inner, generation, spare).await;
            return Err(TransportError::other(format!(
                "{SESSION_GONE}; the next request starts a new one"
            )));
        }
        return Ok(response);
    }
}

/// A request to the endpoint with the configured headers and the auth hook's.
async fn authenticated(
    inner: &ClientInner,
    method: &Method,
) -> Result<reqwest::RequestBuilder, TransportError> {
    let mut rb = inner.http.request(method.clone(), &inner.url);
    rb = rb.headers(inner.headers.clone());
    if let Some(auth) = &inner.auth {
        rb = rb.headers(auth.headers_for(method, &inner.url).await?);
    }
    Ok(rb)
}

/// Whether a refused (401/403) `response` is to be sent again: the auth hook has
/// retries left (`retries` counts them) and says it renewed the credentials.
async fn auth_retries(
    inner: &ClientInner,
    response: &reqwest::Response,
    retries: &mut u32,
    for_request: Option<&RequestId>,
) -> bool {
    let status = response.status();
    if (status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN)
        && let Some(auth) = &inner.auth
        && *retries < auth.max_retries()
        && auth
            .on_rejected_for(
                status.as_u16(),
                response.headers(),
                inner.clock(for_request),
            )
            .await
    {
        *retries += 1;
        return true;
    }
    false
}

/// Sets `headers` on `rb`, each replacing any value of its name already there (the
/// builder's headers), so that none goes out on two lines. A name or value that is no
/// valid header is added as is: the request then fails with reqwest's error.
fn with_headers<'a>(
    mut rb: reqwest::RequestBuilder,
    headers: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> reqwest::RequestBuilder {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        match (
            http::HeaderName::from_bytes(name.as_bytes()),
            http::HeaderValue::from_str(value),
        ) {
            (Ok(name), Ok(value)) => {
                map.insert(name, value);
            }
            _ => rb = rb.header(name, value),
        }
    }
    rb.headers(map)
}

/// [`run_stateless`], sent again while it is interrupted, idempotent and the policy has
/// attempts left: the era has no session to restore, the same request simply goes out
/// again (same id: the session still waits for it).
async fn run_stateless_retrying(
    inner: &ClientInner,
    request: JsonRpcRequest,
    version: &str,
    name_param: Option<&'static str>,
) -> Result<(), String> {
    let mut headers = era_headers(&request, version, name_param);
    if request.method == "tools/call" {
        headers.extend(param_headers(inner, &request));
    }
    let body = bytes::Bytes::from(serde_json::to_vec(&request).map_err(|e| e.to_string())?);
    let retryable = inner.policy.is_idempotent(&request.method);
    let mut resent = 0;
    loop {
        match run_stateless(inner, &request.id, &headers, &body).await {
            Err(reason)
                if retryable
                    && reason.starts_with(INTERRUPTED)
                    && resent < inner.policy.attempts()
                    && inner.state().inflight.contains_key(&request.id) =>
            {
                resent += 1;
                tokio::time::sleep(inner.policy.delay(resent)).await;
            }
            outcome => return outcome,
        }
    }
}

/// One request of the stateless era: its own POST, its answer from the JSON body or
/// the SSE stream — or, for a refusal with an HTTP error status, from the JSON-RPC
/// error in the body.
async fn run_stateless(
    inner: &ClientInner,
    id: &RequestId,
    headers: &[(String, String)],
    body: &bytes::Bytes,
) -> Result<(), String> {
    let mut retries = 0;
    let mut attempt = 0;
    let response = loop {
        let mut rb = authenticated(inner, &Method::POST)
            .await
            .map_err(|e| e.to_string())?;
        let own = [
            (
                header::ACCEPT.as_str(),
                "application/json, text/event-stream",
            ),
            (header::CONTENT_TYPE.as_str(), "application/json"),
        ];
        let era = headers.iter().map(|(n, v)| (n.as_str(), v.as_str()));
        rb = with_headers(rb, own.into_iter().chain(era));
        let response = match rb.body(body.clone()).send().await {
            Ok(response) => response,
            Err(e) => {
                after_send_error(inner, &e, &mut attempt).await?;
                continue;
            }
        };
        inner.set_connection(ConnectionState::Connected);
        if auth_retries(inner, &response, &mut retries, Some(id)).await {
            continue;
        }
        break response;
    };
    let status = response.status();
    if is_sse(&response) && status.is_success() {
        let mut last_id = None;
        let read = read_sse(inner, response, Some(id), None, &mut last_id).await;
        return if read.answered {
            Ok(())
        } else if let Some(too_large) = read.too_large {
            Err(event_too_large(&too_large))
        } else {
            Err(format!(
                "{INTERRUPTED}: the response stream ended before the response (protocol 2026-07-28 streams cannot be resumed){}",
                broke(inner, id, read.broken)
            ))
        };
    }
    let text = read_capped(response, inner.max_body_bytes)
        .await
        .map_err(body_reason)?;
    match JsonRpcMessage::from_slice(&text) {
        Ok(message @ JsonRpcMessage::Response(_)) if status.is_success() => {
            deliver(inner, message, None, None).await;
            Ok(())
        }
        // A refusal (400, 404, ...) carries its JSON-RPC error: that is the answer.
        Ok(JsonRpcMessage::Error(error)) if error.id.is_none() || error.id.as_ref() == Some(id) => {
            deliver(
                inner,
                rewrite_id(JsonRpcMessage::Error(error), id),
                None,
                None,
            )
            .await;
            Ok(())
        }
        _ => Err(format!("{ANSWERED}{status} without a JSON-RPC answer")),
    }
}

/// POSTs a notification or response; the server must accept it (202).
async fn post_message(inner: &ClientInner, message: &JsonRpcMessage) -> Result<(), TransportError> {
    let body = serde_json::to_vec(message).map_err(|e| TransportError::other(e.to_string()))?;
    let response = request(inner, Method::POST, Some(body.into()), None, None).await?;
    let status = response.status();
    if status.is_success() {
        return Ok(());
    }
    Err(TransportError::other(format!(
        "the server refused the message: HTTP {status}"
    )))
}

pub(super) fn is_sse(response: &reqwest::Response) -> bool {
    content_type(response.headers()).eq_ignore_ascii_case("text/event-stream")
}

fn content_type(headers: &HeaderMap) -> &str {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map_or("", str::trim)
}

/// [`run_request`], sent again while it is interrupted, `retryable` (idempotent under
/// the policy) and the policy has attempts left: after the backoff, in a new session
/// when the old one is gone (the saved `initialize` is repeated first), with the same
/// id (the session still waits for it), from the start rather than resumed.
async fn run_request_retrying(
    inner: &Arc<ClientInner>,
    request: JsonRpcRequest,
    mut token: Option<Arc<str>>,
    mut generation: u64,
    retryable: bool,
) -> Result<(), String> {
    let id = request.id.clone();
    let body = match token {
        Some(_) if !retryable => None,
        _ => Some(bytes::Bytes::from(
            serde_json::to_vec(&request).map_err(|e| e.to_string())?,
        )),
    };
    drop(request);
    let mut resent = 0;
    loop {
        let sent = body.as_ref().filter(|_| token.is_none());
        match run_request(inner, &id, sent, token.take(), generation).await {
            Err(reason)
                if retryable
                    && (reason.starts_with(INTERRUPTED) || reason.contains(SESSION_GONE))
                    && resent < inner.policy.attempts()
                    && inner.state().inflight.contains_key(&id) =>
            {
                resent += 1;
                tokio::time::sleep(inner.policy.delay(resent)).await;
                if inner.state().expired {
                    reinitialize(inner).await.map_err(|e| {
                        format!("{INTERRUPTED}; starting a new session failed: {e}")
                    })?;
                }
                generation = {
                    let mut st = inner.state();
                    if !st.inflight.contains_key(&id) {
                        return Ok(());
                    }
                    let current = st.generation;
                    st.inflight.insert(id.clone(), current);
                    current
                };
            }
            outcome => return outcome,
        }
    }
}

/// Sends request `id` (`body`: its JSON) or resumes it from `token`, and delivers its
/// answer.
async fn run_request(
    inner: &Arc<ClientInner>,
    id: &RequestId,
    body: Option<&bytes::Bytes>,
    token: Option<Arc<str>>,
    mut generation: u64,
) -> Result<(), String> {
    let mut last_id = token.as_deref().map(str::to_owned);
    let mut retry = inner.reconnect_delay;
    if let Some(body) = body.filter(|_| token.is_none()) {
        inner.state().posting.insert(id.clone());
        let sent = request_or_reason(inner, Method::POST, Some(body.clone()), None, Some(id)).await;
        inner.state().posting.remove(id);
        let response = match sent {
            // The server no longer knows the session (a restart, say) and refused this
            // request unseen: it goes to a new session, once. Requests that were
            // running when the session went are not sent again (unless idempotent:
            // `run_request_retrying`).
            Err(reason)
                if reason.contains(SESSION_GONE) && inner.state().inflight.contains_key(id) =>
            {
                reinitialize(inner).await.map_err(|e| e.to_string())?;
                generation = {
                    let mut st = inner.state();
                    let current = st.generation;
                    st.inflight.insert(id.clone(), current);
                    current
                };
                request_or_reason(inner, Method::POST, Some(body.clone()), None, Some(id)).await?
            }
            other => other?,
        };
        let status = response.status();
        let init = {
            let mut st = inner.state();
            let init = st.init_id.as_ref() == Some(id);
            if init {
                st.initialize_status = Some(status);
            }
            init
        };
        if !status.is_success() {
            return Err(status_reason(inner, status, response).await);
        }
        if init {
            capture_session_id(inner, response.headers(), generation);
        }
        if content_type(response.headers()).eq_ignore_ascii_case("application/json") {
            let bytes = read_capped(response, inner.max_body_bytes)
                .await
                .map_err(body_reason)?;
            let message = JsonRpcMessage::from_slice(&bytes)
                .map_err(|e| format!("the server sent an invalid response: {e}"))?;
            deliver(inner, message, None, None).await;
            return Ok(());
        }
        if !is_sse(&response) {
            return Err(format!(
                "the server answered a request with HTTP {status} and no content"
            ));
        }
        let read = read_sse(inner, response, Some(id), None, &mut last_id).await;
        if let Some(outcome) = read.settles(&mut retry) {
            return outcome;
        }
        match &last_id {
            // No priming event id: the stream cannot be resumed.
            None => {
                return Err(format!(
                    "{INTERRUPTED}: the response stream ended before the response{}",
                    broke(inner, id, read.broken)
                ));
            }
            Some(token) if !inner.resume_streams => {
                return Err(format!(
                    "{INTERRUPTED}: the response stream broke before the response; resume with token {token}"
                ));
            }
            Some(_) => {}
        }
    }
    // Resume with GET + Last-Event-ID until the response arrives.
    let rewrite = token.is_some().then(|| id.clone());
    let mut failures = 0u32;
    let mut first = token.is_some();
    loop {
        if !first {
            tokio::time::sleep(retry).await;
        }
        first = false;
        {
            let st = inner.state();
            if !st.inflight.contains_key(id) {
                return Ok(());
            }
            if st.generation != generation {
                // The session ended while the request ran (it was failed then, unless
                // it may be sent again).
                return Err(format!("{INTERRUPTED}: {SESSION_GONE}"));
            }
        }
        let response = request_or_reason(inner, Method::GET, None, last_id.as_deref(), None)
            .await
            .map_err(|e| {
                if e.contains(SESSION_GONE) {
                    e
                } else {
                    format!("{INTERRUPTED}: resuming the response stream failed: {e}")
                }
            })?;
        let status = response.status();
        if !status.is_success() || !is_sse(&response) {
            return Err(status_reason(inner, status, response).await);
        }
        let read = read_sse(inner, response, Some(id), rewrite.as_ref(), &mut last_id).await;
        if let Some(outcome) = read.settles(&mut retry) {
            return outcome;
        }
        if read.events == 0 {
            failures += 1;
            if failures > inner.max_reconnects {
                return Err(format!(
                    "{INTERRUPTED}: the response stream could not be resumed"
                ));
            }
        } else {
            failures = 0;
        }
    }
}

async fn request_or_reason(
    inner: &ClientInner,
    method: Method,
    body: Option<bytes::Bytes>,
    last_event_id: Option<&str>,
    for_request: Option<&RequestId>,
) -> Result<reqwest::Response, String> {
    request(inner, method, body, last_event_id, for_request)
        .await
        .map_err(|e| e.to_string())
}

fn capture_session_id(inner: &ClientInner, headers: &HeaderMap, generation: u64) {
    let id = headers
        .get(MCP_SESSION_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.bytes().all(|b| (0x21..=0x7e).contains(&b)));
    let mut st = inner.state();
    if st.generation == generation
        && let Some(id) = id
    {
        st.session_id = Some(id.to_owned());
    }
}

/// What broke the response body of request `id` (if something did), kept for the
/// error that fails the request; the words to add to its reason.
fn broke(inner: &ClientInner, id: &RequestId, broken: Option<BrokenBody>) -> String {
    let Some(broken) = broken else {
        return String::new();
    };
    let words = format!(": {}", broken.message);
    inner.state().broken_bodies.insert(id.clone(), broken);
    words
}

pub(super) struct Read {
    pub(super) answered: bool,
    /// The error that broke the body, if one did (not its orderly end).
    pub(super) broken: Option<BrokenBody>,
    pub(super) events: usize,
    pub(super) retry: Option<Duration>,
    /// The stream ended because an event went over the cap.
    pub(super) too_large: Option<SseTooLarge>,
}

impl Read {
    /// The outcome of a request whose stream this read was, when the read settled it
    /// (answered, or broken by an event over the cap); otherwise `None`, with `retry`
    /// set to the interval the server asked for, if it did.
    fn settles(&self, retry: &mut Duration) -> Option<Result<(), String>> {
        if self.answered {
            return Some(Ok(()));
        }
        if let Some(too_large) = &self.too_large {
            return Some(Err(event_too_large(too_large)));
        }
        if let Some(r) = self.retry {
            *retry = r;
        }
        None
    }
}

/// Reads an SSE body, delivering its messages, until it ends or `want`'s response
/// arrived. `rewrite`: responses on this stream answer that (resumed) request.
pub(super) async fn read_sse(
    inner: &ClientInner,
    response: reqwest::Response,
    want: Option<&RequestId>,
    rewrite: Option<&RequestId>,
    last_id: &mut Option<String>,
) -> Read {
    let mut read = Read {
        answered: false,
        broken: None,
        events: 0,
        retry: None,
        too_large: None,
    };
    let mut parser = SseParser::new(inner.max_event_bytes);
    let mut body = response.bytes_stream();
    while let Some(chunk) = body.next().await {
        let chunk = match chunk {
            Ok(chunk) => chunk,
            Err(error) => {
                read.broken = Some(BrokenBody::of(&error));
                break;
            }
        };
        let events = match parser.push(&chunk) {
            Ok(events) => events,
            Err(too_large) => {
                read.too_large = Some(too_large);
                break;
            }
        };
        for event in events {
            read.events += 1;
            if let Some(r) = event.retry {
                read.retry = Some(r);
            }
            if let Some(id) = &event.id {
                *last_id = Some(id.clone());
                if let Some(want) = want {
                    inner
                        .state()
                        .tokens
                        .insert(want.clone(), Arc::from(id.as_str()));
                }
            }
            if event.data.trim().is_empty() {
                continue;
            }
            let mut message = match JsonRpcMessage::from_slice(event.data.as_bytes()) {
                Ok(message) => message,
                // A response that cannot be read fails the call it answers at once: the
                // stream may stay open, and its end may never come before the timeout.
                Err(invalid) if invalid.is_response() => {
                    if let Some(id) = rewrite.or(invalid.id.as_ref()) {
                        let reason = format!(
                            "the server sent an invalid response: {}",
                            invalid.error.message
                        );
                        fail_request(inner, id.clone(), reason).await;
                        if want == Some(id) {
                            read.answered = true;
                            return read;
                        }
                    }
                    continue;
                }
                Err(_) => continue,
            };
            if let Some(target) = rewrite {
                message = rewrite_id(message, target);
            }
            let answers_want = is_response(&message) && message.id() == want && want.is_some();
            let token = event.id.as_deref().map(Arc::from);
            deliver(inner, message, token, want).await;
            if answers_want {
                read.answered = true;
                return read;
            }
        }
    }
    read
}

fn rewrite_id(message: JsonRpcMessage, id: &RequestId) -> JsonRpcMessage {
    match message {
        JsonRpcMessage::Response(mut r) => {
            r.id = id.clone();
            JsonRpcMessage::Response(r)
        }
        JsonRpcMessage::Error(mut e) => {
            e.id = Some(id.clone());
            JsonRpcMessage::Error(e)
        }
        other => other,
    }
}

/// Hands one inbound message to the session, noting what passes (initialize result,
/// answered requests).
async fn deliver(
    inner: &ClientInner,
    message: JsonRpcMessage,
    token: Option<Arc<str>>,
    stream_of: Option<&RequestId>,
) {
    if let (JsonRpcMessage::Response(r), true) = (&message, is_response(&message))
        && inner.state().tool_lists.remove(&r.id)
    {
        learn_param_headers(inner, &r.result);
    }
    if let (true, Some(id)) = (is_response(&message), message.id()) {
        let mut st = inner.state();
        st.replay.received(&message);
        st.inflight.remove(id);
        if stream_of == Some(id) {
            st.tokens.remove(id);
        }
        if st.init_id.as_ref() == Some(id)
            && let JsonRpcMessage::Response(r) = &message
        {
            #[derive(serde::Deserialize)]
            #[serde(rename_all = "camelCase")]
            struct Init {
                protocol_version: String,
            }
            if let Ok(i) = serde_json::from_str::<Init>(r.result.get())
                && modelctx_types::ProtocolVersion::new(i.protocol_version.clone()).is_handshake()
            {
                st.protocol_version = Some(i.protocol_version);
            }
        }
    }
    let _ = inner
        .tx
        .send(TransportMessage::new(message).with_resumption_token(token))
        .await;
}

/// The server answered 404 to session `generation`: its in-flight requests fail (but
/// `spare`, which the server refused before running it, and those whose own POST has not
/// been answered yet: that answer tells), and the next request starts a new session.
async fn session_lost(inner: &ClientInner, generation: u64, spare: Option<&RequestId>) {
    let dead: Vec<RequestId> = {
        let mut st = inner.state();
        if st.generation != generation || st.expired {
            return;
        }
        if inner.close_on_session_end {
            st.session_id = None;
            st.generation += 1;
            drop(st);
            inner.closed.cancel();
            return;
        }
        st.session_id = None;
        st.expired = true;
        st.standalone_started = false;
        st.generation += 1;
        st.tokens.clear();
        // Requests the policy may send again stay: their tasks do it.
        let dead: Vec<RequestId> = st
            .inflight
            .iter()
            .filter(|(id, g)| {
                **g == generation
                    && Some(*id) != spare
                    && !st.retryable.contains(*id)
                    && !st.posting.contains(*id)
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in &dead {
            st.inflight.remove(id);
        }
        dead
    };
    for id in dead {
        let error = modelctx_transport::interrupted(format!(
            "{INTERRUPTED}: the server ended the session (HTTP 404) before answering"
        ));
        let message = JsonRpcMessage::Error(JsonRpcErrorResponse::new(Some(id), error));
        let _ = inner.tx.send(TransportMessage::new(message)).await;
    }
}

/// Starts a new session by repeating the initialize handshake this transport saw.
pub(super) async fn reinitialize(inner: &Arc<ClientInner>) -> Result<(), TransportError> {
    let _guard = inner.reinit.lock().await;
    let (init, generation) = {
        let mut st = inner.state();
        if !st.expired {
            return Ok(());
        }
        let Some(init) = st.init_request.clone() else {
            return Err(TransportError::other(
                "the session ended and there is no initialize to start a new one",
            ));
        };
        st.session_id = None;
        st.protocol_version = None;
        (init, st.generation)
    };
    let body = serde_json::to_vec(&JsonRpcMessage::Request(init))
        .map_err(|e| TransportError::other(e.to_string()))?;
    let response = request(inner, Method::POST, Some(body.into()), None, None).await?;
    if !response.status().is_success() {
        return Err(TransportError::other(format!(
            "starting a new session failed: HTTP {}",
            response.status()
        )));
    }
    capture_session_id(inner, response.headers(), generation);
    let mut version = None;
    let result = if is_sse(&response) {
        let mut parser = SseParser::new(inner.max_event_bytes);
        let mut body = response.bytes_stream();
        let mut found = None;
        'outer: while let Some(Ok(chunk)) = body.next().await {
            let Ok(events) = parser.push(&chunk) else {
                break;
            };
            for e in events {
                if let Ok(m) = JsonRpcMessage::from_slice(e.data.as_bytes())
                    && is_response(&m)
                {
                    found = Some(m);
                    break 'outer;
                }
            }
        }
        found
    } else {
        read_capped(response, inner.max_body_bytes)
            .await
            .ok()
            .and_then(|b| JsonRpcMessage::from_slice(&b).ok())
    };
    if let Some(JsonRpcMessage::Response(r)) = result {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Init {
            protocol_version: String,
        }
        version = serde_json::from_str::<Init>(r.result.get())
            .ok()
            .map(|i| i.protocol_version);
    }
    let Some(version) = version else {
        return Err(TransportError::other(
            "starting a new session failed: no initialize result",
        ));
    };
    {
        let mut st = inner.state();
        st.protocol_version = Some(version);
        st.expired = false;
    }
    let initialized =
        JsonRpcMessage::Notification(JsonRpcNotification::new("notifications/initialized", None));
    post_message(inner, &initialized).await?;
    // The new session gets the log level and the resource subscriptions of the old.
    let again = inner
        .state()
        .replay
        .replay(|n| RequestId::String(Arc::from(format!("modelctx-replay-{generation}-{n}"))));
    for replayed in again {
        let body =
            serde_json::to_vec(&replayed).map_err(|e| TransportError::other(e.to_string()))?;
        let response = request(inner, Method::POST, Some(body.into()), None, None).await?;
        // The answer (JSON, or an SSE stream that ends with it) is not the session's:
        // read to its end (under the cap) so the connection can serve again.
        let _ = read_capped(response, inner.max_body_bytes).await;
    }
    maybe_start_standalone(inner);
    Ok(())
}
