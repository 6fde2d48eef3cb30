//! Task-augmented `tools/call` and the task methods (protocol 2025-11-25): the server
//! as the receiver of tasks, on `modelctx_session::tasks`.

use std::sync::Arc;

use futures::future::BoxFuture;
use modelctx_session::parse_params;
use modelctx_session::tasks::{TaskHost, TaskOwner};
use modelctx_types::{
    CreateTaskResult, ErrorCode, ErrorData, RawValue, TaskMetadata, TaskSupport, to_raw,
};

use crate::context::Context;
use crate::registry::lookup;
use crate::session::SessionState;

type Answer = BoxFuture<'static, Result<Box<RawValue>, ErrorData>>;

/// Who is asking, as tasks are bound: the authenticated caller, else the session (none
/// on a transport without lasting sessions).
pub(crate) fn owner(cx: &modelctx_session::RequestContext, session: &SessionState) -> TaskOwner {
    let extensions = cx.extensions();
    let principal = extensions
        .get::<modelctx_transport::Principal>()
        .map(|p| p.id().to_owned());
    let session = if extensions
        .get::<modelctx_transport::Sessionless>()
        .is_some()
    {
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
pub(crate) fn call_tool(
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
        let support = lookup(&cx.server.registry.tools, &probe.name).map(|t| {
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
fn is_error(raw: &RawValue) -> bool {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Flag {
        #[serde(default)]
        is_error: bool,
    }
    serde_json::from_str::<Flag>(raw.get()).is_ok_and(|f| f.is_error)
}
