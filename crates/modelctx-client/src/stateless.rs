//! The client in protocol 2026-07-28, the stateless era: no handshake, an envelope in
//! every request's `_meta`, and multi round-trip requests — a `tools/call`,
//! `prompts/get` or `resources/read` the server answers with an `InputRequiredResult`
//! is retried (a new request) with the answers to its input requests, which the same
//! callbacks give as to requests from a server in a session.
//!
//! Every request carries the envelope (capabilities, info, the log level
//! `set_logging_level` chose) in `_meta`, and `ping` becomes `server/discover`. A caller's
//! own `_meta` keeps its keys (and its own `logLevel`), but the envelope's
//! `protocolVersion`, `clientCapabilities` and `clientInfo` are the client's to state and
//! win.
//!
//! - Rounds: `request_with` loops over `InputRequiredResult`s of `tools/call`,
//!   `prompts/get` and `resources/read`: each input request goes to the handler a server's
//!   request would (`RequestContext::unstable_detached`), and the request is sent again
//!   (new id) with `inputResponses` and the echoed `requestState`, at most 16 rounds.
//!   `Client::request_round` sends one attempt and returns the answer as it came, for a
//!   caller that answers input itself. An `input_required` answer to any other method
//!   is an invalid result, never decoded as that method's result.
//! - Mirrored headers: a `tools/list` answer loses every tool whose `x-mcp-header`
//!   annotations break the rules (an empty or non-token name, not on a string, integer or
//!   boolean, reachable other than through `properties`, a name twice) before anything sees
//!   it, each with a `tracing` warning; a `tools/call` refused with `-32020` lists the tools again straight through the
//!   session (so the HTTP transport learns the current mirrored parameters) and is sent
//!   once more.
//! - Caching hints: a complete answer of a list method or `resources/read` with `ttlMs` > 0
//!   is kept (`Cache`, keyed by method and params without `_meta` — each page of a list by
//!   its cursor — on tokio's clock unless `unstable_cache_clock` gives another) and served
//!   again until it expires, looked at only when asked for; a list-changed or
//!   resource-updated notification drops the stale entries before anything else sees it;
//!   a list's cursor refused with `-32602` drops every page of that list; answers to
//!   retries (with input or state) are never kept; `unstable_clear_cache` bypasses it.
//! - Result types: every answer goes through `resolve_claim` first. Absent, `complete` and
//!   `input_required` are core; a type an extension claims, on `tools/call`, goes to its
//!   resolver (see `extensions`); anything else is `SessionError::invalid_result`.
//! - Tasks: `ClientBuilder::tasks` registers `tasks_extension()`, a client extension
//!   claiming `resultType: "task"` whose resolver follows the task to its end
//!   (`follow_task`: `tasks/get` at `pollIntervalMs`, input requests answered once per key
//!   by the callbacks through `tasks/update`, the inlined result decoded as the call's
//!   result; a `CancelOnDrop` guard sends `tasks/cancel` when the caller stops waiting). A
//!   task answer to another method than `tools/call`, or to a client that did not declare
//!   the extension, is an error.

use std::borrow::Cow;
use std::collections::HashMap;

use modelctx_session::{Peer, RequestContext, RequestOptions, SessionError};
use modelctx_types::ext_tasks;
use modelctx_types::{
    CallToolResult, ClientCapabilities, DiscoverRequest, DiscoverResult, ErrorData, Implementation,
    InitializeResult, InputRequiredResult, Meta, ProtocolVersion, RawValue, RequestId,
    RequestMethod, RequestParams, to_raw,
};
use serde_json::{Map, Value};

use crate::{Claimed, Client, ClientExtension, Round};

/// The methods a server may answer with an `InputRequiredResult`.
const ROUND_TRIP_METHODS: [&str; 3] = ["tools/call", "prompts/get", "resources/read"];

/// The methods whose complete answers carry caching hints (`ttlMs`, `cacheScope`).
const CACHEABLE: [&str; 5] = [
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
];

/// What the cache reads the time from.
pub(crate) type Clock = std::sync::Arc<dyn Fn() -> std::time::Instant + Send + Sync>;

