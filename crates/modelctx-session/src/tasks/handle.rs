//! The requestor side of tasks: starting a task-augmented request and following it.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{self, Poll};
use std::time::Duration;

use futures_core::future::BoxFuture;
use futures_core::stream::{BoxStream, Stream};
use modelctx_types::{
    CancelTaskRequest, CancelTaskRequestParams, CreateTaskResult, GetTaskPayloadRequest,
    GetTaskPayloadRequestParams, GetTaskRequest, GetTaskRequestParams, RequestMethod, Task,
    TaskMetadata, TaskStatus,
};
use serde::de::DeserializeOwned;

use crate::{Peer, RequestOptions, SessionError};

/// Sends `M` augmented with `task` and returns the handle of the task the receiver
/// created. A receiver that answers with the plain result instead (it does not support
/// tasks for `M`) makes this an invalid-result error: check the receiver's `tasks`
/// capability first, as the role crates do.
pub async fn start_task<M: RequestMethod>(
    peer: &Peer,
    params: M::Params,
    task: TaskMetadata,
    options: RequestOptions,
) -> Result<TaskHandle<M::Result>, SessionError> {
    let mut value = serde_json::to_value(&params)
        .map_err(|e| SessionError::refused(format!("params do not serialise: {e}")))?;
    if value.is_null() {
        value = serde_json::Value::Object(serde_json::Map::new());
    }
    let Some(object) = value.as_object_mut() else {
        return Err(SessionError::refused(
            "params of a task request must be an object",
        ));
    };
    object.insert(
        "task".to_owned(),
        serde_json::to_value(&task).unwrap_or_default(),
    );
    let raw = serde_json::value::to_raw_value(&value)
        .map_err(|e| SessionError::refused(e.to_string()))?;
    let answer = peer
        .start_raw(Cow::Borrowed(M::METHOD), Some(raw), options)
        .await?;
    let created = serde_json::from_str::<CreateTaskResult>(answer.get()).map_err(|_| {
        SessionError::invalid_result(format!(
            "the receiver answered {} without creating a task",
            M::METHOD
        ))
    })?;
    Ok(TaskHandle::new(peer.clone(), created.task))
}

/// A task the peer runs for a request of ours: poll it, wait for its result, cancel
/// it. `R` is the result type of the request that created it.
pub struct TaskHandle<R> {
    peer: Peer,
    task: Task,
    result: PhantomData<fn() -> R>,
}

impl<R> fmt::Debug for TaskHandle<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskHandle")
            .field("task", &self.task)
            .finish()
    }
}

impl<R> Clone for TaskHandle<R> {
    fn clone(&self) -> Self {
        Self {
            peer: self.peer.clone(),
            task: self.task.clone(),
            result: PhantomData,
        }
    }
}

impl<R: DeserializeOwned + Send + 'static> TaskHandle<R> {
    /// The handle of task `task` run by `peer` (for a task whose id was kept from an
    /// earlier `CreateTaskResult` or `tasks/list`).
    pub fn new(peer: Peer, task: Task) -> Self {
        Self {
            peer,
            task,
            result: PhantomData,
        }
    }

    /// The task id.
    pub fn id(&self) -> &str {
        &self.task.task_id
    }

    /// The task as the receiver created it.
    pub fn created(&self) -> &Task {
        &self.task
    }

    /// `tasks/get`: the task as it stands now.
    pub async fn status(&self) -> Result<Task, SessionError> {
        get_task(&self.peer, self.id()).await
    }

    /// `tasks/result`: waits until the task is terminal and returns the request's
    /// result (or the error it failed with). Requests the task makes of us meanwhile
    /// (elicitations, sampling) arrive through this call and are answered by our
    /// handlers as usual.
    pub async fn result(&self) -> Result<R, SessionError> {
        self.result_with(RequestOptions::default().timeout(Duration::from_secs(86_400)))
            .await
    }

    /// [`TaskHandle::result`] with explicit request options (a timeout, say).
    pub async fn result_with(&self, options: RequestOptions) -> Result<R, SessionError> {
        let params = GetTaskPayloadRequestParams::new(self.id());
        let payload = self
            .peer
            .request_with::<GetTaskPayloadRequest>(params, options)
            .await?;
        payload.decode::<R>().map_err(|e| {
            SessionError::invalid_result(format!("the task's result does not decode: {e}"))
        })
    }

    /// `tasks/cancel`: the task as cancelled (`-32602` when it already ended).
    pub async fn cancel(&self) -> Result<Task, SessionError> {
        let params = CancelTaskRequestParams::new(self.id());
        Ok(self.peer.request::<CancelTaskRequest>(params).await?.task)
    }

    /// The task's statuses as they change, from polling `tasks/get` at the interval the
    /// receiver suggests (at least 10 ms); ends after a terminal status or an error.
    pub fn statuses(&self) -> BoxStream<'static, Result<Task, SessionError>> {
        Box::pin(Statuses {
            peer: self.peer.clone(),
            id: self.id().to_owned(),
            last: None,
            polling: None,
            done: false,
        })
    }
}

/// The stream of [`TaskHandle::statuses`]: each item is the next status that differs
/// from the last one; it ends after a terminal status or an error.
struct Statuses {
    peer: Peer,
    id: String,
    last: Option<TaskStatus>,
    /// The wait for the next change, under way.
    polling: Option<BoxFuture<'static, Result<Task, SessionError>>>,
    done: bool,
}

impl Stream for Statuses {
    type Item = Result<Task, SessionError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut task::Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        let polling = this.polling.get_or_insert_with(|| {
            Box::pin(next_change(
                this.peer.clone(),
                this.id.clone(),
                this.last.clone(),
            ))
        });
        let answer = std::task::ready!(polling.as_mut().poll(cx));
        this.polling = None;
        match &answer {
            Ok(task) => {
                this.done = task.status.is_terminal();
                this.last = Some(task.status.clone());
            }
            Err(_) => this.done = true,
        }
        Poll::Ready(Some(answer))
    }
}

/// Task `id` once its status is no longer `last`: `tasks/get` polled at the interval
/// the receiver suggests (at least 10 ms).
async fn next_change(
    peer: Peer,
    id: String,
    last: Option<TaskStatus>,
) -> Result<Task, SessionError> {
    loop {
        let task = get_task(&peer, &id).await?;
        if last.as_ref() != Some(&task.status) {
            return Ok(task);
        }
        let wait = task.poll_interval.unwrap_or(1000).max(10);
        tokio::time::sleep(Duration::from_millis(wait)).await;
    }
}

/// `tasks/get` of task `id`, as `peer` runs it now.
async fn get_task(peer: &Peer, id: &str) -> Result<Task, SessionError> {
    let params = GetTaskRequestParams::new(id);
    Ok(peer.request::<GetTaskRequest>(params).await?.task)
}
