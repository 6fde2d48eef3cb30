//! The receiver side of tasks: creating them, running the side channel, and answering
//! `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel`.
//!
//! Ids are 128 bits from the operating system's CSPRNG. `tasks/result` drains the task's
//! queued requests in order over *its own* peer (so streamable HTTP carries them on that
//! POST's stream), waiting on a per-task `watch` version bumped at every change (subscribe,
//! then read: no lost wake-up). The tasks extension (2026-07-28) uses the same host:
//! `TaskRun::ask_input` waits under a key, unique over the task's life, among the task's
//! `inputRequests`; `TaskHost::answer` (`tasks/update`) removes answered keys before it
//! returns (the next `tasks/get` must not show them) and moves the task back to `working`
//! when none is left.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use futures_core::future::BoxFuture;
use modelctx_types::ext_tasks;
use modelctx_types::{
    CancelTaskRequestParams, CancelTaskResult, ErrorData, GetTaskPayloadRequestParams,
    GetTaskRequestParams, GetTaskResult, InputRequest, InputRequests, ListTasksResult, Meta,
    PaginatedRequestParams, RawValue, RelatedTaskMetadata, Task, TaskMetadata, TaskStatus,
    TaskStatusNotification, TaskStatusNotificationParams,
};
use serde_json::Value;
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::service::parse_params;
use crate::{Peer, RequestOptions, SessionError};
use modelctx_store::{
    TaskOutcome, TaskOwner, TaskPage, TaskRecord, TaskStore, TaskUpdate, UpdateError, timestamp,
};

/// The shortest and longest [`TaskConfig::lease`].
const MIN_LEASE: Duration = Duration::from_millis(30);
const MAX_LEASE: Duration = Duration::from_secs(86_400);

/// How soon a renewal the store did not take is tried again.
const RENEW_RETRY: Duration = Duration::from_secs(1);

/// The end of a lease of `lease` taken now.
fn lease_end(lease: Duration) -> SystemTime {
    let now = SystemTime::now();
    now.checked_add(lease).unwrap_or(now)
}

/// How a task host treats the tasks it creates.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TaskConfig {
    /// The retention of a task whose requestor asked for none (default one hour).
    pub default_ttl: Duration,
    /// The longest retention granted; longer requests are cut to it (default one day).
    pub max_ttl: Duration,
    /// The polling interval suggested to requestors (default one second).
    pub poll_interval: Duration,
    /// Tasks per `tasks/list` page (default 50).
    pub page_size: usize,
    /// The tasks extension (2026-07-28), where the server decides which calls become
    /// tasks: how long a call that may become one runs before it does (default 100 ms;
    /// zero: at once). A call that answers sooner answers directly.
    pub sync_window: Duration,
    /// In a task store shared by several processes: how long the process running a
    /// task vouches for it without renewing (it renews every third of it, and within a
    /// second after a renewal the store did not take). A task whose lease passes
    /// without renewal lost its process and is failed as interrupted when next read
    /// (default 30 s). The lease's end is the renewing process's clock, read by the
    /// others: their clocks must agree to well within a third of it. Unused with a
    /// store of one process.
    pub lease: Duration,
}

impl Default for TaskConfig {
    fn default() -> Self {
        Self {
            default_ttl: Duration::from_secs(3600),
            max_ttl: Duration::from_secs(86_400),
            poll_interval: Duration::from_secs(1),
            page_size: 50,
            sync_window: Duration::from_millis(100),
            lease: Duration::from_secs(30),
        }
    }
}

impl TaskConfig {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    modelctx_types::__setters! {
        /// Sets the retention of tasks whose requestor asked for none.
        default_ttl(ttl: Duration) { default_ttl = ttl }

        /// Sets the longest retention granted.
        max_ttl(ttl: Duration) { max_ttl = ttl }

        /// Sets the polling interval suggested to requestors.
        poll_interval(interval: Duration) { poll_interval = interval }

        /// Sets how long a call that may become a task of the tasks extension runs before
        /// it does.
        sync_window(window: Duration) { sync_window = window }

