//! The data of a request's [`Context`]: the request, its session, the server serving
//! it, and what the stateless era, a round of input or a task adds; and the means by
//! which the crate sets them. The registration types take a [`Context`] from here;
//! the methods a handler calls are in `context`, above the server they reach.

use std::any::Any;
use std::sync::{Arc, OnceLock};

use futures_core::future::BoxFuture;
#[cfg(feature = "tasks")]
use modelctx_session::tasks::TaskRun;
use modelctx_session::{CancellationToken, RequestContext};
use modelctx_types::{ErrorData, RawValue, ReadResourceResult};

use crate::mrtr::Round;
use crate::session::SessionState;
use crate::stateless::Envelope;

/// What a request's context reaches of the server serving it. The server's internals
/// hold the registries, whose functions take a [`Context`]: the context reaches them
/// through this trait, so that it depends on none of the registration types.
pub(crate) trait Serving: Any + Send + Sync {
    /// The application state given to the builder, if any.
    fn state(&self) -> Option<&Arc<dyn Any + Send + Sync>>;

    /// Whether the server declared the `logging` capability.
    fn declares_logging(&self) -> bool;

    /// The server's own answer to a request (its handler, else its registries), inside
    /// any middleware.
    fn dispatch(
        self: Arc<Self>,
        method: &str,
        params: Option<Box<RawValue>>,
        cx: Context,
    ) -> BoxFuture<'static, Result<Box<RawValue>, ErrorData>>;

    /// Reads a resource the server registers, as `resources/read` would.
    fn read_resource<'a>(
        self: Arc<Self>,
        cx: Context,
        uri: &'a str,
    ) -> BoxFuture<'a, Result<ReadResourceResult, ErrorData>>;
}

/// The context of one request: who asked, with what `_meta`, and the means to report
/// progress, log, watch for cancellation, reach the application's shared state, read
/// the server's own resources and talk back to the client. Cheap to clone.
///
/// A handler takes it as its last argument:
///
/// ```
/// use modelctx_server::{Context, NoArgs, ToolDef};
/// use modelctx_types::LoggingLevel;
///
/// let slow = ToolDef::new("slow", |_: NoArgs, cx: Context| async move {
///     for step in 0..3 {
///         if cx.is_cancelled() {
///             return Err("cancelled".to_owned());
///         }
///         // Sent only when the client set a log level that lets it through.
///         let _ = cx.log(LoggingLevel::Info, Some("slow"), format!("step {step}")).await;
///     }
///     Ok::<_, String>("done")
/// });
/// # let _ = slow;
/// ```
#[derive(Clone)]
pub struct Context {
    pub(crate) request: Arc<RequestContext>,
    pub(crate) session: Arc<SessionState>,
    /// The server's internals (see [`Serving`]).
    pub(crate) server: Arc<dyn Serving>,
    /// In the stateless era (2026-07-28): what the request itself says about its client,
    /// which replaces what a handshake would have told the session.
    pub(crate) envelope: Option<Arc<Envelope>>,
    /// In the stateless era, for a request that may ask the client for input: the
    /// round it is in (see `mrtr`).
    pub(crate) round: Option<Arc<Round>>,
    /// The key the next input this context asks for goes under.
    pub(crate) input_key: Option<Arc<str>>,
    /// When the request runs as a task (2025-11-25): the task, through which requests
    /// to the client travel and whose cancellation this context reports.
    pub(crate) task: Option<RunRef>,
    /// In the stateless era, for a call that may become a task of the tasks extension:
    /// the task, once it is one.
    pub(crate) escalation: Option<Arc<Escalating>>,
}

/// A task a request runs as, as its [`Context`] holds it. Without the `tasks` feature
/// no request runs as a task and the type has no value, so the code that would serve
/// one (and drop one) is left out of the build.
#[cfg(feature = "tasks")]
pub(crate) type RunRef = Arc<TaskRun>;

/// A task a request runs as: none without the `tasks` feature.
#[cfg(not(feature = "tasks"))]
#[derive(Clone, Debug)]
pub(crate) enum RunRef {}

#[cfg(not(feature = "tasks"))]
impl RunRef {
    pub(crate) fn id(&self) -> &str {
        match *self {}
    }

    pub(crate) fn cancellation(&self) -> &CancellationToken {
        match *self {}
    }
}

/// A call that may become a task of the tasks extension: the task once it is one, and
/// the cancellation the handler sees throughout (the task's, once there is a task).
#[derive(Debug, Default)]
pub(crate) struct Escalating {
    pub(crate) run: OnceLock<RunRef>,
    pub(crate) cancelled: CancellationToken,
}

modelctx_types::__debug_shows!(Context, |v| { request: &v.request, .. });

impl Context {
    pub(crate) fn new(
        request: RequestContext,
        session: Arc<SessionState>,
        server: Arc<dyn Serving>,
    ) -> Self {
        Self {
            request: Arc::new(request),
            session,
            server,
            envelope: None,
            round: None,
            input_key: None,
            task: None,
            escalation: None,
        }
    }

    /// The context of a call that may become a task of the tasks extension.
    #[cfg(feature = "tasks")]
    pub(crate) fn escalating(mut self, slot: Arc<Escalating>) -> Self {
        self.escalation = Some(slot);
        self
    }

    /// The task of the tasks extension this call became, if it did.
    pub(crate) fn escalated(&self) -> Option<&RunRef> {
        self.escalation.as_ref()?.run.get()
    }

    /// The task this request runs as, whichever era made it one.
    pub(crate) fn running_task(&self) -> Option<&RunRef> {
        self.task.as_ref().or_else(|| self.escalated())
    }

    /// The context of a request that runs as task `run`.
    #[cfg(feature = "tasks")]
    pub(crate) fn in_task(mut self, run: RunRef) -> Self {
        self.task = Some(run);
        self
    }

    /// The context of a request of the stateless era that may ask the client for input
    /// in rounds.
    pub(crate) fn in_round(mut self, round: Arc<Round>) -> Self {
        self.round = Some(round);
        self
    }

    /// The context of a request of the stateless era, served on its own envelope.
    pub(crate) fn in_stateless_era(mut self, envelope: Arc<Envelope>) -> Self {
        self.envelope = Some(envelope);
        self
    }
}
