//! What a handler does with its [`Context`]: who asked and with what, progress,
//! logging, cancellation, the application's state, the server's own resources, the
//! session and the server, and requests and notifications to the client.

use std::any::Any;
use std::sync::Arc;

use modelctx_session::{CancellationToken, Peer, Progress, RequestOptions, SessionError};
use modelctx_types::{
    ClientCapabilities, ErrorData, Implementation, LoggingLevel, LoggingMessageNotification,
    LoggingMessageNotificationParams, Meta, NotificationMethod, ProgressToken, ProtocolVersion,
    ReadResourceResult, RequestId, RequestMethod,
};
use serde_json::Value;

use crate::inner::{Inner, Server};
use crate::request::Context;
use crate::session::ServerSession;

/// A request's [`Extensions`](modelctx_session::Extensions), as
/// [`Context::extensions`]: what lets middleware read them from an
/// [`McpRequest`](crate::McpRequest).
impl AsRef<modelctx_session::Extensions> for Context {
    fn as_ref(&self) -> &modelctx_session::Extensions {
        self.extensions()
    }
}

/// Declares `Context::<level>(data)` for each level: [`Context::log`] at that level,
/// without a logger name.
macro_rules! level_shortcuts {
    ($($name:ident => $level:ident),* $(,)?) => {$(
        #[doc = concat!("Logs at `", stringify!($name), "`; see [`Context::log`].")]
        pub async fn $name(&self, data: impl Into<Value>) -> Result<(), SessionError> {
            self.log(LoggingLevel::$level, None, data).await
        }
    )*};
}

impl Context {
    /// The id of the task this request runs as, if it does: a task-augmented call
    /// (protocol 2025-11-25), or a call the server turned into a task of the tasks
    /// extension (2026-07-28).
    pub fn task_id(&self) -> Option<&str> {
        self.running_task().map(|run| run.id())
    }

    /// This context, naming the next input it asks the client for (sampling,
    /// elicitation, roots) `key`. In protocol 2026-07-28 the input is asked for under
    /// that key in the request's `InputRequiredResult` (otherwise it is `input-N`, for
    /// the N-th unnamed ask); in a session the name is not used.
    #[doc(hidden)]
    pub fn with_input_key(&self, key: impl Into<String>) -> Self {
        let mut cx = self.clone();
        cx.input_key = Some(Arc::from(key.into()));
        cx
    }

    /// The id of the request being served.
    pub fn request_id(&self) -> &RequestId {
        self.request.request_id()
    }

    /// The request's `_meta`, as the client sent it.
    pub fn meta(&self) -> Option<&Meta> {
        self.request.meta()
    }

    /// What the transport attached to this request. Over streamable HTTP and legacy SSE
    /// these are the [`Extensions`](modelctx_session::Extensions) that layers in front of
    /// the endpoint put in the HTTP request's extensions — behind `modelctx-oauth`'s
    /// resource server, `cx.extensions().get::<modelctx_oauth::AuthInfo>()` is the
    /// verified caller — and the headers of the POST that carried the request,
    /// `cx.extensions().get::<http::HeaderMap>()` (credentials in them marked
    /// sensitive, so `{:?}` hides them). Empty for transports that attach nothing
    /// (stdio, in-memory).
    pub fn extensions(&self) -> &modelctx_session::Extensions {
        self.request.extensions()
    }

    /// The progress token the client attached, if any.
    pub fn progress_token(&self) -> Option<&ProgressToken> {
        self.request.progress_token()
    }

    /// The client's name, version and title: from the handshake, or (protocol
    /// 2026-07-28) from this request, if it said.
    pub fn client_info(&self) -> Option<&Implementation> {
        match &self.envelope {
            Some(envelope) => envelope.info.as_ref(),
            None => self.session.info.get(),
        }
    }

    /// The capabilities the client declared: in the handshake, or (protocol
    /// 2026-07-28) on this request.
    pub fn client_capabilities(&self) -> Option<&ClientCapabilities> {
        match &self.envelope {
            Some(envelope) => Some(&envelope.capabilities),
            None => self.session.capabilities.get(),
        }
    }

    /// The protocol revision of this request: the negotiated one, or (2026-07-28) the
    /// one the request carries.
    pub fn protocol_version(&self) -> Option<&ProtocolVersion> {
        match &self.envelope {
            Some(envelope) => Some(&envelope.version),
            None => self.session.protocol_version.get(),
        }
    }

