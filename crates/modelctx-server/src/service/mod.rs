//! Serving one session: the service the session runtime calls for each request and
//! notification, answering from the server's handlers and registries in either era.

mod stateless_era;

use std::any::Any;
use std::borrow::Cow;
use std::sync::Arc;

use futures_core::future::BoxFuture;
use modelctx_session::{Peer, RequestContext, Service, SessionConfig, parse_params};
use modelctx_transport::Transport;
use modelctx_types::{
    EmptyResult, ErrorData, InitializeRequest, InitializeRequestParams, JsonRpcNotification,
    JsonRpcRequest, ProtocolVersion, RawValue, ReadResourceResult, RequestMethod,
    SetLevelRequestParams, to_raw,
};

use crate::dispatch;
use crate::inner::Inner;
use crate::registry;
use crate::request::{Context, Serving};
use crate::rerun;
use crate::session::{self, ServerSession, SessionState};
#[cfg(feature = "tasks")]
use crate::tasks;

/// Serves one session of `server` over `transport` (see
/// [`Server::serve_with`](crate::Server::serve_with)).
pub(crate) fn start<T: Transport>(
    server: &Arc<Inner>,
    transport: T,
    config: SessionConfig,
) -> ServerSession {
    let mut config = if server.stateless_era {
        config.unstable_stateless_era(true)
    } else {
        config
    };
    let info = transport.info();
    if info.starts_initialized {
        config = config.pre_initialized();
    }
    if !info.allows_outbound_requests {
        config = config.without_outbound_requests();
    }
    if config.handler_limit.is_none()
        && let Some(limit) = &server.handler_limit
    {
        config = config.handler_limit(limit.clone());
    }
    let state = Arc::new(SessionState::default());
    if let Some(shared) = info.shared_session {
        // A request another process stopped running before it answered may run
        // again here only when running it twice is harmless.
        let weak = Arc::downgrade(server);
        shared.on_rerun(Box::new(move |request| rerun::may_rerun(&weak, request)));
        match state.share(shared, info.session_id.as_deref()) {
            session::Resumed::No => {}
            // Another process ran the handshake: this one continues the session
            // (and refuses another `initialize`, as that one does).
            session::Resumed::Operational => {
                config = config.pre_initialized().initialize_answered();
            }
            // Another process answered `initialize`: this one refuses requests
            // until the client's `notifications/initialized` arrives, as that one
            // does.
            session::Resumed::AwaitingInitialized => config = config.initialize_answered(),
        }
        if let Some(version) = state.protocol_version.get() {
            config = config.protocol_version(version.as_str());
        }
    }
    let service = Arc::new(SessionService {
        server: server.clone(),
        state: state.clone(),
        tracking: std::sync::OnceLock::new(),
    });
    let peer = modelctx_session::start(transport, service.clone(), config);
    let _ = state.peer.set(peer.clone());
    // Announcements reach the session while its service lives (the runtime drops
    // it when the session ends).
    let _ = service.tracking.set(server.announcer.track(&state));
    ServerSession { peer, state }
}

/// The session-side service: one per session, sharing the server's handlers and
/// registries, holding the session's own state.
struct SessionService {
    server: Arc<Inner>,
    state: Arc<SessionState>,
    /// The session's place among the announcer's live sessions, left with the service.
    tracking: std::sync::OnceLock<registry::Place>,
}

impl SessionService {
    /// The answer to `method` in either era: its low-level handler, else the
    /// registries' built-in answer, else method not found.
    /// Through the server's middleware when it has layers; without them, straight to
    /// the answer (no allocation, no indirect call on the way).
    fn serve(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
        cx: Context,
    ) -> BoxFuture<'static, Result<Box<RawValue>, ErrorData>> {
        match &self.server.middleware {
            Some(chain) => {
                crate::middleware::call(chain, Cow::Owned(method.to_owned()), params, cx)
            }
            None => answer(&self.server, method, params, cx),
        }
    }

    fn initialize(&self, params: InitializeRequestParams) -> Result<Box<RawValue>, ErrorData> {
        let version = match &self.server.versions {
            None => ProtocolVersion::negotiate(&params.protocol_version),
            Some(versions) if versions.contains(&params.protocol_version) => {
                params.protocol_version.clone()
            }
            // Listed newest first or not, the newest.
            Some(versions) => match versions.iter().max_by(|a, b| a.as_str().cmp(b.as_str())) {
                Some(newest) => newest.clone(),
                None => return Err(unsupported(&params.protocol_version, &self.server)),
            },
        };
        let _ = self.state.info.set(params.client_info);
        let _ = self.state.capabilities.set(params.capabilities);
        let result = self.server.initialize_result(&version);
        let _ = self.state.protocol_version.set(version);
        result
    }

    /// `logging/setLevel`: an unknown level is `-32602`; a known one becomes the
    /// session's minimum, then the low-level handler (if any) sees the request too.
    fn set_level(
        &self,
        params: Option<Box<RawValue>>,
        cx: Context,
    ) -> BoxFuture<'static, Result<Box<RawValue>, ErrorData>> {
        let parsed = parse_params::<SetLevelRequestParams>(params.as_deref()).and_then(|p| {
            if p.level.severity().is_some() {
                Ok(p)
            } else {
                Err(ErrorData::invalid_params(format!(
                    "Invalid log level {:?}: expected one of debug, info, notice, warning, error, critical, alert, emergency",
                    p.level.as_str()
                )))
            }
        });
        let handler = self.server.requests.get("logging/setLevel").cloned();
        let state = self.state.clone();
        Box::pin(async move {
            let level = parsed?.level;
            state.set_log_level(level);
            if let Some(saving) = state.save() {
                saving.await?;
            }
            match handler {
                Some(handler) => handler(params, cx).await,
                None => to_raw(&EmptyResult::new())
                    .map_err(|e| ErrorData::internal_error(e.to_string())),
            }
        })
    }
}

