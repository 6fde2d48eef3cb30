//! The soak (`cargo xtask soak`, binary `bench-soak`): many stateful streamable HTTP
//! sessions with churn, round after round, and the server's resources before and after.
//!
//! What "concurrent" means here: `sessions` MCP sessions (`Mcp-Session-Id`) are open at
//! every moment of a round's churn, spread over `connections` HTTP/1.1 keep-alive
//! connections (one per worker task of the load generator). A session is not a
//! connection: any request of a session may arrive on any connection, as behind a
//! proxy, so 10,000 sessions need some 64 descriptors on each side, not 10,000.
//!
//! A round: every worker opens its share of the sessions (`initialize` +
//! `notifications/initialized`), then, for the round's time, goes round its
//! sessions calling the echo tool on each (the answer checked); a session is closed
//! with `DELETE` after its [`CHURN_EVERY`]-th call and a new session opened in its
//! place (staggered: one session in ten on each pass), and every [`RECONNECT_EVERY`]
//! requests the worker drops its connection and opens a new one (descriptor churn).
//! At the end every session is deleted and every connection closed. The server then
//! settles: the load generator waits (bounded, [`SETTLE`], polling) until its
//! descriptors, tasks and threads are back to where they were before the first round.
//!
//! Counted from outside (`/proc/PID`): resident memory (`VmRSS`), threads, open
//! descriptors (entries of `fd/`). What cannot be counted from outside the server
//! (`bench-server-soak`) answers on its stdin: the runtime's live tokio tasks
//! (`RuntimeMetrics::num_alive_tasks`) and its live heap, the bytes and blocks
//! allocated and not yet freed (a counting wrapper around the system allocator).
//!
//! Verdict: after every round exactly the baseline's descriptors, tasks and threads
//! (the server runs nothing on tokio's blocking pool, so no thread comes or goes
//! with the load: one more would be new work on that pool, and its thread-local
//! allocations would show in the live heap), and the live heap back to the
//! baseline's, within [`HEAP_TOLERANCE`] in bytes and [`BLOCK_TOLERANCE`] in blocks:
//! every table that held the round's sessions, streams and requests gives its room
//! back as it drains (`modelctx_store::table`), so what a round leaves is what
//! it leaked (a left-over object per session is some 10,000 blocks; a table kept at
//! its peak, 0.4–1.6 MB). The resident set (with every session open, and after the
//! round, plus whatever more live heap the round's sessions held) must stop rising:
//! from round 2 on within [`RSS_CEILING`] of round 1's peak, and the last round within
//! [`RSS_TOLERANCE`] of the highest round before it. Where a block lands among glibc's
//! arenas depends on which thread allocated it, so one round may sit a few per cent
//! above another with the same live heap; memory that creeps rises round after round.
//!
//! The server runs with [`MALLOC_TUNING`]. With glibc's defaults the second round does
//! not fit in the first's memory although its live heap is the same: the blocks the
//! per-thread caches and fast bins hold when a round ends, and the session tables at
//! their peak (placed in the heap once glibc has raised its mmap threshold), stay
//! scattered through the freed memory and split it, and each later round spreads a
//! little further (measured in BENCHMARKS.md, when the tables still kept their peak's
//! room from round to round).

use std::path::Path;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, StatusCode};
use tokio::io::AsyncWriteExt;

use crate::process::ServerProcess;
use crate::{PROTOCOL_VERSION, wire};