        /// Sets how long the process running a task vouches for it in a shared store
        /// without renewing (see [`TaskConfig::lease`]; from 30 ms to a day).
        lease(lease: Duration) { lease = lease.clamp(MIN_LEASE, MAX_LEASE) }
    }

    /// The lease as used: within [`MIN_LEASE`, `MAX_LEASE`] whatever the field says.
    fn lease_in_use(&self) -> Duration {
        self.lease.clamp(MIN_LEASE, MAX_LEASE)
    }

    modelctx_types::__setters! {
        /// Sets the number of tasks per `tasks/list` page.
        page_size(size: usize) { page_size = size.max(1) }
    }
}

/// A request a running task sends its requestor, waiting in the task's side channel
/// for a `tasks/result` to carry it.
struct Side {
    method: Cow<'static, str>,
    params: Option<Box<RawValue>>,
    reply: oneshot::Sender<Result<Box<RawValue>, SessionError>>,
}

/// What this process knows of a task it runs, beyond the store.
struct Live {
    /// Bumped at every change a `tasks/result` waiter must look at.
    version: watch::Sender<u64>,
    queue: Mutex<VecDeque<Side>>,
    /// Side requests sent and not answered yet.
    waiting: AtomicUsize,
    /// Fires on `tasks/cancel`.
    cancelled: CancellationToken,
    /// The tasks extension (2026-07-28): requests the task waits on, by key, until a
    /// `tasks/update` answers them.
    inputs: Mutex<Inputs>,
    /// Where `notifications/tasks/status` go: the creating session.
    notify: Option<Peer>,
}

/// A task's keyed input requests (the tasks extension).
#[derive(Default)]
struct Inputs {
    /// Outstanding, in the order asked.
    waiting: Vec<(String, InputRequest, oneshot::Sender<Value>)>,
    /// Every key used so far: a key names one request over the task's lifetime.
    used: std::collections::HashSet<String>,
    /// Numbers unnamed keys.
    next: u64,
}

