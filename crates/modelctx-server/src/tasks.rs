//! Task-augmented `tools/call` and the task methods (protocol 2025-11-25): the server
//! as the receiver of tasks, on `modelctx_session::tasks`.
//!
//! A tool is written once; the era and the client decide how it runs.
//!
//! - 2025-11-25: `ServerBuilder::tasks` declares `tasks`; the tool-level negotiation
//!   (`ToolDef::task_support`: a task for a forbidding tool, or none for a requiring one,
//!   is `-32601`; a server without tasks ignores the `task` field) precedes the call, and a
//!   task-augmented call answers `CreateTaskResult` at once while the handler runs on its
//!   own tokio task with a `Context` bound to the task: its sampling, elicitation and roots
//!   go through the side channel, its cancellation is the task's (`tasks/cancel`), its
//!   progress keeps the original token (best effort once the request is answered).
//! - 2026-07-28 (the tasks extension, for a request that declares it): the server decides.
//!   A task-supporting call runs as an MRTR round and *escalates* to a task when it has run
//!   its window (`TaskConfig::sync_window`, per tool `ToolDef::task_window`; zero: before
//!   the handler is first polled) without answering or asking for input; the `Escalation`
//!   stores the task, sets the `Context`'s slot (its later input asks are the task's
//!   `inputRequests`), spawns the rest of the handler and answers `CreateTaskResult`.
//!
//! A window rather than a flag on the handler, because some flows need input gathered in
//! rounds *before* the task exists and others a task *before* the first ask; a per-tool
//! window expresses both without the handler knowing the era. The handler's cancellation
//! token is the same before and after escalation, so a handler that took it early still
//! hears `tasks/cancel`. A tool error completes a 2026 task (`isError` in its result); only
//! a JSON-RPC error fails it (in 2025 both fail it). `server/discover` shows
//! `extensions["io.modelcontextprotocol/tasks"]` instead of the 2025 `tasks` slot; the
//! extension's methods are gated with `-32021` before the task is looked up, and
//! `tasks/result` and `tasks/list` stay removed.

use std::sync::Arc;
use std::time::Duration;

use futures_core::future::BoxFuture;
#[cfg(feature = "tasks")]
use modelctx_session::parse_params;
use modelctx_session::tasks::TaskOwner;
#[cfg(feature = "tasks")]
use modelctx_types::to_raw;
#[cfg(feature = "tasks")]
use modelctx_types::{CreateTaskResult, ErrorCode, TaskMetadata, TaskSupport};
use modelctx_types::{ErrorData, RawValue, ext_tasks};

#[cfg(feature = "tasks")]
use crate::inner::Inner;
use crate::inner::TaskHost;
#[cfg(feature = "tasks")]
use crate::registry::lookup;
#[cfg(feature = "tasks")]
use crate::request::Context;
use crate::session::SessionState;

type Answer = BoxFuture<'static, Result<Box<RawValue>, ErrorData>>;

/// Who is asking, as tasks are bound: the authenticated caller, else the session (none
/// on a transport without lasting sessions).
pub(crate) fn owner(cx: &modelctx_session::RequestContext, session: &SessionState) -> TaskOwner {
    let extensions = cx.extensions();
    let principal = extensions
        .get::<modelctx_types::Principal>()
        .map(|p| p.id().to_owned());
    let session = if cx.peer().is_sessionless() {
        None
    } else {
        session.task_key()
    };
    TaskOwner::new(session.as_deref(), principal.as_deref())
}

/// `tools/call` when the server runs tasks: the tool-level negotiation (a task for a
/// tool that forbids them, or none for one that requires it, is `-32601`), then either
/// the plain call (`plain`) or a task: the `CreateTaskResult` at once, the tool running
/// in the background with a context bound to the task.
#[cfg(feature = "tasks")]
pub(crate) fn call_tool(
    server: Arc<Inner>,
    host: Arc<TaskHost>,
    owner: TaskOwner,
    params: Option<Box<RawValue>>,
    cx: Context,
    plain: impl FnOnce(Option<Box<RawValue>>, Context) -> Answer + Send + 'static,
) -> Answer {
    #[derive(serde::Deserialize)]
    struct Probe {
        name: String,
        task: Option<TaskMetadata>,
    }
    Box::pin(async move {
        let probe = parse_params::<Probe>(params.as_deref())?;
        let support = lookup(&server.registry.tools, &probe.name).map(|t| {
            t.tool
                .execution
                .as_ref()
                .and_then(|e| e.task_support.clone())
                .unwrap_or(TaskSupport::Forbidden)
        });
        let Some(support) = support else {
            // Unknown tool: the plain call says so.
            return plain(params, cx).await;
        };
        let task = match (probe.task, support) {
            (Some(task), TaskSupport::Optional | TaskSupport::Required) => task,
            (Some(_), _) => {
                return Err(ErrorData::new(
                    ErrorCode::METHOD_NOT_FOUND,
                    format!(
                        "Tool {} does not support task-augmented calls (execution.taskSupport is forbidden)",
                        probe.name
                    ),
                ));
            }
            (None, TaskSupport::Required) => {
                return Err(ErrorData::new(
                    ErrorCode::METHOD_NOT_FOUND,
                    format!(
                        "Tool {} must be called as a task (execution.taskSupport is required)",
                        probe.name
                    ),
                ));
            }
            (None, _) => return plain(params, cx).await,
        };
        let notify = cx.session.peer.get().cloned();
        let run = Arc::new(host.create(owner, "tools/call", &task, notify).await?);
        let created = CreateTaskResult::new(run.task().clone());
        let work = plain(params, cx.in_task(run.clone()));
        tokio::spawn(async move {
            let outcome = work.await;
            let failed = match &outcome {
                Ok(raw) => is_error(raw),
                Err(_) => true,
            };
            run.finish(outcome, failed).await;
        });
        to_raw(&created).map_err(|e| ErrorData::internal_error(e.to_string()))
    })
}