    /// The session this request arrived on.
    pub fn session(&self) -> ServerSession {
        // The request's own handle, related to no request: on a session that serves
        // several clients in turn, it cannot end the session once the request is over.
        let peer = self.request.peer().related_to(None);
        ServerSession {
            peer,
            state: self.session.clone(),
        }
    }

    /// The application state given to [`ServerBuilder::state`](crate::ServerBuilder::state),
    /// if it is a `T`.
    pub fn state<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        self.server.state()?.clone().downcast::<T>().ok()
    }

    /// Fires when the client cancels this request or the session ends, and, on a
    /// session that may serve requests of several clients in turn (the stateless era,
    /// session-less streamable HTTP), when the request has ended; for a request
    /// running as a task, when the client cancels the task (`tasks/cancel`) — neither
    /// cancelling the original request nor the session ending stops a task.
    pub fn cancellation(&self) -> &CancellationToken {
        if let Some(escalation) = &self.escalation {
            // One token before and after the call becomes a task: a handler that took
            // it early still hears `tasks/cancel`. (Before, cancelling the request
            // drops the handler altogether.)
            return &escalation.cancelled;
        }
        match &self.task {
            Some(run) => run.cancellation(),
            None => self.request.cancellation(),
        }
    }

    /// Whether the request (or its task) was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancellation().is_cancelled()
    }

    /// Reports progress as `notifications/progress` carrying the client's token.
    /// Without a progress token from the client this sends nothing and succeeds; a
    /// value that does not increase is refused. A request running as a task keeps the
    /// original token after its `CreateTaskResult`; the report is best effort then (a
    /// session gone meanwhile loses it without failing the task).
    pub async fn report_progress(&self, progress: Progress) -> Result<(), SessionError> {
        let sent = self.request.report_progress(progress).await;
        match sent {
            Err(e) if self.running_task().is_some() && !e.is_refused() => Ok(()),
            other => other,
        }
    }

    /// Sends a log message (`notifications/message`) at `level`, from `logger`, related
    /// to this request. Nothing is sent when the level is below the one the client
    /// chose with `logging/setLevel` (protocol 2026-07-28: the request's
    /// `io.modelcontextprotocol/logLevel`, without which nothing is sent at all);
    /// refused when the server did not declare the `logging` capability.
    pub async fn log(
        &self,
        level: LoggingLevel,
        logger: Option<&str>,
        data: impl Into<Value>,
    ) -> Result<(), SessionError> {
        if !self.server.declares_logging() {
            return Err(SessionError::refused(
                "the server did not declare the logging capability",
            ));
        }
        let wanted = match &self.envelope {
            Some(envelope) => envelope
                .log_level
                .as_ref()
                .is_some_and(|min| level.passes(min)),
            None => self.session.logs(&level),
        };
        if !wanted {
            return Ok(());
        }
        let mut params = LoggingMessageNotificationParams::new(level, data);
        params.logger = logger.map(str::to_owned);
        self.request
            .peer()
            .notify::<LoggingMessageNotification>(params)
            .await
    }

    level_shortcuts!(
        debug => Debug,
        info => Info,
        notice => Notice,
        warning => Warning,
        error => Error,
        critical => Critical,
        alert => Alert,
        emergency => Emergency,
    );

    /// Reads a resource this server registers (fixed or through a template), as
    /// `resources/read` would; an unknown URI is `-32002`.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, ErrorData> {
        self.server.clone().read_resource(self.clone(), uri).await
    }

    /// The session's peer, related to this request.
    pub fn peer(&self) -> &Peer {
        self.request.peer()
    }

    /// Sends a request to the client, related to this request.
    pub async fn request<M: RequestMethod>(
        &self,
        params: M::Params,
    ) -> Result<M::Result, SessionError> {
        self.request
            .peer()
            .request_with::<M>(params, RequestOptions::default())
            .await
    }

    /// Sends a notification to the client, related to this request.
    pub async fn notify<N: NotificationMethod>(
        &self,
        params: N::Params,
    ) -> Result<(), SessionError> {
        self.request.peer().notify::<N>(params).await
    }

    /// The server serving this request (to change its registries, announce resource
    /// updates, ...).
    pub fn server(&self) -> Server {
        let server: Arc<dyn Any + Send + Sync> = self.server.clone();
        let inner = Arc::downcast::<Inner>(server)
            .unwrap_or_else(|_| unreachable!("a context is made with its server's internals"));
        Server { inner }
    }
}