impl Service for SessionService {
    fn handle_request(
        self: Arc<Self>,
        request: JsonRpcRequest,
        context: RequestContext,
    ) -> BoxFuture<'static, Result<Box<RawValue>, ErrorData>> {
        // The session enters the era only when its config lets it (which the server's
        // switch sets, and a caller of `serve_with` may set too).
        if context.peer().is_stateless_era() {
            return self.stateless(request, context);
        }
        if request.method == <InitializeRequest as RequestMethod>::METHOD {
            let result = parse_params::<InitializeRequestParams>(request.params.as_deref())
                .and_then(|params| self.initialize(params));
            // A shared session is stored before the answer goes out: the client's next
            // request may land on another process.
            let saving = result.is_ok().then(|| self.state.save()).flatten();
            return Box::pin(async move {
                if let Some(saving) = saving {
                    saving.await?;
                }
                result
            });
        }
        #[cfg(feature = "tasks")]
        if let Some(host) = self.server.tasks()
            && self.server.capabilities.tasks.is_some()
        {
            let handled_here = |m: &str| !self.server.requests.contains_key(m);
            let method = request.method.as_ref();
            if modelctx_session::tasks::TASK_METHODS.contains(&method) && handled_here(method) {
                let owner = tasks::owner(&context, &self.state);
                let peer = context.peer().clone();
                return match host.serve(method, request.params, owner, peer) {
                    Some(answer) => answer,
                    None => {
                        let error = ErrorData::method_not_found(method);
                        Box::pin(async move { Err(error) })
                    }
                };
            }
            let tool_tasks = self
                .server
                .capabilities
                .tasks
                .as_ref()
                .and_then(|t| t.requests.as_ref())
                .and_then(|r| r.tools.as_ref())
                .is_some_and(|t| t.call.is_some());
            if method == "tools/call" && tool_tasks && handled_here(method) {
                let owner = tasks::owner(&context, &self.state);
                let cx = Context::new(context, self.state.clone(), self.server.clone());
                let service = self.clone();
                return tasks::call_tool(
                    self.server.clone(),
                    host.clone(),
                    owner,
                    request.params,
                    cx,
                    move |p, cx| service.serve("tools/call", p, cx),
                );
            }
        }
        let cx = Context::new(context, self.state.clone(), self.server.clone());
        if request.method == "logging/setLevel" && self.server.capabilities.logging.is_some() {
            return self.set_level(request.params, cx);
        }
        self.serve(&request.method, request.params, cx)
    }

    fn handle_notification(
        self: Arc<Self>,
        notification: JsonRpcNotification,
        peer: Peer,
    ) -> BoxFuture<'static, ()> {
        if notification.method == "notifications/initialized" {
            self.state.initialized.cancel();
        }
        crate::middleware::notify(
            self.server.notification_middleware.as_ref(),
            &self.server.notifications,
            notification.method,
            notification.params,
            peer,
        )
    }

    fn handle_error(self: Arc<Self>, error: ErrorData, peer: Peer) -> BoxFuture<'static, ()> {
        // Called in the future, so the runtime catches a panic of the callback.
        Box::pin(async move {
            if let Some(callback) = &self.server.on_error {
                callback(error, &peer);
            }
        })
    }
}

/// `-32022` for an `initialize` this server cannot answer: no handshake revision is
/// among its supported versions (`data.supported` lists what it does serve).
fn unsupported(requested: &ProtocolVersion, server: &Inner) -> ErrorData {
    let supported = ProtocolVersion::STATELESS
        .iter()
        .filter(|_| server.stateless_era)
        .map(|v| v.as_str().to_owned())
        .collect();
    modelctx_types::UnsupportedProtocolVersionError::new(None, supported, requested.as_str())
        .to_error_data()
}

/// The server's own answer to `method`: its low-level handler, else the registries'
/// built-in answer, else method not found.
fn answer(
    server: &Arc<Inner>,
    method: &str,
    params: Option<Box<RawValue>>,
    cx: Context,
) -> BoxFuture<'static, Result<Box<RawValue>, ErrorData>> {
    if let Some(handler) = server.requests.get(method) {
        return handler(params, cx);
    }
    match dispatch::builtin(server, method, params, cx) {
        Some(answer) => answer,
        None => {
            let error = ErrorData::method_not_found(method);
            Box::pin(async move { Err(error) })
        }
    }
}

impl Serving for Inner {
    fn dispatch(
        self: Arc<Self>,
        method: &str,
        params: Option<Box<RawValue>>,
        cx: Context,
    ) -> BoxFuture<'static, Result<Box<RawValue>, ErrorData>> {
        answer(&self, method, params, cx)
    }

    fn state(&self) -> Option<&Arc<dyn Any + Send + Sync>> {
        self.state.as_ref()
    }

    fn declares_logging(&self) -> bool {
        self.capabilities.logging.is_some()
    }

    fn read_resource<'a>(
        self: Arc<Self>,
        cx: Context,
        uri: &'a str,
    ) -> BoxFuture<'a, Result<ReadResourceResult, ErrorData>> {
        Box::pin(dispatch::read_resource(self, cx, uri))
    }
}