impl Live {
    fn inputs(&self) -> std::sync::MutexGuard<'_, Inputs> {
        self.inputs.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn bump(&self) {
        self.version.send_modify(|v| *v = v.wrapping_add(1));
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, VecDeque<Side>> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The receiver side of tasks (protocol 2025-11-25), shared by the server and the
/// client roles: it creates tasks in a [`TaskStore`], runs their side channel (requests
/// a running task makes of its requestor wait, in order, until a `tasks/result` call
/// carries them), and answers the four task methods for a requestor.
pub struct TaskHost {
    store: Arc<dyn TaskStore>,
    config: TaskConfig,
    live: Mutex<HashMap<String, Arc<Live>>>,
    /// The id of every task whose state changed, for watchers (the extension's
    /// `notifications/tasks`).
    changes: tokio::sync::broadcast::Sender<String>,
}

modelctx_types::__debug_shows!(TaskHost, |v| {
    config: &v.config,
    running: &v.lock_live().len(),
    ..
});

/// The four methods a task host answers.
pub const TASK_METHODS: [&str; 4] = ["tasks/get", "tasks/result", "tasks/list", "tasks/cancel"];

impl TaskHost {
    /// A host keeping its tasks in `store`.
    pub fn new(store: Arc<dyn TaskStore>, config: TaskConfig) -> Arc<Self> {
        Arc::new(Self {
            store,
            config,
            live: Mutex::new(HashMap::new()),
            changes: tokio::sync::broadcast::channel(256).0,
        })
    }

    /// The ids of tasks whose state changes from now on (a watcher that falls behind
    /// by more than 256 changes misses some and is told so by the receiver).
    pub fn watch(&self) -> tokio::sync::broadcast::Receiver<String> {
        self.changes.subscribe()
    }

    /// The host's configuration.
    pub fn config(&self) -> &TaskConfig {
        &self.config
    }

    fn lock_live(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Live>>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Drops task `id`'s live state (the table gives its room back as it drains).
    fn forget_live(&self, id: &str) {
        let mut live = self.lock_live();
        live.remove(id);
        modelctx_store::table::shrink_drained(&mut *live);
    }

    fn live(&self, id: &str) -> Option<Arc<Live>> {
        self.lock_live().get(id).cloned()
    }

    /// Creates a task for a request of `method` that asked for `requested`, owned by
    /// `owner`; status notifications go to `notify`. The returned [`TaskRun`] is the
    /// handle the work reports through; the task starts `working`.
    pub async fn create(
        self: &Arc<Self>,
        owner: TaskOwner,
        method: &str,
        requested: &TaskMetadata,
        notify: Option<Peer>,
    ) -> Result<TaskRun, ErrorData> {
        self.create_with(owner, method, requested, notify, CancellationToken::new())
            .await
    }

    /// [`TaskHost::create`], with the token that `tasks/cancel` fires (for work that
    /// already watches it).
    pub async fn create_with(
        self: &Arc<Self>,
        owner: TaskOwner,
        method: &str,
        requested: &TaskMetadata,
        notify: Option<Peer>,
        cancelled: CancellationToken,
    ) -> Result<TaskRun, ErrorData> {
        let id = new_task_id()?;
        let ttl = requested
            .ttl
            .map_or(self.config.default_ttl, Duration::from_millis)
            .min(self.config.max_ttl);
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        let now = timestamp(SystemTime::now());
        let poll = u64::try_from(self.config.poll_interval.as_millis()).unwrap_or(u64::MAX);
        let task = Task::new(&id, TaskStatus::Working, &now, &now, Some(ttl_ms))
            .with_status_message("The operation is now in progress.")
            .with_poll_interval(poll);
        let mut record = TaskRecord::new(task.clone(), owner, method);
        let shared = self.store.is_shared();
        if shared {
            record.lease_until = Some(lease_end(self.config.lease_in_use()));
        }
        self.store.insert(record).await?;
        let live = Arc::new(Live {
            version: watch::channel(0).0,
            queue: Mutex::new(VecDeque::new()),
            waiting: AtomicUsize::new(0),
            cancelled,
            inputs: Mutex::new(Inputs::default()),
            notify: notify.as_ref().map(Peer::detached),
        });
        self.lock_live().insert(id.clone(), live.clone());
        if shared {
            self.keep_leased(&id, &live);
        }
        Ok(TaskRun {
            host: self.clone(),
            id,
            task,
            live,
            finished: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Renews task `id`'s lease every third of it while it runs here: until the task
    /// is terminal (the renewal is refused) or its live state is gone.
    fn keep_leased(self: &Arc<Self>, id: &str, live: &Arc<Live>) {
        let host = Arc::downgrade(self);
        let live = Arc::downgrade(live);
        let id = id.to_owned();
        let lease = self.config.lease_in_use();
        tokio::spawn(async move {
            let mut next = lease / 3;
            loop {
                tokio::time::sleep(next).await;
                let (Some(host), Some(run)) = (host.upgrade(), live.upgrade()) else {
                    return;
                };
                let until = lease_end(lease);
                next = match host.store.update(&id, TaskUpdate::Renew { until }).await {
                    Ok(_) => lease / 3,
                    // Terminal: finished here, or cancelled or interrupted elsewhere,
                    // when whatever still runs here stops (its result would be refused).
                    Err(UpdateError::Illegal(status)) => {
                        if matches!(status, TaskStatus::Cancelled | TaskStatus::Failed) {
                            run.cancelled.cancel();
                        }
                        return;
                    }
                    // The store did not answer (or lost the task): soon again, so that a
                    // short outage does not let the lease lapse.
                    Err(_) => RENEW_RETRY.min(lease / 3),
                };
            }
        });
    }

    async fn record(&self, requestor: &TaskOwner, id: &str) -> Result<TaskRecord, ErrorData> {
        match self.store.get(id).await {
            Some(record) if requestor.may_access(&record.owner) => {
                Ok(self.vouched_for(id, record).await)
            }
            _ => Err(ErrorData::invalid_params(format!(
                "Failed to retrieve task: Task not found: {id}"
            ))),
        }
    }

    /// `record` as it stands, or, when its lease has passed and it does not run here
    /// (the process running it stopped), failed as interrupted.
    async fn vouched_for(&self, id: &str, record: TaskRecord) -> TaskRecord {
        let lapsed = record
            .lease_until
            .is_some_and(|until| until <= SystemTime::now());
        if !lapsed || record.task.status.is_terminal() || self.live(id).is_some() {
            return record;
        }
        match self.store.update(id, TaskUpdate::Interrupt).await {
            Ok(interrupted) => {
                let _ = self.changes.send(id.to_owned());
                interrupted
            }
            // Renewed or finished meanwhile, or gone: as the store has it now.
            Err(_) => self.store.get(id).await.unwrap_or(record),
        }
    }

    async fn update(&self, id: &str, update: TaskUpdate) -> Result<Task, ErrorData> {
        let record = self
            .store
            .update(id, update)
            .await
            .map_err(|e| e.to_error_data())?;
        let live = self.live(id);
        if let Some(live) = &live {
            live.bump();
            if let Some(peer) = &live.notify {
                // Optional by the spec: a requestor that cannot take it loses nothing.
                let params = TaskStatusNotificationParams::new(record.task.clone());
                let _ = peer.notify::<TaskStatusNotification>(params).await;
            }
        }
        if record.task.status.is_terminal() {
            self.forget_live(id);
        }
        let _ = self.changes.send(id.to_owned());
        Ok(record.task)
    }

    /// `tasks/get`: the task as it stands.
    pub async fn get(&self, requestor: &TaskOwner, id: &str) -> Result<Task, ErrorData> {
        Ok(self.record(requestor, id).await?.task)
    }

    /// `tasks/list`: the requestor's tasks, a page at a time.
    pub async fn list(
        &self,
        requestor: &TaskOwner,
        cursor: Option<&str>,
    ) -> Result<ListTasksResult, ErrorData> {
        let mut page = self
            .store
            .list(requestor, cursor, self.config.page_size)
            .await?;
        if requestor.is_anonymous() {
            // Whatever the store: a requestor without principal or session owns no
            // listable task (its cursor was still checked).
            page = TaskPage::default();
        }
        if self.store.is_shared() {
            // A task still running on the list may have lost its process: as `tasks/get`
            // would show it (a read per such task not running here, all at once, in a
            // store several processes share).
            let checks = page
                .tasks
                .iter_mut()
                .filter(|task| !task.status.is_terminal() && self.live(&task.task_id).is_none());
            futures::future::join_all(checks.map(|task| async move {
                if let Some(record) = self.store.get(&task.task_id).await {
                    *task = self.vouched_for(&task.task_id, record).await.task;
                }
            }))
            .await;
        }
        let mut result = ListTasksResult::new(page.tasks);
        if let Some(next) = page.next_cursor {
            result = result.with_next_cursor(next);
        }
        Ok(result)
    }

    /// `tasks/cancel`: a running task becomes `cancelled` (a terminal one is `-32602`);
    /// what its side channel still holds is dropped. The work itself is told through
    /// [`TaskRun::cancellation`] and may go on; its outcome no longer changes the task.
    pub async fn cancel(&self, requestor: &TaskOwner, id: &str) -> Result<Task, ErrorData> {
        self.record(requestor, id).await?;
        let live = self.live(id);
        let task = self
            .update(id, TaskUpdate::Cancel)
            .await
            .map_err(|e| ErrorData::invalid_params(format!("Cannot cancel task: {}", e.message)))?;
        if let Some(live) = live {
            live.cancelled.cancel();
            // Dropping a queued request fails its asker, which is told of the
            // cancellation anyway.
            live.queue().clear();
            live.bump();
        }
        Ok(task)
    }

    /// `tasks/result`: waits until the task is terminal and answers what the request
    /// would have answered, its result tagged with the task; meanwhile the side
    /// channel's requests travel, in order, over `peer` (related to the `tasks/result`
    /// request, so streamable HTTP carries them on its stream) and their answers go
    /// back to the waiting work.
    pub async fn result(
        &self,
        requestor: &TaskOwner,
        id: &str,
        peer: &Peer,
    ) -> Result<Box<RawValue>, ErrorData> {
        self.record(requestor, id).await?;
        let mut inflight = FuturesUnordered::new();
        loop {
            let live = self.live(id);
            let mut changes = live.as_ref().map(|l| {
                let mut rx = l.version.subscribe();
                rx.borrow_and_update();
                rx
            });
            if let Some(live) = &live {
                let sides: Vec<Side> = live.queue().drain(..).collect();
                for side in sides {
                    inflight.push(forward(peer.clone(), side));
                }
            }
            let record = self.record(requestor, id).await?;
            if record.task.status.is_terminal() {
                let outcome = record.outcome.unwrap_or_else(|| {
                    Err(ErrorData::internal_error(
                        "The task ended without a result.",
                    ))
                });
                return outcome.and_then(|raw| tag_result(&raw, id));
            }
            let poll = self.config.poll_interval;
            tokio::select! {
                changed = async {
                    match changes.as_mut() {
                        Some(rx) => rx.changed().await.is_ok(),
                        // Not run here (another process's, or this one restarted):
                        // the store is all there is to watch.
                        None => { tokio::time::sleep(poll).await; true }
                    }
                } => {
                    // A closed channel means the run finished: the store says how.
                    let _ = changed;
                }
                Some(()) = inflight.next(), if !inflight.is_empty() => {}
                () = peer.closed() => {
                    return Err(ErrorData::internal_error("the session closed"));
                }
            }
        }
    }

    /// `tasks/get` of the tasks extension: the task with what its status carries —
    /// the outstanding input requests while `input_required`, the result once
    /// `completed`, the error once `failed`.
    pub async fn detailed(
        &self,
        requestor: &TaskOwner,
        id: &str,
    ) -> Result<ext_tasks::DetailedTask, ErrorData> {
        let record = self.record(requestor, id).await?;
        let mut detailed =
            ext_tasks::DetailedTask::new(ext_tasks::Task::from_utility(&record.task));
        match record.task.status {
            TaskStatus::InputRequired => {
                let requests: InputRequests = self
                    .live(id)
                    .map(|live| {
                        live.inputs()
                            .waiting
                            .iter()
                            .map(|(key, request, _)| (key.clone(), request.clone()))
                            .collect()
                    })
                    .unwrap_or_default();
                detailed.input_requests = Some(requests);
            }
            TaskStatus::Completed => {
                if let Some(Ok(raw)) = &record.outcome {
                    detailed.result = serde_json::from_str(raw.get()).ok();
                }
            }
            TaskStatus::Failed => {
                detailed.error = match &record.outcome {
                    Some(Err(error)) => serde_json::to_value(error).ok(),
                    // A result counted as a failure (a 2025-era task): its error is
                    // the result itself.
                    Some(Ok(raw)) => serde_json::from_str(raw.get()).ok(),
                    None => None,
                };
            }
            _ => {}
        }
        Ok(detailed)
    }

    /// `tasks/update` of the tasks extension: answers the task's outstanding input
    /// requests by key with the answers as sent (such as an
    /// [`InputResponses`](modelctx_types::InputResponses)); keys not outstanding (never
    /// issued, already answered) are ignored, and an answer that does not decode fails
    /// the request that waited for it. The answered keys are gone from the task before
    /// this returns.
    pub async fn answer(
        &self,
        requestor: &TaskOwner,
        id: &str,
        responses: impl IntoIterator<Item = (String, Value)>,
    ) -> Result<(), ErrorData> {
        self.record(requestor, id).await?;
        let Some(live) = self.live(id) else {
            return Ok(());
        };
        let mut answered = Vec::new();
        let idle = {
            let mut inputs = live.inputs();
            for (key, response) in responses {
                if let Some(at) = inputs.waiting.iter().position(|(k, _, _)| *k == key) {
                    let (_, _, reply) = inputs.waiting.remove(at);
                    answered.push((reply, response));
                }
            }
            inputs.waiting.is_empty()
        };
        if idle && !answered.is_empty() && !live.cancelled.is_cancelled() {
            // Observable at once: the next tasks/get no longer shows input_required.
            let to = TaskUpdate::Status {
                status: TaskStatus::Working,
                message: Some("The operation is now in progress.".to_owned()),
            };
            let _ = self.update(id, to).await;
        }
        for (reply, response) in answered {
            let _ = reply.send(response);
        }
        Ok(())
    }

    /// `tasks/cancel` of the tasks extension: like [`TaskHost::cancel`], but a task
    /// that already ended is acknowledged too (cancelling is idempotent there); only
    /// an unknown task is `-32602`.
    pub async fn cancel_quietly(&self, requestor: &TaskOwner, id: &str) -> Result<(), ErrorData> {
        let record = self.record(requestor, id).await?;
        if record.task.status.is_terminal() {
            return Ok(());
        }
        match self.cancel(requestor, id).await {
            Ok(_) => Ok(()),
            // It ended meanwhile.
            Err(_) if self.record(requestor, id).await.is_ok() => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// Answers `method` if it is one of the four task methods, for `requestor`, with
    /// `peer` related to the request (for `tasks/result`'s side channel).
    pub fn serve(
        self: &Arc<Self>,
        method: &str,
        params: Option<Box<RawValue>>,
        requestor: TaskOwner,
        peer: Peer,
    ) -> Option<BoxFuture<'static, Result<Box<RawValue>, ErrorData>>> {
        let host = self.clone();
        let answer: BoxFuture<'static, Result<Box<RawValue>, ErrorData>> = match method {
            "tasks/get" => Box::pin(async move {
                let p = parse_params::<GetTaskRequestParams>(params.as_deref())?;
                let task = host.get(&requestor, &p.task_id).await?;
                to_raw(&GetTaskResult::new(task))
            }),
            "tasks/result" => Box::pin(async move {
                let p = parse_params::<GetTaskPayloadRequestParams>(params.as_deref())?;
                host.result(&requestor, &p.task_id, &peer).await
            }),
            "tasks/list" => Box::pin(async move {
                let p = match params.as_deref() {
                    None => PaginatedRequestParams::default(),
                    Some(raw) => parse_params::<PaginatedRequestParams>(Some(raw))?,
                };
                let cursor = p.cursor.as_ref().map(|c| c.0.as_str());
                to_raw(&host.list(&requestor, cursor).await?)
            }),
            "tasks/cancel" => Box::pin(async move {
                let p = parse_params::<CancelTaskRequestParams>(params.as_deref())?;
                let task = host.cancel(&requestor, &p.task_id).await?;
                to_raw(&CancelTaskResult::new(task))
            }),
            _ => return None,
        };
        Some(answer)
    }
}

/// Sends one side-channel request and hands its answer back to the waiting work.
async fn forward(peer: Peer, side: Side) {
    let answer = peer
        .start_raw(side.method, side.params, RequestOptions::default())
        .await;
    let _ = side.reply.send(answer);
}

/// The running side of one task: the work reports through it, and its side-channel
/// requests go through it.
pub struct TaskRun {
    host: Arc<TaskHost>,
    id: String,
    task: Task,
    live: Arc<Live>,
    finished: std::sync::atomic::AtomicBool,
}

impl fmt::Debug for TaskRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskRun").field("id", &self.id).finish()
    }
}

impl TaskRun {
    /// The task id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The task as created (what the `CreateTaskResult` carries).
    pub fn task(&self) -> &Task {
        &self.task
    }

    /// Fires when the requestor cancels the task with `tasks/cancel`.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.live.cancelled
    }

    /// Asks the requestor something on the task's behalf (an elicitation, a sampling
    /// request): the request, tagged with the task, waits in the side channel until a
    /// `tasks/result` call carries it, and the task is `input_required` meanwhile.
    /// Fails when the task is cancelled first.
    pub async fn ask(
        &self,
        method: impl Into<Cow<'static, str>>,
        params: Option<Box<RawValue>>,
    ) -> Result<Box<RawValue>, SessionError> {
        if self.live.cancelled.is_cancelled() {
            return Err(cancelled());
        }
        let params = tag_params(params, &self.id).map_err(SessionError::protocol)?;
        let (reply, answer) = oneshot::channel();
        self.live.queue().push_back(Side {
            method: method.into(),
            params: Some(params),
            reply,
        });
        if self.live.waiting.fetch_add(1, Ordering::AcqRel) == 0 {
            let to = TaskUpdate::Status {
                status: TaskStatus::InputRequired,
                message: Some("The task is waiting for input.".to_owned()),
            };
            let _ = self.host.update(&self.id, to).await;
        }
        self.live.bump();
        let answer = tokio::select! {
            answer = answer => answer.unwrap_or_else(|_| Err(cancelled())),
            () = self.live.cancelled.cancelled() => Err(cancelled()),
        };
        if self.live.waiting.fetch_sub(1, Ordering::AcqRel) == 1
            && !self.live.cancelled.is_cancelled()
        {
            let to = TaskUpdate::Status {
                status: TaskStatus::Working,
                message: Some("The operation is now in progress.".to_owned()),
            };
            let _ = self.host.update(&self.id, to).await;
        }
        answer
    }

    /// Asks the requestor for input on the task's behalf, the tasks extension's way
    /// (2026-07-28): the request waits under `key` (a fresh `input-N` when `None` or
    /// when the key was used before) among the task's `inputRequests`, the task is
    /// `input_required` meanwhile, and the answer a `tasks/update` brings is returned.
    /// Fails when the task is cancelled first.
    pub async fn ask_input(
        &self,
        key: Option<&str>,
        request: InputRequest,
    ) -> Result<Value, SessionError> {
        if self.live.cancelled.is_cancelled() {
            return Err(cancelled());
        }
        let (reply, answer) = oneshot::channel();
        let first = {
            let mut inputs = self.live.inputs();
            let key = match key {
                Some(key) if !inputs.used.contains(key) => key.to_owned(),
                _ => loop {
                    inputs.next += 1;
                    let candidate = match key {
                        Some(key) => format!("{key}-{}", inputs.next),
                        None => format!("input-{}", inputs.next),
                    };
                    if !inputs.used.contains(&candidate) {
                        break candidate;
                    }
                },
            };
            inputs.used.insert(key.clone());
            inputs.waiting.push((key, request, reply));
            inputs.waiting.len() == 1
        };
        if first {
            let to = TaskUpdate::Status {
                status: TaskStatus::InputRequired,
                message: Some("The task is waiting for input.".to_owned()),
            };
            let _ = self.host.update(&self.id, to).await;
        }
        let answer = tokio::select! {
            answer = answer => answer.map_err(|_| cancelled()),
            () = self.live.cancelled.cancelled() => Err(cancelled()),
        };
        // `answer` moved the task back to `working` when the last input landed.
        answer
    }

    /// [`TaskRun::ask`] with typed params and result.
    pub async fn request<M: modelctx_types::RequestMethod>(
        &self,
        params: M::Params,
    ) -> Result<M::Result, SessionError> {
        let raw = serde_json::value::to_raw_value(&params)
            .map_err(|e| SessionError::refused(format!("params do not serialise: {e}")))?;
        let answer = self.ask(M::METHOD, Some(raw)).await?;
        serde_json::from_str(answer.get()).map_err(|e| {
            SessionError::invalid_result(format!(
                "the answer to {} does not decode: {e}",
                M::METHOD
            ))
        })
    }

    /// Records the work's outcome: `completed`, or `failed` when `failed` (a JSON-RPC
    /// error, or a tool result with `isError`). A cancelled task stays cancelled.
    pub async fn finish(&self, outcome: TaskOutcome, failed: bool) {
        self.finished.store(true, Ordering::Release);
        let failed = failed || outcome.is_err();
        let _ = self
            .host
            .update(&self.id, TaskUpdate::Finish { outcome, failed })
            .await;
        self.host.forget_live(&self.id);
        self.live.bump();
    }
}

impl Drop for TaskRun {
    fn drop(&mut self) {
        if *self.finished.get_mut() {
            return;
        }
        // The work ended without an outcome (it panicked, or its future was dropped):
        // the task fails rather than stay `working` until it expires.
        let host = self.host.clone();
        let id = self.id.clone();
        let live = self.live.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let outcome = Err(ErrorData::internal_error(
                    "the work of the task ended without an answer",
                ));
                let _ = host
                    .update(
                        &id,
                        TaskUpdate::Finish {
                            outcome,
                            failed: true,
                        },
                    )
                    .await;
                host.forget_live(&id);
                live.bump();
            });
        }
    }
}

