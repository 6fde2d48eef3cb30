//! The task store's behaviour, one suite run against the in-memory store and against
//! `modelctx_redis::TaskStore` on a real redis-server, plus what only a shared store can show.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::support::{RedisServer, WITHIN, race, store_call};
use modelctx_store::{
    InMemoryTaskStore, TaskOwner, TaskRecord, TaskStore, TaskUpdate, UpdateError,
};
use modelctx_test::within;
use modelctx_types::{ErrorCode, RawValue, Task, TaskStatus};

fn record(id: &str, owner: &TaskOwner) -> TaskRecord {
    let task = Task::new(id, TaskStatus::Working, "t", "t", Some(60_000));
    TaskRecord::new(task, owner.clone(), "tools/call")
}

fn result(text: &str) -> Box<RawValue> {
    RawValue::from_string(text.to_owned()).unwrap()
}

async fn both(redis: &RedisServer, capacity: usize) -> Vec<(&'static str, Arc<dyn TaskStore>)> {
    let config = modelctx_redis::TaskStoreConfig::default().capacity(capacity);
    vec![
        ("in-memory", Arc::new(InMemoryTaskStore::new(capacity))),
        (
            "redis",
            Arc::new(modelctx_redis::TaskStore::new(
                redis.connection().await,
                config,
            )),
        ),
    ]
}

#[tokio::test]
async fn the_store_pages_bounds_and_expires() {
    let redis = RedisServer::start();
    for (name, store) in both(&redis, 3).await {
        let me = TaskOwner::new(Some("s1"), None);
        let other = TaskOwner::new(Some("s2"), None);
        for id in ["a", "b"] {
            store_call(store.insert(record(id, &me))).await.unwrap();
        }
        store_call(store.insert(record("x", &other))).await.unwrap();
        // Full of running tasks: refused.
        let full = store_call(store.insert(record("c", &me)))
            .await
            .unwrap_err();
        assert_eq!(full.code, ErrorCode::INTERNAL_ERROR, "{name}");
        let first = store_call(store.list(&me, None, 1)).await.unwrap();
        assert_eq!(first.tasks.len(), 1, "{name}");
        assert_eq!(first.tasks[0].task_id, "a", "{name}");
        let next = first.next_cursor.expect(name);
        let second = store_call(store.list(&me, Some(&next), 1)).await.unwrap();
        assert_eq!(second.tasks[0].task_id, "b", "{name}");
        assert!(second.next_cursor.is_none(), "{name}");
        let bad = store_call(store.list(&me, Some("nonsense"), 1))
            .await
            .unwrap_err();
        assert_eq!(bad.code, ErrorCode::INVALID_PARAMS, "{name}");
        // The other session sees only its own.
        let theirs = store_call(store.list(&other, None, 10)).await.unwrap();
        let ids: Vec<_> = theirs.tasks.iter().map(|t| t.task_id.as_str()).collect();
        assert_eq!(ids, ["x"], "{name}");
        // A terminal task makes room.
        store_call(store.update("a", TaskUpdate::Cancel))
            .await
            .unwrap();
        store_call(store.insert(record("c", &me))).await.unwrap();
        assert!(store_call(store.get("a")).await.is_none(), "{name}");
        // Expiry.
        let mut gone = record("d", &me);
        gone.expires_at = Some(SystemTime::now() - Duration::from_secs(1));
        store_call(store.update("c", TaskUpdate::Cancel))
            .await
            .unwrap();
        store_call(store.insert(gone)).await.unwrap();
        assert!(store_call(store.get("d")).await.is_none(), "{name}");
        assert!(
            matches!(
                store_call(store.update("d", TaskUpdate::Cancel)).await,
                Err(UpdateError::NotFound)
            ),
            "{name}"
        );
        let page = store_call(store.list(&me, None, 10)).await.unwrap();
        let ids: Vec<_> = page.tasks.iter().map(|t| t.task_id.as_str()).collect();
        assert_eq!(ids, ["b"], "{name}");
    }
}