/// Whether a tool result says `isError: true`.
#[cfg(feature = "tasks")]
fn is_error(raw: &RawValue) -> bool {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Flag {
        #[serde(default)]
        is_error: bool,
    }
    serde_json::from_str::<Flag>(raw.get()).is_ok_and(|f| f.is_error)
}

/// In protocol 2026-07-28 (the tasks extension), how a `tools/call` runs: `Ok(None)`
/// as a plain call; `Ok(Some(window))` as a call that becomes a task once it has run
/// `window` without answering or asking for input (zero: a task at once); `-32021`
/// for a tool that needs a task from a client that did not declare the extension.
#[cfg(feature = "tasks")]
pub(crate) fn extension_mode(
    server: &Inner,
    cx: &Context,
    params: Option<&RawValue>,
) -> Result<Option<Duration>, ErrorData> {
    #[derive(serde::Deserialize)]
    struct Probe {
        name: String,
    }
    let Some(host) = server.tasks() else {
        return Ok(None);
    };
    let Some(name) = params.and_then(|p| serde_json::from_str::<Probe>(p.get()).ok()) else {
        return Ok(None);
    };
    let Some(tool) = lookup(&server.registry.tools, &name.name) else {
        return Ok(None);
    };
    let support = tool
        .tool
        .execution
        .as_ref()
        .and_then(|e| e.task_support.clone())
        .unwrap_or(TaskSupport::Forbidden);
    if !matches!(support, TaskSupport::Optional | TaskSupport::Required) {
        return Ok(None);
    }
    if !declares_extension(cx) {
        return match support {
            TaskSupport::Required => Err(missing_extension()),
            _ => Ok(None),
        };
    }
    Ok(Some(tool.task_window.unwrap_or(host.config().sync_window)))
}

/// Whether the request declares the tasks extension among its client capabilities.
#[cfg(feature = "tasks")]
pub(crate) fn declares_extension(cx: &Context) -> bool {
    cx.client_capabilities()
        .and_then(|c| c.extensions.as_ref())
        .is_some_and(|e| e.contains_key(ext_tasks::EXTENSION_ID))
}

/// `-32021` naming the tasks extension.
pub(crate) fn missing_extension() -> ErrorData {
    crate::mrtr::missing_capability(
        "the tasks extension (io.modelcontextprotocol/tasks)",
        serde_json::json!({"extensions": {ext_tasks::EXTENSION_ID: {}}}),
    )
}

/// Turns a running call into a task of the tasks extension: the task is stored (a
/// `tasks/get` finds it before the answer leaves), the call goes on in the background
/// as the task's work, and its `CreateTaskResult` is the answer.
#[cfg(feature = "tasks")]
pub(crate) struct Escalation {
    pub(crate) host: Arc<TaskHost>,
    pub(crate) owner: TaskOwner,
    pub(crate) slot: Arc<crate::request::Escalating>,
    pub(crate) window: Duration,
}

#[cfg(feature = "tasks")]
impl Escalation {
    /// How long the call runs before it becomes a task.
    pub(crate) fn window(&self) -> Duration {
        self.window
    }

    pub(crate) async fn start(self, work: Answer) -> Result<Box<RawValue>, ErrorData> {
        let cancelled = self.slot.cancelled.clone();
        let run = Arc::new(
            self.host
                .create_with(
                    self.owner,
                    "tools/call",
                    &TaskMetadata::new(),
                    None,
                    cancelled,
                )
                .await?,
        );
        let _ = self.slot.run.set(run.clone());
        let created = ext_tasks::CreateTaskResult::new(ext_tasks::Task::from_utility(run.task()));
        tokio::spawn(async move {
            let outcome = work.await;
            // A tool's own error (`isError`) completes the task; only a JSON-RPC error
            // fails it.
            let failed = outcome.is_err();
            run.finish(outcome, failed).await;
        });
        to_raw(&created).map_err(|e| ErrorData::internal_error(e.to_string()))
    }
}

/// A call that becomes a task: none without the `tasks` feature (no value, so the code
/// that would start one is left out of the build).
#[cfg(not(feature = "tasks"))]
pub(crate) enum Escalation {}

#[cfg(not(feature = "tasks"))]
impl Escalation {
    pub(crate) fn window(&self) -> Duration {
        match *self {}
    }