/// What an ask gets when the task is cancelled, or its queued request is dropped.
fn cancelled() -> SessionError {
    SessionError::cancelled()
}

/// 128 bits from the operating system's CSPRNG, hex: unguessable, so a task without
/// an owner stays private to whoever holds its id.
fn new_task_id() -> Result<String, ErrorData> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|_| ErrorData::internal_error("no randomness available for a task id"))?;
    let hex = base16ct::lower::encode_string(&bytes);
    let (a, b, c, d, e) = (
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..],
    );
    Ok(format!("{a}-{b}-{c}-{d}-{e}"))
}

fn to_raw<T: serde::Serialize>(value: &T) -> Result<Box<RawValue>, ErrorData> {
    serde_json::value::to_raw_value(value).map_err(|e| ErrorData::internal_error(e.to_string()))
}

fn with_related(value: &mut serde_json::Value, id: &str) {
    let Some(object) = value.as_object_mut() else {
        return;
    };
    let meta = object
        .entry("_meta")
        .or_insert_with(|| serde_json::Value::Object(serde_json::Map::new()));
    if let Some(meta) = meta.as_object_mut() {
        let mut tag = Meta::new();
        RelatedTaskMetadata::new(id).insert_into(&mut tag);
        if let Some(v) = tag.get(RelatedTaskMetadata::META_KEY) {
            meta.insert(RelatedTaskMetadata::META_KEY.to_owned(), v.clone());
        }
    }
}

