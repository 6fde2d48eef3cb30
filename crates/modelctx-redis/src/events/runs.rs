//! The [`RunStore`] of a [`EventStore`]: which service runs the request answered
//! on each stream of a shared session, and which services are alive.
//!
//! A run is a hash `<prefix>ev:{<session>}:<stream>:run` (`owner`: the service's
//! instance name, empty once given up; `req`: the request's text), expiring with the
//! stream's events. A service is alive while `<prefix>live:<instance>` exists: it sets
//! it for [`liveness`](crate::EventStoreConfig::liveness) every quarter of that.
//! Writes go through the event store's ordered queue with its events; reads and the
//! take-over flush it first.
//!
//! `begin` (`HSET` and `PEXPIRE`), `end` (delete if the owner still holds it) and `release`
//! (owner emptied if it still holds it) go into the writer's pipeline with the events, in
//! call order; `state` (no record, owner alive, orphaned) and `take_over` (one script:
//! orphaned → owner := caller, answering the request text and the stream's last entry id)
//! flush it first. A liveness key per service rather than a lease per run: one write per
//! service per interval however many calls run, and a run's record is written once.

use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use modelctx_store::{RunState, RunStore, TakenRun};
use redis::aio::ConnectionManager;
use tokio::sync::oneshot;

use super::{EventStore, Op, Shared, seq_of};

/// A write or a read of run records, queued to the event store's writer.
pub(crate) enum RunOp {
    Begin {
        session: Arc<str>,
        stream: u64,
        owner: Arc<str>,
        request: Arc<str>,
    },
    End {
        session: Arc<str>,
        stream: u64,
        owner: Arc<str>,
    },
    Release {
        session: Arc<str>,
        stream: u64,
        owner: Arc<str>,
    },
    State {
        session: Arc<str>,
        stream: u64,
        reply: oneshot::Sender<Option<RunState>>,
    },
    Take {
        session: Arc<str>,
        stream: u64,
        instance: Arc<str>,
        reply: oneshot::Sender<Option<TakenRun>>,
    },
    KeepAlive {
        instance: Arc<str>,
        reply: oneshot::Sender<bool>,
    },
}

/// Forgets a run if `owner` still holds it. KEYS: run. ARGV: owner.
const END: &str = r"
if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
";

/// Gives a run up if `owner` still holds it. KEYS: run. ARGV: owner.
const RELEASE: &str = r"
if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] then redis.call('HSET', KEYS[1], 'owner', '') end
return 1
";

/// 0: no run; 1: its owner is alive; 2: orphaned. KEYS: run. ARGV: liveness key prefix.
const STATE: &str = r"
local owner = redis.call('HGET', KEYS[1], 'owner')
if not owner then return 0 end
if owner ~= '' and redis.call('EXISTS', ARGV[1] .. owner) == 1 then return 1 end
return 2
";