    pub(crate) async fn start(self, _work: Answer) -> Result<Box<RawValue>, ErrorData> {
        match self {}
    }
}

/// The tasks a `subscriptions/listen` stream watches (the tasks extension): those of its
/// `taskIds` the caller may see, each announced (as `tasks/get` shows it) at every change.
/// Without the `tasks` feature there is no host, and it watches none.
pub(crate) struct TaskWatch {
    #[cfg(feature = "tasks")]
    host: Option<Arc<TaskHost>>,
    #[cfg(feature = "tasks")]
    owner: TaskOwner,
    #[cfg(feature = "tasks")]
    watched: std::collections::HashSet<String>,
    #[cfg(feature = "tasks")]
    changes: Option<tokio::sync::broadcast::Receiver<String>>,
}

impl TaskWatch {
    /// Watches the tasks of `host` (none without it) that `owner` may see.
    #[cfg_attr(not(feature = "tasks"), allow(unused_variables))]
    pub(crate) fn new(host: Option<Arc<TaskHost>>, owner: TaskOwner) -> Self {
        Self {
            #[cfg(feature = "tasks")]
            changes: host.as_ref().map(|h| h.watch()),
            #[cfg(feature = "tasks")]
            host,
            #[cfg(feature = "tasks")]
            owner,
            #[cfg(feature = "tasks")]
            watched: Default::default(),
        }
    }

    /// Keeps of `ids` the tasks the caller may see, and watches them.
    #[cfg_attr(not(feature = "tasks"), allow(unused_variables, clippy::ptr_arg))]
    pub(crate) async fn accept(&mut self, ids: &mut Vec<String>) {
        #[cfg(feature = "tasks")]
        if let Some(host) = &self.host {
            let mut accepted = Vec::new();
            for task in ids.drain(..) {
                if host.get(&self.owner, &task).await.is_ok() {
                    self.watched.insert(task.clone());
                    accepted.push(task);
                }
            }
            *ids = accepted;
        }
    }

    /// The next task that changed, of all the host's (never, without a host).
    pub(crate) async fn next(&mut self) -> Option<String> {
        #[cfg(feature = "tasks")]
        if let Some(changes) = self.changes.as_mut() {
            return changes.recv().await.ok();
        }
        std::future::pending().await
    }

    /// The params of `notifications/tasks` for `task`'s change, tagged with the
    /// subscription `id`: `None` when the stream does not watch it (or it cannot be
    /// read).
    #[cfg_attr(not(feature = "tasks"), allow(unused_variables))]
    pub(crate) async fn notification(
        &self,
        task: Option<String>,
        id: &modelctx_types::RequestId,
    ) -> Result<Option<Box<RawValue>>, ErrorData> {
        #[cfg(feature = "tasks")]
        if let (Some(task), Some(host)) = (task, &self.host)
            && self.watched.contains(&task)
            && let Ok(detailed) = host.detailed(&self.owner, &task).await
        {
            let mut params = serde_json::to_value(&detailed)
                .map_err(|e| ErrorData::internal_error(e.to_string()))?;
            params["_meta"] = serde_json::json!({ modelctx_types::Meta::SUBSCRIPTION_ID: id });
            return to_raw(&params)
                .map(Some)
                .map_err(|e| ErrorData::internal_error(e.to_string()));
        }
        Ok(None)
    }
}

/// Serves `tasks/get`, `tasks/update` and `tasks/cancel` of the tasks extension, for a
/// request that declared it (else `-32021`, before the task is looked up).
#[cfg(feature = "tasks")]
pub(crate) fn serve_extension(
    host: Arc<TaskHost>,
    method: &str,
    params: Option<Box<RawValue>>,
    owner: TaskOwner,
    cx: &Context,
) -> Answer {
    if !declares_extension(cx) {
        let error = missing_extension();
        return Box::pin(async move { Err(error) });
    }
    let method = method.to_owned();
    Box::pin(async move {
        let encode = |e: serde_json::Error| ErrorData::internal_error(e.to_string());
        match method.as_str() {
            "tasks/get" => {
                let p = parse_params::<ext_tasks::TaskIdParams>(params.as_deref())?;
                let task = host.detailed(&owner, &p.task_id).await?;
                to_raw(&ext_tasks::GetTaskResult::new(task)).map_err(encode)
            }
            "tasks/update" => {
                let p = parse_params::<UpdateProbe>(params.as_deref())?;
                host.answer(&owner, &p.task_id, p.input_responses).await?;
                to_raw(&ext_tasks::Acknowledgement::new()).map_err(encode)
            }
            _ => {
                let p = parse_params::<ext_tasks::TaskIdParams>(params.as_deref())?;
                host.cancel_quietly(&owner, &p.task_id).await?;
                to_raw(&ext_tasks::Acknowledgement::new()).map_err(encode)
            }
        }
    })
}

/// `tasks/update` params read leniently: an answer under a key the task never issued
/// may be anything, and is ignored.
#[cfg(feature = "tasks")]
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct UpdateProbe {
    task_id: String,
    #[serde(default)]
    input_responses: std::collections::BTreeMap<String, serde_json::Value>,
}