/// A session is closed and replaced after this many calls (one call in this many is
/// followed by a `DELETE`).
pub const CHURN_EVERY: u64 = 10;
/// A worker replaces its connection after this many requests.
pub const RECONNECT_EVERY: u64 = 2_000;
/// How long the server may take to release a round's sessions and connections.
pub const SETTLE: Duration = Duration::from_secs(60);
/// How far the resident set of the last round may rise above the highest of the
/// rounds before it: a fraction of that peak, or an absolute floor (KiB) for small
/// runs, whichever is larger (plus whatever more the round's sessions held on the
/// heap). Measured with [`MALLOC_TUNING`] at 10,000 sessions, round over round:
/// -1.4 % to +4.1 % for round 2, then -0.7 % to +1.1 %.
pub const RSS_TOLERANCE: (f64, f64) = (0.02, 1_024.0);
/// How far the resident set of any round from the second on may rise above round 1's
/// peak (a fraction, with [`RSS_TOLERANCE`]'s floor; plus whatever more the round's
/// sessions held on the heap). With glibc's defaults rounds rose +3.5 to +9 % each
/// (see BENCHMARKS.md).
pub const RSS_CEILING: f64 = 0.08;
/// How far the live heap after a round may rise above the baseline's (before round 1):
/// a fraction, or an absolute floor (KiB), whichever is larger.
pub const HEAP_TOLERANCE: (f64, f64) = (0.01, 64.0);
/// The absolute floor for the live heap's blocks after a round over the baseline's
/// (with the fraction of [`HEAP_TOLERANCE`]).
pub const BLOCK_TOLERANCE: f64 = 64.0;
/// The server's glibc malloc settings (`GLIBC_TUNABLES`): no per-thread cache and no
/// fast bins, so a freed block merges with its free neighbours at once, and a fixed
/// mmap threshold (128 KiB, glibc's default, which it otherwise raises as big blocks
/// are freed), so the session tables at a round's peak get mappings of their own
/// instead of sitting in the middle of an arena. A round's freed memory
/// then merges into each arena's top and is given back, and the next round starts
/// from the heap round 1 started from. With glibc's defaults the blocks those caches
/// hold when a round ends, and the tables, stay scattered through the freed memory,
/// and round 2 no longer fits in it (see the module docs).
pub const MALLOC_TUNING: &str =
    "glibc.malloc.tcache_count=0:glibc.malloc.mxfast=0:glibc.malloc.mmap_threshold=131072";
/// How long the workers may take to open their sessions.
const OPEN_LIMIT: Duration = Duration::from_secs(600);
/// The bound on every HTTP exchange.
const WAIT: Duration = Duration::from_secs(30);

/// What a soak run is asked to do.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Sessions open at once during churn.
    pub sessions: usize,
    /// Connections (and worker tasks) they share.
    pub connections: usize,
    /// Length of each round's churn.
    pub churn: Duration,
    /// Rounds (at least 2). Every round from the second on is held to round 1's memory
    /// ([`RSS_CEILING`]); with 3 or more, the last also to the highest round before it
    /// ([`RSS_TOLERANCE`]).
    pub rounds: usize,
}

/// The server's resources at one moment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Resources {
    /// Resident set, KiB.
    pub rss_kib: f64,
    /// Open file descriptors.
    pub fds: usize,
    /// OS threads.
    pub threads: usize,
    /// Live tokio tasks.
    pub tasks: usize,
    /// Live heap: bytes allocated and not yet freed (counted inside the server).
    pub heap_bytes: u64,
    /// Live heap blocks: allocations not yet freed.
    pub heap_blocks: u64,
}

/// One round's figures.
#[derive(Debug, Clone)]
pub struct Round {
    /// Echo calls answered.
    pub calls: u64,
    /// Sessions opened (the initial ones and the churned-in ones).
    pub opened: u64,
    /// Sessions deleted.
    pub deleted: u64,
    /// Connections opened.
    pub connections: u64,
    /// The server with every session open, at the end of the churn.
    pub loaded: Resources,
    /// The server after the round, once settled.
    pub after: Resources,
    /// Wall time of the round (open, churn, close), seconds.
    pub seconds: f64,
    /// Time the server took to settle, seconds.
    pub settle_seconds: f64,
}

/// The whole run.
#[derive(Debug, Clone)]
pub struct Report {
    /// The server's `GLIBC_TUNABLES` ([`MALLOC_TUNING`] unless the caller set its own).
    pub malloc_tuning: String,
    /// The server before the first round (one session opened and closed first).
    pub before: Resources,
    /// The two rounds.
    pub rounds: Vec<Round>,
    /// Every failed check, in words; empty when the soak passed.
    pub failures: Vec<String>,
}