/// Takes an orphaned run: answers its request and the entry id of its stream's last
/// event ('' when none), or nil. KEYS: run, stream. ARGV: liveness key prefix,
/// instance, ttl ms.
const TAKE: &str = r"
local owner = redis.call('HGET', KEYS[1], 'owner')
if not owner then return false end
if owner ~= '' and redis.call('EXISTS', ARGV[1] .. owner) == 1 then return false end
redis.call('HSET', KEYS[1], 'owner', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
local id = ''
if #last > 0 then id = last[1][1] end
return {redis.call('HGET', KEYS[1], 'req'), id}
";

/// The scripts of run records, loaded with the event store's.
pub(crate) struct RunScripts {
    end: redis::Script,
    release: redis::Script,
    state: redis::Script,
    take: redis::Script,
}

impl RunScripts {
    pub(crate) fn new() -> Self {
        Self {
            end: redis::Script::new(END),
            release: redis::Script::new(RELEASE),
            state: redis::Script::new(STATE),
            take: redis::Script::new(TAKE),
        }
    }

    /// Loads the scripts a queued write uses at the start of a pipeline (a restarted
    /// Redis knows none).
    pub(crate) fn load(&self, pipe: &mut redis::Pipeline) {
        pipe.load_script(&self.end)
            .ignore()
            .load_script(&self.release)
            .ignore();
    }
}

impl RunOp {
    /// Whether the op is a write, queued in the pipeline with the events.
    pub(crate) fn is_write(&self) -> bool {
        matches!(
            self,
            Self::Begin { .. } | Self::End { .. } | Self::Release { .. }
        )
    }

    /// Adds a write to the pipeline; answers the stream it concerns.
    pub(crate) fn queue(
        self,
        pipe: &mut redis::Pipeline,
        scripts: &RunScripts,
        shared: &Shared,
    ) -> Option<(Arc<str>, u64)> {
        let keys = &shared.keys;
        match self {
            Self::Begin {
                session,
                stream,
                owner,
                request,
            } => {
                let key = keys.run(&session, stream);
                pipe.hset_multiple(&key, &[("owner", &*owner), ("req", &*request)])
                    .ignore()
                    .pexpire(
                        &key,
                        i64::try_from(millis(shared.config.ttl)).unwrap_or(i64::MAX),
                    )
                    .ignore();
                Some((session, stream))
            }
            Self::End {
                session,
                stream,
                owner,
            } => {
                pipe.invoke_script(scripts.end.key(keys.run(&session, stream)).arg(&*owner))
                    .ignore();
                Some((session, stream))
            }
            Self::Release {
                session,
                stream,
                owner,
            } => {
                pipe.invoke_script(scripts.release.key(keys.run(&session, stream)).arg(&*owner))
                    .ignore();
                Some((session, stream))
            }
            _ => None,
        }
    }

    /// Runs a read (or the take-over) and answers it; the pipeline was flushed before.
    pub(crate) async fn query(
        self,
        conn: &mut ConnectionManager,
        scripts: &RunScripts,
        shared: &Shared,
    ) {
        let keys = &shared.keys;
        match self {
            Self::State {
                session,
                stream,
                reply,
            } => {
                let state: redis::RedisResult<i64> = scripts
                    .state
                    .key(keys.run(&session, stream))
                    .arg(keys.live_prefix())
                    .invoke_async(conn)
                    .await;
                let _ = reply.send(match state {
                    Ok(0) => Some(RunState::Finished),
                    Ok(1) => Some(RunState::Running),
                    Ok(2) => Some(RunState::Orphaned),
                    _ => None,
                });
            }
            Self::Take {
                session,
                stream,
                instance,
                reply,
            } => {
                let taken: redis::RedisResult<Option<(String, String)>> = scripts
                    .take
                    .key(keys.run(&session, stream))
                    .key(keys.stream(&session, stream))
                    .arg(keys.live_prefix())
                    .arg(&*instance)
                    .arg(millis(shared.config.ttl))
                    .invoke_async(conn)
                    .await;
                let _ = reply.send(
                    taken
                        .ok()
                        .flatten()
                        .map(|(request, last)| TakenRun::new(Arc::from(request), seq_of(&last))),
                );
            }
            Self::KeepAlive { instance, reply } => {
                let set: redis::RedisResult<()> = redis::cmd("SET")
                    .arg(keys.live(&instance))
                    .arg(1)
                    .arg("PX")
                    .arg(millis(shared.config.liveness))
                    .query_async(conn)
                    .await;
                let _ = reply.send(set.is_ok());
            }
            Self::Begin { .. } | Self::End { .. } | Self::Release { .. } => {}
        }
    }
}

impl EventStore {
    fn run_op(&self, op: RunOp) -> bool {
        self.enqueue(Op::Run(op)).is_ok()
    }

    fn ask<T: Send + 'static>(
        &self,
        op: impl FnOnce(oneshot::Sender<Option<T>>) -> RunOp,
    ) -> BoxFuture<'static, Option<T>> {
        let (reply, rx) = oneshot::channel();
        if !self.run_op(op(reply)) {
            return futures::future::ready(None).boxed();
        }
        async move { rx.await.ok().flatten() }.boxed()
    }
}

impl RunStore for EventStore {
    fn begin(&self, session: &str, stream: u64, owner: &str, request: Arc<str>) {
        self.run_op(RunOp::Begin {
            session: Arc::from(session),
            stream,
            owner: Arc::from(owner),
            request,
        });
    }

    fn end(&self, session: &str, stream: u64, owner: &str) {
        self.run_op(RunOp::End {
            session: Arc::from(session),
            stream,
            owner: Arc::from(owner),
        });
    }

    fn release(&self, session: &str, stream: u64, owner: &str) {
        self.run_op(RunOp::Release {
            session: Arc::from(session),
            stream,
            owner: Arc::from(owner),
        });
    }

    fn state(&self, session: &str, stream: u64) -> BoxFuture<'static, Option<RunState>> {
        let session = Arc::from(session);
        self.ask(|reply| RunOp::State {
            session,
            stream,
            reply,
        })
    }

    fn take_over(
        &self,
        session: &str,
        stream: u64,
        instance: &str,
    ) -> BoxFuture<'static, Option<TakenRun>> {
        let session = Arc::from(session);
        let instance = Arc::from(instance);
        self.ask(|reply| RunOp::Take {
            session,
            stream,
            instance,
            reply,
        })
    }

    fn keep_alive(&self, instance: &str) -> BoxFuture<'static, bool> {
        let (reply, rx) = oneshot::channel();
        let op = RunOp::KeepAlive {
            instance: Arc::from(instance),
            reply,
        };
        if !self.run_op(op) {
            return futures::future::ready(false).boxed();
        }
        async move { rx.await.unwrap_or(false) }.boxed()
    }

    fn keep_alive_interval(&self) -> Duration {
        self.shared().config.liveness / 4
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}