#[tokio::test]
async fn a_listing_shows_only_the_requestors_own_tasks() {
    let redis = RedisServer::start();
    for (name, store) in both(&redis, 10).await {
        let anonymous = TaskOwner::default();
        let s1 = TaskOwner::new(Some("s1"), None);
        let alice = TaskOwner::new(None, Some("alice"));
        store_call(store.insert(record("anon", &anonymous)))
            .await
            .unwrap();
        store_call(store.insert(record("mine", &s1))).await.unwrap();
        store_call(store.insert(record("hers", &alice)))
            .await
            .unwrap();
        let ids = |requestor: TaskOwner| {
            let store = store.clone();
            async move {
                let page = store_call(store.list(&requestor, None, 10)).await.unwrap();
                page.tasks
                    .into_iter()
                    .map(|t| t.task_id)
                    .collect::<Vec<_>>()
            }
        };
        // A task without an owner is listed to no one; an anonymous requestor lists
        // nothing (its cursor is still checked).
        assert_eq!(ids(s1.clone()).await, ["mine"], "{name}");
        assert_eq!(
            ids(TaskOwner::new(Some("s2"), Some("alice"))).await,
            ["hers"],
            "{name}"
        );
        assert!(
            ids(TaskOwner::new(Some("s9"), None)).await.is_empty(),
            "{name}"
        );
        assert!(ids(anonymous.clone()).await.is_empty(), "{name}");
        let bad = store_call(store.list(&anonymous, Some("nonsense"), 1)).await;
        assert_eq!(bad.unwrap_err().code, ErrorCode::INVALID_PARAMS, "{name}");
        // By id, the stored owner keeps the rule: the anonymous task only to another
        // anonymous requestor, the session's only to the session.
        let got = store_call(store.get("anon")).await.expect(name);
        assert!(TaskOwner::default().may_access(&got.owner), "{name}");
        assert!(!s1.may_access(&got.owner), "{name}");
        assert!(!alice.may_access(&got.owner), "{name}");
        let got = store_call(store.get("mine")).await.expect(name);
        assert!(!TaskOwner::default().may_access(&got.owner), "{name}");
    }
}