/// Fresh answers of cacheable requests, by method and params (without `_meta`): served
/// again until their `ttlMs` runs out or a change notification drops them. Freshness
/// is looked at only when an answer is asked for: nothing is fetched in the background.
pub(crate) struct Cache {
    entries: std::sync::Mutex<HashMap<String, (std::time::Instant, Value)>>,
    clock: Clock,
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache").finish_non_exhaustive()
    }
}

impl Default for Cache {
    fn default() -> Self {
        Self::new(None)
    }
}

impl Cache {
    /// A cache on `clock`, or on tokio's (which tests may pause) when none is given.
    pub(crate) fn new(clock: Option<Clock>) -> Self {
        let clock =
            clock.unwrap_or_else(|| std::sync::Arc::new(|| tokio::time::Instant::now().into_std()));
        Self {
            entries: Default::default(),
            clock,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (std::time::Instant, Value)>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn key(method: &str, params: &Map<String, Value>) -> String {
        let mut params = params.clone();
        params.remove("_meta");
        format!("{method}\u{0}{}", Value::Object(params))
    }

    fn get(&self, key: &str) -> Option<Value> {
        let mut cache = self.lock();
        match cache.get(key) {
            Some((expires, value)) if (self.clock)() < *expires => Some(value.clone()),
            Some(_) => {
                cache.remove(key);
                None
            }
            None => None,
        }
    }

    fn put(&self, key: String, value: &Value) {
        let ttl = value.get("ttlMs").and_then(Value::as_u64).unwrap_or(0);
        if ttl == 0 || value.get("resultType").and_then(Value::as_str) != Some("complete") {
            return;
        }
        let expires = (self.clock)() + std::time::Duration::from_millis(ttl);
        self.lock().insert(key, (expires, value.clone()));
    }

    /// Drops what a change notification makes stale: a list, or one resource's reads.
    pub(crate) fn invalidate(&self, method: &str, params: Option<&RawValue>) {
        let stale: &[&str] = match method {
            "notifications/tools/list_changed" => &["tools/list"],
            "notifications/prompts/list_changed" => &["prompts/list"],
            "notifications/resources/list_changed" => {
                &["resources/list", "resources/templates/list"]
            }
            "notifications/resources/updated" => {
                let uri = params
                    .and_then(|p| serde_json::from_str::<Value>(p.get()).ok())
                    .and_then(|p| p.get("uri").and_then(Value::as_str).map(str::to_owned));
                let mut cache = self.lock();
                match uri {
                    Some(uri) => cache.retain(|key, _| {
                        !(key.starts_with("resources/read\u{0}") && key.contains(&uri))
                    }),
                    None => cache.retain(|key, _| !key.starts_with("resources/read\u{0}")),
                }
                return;
            }
            _ => return,
        };
        self.lock().retain(|key, _| {
            !stale
                .iter()
                .any(|m| key.starts_with(m) && key[m.len()..].starts_with('\u{0}'))
        });
    }

    /// Drops every answer of `method` (each page of a list).
    fn forget(&self, method: &str) {
        self.lock().retain(|key, _| {
            !(key.starts_with(method) && key[method.len()..].starts_with('\u{0}'))
        });
    }

    /// Drops everything.
    pub(crate) fn clear(&self) {
        self.lock().clear();
    }
}

/// How many rounds of input a request may take before the client gives up.
const MAX_ROUNDS: usize = 16;

/// The `_meta` envelope of every request: protocol version, capabilities, identity.
pub(crate) fn envelope(capabilities: &ClientCapabilities, info: &Implementation) -> Meta {
    let mut meta = Meta::new();
    meta.set_protocol_version(ProtocolVersion::V2026_07_28.as_str());
    let mut capabilities = capabilities.clone();
    // The era's tasks are the extension's (declared among the extensions, with its
    // claim of `resultType: "task"`): the 2025 capability has no place here.
    capabilities.tasks = None;
    meta.set_client_capabilities(&capabilities);
    meta.set_client_info(info);
    meta
}

/// `options` with the envelope added to its `_meta`. The caller's own keys survive,
/// and a caller's log level wins over the client's; the version, capabilities and
/// client info are the client's to state and win over a caller's value.
pub(crate) fn with_envelope(mut options: RequestOptions, envelope: &Meta) -> RequestOptions {
    const STATED: [&str; 3] = [
        Meta::PROTOCOL_VERSION,
        Meta::CLIENT_CAPABILITIES,
        Meta::CLIENT_INFO,
    ];
    let mut meta = envelope.clone();
    if let Some(own) = options.meta.take() {
        for (key, value) in own.into_map() {
            if !STATED.contains(&key.as_str()) {
                meta.insert(key, value);
            }
        }
    }
    options.meta = Some(meta);
    options
}

/// Asks the server which eras it speaks (`server/discover`), once more on a `-32022`
/// that lists 2026-07-28.
pub(crate) async fn discover(
    peer: &Peer,
    envelope: &Meta,
    timeout: Option<std::time::Duration>,
) -> Result<DiscoverResult, SessionError> {
    let version = ProtocolVersion::V2026_07_28;
    let params = RequestParams::new().with_meta(envelope.clone());
    let ask = |params: RequestParams| {
        let mut options = RequestOptions::default();
        options.timeout = timeout;
        peer.start_request::<DiscoverRequest>(Some(params), options)
    };
    match ask(params.clone()).await {
        Ok(found) => Ok(found),
        // An unsupported-version refusal that lists our version: ask once more.
        Err(e) if offers(&e, version.as_str()) => ask(params).await,
        Err(e) => Err(e),
    }
}

/// What a handshake would have said, from a `server/discover` answer that offers
/// 2026-07-28 (an error when it does not).
pub(crate) fn negotiated(found: &DiscoverResult) -> Result<InitializeResult, SessionError> {
    let version = ProtocolVersion::V2026_07_28;
    if !found
        .supported_versions
        .iter()
        .any(|v| v == version.as_str())
    {
        return Err(SessionError::refused(format!(
            "the server offers protocol versions {:?}, not {}",
            found.supported_versions,
            version.as_str()
        )));
    }
    let info = found
        .meta
        .as_ref()
        .and_then(Meta::server_info)
        .unwrap_or_else(|| Implementation::new("unknown", "unknown"));
    let mut init = InitializeResult::new(version, found.capabilities.clone(), info);
    init.instructions = found.instructions.clone();
    Ok(init)
}

/// `server/discover` again after a `-32022` on a request of the era: `Ok` when the
/// server still offers 2026-07-28, else an error that says what it offers now.
async fn reprobe(client: &Client, envelope: &Meta) -> Result<(), SessionError> {
    let version = ProtocolVersion::V2026_07_28;
    let found = discover(client.peer(), envelope, None).await.map_err(|e| {
        SessionError::refused(format!(
            "the server refused protocol {version} (-32022), and server/discover, sent again, failed: {e}"
        ))
    })?;
    if found
        .supported_versions
        .iter()
        .any(|v| v == version.as_str())
    {
        return Ok(());
    }
    Err(SessionError::refused(format!(
        "the server no longer serves protocol {version}: server/discover now offers {}; connect again to settle another era",
        found.supported_versions.join(", ")
    )))
}

/// Whether `error` is a `-32022` whose `data.supported` lists `version`.
fn offers(error: &SessionError, version: &str) -> bool {
    error.protocol_error().is_some_and(|e| {
        e.code == modelctx_types::ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
            && e.data
                .as_ref()
                .and_then(|d| d.get("supported"))
                .and_then(Value::as_array)
                .is_some_and(|s| s.iter().any(|v| v == version))
    })
}

/// A request of the era: the envelope on each attempt, and the server's input
/// requests answered until it completes.
pub(crate) async fn request<M: RequestMethod>(
    client: &Client,
    params: M::Params,
    options: RequestOptions,
) -> Result<M::Result, SessionError> {
    match run::<M>(client, params, options, true).await? {
        Round::Complete(result) => Ok(result),
        Round::InputRequired(_) => Err(SessionError::refused(
            "the server asked for input the client did not answer",
        )),
    }
}

/// One round of a request of the era: the answer as it came, input requests included.
pub(crate) async fn round<M: RequestMethod>(
    client: &Client,
    params: M::Params,
    options: RequestOptions,
) -> Result<Round<M::Result>, SessionError> {
    run::<M>(client, params, options, false).await
}

/// Sends a request of the era; with `answer_inputs_here`, answers the server's input requests with
/// the client's callbacks until it completes, else returns the first answer as is.
async fn run<M: RequestMethod>(
    client: &Client,
    params: M::Params,
    options: RequestOptions,
    answer_inputs_here: bool,
) -> Result<Round<M::Result>, SessionError> {
    let envelope = client.envelope().unwrap_or_default();
    let mut params = match serde_json::to_value(&params) {
        Ok(Value::Object(map)) => map,
        Ok(Value::Null) => Map::new(),
        Ok(other) => {
            return Err(SessionError::refused(format!(
                "{} params must be an object, got {other}",
                M::METHOD
            )));
        }
        Err(e) => return Err(SessionError::refused(format!("cannot encode params: {e}"))),
    };
    let cache_key = CACHEABLE
        .contains(&M::METHOD)
        .then(|| Cache::key(M::METHOD, &params));
    if let Some(fresh) = cache_key.as_deref().and_then(|k| client.inner.cache.get(k)) {
        return serde_json::from_value::<M::Result>(fresh)
            .map(Round::Complete)
            .map_err(|e| {
                SessionError::refused(format!(
                    "the cached {} answer does not decode: {e}",
                    M::METHOD
                ))
            });
    }
    let mut options = Some(options);
    let mut relisted = false;
    let mut reprobed = false;
    let mut round = 0;
    while round <= MAX_ROUNDS {
        // The caller's options (progress, timeout) go with the first attempt; retries
        // carry the envelope and the caller's `_meta`.
        let mut attempt = options.take().unwrap_or_default();
        if attempt.name_param.is_none() {
            attempt.name_param = M::NAME_PARAM;
        }
        let attempt = with_envelope(attempt, &envelope);
        let raw = to_raw(&params).map_err(|e| SessionError::refused(e.to_string()))?;
        let answer = match client
            .peer()
            .start_raw(Cow::Borrowed(M::METHOD), Some(raw), attempt)
            .await
        {
            Ok(answer) => answer,
            // The tool's headers changed under us (a mirrored parameter was added):
            // list the tools again, which teaches the transport the new headers, and
            // send the call once more.
            Err(e)
                if M::METHOD == "tools/call"
                    && !relisted
                    && e.protocol_error()
                        .is_some_and(|e| e.code == modelctx_types::ErrorCode::HEADER_MISMATCH) =>
            {
                relisted = true;
                client
                    .inner
                    .cache
                    .invalidate("notifications/tools/list_changed", None);
                relist_tools(client, &envelope).await?;
                continue;
            }
            // The era this connection assumed (a kept discover answer, a pinned
            // revision, or what it learnt at connect) no longer holds: ask the server
            // what it speaks now, and send the request once more when it still
            // offers the era.
            Err(e)
                if M::METHOD != "server/discover"
                    && !reprobed
                    && e.protocol_error().is_some_and(|e| {
                        e.code == modelctx_types::ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
                    }) =>
            {
                reprobed = true;
                reprobe(client, &envelope).await?;
                continue;
            }
            Err(e) => {
                // A cursor the server no longer takes: the pages kept are of a list that
                // is gone, so none is served again (the next access starts over).
                if M::METHOD != "resources/read"
                    && cache_key.is_some()
                    && params.contains_key("cursor")
                    && e.protocol_error()
                        .is_some_and(|e| e.code == modelctx_types::ErrorCode::INVALID_PARAMS)
                {
                    client.inner.cache.forget(M::METHOD);
                }
                return Err(e);
            }
        };
        round += 1;
        let value: Value = serde_json::from_str(answer.get())
            .map_err(|e| SessionError::refused(format!("the answer is not JSON: {e}")))?;
        let value = resolve_claim::<M>(client, value).await?;
        let input_required =
            value.get("resultType").and_then(Value::as_str) == Some("input_required");
        if input_required && !ROUND_TRIP_METHODS.contains(&M::METHOD) {
            // Only the round-trip methods may ask for input: decoded as the method's
            // result, such an answer could pass for an empty success.
            return Err(SessionError::invalid_result(format!(
                "the {} answer asks for input (resultType \"input_required\"), which only \
                 tools/call, prompts/get and resources/read may",
                M::METHOD
            )));
        }
        if !input_required {
            let mut value = value;
            if M::METHOD == "tools/list" {
                drop_tools_with_bad_headers(&mut value);
            }
            // A retry's answer depends on its answers and state: never cached.
            let retry =
                params.contains_key("inputResponses") || params.contains_key("requestState");
            if let Some(key) = cache_key.filter(|_| !retry) {
                client.inner.cache.put(key, &value);
            }
            return serde_json::from_value::<M::Result>(value)
                .map(Round::Complete)
                .map_err(|e| {
                    SessionError::refused(format!("the {} answer does not decode: {e}", M::METHOD))
                });
        }
        if !answer_inputs_here {
            return serde_json::from_value::<InputRequiredResult>(value)
                .map(Round::InputRequired)
                .map_err(|e| {
                    SessionError::refused(format!("the input-required answer does not decode: {e}"))
                });
        }
        // Answers only to questions asked: a state-only round is retried with the state
        // alone.
        match value.get("inputRequests").filter(|r| !r.is_null()) {
            Some(requests) => {
                let responses = answer_inputs(client, Some(requests)).await?;
                params.insert("inputResponses".to_owned(), Value::Object(responses));
            }
            None => {
                params.remove("inputResponses");
            }
        }
        match value.get("requestState") {
            Some(state) => params.insert("requestState".to_owned(), state.clone()),
            None => params.remove("requestState"),
        };
    }
    Err(SessionError::refused(format!(
        "the server asked for input more than {MAX_ROUNDS} times for one {}",
        M::METHOD
    )))
}

/// Checks an answer's `resultType` against the types this client supports — the core
/// ones (`complete`, absent meaning the same, and `input_required`) and those its
/// declared extensions claim — and finishes a claimed `tools/call` answer with its
/// extension's resolver. Any other type is an invalid result (SEP-2322: a `resultType`
/// the client does not recognise is invalid), as is a claimed type on another method.
async fn resolve_claim<M: RequestMethod>(
    client: &Client,
    value: Value,
) -> Result<Value, SessionError> {
    let claimed = match value.get("resultType") {
        None => return Ok(value),
        Some(Value::String(kind)) if kind == "complete" || kind == "input_required" => {
            return Ok(value);
        }
        Some(Value::String(kind)) => kind.clone(),
        Some(other) => {
            return Err(SessionError::invalid_result(format!(
                "the {} answer's resultType is not a string: {other}",
                M::METHOD
            )));
        }
    };
    let Some((resolver, settings)) = client.inner.claims.get(&claimed) else {
        return Err(SessionError::invalid_result(format!(
            "the {} answer has resultType {claimed:?}, which is neither core nor claimed by \
             an extension this client declared",
            M::METHOD
        )));
    };
    if M::METHOD != "tools/call" {
        return Err(SessionError::invalid_result(format!(
            "the {} answer has resultType {claimed:?}, claimed for tools/call only",
            M::METHOD
        )));
    }
    let resolved = resolver(Claimed {
        result_type: claimed,
        result: value,
        settings,
        client: client.clone(),
    })
    .await?;
    serde_json::to_value(resolved)
        .map_err(|e| SessionError::invalid_result(format!("the resolved result: {e}")))
}

/// The tasks extension (SEP-2663) as the client takes part in it in 2026-07-28: it
/// claims `resultType: "task"` on `tools/call`, and follows such a task to its end.
pub(crate) fn tasks_extension() -> ClientExtension {
    ClientExtension::new(ext_tasks::EXTENSION_ID).claim("task", |claimed: Claimed| async move {
        let client = claimed.client;
        let envelope = client.envelope().unwrap_or_default();
        let result = follow_task(&client, &envelope, &claimed.result).await?;
        serde_json::from_value::<CallToolResult>(result)
            .map_err(|e| SessionError::invalid_result(format!("the task's tools/call result: {e}")))
    })
}

/// Sends `tasks/cancel` for a task whose caller stopped waiting, unless it ended.
struct CancelOnDrop {
    peer: modelctx_session::Peer,
    envelope: Meta,
    task_id: Option<String>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(task_id) = self.task_id.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (peer, envelope) = (self.peer.clone(), self.envelope.clone());
        runtime.spawn(async move {
            let params = serde_json::json!({ "taskId": task_id });
            if let Ok(raw) = to_raw(&params) {
                let options = with_envelope(RequestOptions::default(), &envelope);
                // Best effort: the caller is gone, nobody waits for the answer.
                let _ = peer
                    .start_raw(Cow::Borrowed("tasks/cancel"), Some(raw), options)
                    .await;
            }
        });
    }
}

/// Follows a task of the tasks extension to its end: polls `tasks/get` at the interval
/// the server suggests, answers its input requests (each key once) with the client's
/// callbacks through `tasks/update`, and returns the result it inlines once
/// `completed` (or the error once `failed`). Dropping the call cancels the task.
async fn follow_task(
    client: &Client,
    envelope: &Meta,
    created: &Value,
) -> Result<Value, SessionError> {
    let Some(task_id) = created.get("taskId").and_then(Value::as_str) else {
        return Err(SessionError::refused("the server's task has no taskId"));
    };
    let interval = |task: &Value, fallback: u64| {
        let ms = task
            .get("pollIntervalMs")
            .and_then(Value::as_u64)
            .unwrap_or(fallback);
        ms.clamp(10, 30_000)
    };
    let mut wait = interval(created, 1000);
    let mut guard = CancelOnDrop {
        peer: client.peer().clone(),
        envelope: envelope.clone(),
        task_id: Some(task_id.to_owned()),
    };
    let mut answered = std::collections::HashSet::new();
    let send = |method: &'static str, params: Value| {
        let options = with_envelope(RequestOptions::default(), envelope);
        async move {
            let raw = to_raw(&params).map_err(|e| SessionError::refused(e.to_string()))?;
            let answer = client
                .peer()
                .start_raw(Cow::Borrowed(method), Some(raw), options)
                .await?;
            serde_json::from_str::<Value>(answer.get())
                .map_err(|e| SessionError::refused(format!("the {method} answer is not JSON: {e}")))
        }
    };
    loop {
        let task = send("tasks/get", serde_json::json!({ "taskId": task_id })).await?;
        match task.get("status").and_then(Value::as_str) {
            Some("completed") => {
                guard.task_id = None;
                return task
                    .get("result")
                    .cloned()
                    .ok_or_else(|| SessionError::refused("the completed task carries no result"));
            }
            Some("failed") => {
                guard.task_id = None;
                let error = task
                    .get("error")
                    .cloned()
                    .and_then(|e| serde_json::from_value::<ErrorData>(e).ok())
                    .unwrap_or_else(|| ErrorData::internal_error("the task failed"));
                return Err(SessionError::from_peer_error(error));
            }
            Some("cancelled") => {
                guard.task_id = None;
                return Err(SessionError::from_peer_error(ErrorData::internal_error(
                    "the task was cancelled",
                )));
            }
            Some("input_required") => {
                let mut fresh = Map::new();
                if let Some(Value::Object(requests)) = task.get("inputRequests") {
                    for (key, request) in requests {
                        if !answered.contains(key) {
                            fresh.insert(key.clone(), request.clone());
                        }
                    }
                }
                if !fresh.is_empty() {
                    let responses = answer_inputs(client, Some(&Value::Object(fresh))).await?;
                    answered.extend(responses.keys().cloned());
                    let update = serde_json::json!({
                        "taskId": task_id,
                        "inputResponses": responses,
                    });
                    send("tasks/update", update).await?;
                    continue;
                }
            }
            _ => {}
        }
        wait = interval(&task, wait);
        tokio::time::sleep(std::time::Duration::from_millis(wait)).await;
    }
}

