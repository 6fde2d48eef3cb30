//! Tasks (protocol 2025-11-25) on the client: as the requestor of task-augmented
//! `tools/call`, and as the receiver of the server's task-augmented sampling and
//! elicitation requests, served by the same callbacks as plain ones.
//!
//! `ClientBuilder::tasks` wraps the sampling and elicitation handlers: a request with
//! `task` (from a server that creates tasks on the client) answers `CreateTaskResult` at
//! once and runs the same callback in the background; the four task methods are answered
//! from the client's own `TaskHost`. `call_tool_as_task` and `list_tasks` are the 2025
//! requestor API and are refused in the 2026 era, where the server decides (see
//! `stateless`).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use modelctx_session::tasks::{
    InMemoryTaskStore, TASK_METHODS, TaskConfig, TaskHandle, TaskHost, TaskOwner, start_task,
};
use modelctx_session::{RequestOptions, SessionError};
use modelctx_types::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientCapabilities,
    ClientTaskRequestsCapability, ClientTasksCapability, CreateTaskResult, Cursor,
    ElicitationTaskCapability, ErrorData, JsonObject, ListTasksRequest, ListTasksResult,
    PaginatedRequestParams, SamplingTaskCapability, Task, TaskMetadata, to_raw,
};

use crate::{Client, RequestFn};

const SAMPLING: &str = "sampling/createMessage";
const ELICITATION: &str = "elicitation/create";

/// Declares the client's `tasks` capability for the requests it has callbacks for.
pub(crate) fn declare(
    mut caps: ClientCapabilities,
    requests: &HashMap<Cow<'static, str>, Arc<RequestFn>>,
) -> ClientCapabilities {
    let mut kinds = ClientTaskRequestsCapability::default();
    if requests.contains_key(SAMPLING) && caps.sampling.is_some() {
        let mut sampling = SamplingTaskCapability::default();
        sampling.create_message = Some(JsonObject::new());
        kinds.sampling = Some(sampling);
    }
    if requests.contains_key(ELICITATION) && caps.elicitation.is_some() {
        let mut elicitation = ElicitationTaskCapability::default();
        elicitation.create = Some(JsonObject::new());
        kinds.elicitation = Some(elicitation);
    }
    let tasks = caps
        .tasks
        .get_or_insert_with(ClientTasksCapability::default);
    tasks.list.get_or_insert_with(JsonObject::new);
    tasks.cancel.get_or_insert_with(JsonObject::new);
    let requests_caps = tasks.requests.get_or_insert_with(Default::default);
    if kinds.sampling.is_some() {
        requests_caps.sampling = kinds.sampling;
    }
    if kinds.elicitation.is_some() {
        requests_caps.elicitation = kinds.elicitation;
    }
    caps
}

/// Wraps the sampling and elicitation handlers so that a request carrying `task` runs
/// as a task (declared kinds only: an undeclared one is answered plainly, its `task`
/// ignored), and installs the four task methods.
pub(crate) fn install(
    config: TaskConfig,
    declared: &ClientCapabilities,
    requests: &mut HashMap<Cow<'static, str>, Arc<RequestFn>>,
) {
    let host = TaskHost::new(Arc::new(InMemoryTaskStore::default()), config);
    // The client has one server: every task it runs is that server's, bound to one
    // fixed key so that the server's `tasks/list` shows them (a task without any owner
    // would be reachable by id only, and listed to no one).
    let owner = TaskOwner::new(Some("the-server"), None);
    let kinds = declared.tasks.as_ref().and_then(|t| t.requests.as_ref());
    let sampling = kinds
        .and_then(|k| k.sampling.as_ref())
        .is_some_and(|s| s.create_message.is_some());
    let elicitation = kinds
        .and_then(|k| k.elicitation.as_ref())
        .is_some_and(|e| e.create.is_some());
    for (method, on) in [(SAMPLING, sampling), (ELICITATION, elicitation)] {
        if !on {
            continue;
        }
        let Some(plain) = requests.get(method).cloned() else {
            continue;
        };
        let host = host.clone();
        let owner = owner.clone();
        let handler: Arc<RequestFn> = Arc::new(move |params, cx| {
            let plain = plain.clone();
            let host = host.clone();
            let owner = owner.clone();
            Box::pin(async move {
                #[derive(serde::Deserialize)]
                struct Probe {
                    task: Option<TaskMetadata>,
                }
                let task = params
                    .as_deref()
                    .and_then(|p| serde_json::from_str::<Probe>(p.get()).ok())
                    .and_then(|p| p.task);
                let Some(task) = task else {
                    return plain(params, cx).await;
                };
                let notify = Some(cx.peer().clone());
                let run = host.create(owner, method, &task, notify).await?;
                let created = CreateTaskResult::new(run.task().clone());
                let work = plain(params, cx);
                tokio::spawn(async move {
                    let outcome = work.await;
                    run.finish(outcome, false).await;
                });
                to_raw(&created).map_err(|e| ErrorData::internal_error(e.to_string()))
            })
        });
        requests.insert(Cow::Borrowed(method), handler);
    }
    for method in TASK_METHODS {
        let host = host.clone();
        let owner = owner.clone();
        let handler: Arc<RequestFn> = Arc::new(move |params, cx| {
            match host.serve(method, params, owner.clone(), cx.peer().clone()) {
                Some(answer) => answer,
                None => Box::pin(async move { Err(ErrorData::method_not_found(method)) }),
            }
        });
        requests.insert(Cow::Borrowed(method), handler);
    }
}