#[tokio::test]
async fn status_results_and_the_status_machine() {
    let redis = RedisServer::start();
    for (name, store) in both(&redis, 10).await {
        let alice = TaskOwner::new(Some("s1"), Some("alice"));
        store_call(store.insert(record("t", &alice))).await.unwrap();
        let to = |status| TaskUpdate::Status {
            status,
            message: Some("waiting".into()),
        };
        let r = store_call(store.update("t", to(TaskStatus::InputRequired)))
            .await
            .unwrap();
        assert_eq!(r.task.status, TaskStatus::InputRequired, "{name}");
        let done = TaskUpdate::Finish {
            outcome: Ok(result(r#"{"content":[]}"#)),
            failed: false,
        };
        store_call(store.update("t", done)).await.unwrap();
        let got = store_call(store.get("t")).await.expect(name);
        assert_eq!(got.task.status, TaskStatus::Completed, "{name}");
        assert_eq!(got.method, "tools/call", "{name}");
        assert_eq!(
            got.outcome
                .as_ref()
                .map(|o| o.as_ref().map(|v| v.get().to_owned()).ok()),
            Some(Some(r#"{"content":[]}"#.to_owned())),
            "{name}"
        );
        // The owner survives the store: another session of alice's may see it, bob not.
        assert!(
            TaskOwner::new(Some("s9"), Some("alice")).may_access(&got.owner),
            "{name}"
        );
        assert!(
            !TaskOwner::new(Some("s1"), Some("bob")).may_access(&got.owner),
            "{name}"
        );
        // Terminal is final.
        assert_eq!(
            store_call(store.update("t", TaskUpdate::Cancel))
                .await
                .unwrap_err(),
            UpdateError::Illegal(TaskStatus::Completed),
            "{name}"
        );
        // A failure keeps its error.
        store_call(store.insert(record("f", &alice))).await.unwrap();
        let failed = TaskUpdate::Finish {
            outcome: Err(modelctx_types::ErrorData::invalid_params("bad")),
            failed: true,
        };
        store_call(store.update("f", failed)).await.unwrap();
        let got = store_call(store.get("f")).await.expect(name);
        assert_eq!(got.task.status, TaskStatus::Failed, "{name}");
        let error = got.outcome.expect(name).unwrap_err();
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{name}");
        assert!(store_call(store.get("nope")).await.is_none(), "{name}");
    }
}

#[tokio::test]
async fn two_processes_share_tasks_and_only_one_move_wins() {
    let redis = RedisServer::start();
    let (a, b) = redis
        .two_stores(|c| modelctx_redis::TaskStore::new(c, Default::default()))
        .await;
    let owner = TaskOwner::new(Some("s"), None);
    for round in 0..20 {
        let id = format!("race-{round}");
        store_call(a.insert(record(&id, &owner))).await.unwrap();
        assert!(
            store_call(b.get(&id)).await.is_some(),
            "created on a, seen on b"
        );
        // One process finishes the task while the other cancels it: exactly one wins,
        // and the loser is told the status the winner left.
        let finish = TaskUpdate::Finish {
            outcome: Ok(result("{}")),
            failed: false,
        };
        let (fa, fb) = (a.clone(), b.clone());
        let (ia, ib) = (id.clone(), id.clone());
        let (ra, rb) = race(async move { fa.update(&ia, finish).await }, async move {
            fb.update(&ib, TaskUpdate::Cancel).await
        })
        .await;
        assert!(ra.is_ok() != rb.is_ok(), "exactly one wins: {ra:?} {rb:?}");
        let end = store_call(a.get(&id)).await.unwrap().task.status;
        match (ra, rb) {
            (Ok(_), Err(e)) => {
                assert_eq!(end, TaskStatus::Completed);
                assert_eq!(e, UpdateError::Illegal(TaskStatus::Completed));
            }
            (Err(e), Ok(_)) => {
                assert_eq!(end, TaskStatus::Cancelled);
                assert_eq!(e, UpdateError::Illegal(TaskStatus::Cancelled));
            }
            _ => unreachable!(),
        }
    }
    // Listing from either process pages through the same tasks.
    let mut seen = Vec::new();
    let mut cursor = None;
    let mut turn = 0;
    loop {
        let store = if turn % 2 == 0 { &a } else { &b };
        turn += 1;
        let page = store_call(store.list(&owner, cursor.as_deref(), 3))
            .await
            .unwrap();
        seen.extend(page.tasks.into_iter().map(|t| t.task_id));
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    let want: Vec<_> = (0..20).map(|r| format!("race-{r}")).collect();
    assert_eq!(seen, want);
}

#[tokio::test]
async fn after_a_redis_restart_lost_tasks_are_unknown_and_new_ones_work() {
    let mut redis = RedisServer::start();
    let store = modelctx_redis::TaskStore::new(
        redis.connection().await,
        modelctx_redis::TaskStoreConfig::default(),
    );
    let owner = TaskOwner::new(Some("s"), None);
    store_call(store.insert(record("kept", &owner)))
        .await
        .unwrap();
    redis.restart();
    // Unknown (not a hang, not a panic): `tasks/get` answers -32602 "not found".
    assert!(store_call(store.get("kept")).await.is_none());
    assert_eq!(
        store_call(store.update("kept", TaskUpdate::Cancel))
            .await
            .unwrap_err(),
        UpdateError::NotFound
    );
    // The connection comes back: a new task is stored (a first attempt may still meet
    // the old connection and be refused with -32603, which a caller sees as such).
    let mut stored = false;
    for attempt in 0..3 {
        match store_call(store.insert(record(&format!("new-{attempt}"), &owner))).await {
            Ok(()) => {
                stored = true;
                assert!(
                    store_call(store.get(&format!("new-{attempt}")))
                        .await
                        .is_some()
                );
                break;
            }
            Err(e) => assert_eq!(e.code, ErrorCode::INTERNAL_ERROR),
        }
    }
    assert!(stored, "the store did not reconnect");
}

#[tokio::test]
async fn a_lease_is_kept_renewed_and_lapses_into_an_interruption() {
    let redis = RedisServer::start();
    let store = modelctx_redis::TaskStore::new(
        redis.connection().await,
        modelctx_redis::TaskStoreConfig::default(),
    );
    assert!(TaskStore::is_shared(&store), "tasks outlive their process");
    let owner = TaskOwner::new(Some("s1"), None);
    let mut leased = record("leased", &owner);
    // Whole milliseconds: what Redis keeps.
    let start = SystemTime::UNIX_EPOCH + Duration::from_millis(unix_ms(SystemTime::now()));
    leased.lease_until = Some(start + Duration::from_secs(60));
    within(WITHIN, "insert", store.insert(leased))
        .await
        .unwrap();
    let kept = within(WITHIN, "get", store.get("leased")).await.unwrap();
    assert_eq!(kept.lease_until, Some(start + Duration::from_secs(60)));
    // Renewed into the past (a process that stopped renewing long ago, as another
    // process would find it): the next read's interruption applies.
    let renew = TaskUpdate::Renew {
        until: start - Duration::from_secs(1),
    };
    within(WITHIN, "renew", store.update("leased", renew))
        .await
        .unwrap();
    let failed = within(
        WITHIN,
        "interrupt",
        store.update("leased", TaskUpdate::Interrupt),
    )
    .await
    .unwrap();
    assert_eq!(failed.task.status, TaskStatus::Failed);
    let again = within(
        WITHIN,
        "interrupt",
        store.update("leased", TaskUpdate::Interrupt),
    )
    .await;
    assert!(
        matches!(again, Err(UpdateError::Illegal(TaskStatus::Failed))),
        "{again:?}"
    );
}

fn unix_ms(t: SystemTime) -> u64 {
    u64::try_from(
        t.duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}