/// A request's params with `_meta["io.modelcontextprotocol/related-task"]` naming `id`.
fn tag_params(params: Option<Box<RawValue>>, id: &str) -> Result<Box<RawValue>, ErrorData> {
    let mut value = match params {
        Some(raw) => serde_json::from_str::<serde_json::Value>(raw.get())
            .map_err(|e| ErrorData::internal_error(e.to_string()))?,
        None => serde_json::Value::Object(serde_json::Map::new()),
    };
    with_related(&mut value, id);
    to_raw(&value)
}

/// A `tasks/result` answer: the stored result with the related-task `_meta`.
fn tag_result(raw: &RawValue, id: &str) -> Result<Box<RawValue>, ErrorData> {
    let mut value = serde_json::from_str::<serde_json::Value>(raw.get())
        .map_err(|e| ErrorData::internal_error(e.to_string()))?;
    with_related(&mut value, id);
    to_raw(&value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_ids_are_random_and_uuid_shaped() {
        let a = new_task_id().unwrap();
        let b = new_task_id().unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert!(a.split('-').map(str::len).eq([8, 4, 4, 4, 12]), "{a}");
        // 128 bits: 32 hex digits, and no two of many ids alike.
        let ids: std::collections::HashSet<String> =
            (0..1000).map(|_| new_task_id().unwrap()).collect();
        assert_eq!(ids.len(), 1000);
        for id in &ids {
            let digits: String = id.chars().filter(|c| *c != '-').collect();
            assert_eq!(digits.len(), 32);
            assert!(u128::from_str_radix(&digits, 16).is_ok());
        }
    }

    #[test]
    fn results_and_params_are_tagged_with_the_task() {
        let raw = RawValue::from_string(r#"{"content":[],"_meta":{"k":1}}"#.into()).unwrap();
        let tagged: serde_json::Value =
            serde_json::from_str(tag_result(&raw, "t1").unwrap().get()).unwrap();
        assert_eq!(tagged["_meta"]["k"], 1);
        assert_eq!(
            tagged["_meta"][RelatedTaskMetadata::META_KEY]["taskId"],
            "t1"
        );
        let params: serde_json::Value =
            serde_json::from_str(tag_params(None, "t2").unwrap().get()).unwrap();
        assert_eq!(
            params["_meta"][RelatedTaskMetadata::META_KEY]["taskId"],
            "t2"
        );
    }
}
