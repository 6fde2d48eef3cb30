//! Tasks (experimental in 2025-11-25): task-augmented requests, `tasks/get`,
//! `tasks/result`, `tasks/list`, `tasks/cancel` and `notifications/tasks/status`.

use serde::de::{DeserializeOwned, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::base::PaginatedRequestParams;
use crate::common::{Cursor, Meta};

crate::envelope::requests! {
    /// Asks for a task's state.
    GetTaskRequest = GetTask("tasks/get", required GetTaskRequestParams) -> GetTaskResult;
    /// Asks for a task's result, blocking until the task is terminal.
    GetTaskPayloadRequest = GetTaskPayload("tasks/result", required GetTaskPayloadRequestParams) -> GetTaskPayloadResult;
    /// Cancels a task.
    CancelTaskRequest = CancelTask("tasks/cancel", required CancelTaskRequestParams) -> CancelTaskResult;
    /// Lists tasks (paginated).
    ListTasksRequest = ListTasks("tasks/list", optional PaginatedRequestParams) -> ListTasksResult;
}

crate::envelope::notifications! {
    /// Tells the requestor a task's status changed (optional; never rely on it).
    TaskStatusNotification = TaskStatusChanged("notifications/tasks/status", required TaskStatusNotificationParams);
}

crate::open_enum::open_enum! {
    /// The status of a task.
    pub enum TaskStatus {
        /// Being processed.
        Working = "working",
        /// Waiting for input (an elicitation or a sampling request).
        InputRequired = "input_required",
        /// Finished; the result is available.
        Completed = "completed",
        /// Did not complete successfully.
        Failed = "failed",
        /// Cancelled before completion.
        Cancelled = "cancelled",
    }
}

impl TaskStatus {
    /// Whether the status is final (`completed`, `failed` or `cancelled`).
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

crate::setters::wire_struct! {
    /// Associates a message with a task, under `_meta["io.modelcontextprotocol/related-task"]`.
    pub struct RelatedTaskMetadata {
        /// The task id.
        pub task_id: String,
    }
    /// Metadata relating to `task_id`.
    new(task_id: impl Into<String>);

    /// The `_meta` key under which this travels.
    pub const META_KEY: &'static str = "io.modelcontextprotocol/related-task";

    /// Reads it from a `_meta`.
    pub fn from_meta(meta: &Meta) -> Option<Self> {
        meta.get(Self::META_KEY)
            .and_then(|v| Self::deserialize(v).ok())
    }

    /// Writes it into a `_meta`.
    pub fn insert_into(&self, meta: &mut Meta) {
        meta.insert(
            Self::META_KEY,
            serde_json::json!({ "taskId": self.task_id }),
        );
    }
}

/// A present `ttl` that may be `null` (absent is an error).
pub(crate) fn nullable<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<u64>, D::Error> {
    Option::<u64>::deserialize(deserializer)
}

/// Declares a task struct (the utility's [`Task`] and the extension's
/// [`ext_tasks::Task`](crate::ext_tasks::Task)): id, status, status message,
/// timestamps, a retention that may be `null`, a polling interval, `new`, and the items
/// of the `impl` block given. The two differ in who generates the id and in the names
/// of the two durations.
macro_rules! task {
    (
        $(#[$doc:meta])*
        pub struct $name:ident {
            task_id: $id_doc:literal,
            $ttl:ident: $ttl_doc:literal,
            $poll:ident: $poll_doc:literal $(,)?
        }
        $(impl { $($items:tt)* })?
    ) => {
        $crate::setters::wire_struct! {
            $(#[$doc])*
            pub struct $name {
                #[doc = $id_doc]
                pub task_id: String,
                /// The status.
                pub status: $crate::tasks::TaskStatus,
                /// A human-readable description of the status.
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub status_message: Option<String>,
                /// Creation time (ISO 8601).
                pub created_at: String,
                /// Last update time (ISO 8601).
                pub last_updated_at: String,
                #[doc = $ttl_doc]
                #[serde(deserialize_with = "crate::tasks::nullable")]
                pub $ttl: Option<u64>,
                #[doc = $poll_doc]
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub $poll: Option<u64>,
            }
        }

        impl $name {
            /// A task with an id, a status, timestamps and a retention (`None`: unlimited).
            pub fn new(
                task_id: impl Into<String>,
                status: $crate::tasks::TaskStatus,
                created_at: impl Into<String>,
                last_updated_at: impl Into<String>,
                $ttl: Option<u64>,
            ) -> Self {
                Self {
                    task_id: task_id.into(),
                    status,
                    status_message: None,
                    created_at: created_at.into(),
                    last_updated_at: last_updated_at.into(),
                    $ttl,
                    $poll: None,
                }
            }

            $($($items)*)?
        }
    };
}

pub(crate) use task;

task! {
    /// The state of a task.
    pub struct Task {
        task_id: "The task id (generated by the receiver).",
        ttl: "Retention from creation in milliseconds; `None` (`null`) for unlimited.",
        poll_interval: "Suggested polling interval in milliseconds.",
    }
    impl {
        crate::setters::setters! {
            with_status_message(status_message: impl Into<String>),
            with_poll_interval(poll_interval: impl Into<u64>),
        }
    }
}

crate::setters::wire_struct! {
    /// The immediate answer to a task-augmented request.
    pub struct CreateTaskResult {
        meta => with_meta,
        /// The created task.
        pub task: Task,
    }
    /// A result for this task.
    new(task: Task);
}

/// Declares the parameters that name one task (inline in the schema): `_meta` and
/// `task_id`, with `new(task_id)`.
macro_rules! task_id_params {
    ($($(#[$doc:meta])* $name:ident { task_id: $id_doc:literal } $($setters:ident)?;)+) => {$(
        $crate::setters::wire_struct! {
            $(#[$doc])*
            pub struct $name {
                meta,
                #[doc = $id_doc]
                pub task_id: String,
            }
        }

        impl $name {
            /// Parameters naming `task_id`.
            pub fn new(task_id: impl Into<String>) -> Self {
                Self {
                    meta: None,
                    task_id: task_id.into(),
                }
            }

            $crate::tasks::task_id_params!(@$($setters)?);
        }
    )+};
    (@) => {};
    (@with_meta) => {
        $crate::setters::setters! {
            with_meta(meta: impl Into<$crate::common::Meta>),
        }
    };
}

pub(crate) use task_id_params;

task_id_params! {
    /// Parameters of `tasks/get` (inline in the schema).
    GetTaskRequestParams { task_id: "The task id." } with_meta;
    /// Parameters of `tasks/result` (inline in the schema).
    GetTaskPayloadRequestParams { task_id: "The task id." } with_meta;
    /// Parameters of `tasks/cancel` (inline in the schema).
    CancelTaskRequestParams { task_id: "The task id." } with_meta;
}

/// Declares a `Result & Task` (or `NotificationParams & Task`): `_meta` and the task's
/// members inline, with `new(task)`, `with_meta` and `From<Task>`.
macro_rules! with_task {
    ($($(#[$doc:meta])* $name:ident;)+) => {$(
        $crate::setters::wire_struct! {
            $(#[$doc])*
            pub struct $name {
                meta,
                /// The task, its members inline.
                #[serde(flatten)]
                pub task: Task,
            }
        }

        impl $name {
            /// A result carrying this task.
            pub fn new(task: Task) -> Self {
                Self { meta: None, task }
            }

            crate::setters::setters! {
                with_meta(meta: impl Into<Meta>),
            }
        }

        impl From<Task> for $name {
            fn from(task: Task) -> Self {
                Self::new(task)
            }
        }
    )+};
}

crate::setters::optional_members! {
    /// The answer to `tasks/result`: exactly the underlying request's result, kept as an
    /// open object; decode it with [`GetTaskPayloadResult::decode`].
    pub struct GetTaskPayloadResult {
        /// Metadata (carries `io.modelcontextprotocol/related-task`).
        #[serde(rename = "_meta")]
        with_meta(meta: impl Into<Meta>),
        ..
        /// The underlying result's other members.
        extra,
    }
    /// An empty payload.
    new;

    /// Wraps an underlying result.
    pub fn from_result<T: Serialize>(result: &T) -> Result<Self, serde_json::Error> {
        serde_json::from_value(serde_json::to_value(result)?)
    }

    /// Decodes the underlying result, e.g. as a `CallToolResult`.
    pub fn decode<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_value(serde_json::to_value(self)?)
    }

    /// The related task, from `_meta`.
    pub fn related_task(&self) -> Option<RelatedTaskMetadata> {
        self.meta.as_ref().and_then(RelatedTaskMetadata::from_meta)
    }

    /// A member of the underlying result.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.extra.get(key)
    }
}

crate::setters::wire_struct! {
    /// The answer to `tasks/list`.
    pub struct ListTasksResult {
        meta => with_meta,
        /// Present when there may be more tasks.
        next_cursor?: Cursor => with_next_cursor,
        /// The tasks.
        pub tasks: Vec<Task>,
    }
    /// A page of tasks.
    new(tasks: Vec<Task>);
}

with_task! {
    /// The answer to `tasks/get`: `Result & Task`.
    GetTaskResult;
    /// The answer to `tasks/cancel`: `Result & Task`.
    CancelTaskResult;
    /// Parameters of `notifications/tasks/status`: `NotificationParams & Task`.
    TaskStatusNotificationParams;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn task_ttl_null_is_required_and_status_open() {
        let v = json!({"taskId": "t", "status": "paused", "createdAt": "a",
                       "lastUpdatedAt": "b", "ttl": null});
        let t: Task = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(t.status, TaskStatus::Unknown("paused".into()));
        assert!(!t.status.is_terminal());
        assert_eq!(serde_json::to_value(&t).unwrap(), v);
        let mut missing = v;
        missing.as_object_mut().unwrap().remove("ttl");
        assert!(serde_json::from_value::<Task>(missing).is_err());
    }

    #[test]
    fn get_task_result_flattens_task() {
        let v = json!({"_meta": {"x": 1}, "taskId": "t", "status": "completed",
                       "createdAt": "a", "lastUpdatedAt": "b", "ttl": 5000, "pollInterval": 100});
        let r: GetTaskResult = serde_json::from_value(v.clone()).unwrap();
        assert!(r.task.status.is_terminal());
        assert_eq!(serde_json::to_value(&r).unwrap(), v);
    }

    #[test]
    fn payload_decodes_underlying_result() {
        let p: GetTaskPayloadResult = serde_json::from_value(json!({
            "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "t1"}},
            "content": [{"type": "text", "text": "done"}]
        }))
        .unwrap();
        assert_eq!(p.related_task().unwrap().task_id, "t1");
        let r: crate::CallToolResult = p.decode().unwrap();
        assert_eq!(r.content[0].as_text(), Some("done"));
    }
}
