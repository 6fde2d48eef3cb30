//! Task leases in a store several processes share, seen from one process's task host:
//! a task another process started, whose lease lapsed (that process stopped), is failed
//! as interrupted when this host next reads it — by `tasks/get` and by `tasks/list` —
//! while a task whose lease still runs is shown as it stands.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;
use modelctx_session::tasks::{
    InMemoryTaskStore, TaskConfig, TaskHost, TaskOwner, TaskPage, TaskRecord, TaskStore,
    TaskUpdate, UpdateError, timestamp,
};
use modelctx_types::{ErrorData, Task, TaskStatus};

/// The in-memory store, saying it is shared (as a Redis one does): its tasks carry
/// leases.
struct Shared(InMemoryTaskStore);

impl TaskStore for Shared {
    fn insert(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), ErrorData>> {
        self.0.insert(record)
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Option<TaskRecord>> {
        self.0.get(id)
    }

    fn update<'a>(
        &'a self,
        id: &'a str,
        update: TaskUpdate,
    ) -> BoxFuture<'a, Result<TaskRecord, UpdateError>> {
        self.0.update(id, update)
    }

    fn list<'a>(
        &'a self,
        requestor: &'a TaskOwner,
        cursor: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, Result<TaskPage, ErrorData>> {
        self.0.list(requestor, cursor, limit)
    }

    fn is_shared(&self) -> bool {
        true
    }
}

/// A working task of `owner` that another process runs, its lease ending at `until`.
fn running_elsewhere(id: &str, owner: &TaskOwner, until: SystemTime) -> TaskRecord {
    let now = timestamp(SystemTime::now());
    let task = Task::new(id, TaskStatus::Working, now.clone(), now, None);
    let mut record = TaskRecord::new(task, owner.clone(), "tools/call");
    record.lease_until = Some(until);
    record
}

#[tokio::test]
async fn a_task_whose_lease_lapsed_is_failed_as_interrupted_when_read() {
    let store = Arc::new(Shared(InMemoryTaskStore::default()));
    let owner = TaskOwner::new(Some("session-1"), None);
    let an_hour = Duration::from_secs(3600);
    let lapsed = SystemTime::now() - an_hour;
    let renewed = SystemTime::now() + an_hour;
    store
        .insert(running_elsewhere("lapsed-get", &owner, lapsed))
        .await
        .unwrap();
    store
        .insert(running_elsewhere("lapsed-list", &owner, lapsed))
        .await
        .unwrap();
    store
        .insert(running_elsewhere("renewed", &owner, renewed))
        .await
        .unwrap();
    let host = TaskHost::new(store.clone(), TaskConfig::new());

    // `tasks/get`: the lapsed task is failed, saying the work may or may not have run.
    let got = host.get(&owner, "lapsed-get").await.unwrap();
    assert_eq!(got.status, TaskStatus::Failed);
    let message = got.status_message.unwrap_or_default();
    assert!(message.contains("may or may not have run"), "{message}");
    let kept = store.get("lapsed-get").await.unwrap();
    assert_eq!(kept.task.status, TaskStatus::Failed, "written to the store");

    // `tasks/list` shows the other lapsed task failed too, and the renewed one working.
    let listed = host.list(&owner, None).await.unwrap();
    let status = |id: &str| {
        listed
            .tasks
            .iter()
            .find(|t| t.task_id == id)
            .map(|t| t.status.clone())
    };
    assert_eq!(status("lapsed-list"), Some(TaskStatus::Failed));
    assert_eq!(status("lapsed-get"), Some(TaskStatus::Failed));
    assert_eq!(status("renewed"), Some(TaskStatus::Working));
    assert_eq!(
        store.get("lapsed-list").await.unwrap().task.status,
        TaskStatus::Failed
    );
    assert_eq!(
        host.get(&owner, "renewed").await.unwrap().status,
        TaskStatus::Working
    );
}