impl Report {
    /// The figures as one JSON object.
    pub fn to_json(&self) -> serde_json::Value {
        let res = |r: &Resources| {
            serde_json::json!({
                "rss_kib": r.rss_kib, "heap_bytes": r.heap_bytes, "heap_blocks": r.heap_blocks,
                "fds": r.fds, "threads": r.threads, "tasks": r.tasks,
            })
        };
        serde_json::json!({
            "malloc_tuning": self.malloc_tuning,
            "before": res(&self.before),
            "rounds": self.rounds.iter().map(|r| serde_json::json!({
                "calls": r.calls, "opened": r.opened, "deleted": r.deleted,
                "connections": r.connections, "seconds": r.seconds,
                "settle_seconds": r.settle_seconds,
                "calls_per_s": r.calls as f64 / r.seconds,
                "loaded": res(&r.loaded), "after": res(&r.after),
            })).collect::<Vec<_>>(),
            "passed": self.failures.is_empty(),
            "failures": self.failures,
        })
    }
}

/// Runs the soak against `bench-server-soak` (the program at `server`).
pub async fn run(server: &Path, plan: &Plan) -> Result<Report, String> {
    if plan.sessions < plan.connections || plan.connections == 0 {
        return Err("need at least one session per connection".into());
    }
    // Room for the sessions still ending when their replacements open.
    let max = plan.sessions + plan.sessions / 4 + plan.connections;
    let (mut server, malloc_tuning) = Server::start(server, max).await?;
    // One session first, so one-off start-up allocations are out of the figures.
    {
        let mut warm = Conn::open(&server.0.addr).await?;
        let id = warm.initialize().await?;
        warm.call(&id, 1).await?;
        warm.delete(&id).await?;
    }
    let before = server.settle_to(None).await?;
    let mut rounds = Vec::new();
    for _ in 0..plan.rounds.max(2) {
        let started = Instant::now();
        let (counts, loaded) = round(&mut server, plan).await?;
        let seconds = started.elapsed().as_secs_f64();
        let settling = Instant::now();
        let after = server.settle_to(Some(&before)).await?;
        rounds.push(Round {
            calls: counts.calls,
            opened: counts.opened,
            deleted: counts.deleted,
            connections: counts.connections,
            loaded,
            after,
            seconds,
            settle_seconds: settling.elapsed().as_secs_f64(),
        });
    }
    server.stop().await?;
    let failures = verdict(&before, &rounds);
    Ok(Report {
        malloc_tuning,
        before,
        rounds,
        failures,
    })
}

