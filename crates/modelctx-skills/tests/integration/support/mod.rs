//! Shared by the skills tests: connecting a client to a server over each transport and
//! in each era, raw requests, and scratch directories.

#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use modelctx_client::{Client, ClientBuilder, ConnectMode};
use modelctx_http::{StreamableHttpClientTransport, StreamableHttpService};
use modelctx_server::Server;

/// How long any one step may take.
pub const WAIT: Duration = Duration::from_secs(20);

/// A transport a test runs over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    Memory,
    Http,
}

/// Every transport and era: (transport, client mode, the revision it lands on).
pub fn matrix() -> Vec<(Via, ConnectMode, &'static str)> {
    let mut out = Vec::new();
    for via in [Via::Memory, Via::Http] {
        out.push((via, ConnectMode::Handshake, "2025-11-25"));
        out.push((via, ConnectMode::Auto, "2026-07-28"));
    }
    out
}

/// A client of `server` over `via`, connected with `mode`.
pub async fn connect(server: Server, via: Via, mode: ConnectMode) -> Client {
    connect_with(server, via, client(mode)).await
}

/// The test client's builder, connecting with `mode`.
pub fn client(mode: ConnectMode) -> ClientBuilder {
    Client::builder("skills-test", "1.0.0").mode(mode)
}

/// A client built by `builder`, connected to `server` over `via`.
pub async fn connect_with(server: Server, via: Via, builder: ClientBuilder) -> Client {
    let connecting = async move {
        match via {
            Via::Memory => {
                let (client_end, server_end) = modelctx_memory::pair();
                server.serve(server_end);
                builder.connect(client_end).await
            }
            Via::Http => {
                let service = StreamableHttpService::new(move |t| {
                    server.serve(t);
                });
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                let url = format!("http://{}/mcp", listener.local_addr().unwrap());
                tokio::spawn(service.serve(listener, std::future::pending::<()>()));
                builder
                    .connect(StreamableHttpClientTransport::new(&url).unwrap())
                    .await
            }
        }
    };
    tokio::time::timeout(WAIT, connecting)
        .await
        .expect("connects in time")
        .expect("connects")
}

/// A scratch directory, removed when dropped.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(tag: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "modelctx-skills-{tag}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Writes `bytes` at `relative`, creating directories.
    pub fn write(&self, relative: &str, bytes: impl AsRef<[u8]>) {
        let path = self.0.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    /// Writes `bytes` at `relative` whole: to a hidden file beside it (never served),
    /// then renamed over it, so that no one sees it half written.
    pub fn replace(&self, relative: &str, bytes: impl AsRef<[u8]>) {
        let path = self.0.join(relative);
        let dir = path.parent().unwrap();
        std::fs::create_dir_all(dir).unwrap();
        let staging = dir.join(format!(
            ".staging-{}",
            path.file_name().unwrap().to_string_lossy()
        ));
        std::fs::write(&staging, bytes).unwrap();
        std::fs::rename(staging, path).unwrap();
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A `SKILL.md` with this name and description.
pub fn skill_md(name: &str, description: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\n\n# {name}\n\nInstructions.\n")
}
