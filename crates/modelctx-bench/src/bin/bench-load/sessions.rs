//! Fairness under a flood, opening sessions, and cold starts.

use std::sync::Arc;
use std::time::{Duration, Instant};

use modelctx_bench::stats::Latencies;
use modelctx_bench::{HttpMode, wire};
use tokio::sync::{mpsc, oneshot};

use crate::http::{HttpClient, HttpServer};
use crate::stdio::Pipes;
use crate::{Figures, Target};

/// Connections the flooding session calls on at once in the fairness scenario.
pub(crate) const FLOOD_CONNECTIONS: usize = 32;

/// The paced flood's offered rate, calls per second over all its connections: the same
/// for every target, below what each serves flat out, so each quiet session faces the
/// same neighbour.
pub(crate) const PACED_FLOOD_PER_S: u32 = 16_000;

/// One stateful session calls the echo tool sequentially from its own thread and runtime
/// ([`QuietClient`]): alone; while another session floods the server at a fixed rate (32
/// connections on one session id, each calling on its own clock, [`PACED_FLOOD_PER_S`] in
/// all); and while that session floods without pause. The quiet session's latency each
/// time, and each flood's achieved rate.
pub(crate) async fn fairness(target: Target, calls: usize) -> Result<Figures, String> {
    let server = HttpServer::start(target, HttpMode::Stateful).await?;
    let quiet = QuietClient::connect(&server.addr).await?;
    let rounds = calls / 4;
    quiet.timed_calls(rounds / 10).await?;
    let alone = Latencies::from_durations(&quiet.timed_calls(rounds).await?);
    let flooder = HttpClient::connect(&server.addr, HttpMode::Stateful).await?;
    let mut figures = vec![
        ("alone_p50_us", alone.percentile(50.0)),
        ("alone_p99_us", alone.percentile(99.0)),
    ];
    for (pace, names) in [
        (
            Some(PACED_FLOOD_PER_S),
            ["paced_p50_us", "paced_p99_us", "paced_flood_calls_per_s"],
        ),
        (
            None,
            ["flooded_p50_us", "flooded_p99_us", "flood_calls_per_s"],
        ),
    ] {
        let flood = Flood::start(&server.addr, &flooder, pace).await?;
        // A few calls of the quiet session first, not timed, while the flood gets going.
        quiet.timed_calls(rounds / 10).await?;
        let flooded = Latencies::from_durations(&quiet.timed_calls(rounds).await?);
        let flood_rate = flood.stop().await?;
        figures.extend([
            (names[0], flooded.percentile(50.0)),
            (names[1], flooded.percentile(99.0)),
            (names[2], flood_rate),
        ]);
    }
    quiet.finish()?;
    server.stop().await?;
    Ok(figures)
}

/// A batch of timed calls the quiet session is asked for, and where its samples go.
type QuietOrder = (usize, oneshot::Sender<Result<Vec<Duration>, String>>);

/// The quiet session's client, on a thread with its own single-threaded runtime, as
/// another user's process would be: its calls never wait in the load generator's run
/// queue behind the flood's tasks, so its latency is the server's.
struct QuietClient {
    orders: mpsc::UnboundedSender<QuietOrder>,
    thread: std::thread::JoinHandle<()>,
}

impl QuietClient {
    /// Starts the thread and opens a stateful session (handshake done) on it.
    async fn connect(addr: &str) -> Result<Self, String> {
        let (orders, mut inbox) = mpsc::unbounded_channel::<QuietOrder>();
        let (ready, connected) = oneshot::channel();
        let addr = addr.to_owned();
        let thread = std::thread::Builder::new()
            .name("quiet-session".to_owned())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(e) => {
                        let _ = ready.send(Err(e.to_string()));
                        return;
                    }
                };
                runtime.block_on(async move {
                    let mut client = match HttpClient::connect(&addr, HttpMode::Stateful).await {
                        Ok(client) => client,
                        Err(e) => {
                            let _ = ready.send(Err(e));
                            return;
                        }
                    };
                    let _ = ready.send(Ok(()));
                    let mut next = 0u64;
                    while let Some((n, reply)) = inbox.recv().await {
                        let _ = reply.send(timed_calls(&mut client, &mut next, n).await);
                    }
                });
            })
            .map_err(|e| format!("cannot start the quiet session's thread: {e}"))?;
        connected
            .await
            .map_err(|_| "the quiet session's thread ended".to_owned())??;
        Ok(Self { orders, thread })
    }

    /// `n` sequential echo calls of the quiet session, each timed.
    async fn timed_calls(&self, n: usize) -> Result<Vec<Duration>, String> {
        let (reply, samples) = oneshot::channel();
        self.orders
            .send((n, reply))
            .map_err(|_| "the quiet session's thread ended".to_owned())?;
        samples
            .await
            .map_err(|_| "the quiet session's thread ended".to_owned())?
    }

    /// Closes the session's connection and ends its thread.
    fn finish(self) -> Result<(), String> {
        drop(self.orders);
        self.thread
            .join()
            .map_err(|_| "the quiet session's thread panicked".to_owned())
    }
}

/// One session's flood: [`FLOOD_CONNECTIONS`] connections calling the echo tool, without
/// pause or each on its own clock.
struct Flood {
    stop: Arc<std::sync::atomic::AtomicBool>,
    workers: Vec<tokio::task::JoinHandle<Result<u64, String>>>,
    start: Instant,
}