/// The checks: after every round the baseline's descriptors, tasks and threads, and
/// its live heap (bytes and blocks); from round 2 on, the resident set (with every
/// session open, and after the round) within round 1's peak.
pub fn verdict(before: &Resources, rounds: &[Round]) -> Vec<String> {
    let mut failures = Vec::new();
    let kib = |bytes: u64| bytes as f64 / 1024.0;
    let heap_allowed = {
        let base = kib(before.heap_bytes);
        base + (base * HEAP_TOLERANCE.0).max(HEAP_TOLERANCE.1)
    };
    let blocks_allowed = {
        let base = before.heap_blocks as f64;
        base + (base * HEAP_TOLERANCE.0).max(BLOCK_TOLERANCE)
    };
    for (i, round) in rounds.iter().enumerate() {
        let n = i + 1;
        let after = &round.after;
        for (what, now, was) in [
            ("descriptors open", after.fds, before.fds),
            ("tasks alive", after.tasks, before.tasks),
            ("threads", after.threads, before.threads),
        ] {
            if now != was {
                failures.push(format!(
                    "round {n}: {now} {what} after the round, {was} before"
                ));
            }
        }
        let heap = kib(after.heap_bytes);
        if heap > heap_allowed {
            failures.push(format!(
                "live heap grew: {heap:.0} KiB after round {n}, {:.0} KiB before round 1 (at most {heap_allowed:.0} allowed)",
                kib(before.heap_bytes),
            ));
        }
        let blocks = after.heap_blocks as f64;
        if blocks > blocks_allowed {
            failures.push(format!(
                "live heap blocks grew: {blocks:.0} after round {n}, {} before round 1 (at most {blocks_allowed:.0} allowed)",
                before.heap_blocks
            ));
        }
    }
    let Some(first) = rounds.first() else {
        return failures;
    };
    let peak_of = |r: &Round| r.loaded.rss_kib.max(r.after.rss_kib);
    // What a round's sessions held beyond another's may show in its resident set.
    let more_held =
        |r: &Round, than: &Round| (kib(r.loaded.heap_bytes) - kib(than.loaded.heap_bytes)).max(0.0);
    let peak = peak_of(first);
    for (i, round) in rounds.iter().enumerate().skip(1) {
        let n = i + 1;
        let allowed = peak + (peak * RSS_CEILING).max(RSS_TOLERANCE.1) + more_held(round, first);
        for (what, rss) in [
            ("with every session open", round.loaded.rss_kib),
            ("after the round", round.after.rss_kib),
        ] {
            if rss > allowed {
                failures.push(format!(
                    "resident memory grew {what}: {rss:.0} KiB in round {n}, round 1's peak {peak:.0} KiB (at most {allowed:.0} allowed)"
                ));
            }
        }
    }
    if let [earlier @ .., last] = rounds
        && earlier.len() >= 2
    {
        let (highest, top) = earlier
            .iter()
            .enumerate()
            .max_by(|a, b| peak_of(a.1).total_cmp(&peak_of(b.1)))
            .map(|(i, r)| (r, i + 1))
            .expect("two rounds or more");
        let high = peak_of(highest);
        let allowed =
            high + (high * RSS_TOLERANCE.0).max(RSS_TOLERANCE.1) + more_held(last, highest);
        let rss = peak_of(last);
        if rss > allowed {
            failures.push(format!(
                "resident memory still rising: {rss:.0} KiB in round {}, round {top}'s peak {high:.0} KiB (at most {allowed:.0} allowed)",
                rounds.len()
            ));
        }
    }
    failures
}

#[derive(Debug, Default)]
struct Counts {
    calls: u64,
    opened: u64,
    deleted: u64,
    connections: u64,
}

/// One round: open, churn, measure, close. Returns the counts and the server's
/// resources with every session open.
async fn round(server: &mut Server, plan: &Plan) -> Result<(Counts, Resources), String> {
    let (opened_tx, opened_rx) = tokio::sync::watch::channel(0usize);
    let (measured_tx, measured_rx) = tokio::sync::watch::channel(false);
    let mut workers = Vec::with_capacity(plan.connections);
    for w in 0..plan.connections {
        // Sessions dealt out as evenly as they go.
        let share =
            plan.sessions / plan.connections + usize::from(w < plan.sessions % plan.connections);
        let addr = server.0.addr.clone();
        let churn = plan.churn;
        let opened_tx = opened_tx.clone();
        let measured_rx = measured_rx.clone();
        workers.push(tokio::spawn(async move {
            worker(&addr, share, churn, opened_tx, measured_rx).await
        }));
    }
    drop(opened_tx);
    // Measure once the churn is over and every worker holds its full share again.
    let mut opened_rx = opened_rx;
    let all = plan.connections;
    let wait = plan.churn + OPEN_LIMIT;
    let finished = tokio::time::timeout(wait, opened_rx.wait_for(|n| *n >= all))
        .await
        .map_err(|_| "the workers did not finish their churn in time")?
        .map(|n| *n)
        .unwrap_or(usize::MAX);
    // A failed worker's error is what the join below reports.
    let loaded = match finished {
        usize::MAX => None,
        _ => Some(server.resources().await?),
    };
    let _ = measured_tx.send(true);
    let mut counts = Counts::default();
    for worker in workers {
        let c = worker.await.map_err(|e| e.to_string())??;
        counts.calls += c.calls;
        counts.opened += c.opened;
        counts.deleted += c.deleted;
        counts.connections += c.connections;
    }
    Ok((counts, loaded.ok_or("a worker failed")?))
}