/// Lists the tools again, page by page, straight through the session (the transport
/// learns their mirrored parameters from the answers on the way).
async fn relist_tools(client: &Client, envelope: &Meta) -> Result<(), SessionError> {
    let mut cursor: Option<Value> = None;
    for _page in 0..100 {
        let mut params = Map::new();
        if let Some(cursor) = cursor.take() {
            params.insert("cursor".to_owned(), cursor);
        }
        let raw = to_raw(&params).map_err(|e| SessionError::refused(e.to_string()))?;
        let options = with_envelope(RequestOptions::default(), envelope);
        let page = client
            .peer()
            .start_raw(Cow::Borrowed("tools/list"), Some(raw), options)
            .await?;
        let page: Value = serde_json::from_str(page.get()).map_err(|e| {
            SessionError::refused(format!("the tools/list answer is not JSON: {e}"))
        })?;
        match page.get("nextCursor") {
            Some(next) if !next.is_null() => cursor = Some(next.clone()),
            _ => return Ok(()),
        }
    }
    Ok(())
}

/// Leaves out of a `tools/list` answer every tool whose `x-mcp-header` annotations
/// break the spec's rules (a client must not use such a tool over HTTP, and a single
/// bad definition must not cost the others), with a warning (target `modelctx_client`)
/// naming the tool and what is wrong.
fn drop_tools_with_bad_headers(result: &mut Value) {
    if let Some(Value::Array(tools)) = result.get_mut("tools") {
        tools.retain(|tool| {
            let Some(schema) = tool.get("inputSchema") else {
                return true;
            };
            let Err(reason) = modelctx_types::mirror::check_mirrored_params(schema) else {
                return true;
            };
            let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
            tracing::warn!(
                target: "modelctx_client",
                tool = name,
                %reason,
                "tool left out of tools/list: its x-mcp-header annotations are invalid"
            );
            false
        });
    }
}