impl Flood {
    /// Starts the flood on new connections to `addr`, all in the session `flooder` opened.
    /// `pace`: calls per second over all connections, spread evenly; `None`: flat out.
    async fn start(addr: &str, flooder: &HttpClient, pace: Option<u32>) -> Result<Self, String> {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let period = pace.map(|rate| Duration::from_secs(FLOOD_CONNECTIONS as u64) / rate);
        let start = Instant::now();
        let mut workers = Vec::with_capacity(FLOOD_CONNECTIONS);
        for worker in 0..FLOOD_CONNECTIONS {
            let mut client = HttpClient::open(addr).await?;
            client.session.clone_from(&flooder.session);
            let stop = stop.clone();
            // Each connection's clock starts a slice of the period after the previous one.
            let mut clock = period.map(|period| {
                let first =
                    tokio::time::Instant::now() + period / FLOOD_CONNECTIONS as u32 * worker as u32;
                let mut clock = tokio::time::interval_at(first, period);
                clock.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
                clock
            });
            workers.push(tokio::spawn(async move {
                let mut done = 0u64;
                // Ids apart per connection: one session, no id twice in flight.
                let base = 1_000_000 * (worker as u64 + 1);
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    if let Some(clock) = clock.as_mut() {
                        clock.tick().await;
                    }
                    client.call(base + done).await?;
                    done += 1;
                }
                Ok::<u64, String>(done)
            }));
        }
        Ok(Self {
            stop,
            workers,
            start,
        })
    }

    /// Stops the flood: its achieved rate, calls per second.
    async fn stop(self) -> Result<f64, String> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let elapsed = self.start.elapsed();
        let mut calls = 0u64;
        for worker in self.workers {
            calls += worker.await.map_err(|e| e.to_string())??;
        }
        Ok(calls as f64 / elapsed.as_secs_f64())
    }
}

/// `n` sequential echo calls on `client` (ids from `next` on), each timed.
pub(crate) async fn timed_calls(
    client: &mut HttpClient,
    next: &mut u64,
    n: usize,
) -> Result<Vec<Duration>, String> {
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        *next += 1;
        let start = Instant::now();
        client.call(*next).await?;
        samples.push(start.elapsed());
    }
    Ok(samples)
}

// ---- scenario 4: sessions -----------------------------------------------------------

/// Connections that open sessions at once in the sessions scenario.
pub(crate) const SESSION_OPENERS: usize = 8;

/// Opens `calls / 5` (at most 1,000) stateful sessions from 8 connections, each session
/// `initialize` + `notifications/initialized`, and leaves them idle: the initialize rate,
/// and the server's resident memory growth per idle session.
pub(crate) async fn sessions(target: Target, calls: usize) -> Result<Figures, String> {
    let count = (calls / 5).clamp(SESSION_OPENERS, 1000) / SESSION_OPENERS * SESSION_OPENERS;
    let server = HttpServer::start(target, HttpMode::Stateful).await?;
    // A few sessions first, so the figure leaves out one-off start-up allocations.
    let mut warm = HttpClient::connect(&server.addr, HttpMode::Stateful).await?;
    warm.call(1).await?;
    let before = server.rss_kib()?;
    let start = Instant::now();
    let openers: Vec<_> = (0..SESSION_OPENERS)
        .map(|_| {
            let addr = server.addr.clone();
            tokio::spawn(async move {
                let mut client = HttpClient::connect(&addr, HttpMode::Stateful).await?;
                for _ in 1..count / SESSION_OPENERS {
                    client.session = None;
                    client.handshake(HttpMode::Stateful).await?;
                }
                Ok::<_, String>(client)
            })
        })
        .collect();
    let mut clients = Vec::new();
    for opener in openers {
        clients.push(opener.await.map_err(|e| e.to_string())??);
    }
    let rate = count as f64 / start.elapsed().as_secs_f64();
    let after = server.rss_kib()?;
    drop(clients);
    server.stop().await?;
    Ok(vec![
        ("initialize_per_s", rate),
        (
            "rss_kib_per_idle_session",
            (after - before).max(0.0) / count as f64,
        ),
    ])
}

// ---- scenario 5: cold start ---------------------------------------------------------

/// Process start to the first `initialize` answer, over stdio and over HTTP (median of
/// `calls / 50`, at least 3, starts each).
pub(crate) async fn cold(target: Target, calls: usize) -> Result<Figures, String> {
    let starts = (calls / 50).max(3);
    let mut stdio_ms = Vec::with_capacity(starts);
    let mut http_ms = Vec::with_capacity(starts);
    for _ in 0..starts {
        let start = Instant::now();
        let mut pipes = Pipes::spawn(target)?;
        pipes.send(&wire::initialize()).await?;
        pipes.answer(0).await?;
        stdio_ms.push(start.elapsed().as_secs_f64() * 1e3);
        pipes.finish().await?;

        let start = Instant::now();
        let server = HttpServer::start(target, HttpMode::Stateful).await?;
        let mut client = HttpClient::open(&server.addr).await?;
        let (status, _, body) = client.post(wire::initialize()).await?;
        if status != hyper::StatusCode::OK {
            return Err(format!("initialize answered {status}: {body}"));
        }
        http_ms.push(start.elapsed().as_secs_f64() * 1e3);
        drop(client);
        server.stop().await?;
    }
    let median = |v: &[f64]| modelctx_bench::stats::median(v).unwrap_or_default();
    Ok(vec![
        ("stdio_ms", median(&stdio_ms)),
        ("http_ms", median(&http_ms)),
    ])
}

// ---- scale-out on Redis -------------------------------------------------------------