/// One worker: its share of sessions on one connection at a time. It counts itself
/// in `done` when its churn is over (or sets it to `usize::MAX` when it fails, so the
/// round stops waiting), then holds its sessions until `measured`, then deletes them.
async fn worker(
    addr: &str,
    share: usize,
    churn_for: Duration,
    done: tokio::sync::watch::Sender<usize>,
    mut measured: tokio::sync::watch::Receiver<bool>,
) -> Result<Counts, String> {
    let mut counts = Counts::default();
    let churned = churn(addr, share, churn_for, &mut counts).await;
    let (mut conn, sessions) = match churned {
        Ok(held) => {
            done.send_modify(|n| *n = n.saturating_add(1));
            held
        }
        Err(e) => {
            done.send_replace(usize::MAX);
            return Err(e);
        }
    };
    let _ = measured.wait_for(|m| *m).await;
    for session in &sessions {
        conn.delete(session).await?;
        counts.deleted += 1;
    }
    Ok(counts)
}

/// Opens `share` sessions, then calls and churns them for `churn_for`; returns the
/// connection and the sessions open at the end.
async fn churn(
    addr: &str,
    share: usize,
    churn_for: Duration,
    counts: &mut Counts,
) -> Result<(Conn, Vec<String>), String> {
    let mut conn = Conn::open(addr).await?;
    counts.connections += 1;
    let mut sessions = Vec::with_capacity(share);
    for _ in 0..share {
        sessions.push(conn.initialize().await?);
        counts.opened += 1;
    }
    // Calls each session has had, staggered so that one session in ten ends on each
    // pass: every session lives CHURN_EVERY calls, whatever the round's call rate, so
    // what sessions hold when measured (their resumable streams, for one) is the same
    // from round to round.
    let mut lived: Vec<u64> = (0..share as u64).map(|i| i % CHURN_EVERY).collect();
    let deadline = Instant::now() + churn_for;
    let mut id = 1u64;
    let mut step = 0usize;
    while Instant::now() < deadline {
        let slot = step % share;
        step += 1;
        id += 1;
        conn.call(&sessions[slot], id).await?;
        counts.calls += 1;
        lived[slot] += 1;
        if lived[slot] >= CHURN_EVERY {
            conn.delete(&sessions[slot]).await?;
            counts.deleted += 1;
            sessions[slot] = conn.initialize().await?;
            counts.opened += 1;
            lived[slot] = 0;
        }
        if conn.requests >= RECONNECT_EVERY {
            conn = Conn::open(addr).await?;
            counts.connections += 1;
        }
    }
    Ok((conn, sessions))
}

/// One HTTP/1.1 connection to the server.
struct Conn {
    sender: wire::Http1Sender,
    authority: String,
    requests: u64,
}

impl Conn {
    async fn open(addr: &str) -> Result<Self, String> {
        Ok(Self {
            sender: wire::open_http1(addr).await?,
            authority: addr.to_owned(),
            requests: 0,
        })
    }

