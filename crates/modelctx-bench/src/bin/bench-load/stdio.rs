//! stdio: the server as a child process, newline-delimited JSON-RPC on its pipes.

use std::sync::Arc;
use std::time::Instant;

use modelctx_bench::process::spawn_piped;
use modelctx_bench::stats::Latencies;
use modelctx_bench::wire;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::{Figures, STDIO_WINDOW, Target, WAIT};

pub(crate) struct Pipes {
    pub(crate) child: Child,
    pub(crate) stdin: ChildStdin,
    pub(crate) stdout: BufReader<ChildStdout>,
    pub(crate) line: String,
}

impl Pipes {
    pub(crate) fn spawn(target: Target) -> Result<Self, String> {
        let (program, args) = target.server()?;
        let mut command = Command::new(&program);
        command.args(args).arg("stdio");
        let (child, stdin, stdout) = spawn_piped(&mut command, &program)?;
        Ok(Self {
            child,
            stdin,
            stdout,
            line: String::new(),
        })
    }

    pub(crate) async fn send(&mut self, message: &str) -> Result<(), String> {
        let mut line = String::with_capacity(message.len() + 1);
        line.push_str(message);
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        self.stdin.flush().await.map_err(|e| e.to_string())
    }

    /// Reads lines until the answer to `id`.
    pub(crate) async fn answer(&mut self, id: u64) -> Result<(), String> {
        loop {
            let got = read_answer(&mut self.stdout, &mut self.line).await?;
            if got == Some(id) {
                return Ok(());
            }
        }
    }

    pub(crate) async fn handshake(&mut self) -> Result<(), String> {
        self.send(&wire::initialize()).await?;
        tokio::time::timeout(WAIT, self.answer(0))
            .await
            .map_err(|_| "no answer to initialize")??;
        self.send(wire::initialized()).await
    }

    pub(crate) async fn finish(self) -> Result<(), String> {
        let Pipes {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        match tokio::time::timeout(WAIT, child.wait()).await {
            Ok(status) => status.map(drop).map_err(|e| e.to_string()),
            Err(_) => {
                let _ = child.kill().await;
                Err("the server did not exit when its stdin closed".into())
            }
        }
    }
}

/// Reads one line and returns the id of the answer on it (`None` for a notification).
pub(crate) async fn read_answer(
    stdout: &mut BufReader<ChildStdout>,
    line: &mut String,
) -> Result<Option<u64>, String> {
    line.clear();
    let n = tokio::time::timeout(WAIT, stdout.read_line(line))
        .await
        .map_err(|_| "the server stopped answering")?
        .map_err(|e| e.to_string())?;
    if n == 0 {
        return Err("the server closed its stdout".into());
    }
    wire::answer_id(line.trim_end())
}

pub(crate) async fn stdio(target: Target, calls: usize) -> Result<Figures, String> {
    let mut pipes = Pipes::spawn(target)?;
    pipes.handshake().await?;
    // Sequential: one call in flight.
    let mut id = 0u64;
    for _ in 0..calls / 10 {
        id += 1;
        pipes.send(&wire::call(id)).await?;
        pipes.answer(id).await?;
    }
    let mut samples = Vec::with_capacity(calls);
    for _ in 0..calls {
        id += 1;
        let start = Instant::now();
        pipes.send(&wire::call(id)).await?;
        pipes.answer(id).await?;
        samples.push(start.elapsed());
    }
    let latencies = Latencies::from_durations(&samples);
    // Pipelined: up to STDIO_WINDOW calls in flight, written by one task and read here.
    let Pipes {
        child,
        mut stdin,
        mut stdout,
        mut line,
    } = pipes;
    let window = Arc::new(tokio::sync::Semaphore::new(STDIO_WINDOW));
    let first = id + 1;
    let start = Instant::now();
    let writer = {
        let window = window.clone();
        tokio::spawn(async move {
            for id in first..first + calls as u64 {
                window.acquire().await.map_err(|e| e.to_string())?.forget();
                let mut text = wire::call(id);
                text.push('\n');
                stdin
                    .write_all(text.as_bytes())
                    .await
                    .map_err(|e| e.to_string())?;
                if window.available_permits() == 0 || id + 1 == first + calls as u64 {
                    stdin.flush().await.map_err(|e| e.to_string())?;
                }
            }
            stdin.flush().await.map_err(|e| e.to_string())?;
            Ok::<ChildStdin, String>(stdin)
        })
    };
    let mut answered = 0;
    while answered < calls {
        if read_answer(&mut stdout, &mut line).await?.is_some() {
            answered += 1;
            window.add_permits(1);
        }
    }
    let rate = calls as f64 / start.elapsed().as_secs_f64();
    let stdin = writer.await.map_err(|e| e.to_string())??;
    Pipes {
        child,
        stdin,
        stdout,
        line,
    }
    .finish()
    .await?;
    Ok(vec![
        ("seq_p50_us", latencies.percentile(50.0)),
        ("seq_p99_us", latencies.percentile(99.0)),
        ("pipelined_calls_per_s", rate),
    ])
}

// ---- scenario 3: streamable HTTP ----------------------------------------------------