impl Client {
    /// Calls a tool as a task (protocol 2025-11-25): the server answers at once with
    /// the task, and the returned handle polls it ([`TaskHandle::status`],
    /// [`TaskHandle::statuses`]), waits for the tool's result ([`TaskHandle::result`],
    /// during which the server's elicitation and sampling requests for the task reach
    /// this client's callbacks) or cancels it.
    ///
    /// Refused locally when the server did not declare `tasks.requests.tools.call`; a
    /// tool whose `execution.taskSupport` forbids tasks is refused by the server
    /// (`-32601`).
    pub async fn call_tool_as_task(
        &self,
        params: CallToolRequestParams,
        task: TaskMetadata,
    ) -> Result<TaskHandle<CallToolResult>, SessionError> {
        let declared = self
            .server_capabilities()
            .tasks
            .as_ref()
            .and_then(|t| t.requests.as_ref())
            .and_then(|r| r.tools.as_ref())
            .is_some_and(|t| t.call.is_some());
        if !declared {
            return Err(SessionError::refused(
                "the server did not declare tasks.requests.tools.call",
            ));
        }
        start_task::<CallToolRequest>(self.peer(), params, task, RequestOptions::default()).await
    }

    /// The 2025-11-25 tasks utility is not in protocol 2026-07-28: there the server
    /// decides which calls become tasks (the tasks extension), and a client built with
    /// [`ClientBuilder::tasks`](crate::ClientBuilder::tasks) follows them to their
    /// result inside `call_tool`.
    fn refuse_in_the_stateless_era(&self) -> Result<(), SessionError> {
        if self.inner.stateless.is_some() {
            return Err(SessionError::refused(
                "protocol 2026-07-28 has no client-requested tasks: the server makes tasks of long calls, and call_tool follows them (ClientBuilder::tasks declares the tasks extension)",
            ));
        }
        Ok(())
    }

    /// The handle of a task this client created earlier (its id from a
    /// `CreateTaskResult` or [`Client::list_tasks`]), for a request whose result is `R`.
    pub fn task_handle<R: serde::de::DeserializeOwned + Send + 'static>(
        &self,
        task: Task,
    ) -> TaskHandle<R> {
        TaskHandle::new(self.peer().clone(), task)
    }

    /// One page of `tasks/list`. Refused locally when the server did not declare
    /// `tasks.list`.
    pub async fn list_tasks(
        &self,
        cursor: Option<Cursor>,
    ) -> Result<ListTasksResult, SessionError> {
        self.refuse_in_the_stateless_era()?;
        let listed = self
            .server_capabilities()
            .tasks
            .as_ref()
            .is_some_and(|t| t.list.is_some());
        if !listed {
            return Err(SessionError::refused(
                "the server did not declare tasks.list",
            ));
        }
        self.request::<ListTasksRequest>(cursor.map(PaginatedRequestParams::after))
            .await
    }

    /// Every task the server lists for this client, all pages (also walkable a page at
    /// a time with `client.pages::<ListTasksRequest>()`).
    pub async fn list_all_tasks(&self) -> Result<Vec<Task>, SessionError> {
        self.refuse_in_the_stateless_era()?;
        self.pages::<ListTasksRequest>().collect_all().await
    }
}