    /// One request; returns the status, the `Mcp-Session-Id` header and the body.
    async fn send(
        &mut self,
        method: Method,
        session: Option<&str>,
        body: String,
    ) -> Result<(StatusCode, Option<String>, String), String> {
        self.requests += 1;
        let mut request = hyper::Request::builder()
            .method(method)
            .uri("/mcp")
            .header(hyper::header::HOST, &self.authority)
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .header(hyper::header::ACCEPT, "application/json, text/event-stream")
            .header("mcp-protocol-version", PROTOCOL_VERSION);
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        let request = request
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| e.to_string())?;
        let exchange = async {
            self.sender.ready().await.map_err(|e| e.to_string())?;
            let response = self
                .sender
                .send_request(request)
                .await
                .map_err(|e| e.to_string())?;
            let status = response.status();
            let session = response
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let body = response
                .into_body()
                .collect()
                .await
                .map_err(|e| e.to_string())?
                .to_bytes();
            let body = String::from_utf8(body.to_vec()).map_err(|e| e.to_string())?;
            Ok::<_, String>((status, session, body))
        };
        tokio::time::timeout(WAIT, exchange)
            .await
            .map_err(|_| "no complete HTTP answer in time".to_owned())?
    }

    /// Opens a session (`initialize`, then `notifications/initialized`); its id.
    async fn initialize(&mut self) -> Result<String, String> {
        let (status, session, body) = self.send(Method::POST, None, wire::initialize()).await?;
        if status != StatusCode::OK {
            return Err(format!("initialize answered {status}: {body}"));
        }
        let session = session.ok_or("initialize answered without Mcp-Session-Id")?;
        let (status, _, body) = self
            .send(Method::POST, Some(&session), wire::initialized().to_owned())
            .await?;
        if status != StatusCode::ACCEPTED {
            return Err(format!("initialized answered {status}: {body}"));
        }
        Ok(session)
    }

    /// One echo call on `session`, its answer checked.
    async fn call(&mut self, session: &str, id: u64) -> Result<(), String> {
        let (status, _, body) = self
            .send(Method::POST, Some(session), wire::call(id))
            .await?;
        if status != StatusCode::OK {
            return Err(format!("tools/call answered {status}: {body}"));
        }
        let answered = body
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(str::trim)
            .filter(|data| data.starts_with('{'))
            .map(wire::answer_id)
            .collect::<Result<Vec<_>, _>>()?;
        if answered.contains(&Some(id)) {
            Ok(())
        } else {
            Err(format!("no answer {id} in the event stream: {body}"))
        }
    }

    /// Ends `session` with `DELETE`.
    async fn delete(&mut self, session: &str) -> Result<(), String> {
        let (status, _, body) = self
            .send(Method::DELETE, Some(session), String::new())
            .await?;
        if status != StatusCode::OK {
            return Err(format!("DELETE answered {status}: {body}"));
        }
        Ok(())
    }
}

/// Reads the server's `tasks N heap BYTES blocks M` line.
fn parse_counts(line: &str) -> Option<(usize, u64, u64)> {
    let mut words = line.split_whitespace();
    let mut field = |name: &str| {
        (words.next()? == name)
            .then(|| words.next()?.parse::<u64>().ok())
            .flatten()
    };
    let tasks = usize::try_from(field("tasks")?).ok()?;
    let heap = field("heap")?;
    let blocks = field("blocks")?;
    words.next().is_none().then_some((tasks, heap, blocks))
}

/// The `bench-server-soak` child.
struct Server(ServerProcess);

impl Server {
    /// Starts the server with [`MALLOC_TUNING`], unless `GLIBC_TUNABLES` is set
    /// already (then the server inherits it); returns the tuning in force too.
    async fn start(program: &Path, max_sessions: usize) -> Result<(Self, String), String> {
        let inherited = std::env::var("GLIBC_TUNABLES").ok();
        let tuning = inherited
            .clone()
            .unwrap_or_else(|| MALLOC_TUNING.to_owned());
        let env: &[(&str, &str)] = match inherited {
            Some(_) => &[],
            None => &[("GLIBC_TUNABLES", MALLOC_TUNING)],
        };
        ServerProcess::spawn_with_env(program, &[&max_sessions.to_string()], env)
            .await
            .map(|server| (Self(server), tuning))
    }

    /// What only the server can count: its live tasks, heap bytes and heap blocks.
    async fn counts(&mut self) -> Result<(usize, u64, u64), String> {
        self.0
            .stdin
            .write_all(b"count\n")
            .await
            .map_err(|e| format!("the server's stdin: {e}"))?;
        self.0.stdin.flush().await.map_err(|e| e.to_string())?;
        let line = tokio::time::timeout(WAIT, self.0.stdout.next_line())
            .await
            .map_err(|_| "the server did not report its counts")?
            .map_err(|e| e.to_string())?
            .ok_or("the server closed its stdout")?;
        parse_counts(&line).ok_or_else(|| format!("unexpected server output {line:?}"))
    }