/// The answers to an `InputRequiredResult`'s input requests, by key, from the handlers
/// that answer the same requests from a server in a session.
async fn answer_inputs(
    client: &Client,
    requests: Option<&Value>,
) -> Result<Map<String, Value>, SessionError> {
    let mut responses = Map::new();
    let Some(Value::Object(requests)) = requests else {
        return Ok(responses);
    };
    for (key, request) in requests {
        let method = request.get("method").and_then(Value::as_str).unwrap_or("");
        if !client.inner.requests.contains_key(method) {
            return Err(SessionError::refused(format!(
                "the server asked for {method:?} (input {key:?}), which this client does not answer"
            )));
        }
        let params = match request.get("params") {
            Some(params) => Some(to_raw(params).map_err(|e| SessionError::refused(e.to_string()))?),
            None => None,
        };
        let cx =
            RequestContext::unstable_detached(RequestId::from(key.as_str()), client.peer().clone());
        let method = Cow::Owned(method.to_owned());
        let chain = client.inner.middleware.as_deref();
        let answer = crate::middleware::serve(chain, &client.inner.requests, method, params, cx)
            .await
            .map_err(|e: ErrorData| {
                SessionError::refused(format!("answering input {key:?}: {e}"))
            })?;
        let answer: Value =
            serde_json::from_str(answer.get()).map_err(|e| SessionError::refused(e.to_string()))?;
        responses.insert(key.clone(), answer);
    }
    Ok(responses)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fresh(ttl: u64) -> Value {
        json!({"resultType": "complete", "ttlMs": ttl, "tools": []})
    }

    #[test]
    fn tools_with_bad_header_annotations_are_left_out() {
        let mut listed = json!({"tools": [
            {"name": "good", "inputSchema": {"type": "object", "properties": {
                "a": {"type": "string", "x-mcp-header": "A"}}}},
            {"name": "bad", "inputSchema": {"type": "object", "properties": {
                "a": {"type": "number", "x-mcp-header": "A"}}}},
        ]});
        drop_tools_with_bad_headers(&mut listed);
        assert_eq!(listed["tools"].as_array().unwrap().len(), 1);
        assert_eq!(listed["tools"][0]["name"], "good");
    }

    #[tokio::test(start_paused = true)]
    async fn change_notifications_drop_what_they_make_stale() {
        let cache = Cache::default();
        let tools = Cache::key("tools/list", &Map::new());
        let prompts = Cache::key("prompts/list", &Map::new());
        let read =
            |uri: &str| Cache::key("resources/read", json!({"uri": uri}).as_object().unwrap());
        cache.put(tools.clone(), &fresh(1000));
        cache.put(prompts.clone(), &fresh(1000));
        cache.put(read("a://x"), &fresh(1000));
        cache.put(read("a://y"), &fresh(1000));
        cache.put(Cache::key("resources/list", &Map::new()), &fresh(0));
        assert!(
            cache
                .get(&Cache::key("resources/list", &Map::new()))
                .is_none(),
            "ttl 0"
        );
        cache.invalidate("notifications/tools/list_changed", None);
        assert!(cache.get(&tools).is_none());
        assert!(cache.get(&prompts).is_some());
        let updated = to_raw(&json!({"uri": "a://x"})).unwrap();
        cache.invalidate("notifications/resources/updated", Some(&updated));
        assert!(cache.get(&read("a://x")).is_none());
        assert!(cache.get(&read("a://y")).is_some());
        tokio::time::advance(std::time::Duration::from_millis(1001)).await;
        assert!(cache.get(&prompts).is_none(), "expired");
    }
}