    async fn resources(&mut self) -> Result<Resources, String> {
        let (tasks, heap_bytes, heap_blocks) = self.counts().await?;
        let fds = std::fs::read_dir(format!("/proc/{}/fd", self.0.pid()))
            .map_err(|e| format!("cannot list the server's descriptors: {e}"))?
            .count();
        Ok(Resources {
            rss_kib: self.0.status_field("VmRSS:")?,
            fds,
            threads: self.0.status_field("Threads:")? as usize,
            tasks,
            heap_bytes,
            heap_blocks,
        })
    }

    /// Waits until the server's descriptors, tasks and threads are back to `target`'s (or, with
    /// none, stop changing for half a second), at most [`SETTLE`]; returns what it saw
    /// last (the verdict compares it with the baseline).
    async fn settle_to(&mut self, target: Option<&Resources>) -> Result<Resources, String> {
        let give_up = Instant::now() + SETTLE;
        let mut last = self.resources().await?;
        let mut steady = 0;
        loop {
            let settled = match target {
                Some(t) => last.fds == t.fds && last.tasks == t.tasks && last.threads == t.threads,
                None => steady >= 5,
            };
            if settled || Instant::now() >= give_up {
                return Ok(last);
            }
            // Polling the server's counts (no event to wait on from another process).
            tokio::time::sleep(Duration::from_millis(100)).await;
            let now = self.resources().await?;
            if now.fds == last.fds && now.tasks == last.tasks && now.threads == last.threads {
                steady += 1;
            } else {
                steady = 0;
            }
            last = now;
        }
    }

    async fn stop(self) -> Result<(), String> {
        self.0.stop().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIB: u64 = 1024;

    /// Resident KiB, live heap KiB (in ten times as many blocks as KiB), descriptors,
    /// tasks; 4 threads.
    fn res(rss_kib: f64, heap_kib: u64, fds: usize, tasks: usize) -> Resources {
        Resources {
            rss_kib,
            fds,
            threads: 4,
            tasks,
            heap_bytes: heap_kib * KIB,
            heap_blocks: heap_kib * 10,
        }
    }

    /// A round: resident KiB and live heap KiB with every session open, then after.
    fn round(loaded: (f64, u64), after: Resources) -> Round {
        Round {
            calls: 1,
            opened: 1,
            deleted: 1,
            connections: 1,
            loaded: res(loaded.0, loaded.1, 70, 10_000),
            after,
            seconds: 1.0,
            settle_seconds: 0.0,
        }
    }

    #[test]
    fn the_verdict_names_leaks_and_growth() {
        // The baseline: 85 KiB in 160 blocks.
        let mut before = res(10_000.0, 85, 9, 4);
        before.heap_blocks = 160;
        let back = |rss: f64, kib: u64, blocks: u64| {
            let mut r = res(rss, kib, 9, 4);
            r.heap_blocks = blocks;
            r
        };
        let flat = [
            round((200_000.0, 100_000), back(200_000.0, 90, 165)),
            round((201_000.0, 100_000), back(201_000.0, 140, 200)),
            round((199_000.0, 100_000), back(150_000.0, 85, 160)),
        ];
        assert_eq!(verdict(&before, &flat), Vec::<String>::new());

        // Every round is held to the baseline, round 1 too: a descriptor, a task, a
        // thread more after the round.
        let mut threaded = back(200_000.0, 85, 160);
        threaded.threads = 7;
        let leaky = [
            round((200_000.0, 100_000), res(200_000.0, 85, 10, 4)),
            round((200_000.0, 100_000), res(200_000.0, 85, 9, 6)),
            round((200_000.0, 100_000), threaded),
        ];
        let failures = verdict(&before, &leaky);
        assert_eq!(failures.len(), 5, "{failures:?}");
        assert!(
            failures[0].contains("round 1: 10 descriptors open"),
            "{failures:?}"
        );
        // (res gives 10 blocks a KiB: 850 blocks, over the baseline's 160 + 64.)
        assert!(failures[1].contains("blocks grew: 850 after round 1"));
        assert!(
            failures[2].contains("round 2: 6 tasks alive"),
            "{failures:?}"
        );
        assert!(failures[3].contains("blocks grew: 850 after round 2"));
        assert!(failures[4].contains("round 3: 7 threads after the round, 4 before"));

        // A table kept at its peak (measured in CI: 2,308 KiB in 162 blocks after
        // round 1, 164 before it): the same blocks, 2.2 MB more, fails in round 1
        // already; so does one left-over object per session (10,000 blocks of 48 B).
        let kept = [
            round((200_000.0, 100_000), back(200_000.0, 2_308, 162)),
            round((200_000.0, 100_000), back(200_000.0, 85 + 469, 10_160)),
        ];
        let failures = verdict(&before, &kept);
        assert_eq!(failures.len(), 3, "{failures:?}");
        assert!(
            failures[0]
                .contains("2308 KiB after round 1, 85 KiB before round 1 (at most 149 allowed)"),
            "{failures:?}"
        );
        assert!(
            failures[1].contains("554 KiB after round 2"),
            "{failures:?}"
        );
        assert!(
            failures[2].contains(
                "blocks grew: 10160 after round 2, 160 before round 1 (at most 224 allowed)"
            ),
            "{failures:?}"
        );

        // Round 2 is held to round 1's resident set: 9 % more for the same live heap
        // fails with every session open and after.
        let grown = [
            round((200_000.0, 100_000), back(200_000.0, 85, 160)),
            round((218_000.0, 100_000), back(218_000.0, 85, 160)),
        ];
        let failures = verdict(&before, &grown);
        assert_eq!(failures.len(), 2, "{failures:?}");
        assert!(failures[0].contains("every session open"), "{failures:?}");
        assert!(failures[1].contains("after the round"), "{failures:?}");

        // One round a few per cent up (as CI measured round 2 once: +4.1 %) and back
        // is not growth; rising round after round is, although within the ceiling.
        let settling = [
            round((200_000.0, 100_000), back(20_000.0, 85, 160)),
            round((208_200.0, 100_000), back(20_000.0, 85, 160)),
            round((207_000.0, 100_000), back(20_000.0, 85, 160)),
        ];
        assert_eq!(verdict(&before, &settling), Vec::<String>::new());
        let creeping = [
            round((200_000.0, 100_000), back(20_000.0, 85, 160)),
            round((205_000.0, 100_000), back(20_000.0, 85, 160)),
            round((210_000.0, 100_000), back(20_000.0, 85, 160)),
        ];
        let failures = verdict(&before, &creeping);
        assert_eq!(failures.len(), 1, "{failures:?}");
        assert!(
            failures[0].contains(
                "still rising: 210000 KiB in round 3, round 2's peak 205000 KiB (at most 209100 allowed)"
            ),
            "{failures:?}"
        );

        // More held by the round's sessions (4 MiB of live heap) may show as more
        // resident memory.
        let holding_more = [
            round((200_000.0, 100_000), back(200_000.0, 85, 160)),
            round((206_000.0, 104_096), back(206_000.0, 85, 160)),
        ];
        assert_eq!(verdict(&before, &holding_more), Vec::<String>::new());

        // Small runs: the absolute floors, not 1 % of a small figure.
        let small = [
            round((20_000.0, 10_000), back(20_000.0, 85, 160)),
            round((21_000.0, 10_000), back(21_000.0, 100, 200)),
        ];
        assert_eq!(verdict(&before, &small), Vec::<String>::new());
    }

    #[test]
    fn the_servers_counts_are_read_strictly() {
        assert_eq!(
            parse_counts("tasks 3 heap 655360 blocks 160"),
            Some((3, 655_360, 160))
        );
        for bad in [
            "",
            "tasks 3",
            "tasks 3 heap 1",
            "tasks x heap 1 blocks 2",
            "heap 1 tasks 3 blocks 2",
            "tasks 3 heap 1 blocks 2 more",
        ] {
            assert_eq!(parse_counts(bad), None, "{bad:?}");
        }
    }
}
