//! The server's resource limits: header read timeout, idle expiry, session cap,
//! graceful shutdown.

#![cfg(all(feature = "server", feature = "client"))]

use std::time::Duration;

use modelctx_http::{HttpServerTransport, StreamableHttpServerConfig, StreamableHttpService};
use modelctx_transport::{MessageSink, MessageStream, Transport, TransportMessage};
use modelctx_types::JsonRpcMessage;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

const WAIT: Duration = Duration::from_secs(5);

/// A service whose sessions answer initialize, and report when their transport ends.
fn service(
    config: StreamableHttpServerConfig,
) -> (StreamableHttpService, mpsc::UnboundedReceiver<()>) {
    let (ended_tx, ended) = mpsc::unbounded_channel();
    let service = StreamableHttpService::with_config(config, move |t: HttpServerTransport| {
        let ended = ended_tx.clone();
        let (sink, mut stream) = t.split();
        tokio::spawn(async move {
            while let Some(Ok(m)) = stream.recv().await {
                if let JsonRpcMessage::Request(r) = m.message {
                    let reply = format!(
                        r#"{{"jsonrpc":"2.0","id":{},"result":{{"protocolVersion":"2025-11-25","capabilities":{{}},"serverInfo":{{"name":"l","version":"1"}}}}}}"#,
                        r.id
                    );
                    let reply =
                        TransportMessage::new(reply.parse().unwrap()).related_to(Some(r.id));
                    let _ = sink.send(reply).await;
                }
            }
            let _ = ended.send(());
        });
    });
    (service, ended)
}

async fn start(
    service: StreamableHttpService,
) -> (
    String,
    oneshot::Sender<()>,
    tokio::task::JoinHandle<std::io::Result<()>>,
) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(service.serve(listener, async move {
        let _ = stopped.await;
    }));
    (format!("http://{addr}/mcp"), stop, task)
}

async fn initialize(url: &str) -> reqwest::Response {
    reqwest::Client::new()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn slow_headers_are_cut_off() {
    let config =
        StreamableHttpServerConfig::default().header_read_timeout(Duration::from_millis(200));
    let (svc, _) = service(config);
    let (url, _stop, _task) = start(svc).await;
    let addr = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    socket
        .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .unwrap();
    let mut buf = Vec::new();
    // The server gives up on the headers and closes the connection.
    let read = tokio::time::timeout(WAIT, socket.read_to_end(&mut buf)).await;
    assert!(read.is_ok(), "the connection was closed by the server");
}

/// The cap and the expiry apart: an idle timeout short enough to wait for could end
/// a session while the cap is being checked (the time between two requests is the
/// machine's), so the cap is checked on sessions that never idle out, and the expiry
/// on a cap of one, where only an ended session makes room.
#[tokio::test]
async fn the_session_cap_holds_and_idle_sessions_expire() {
    let config = StreamableHttpServerConfig::default()
        .max_sessions(2)
        .session_idle_timeout(None);
    let (svc, _ended) = service(config);
    let (url, _stop, _task) = start(svc.clone()).await;
    for _ in 0..2 {
        assert_eq!(initialize(&url).await.status(), 200);
    }
    assert_eq!(initialize(&url).await.status(), 503, "over the cap");
    assert_eq!(svc.session_count(), 2);

    let config = StreamableHttpServerConfig::default()
        .max_sessions(1)
        .session_idle_timeout(Some(Duration::from_millis(200)));
    let (svc, mut ended) = service(config);
    let (url, _stop, _task) = start(svc.clone()).await;
    assert_eq!(initialize(&url).await.status(), 200);
    tokio::time::timeout(WAIT, ended.recv())
        .await
        .expect("an idle session expires");
    assert_eq!(svc.session_count(), 0);
    assert_eq!(initialize(&url).await.status(), 200, "room again");
}

#[tokio::test]
async fn graceful_shutdown_ends_open_streams() {
    let (svc, mut ended) = service(StreamableHttpServerConfig::default());
    let (url, stop, task) = start(svc).await;
    let init = initialize(&url).await;
    let id = init.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    drop(init.text().await);
    let get = reqwest::Client::new()
        .get(&url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &id)
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), 200);
    stop.send(()).unwrap();
    // The standalone stream ends, the session ends, and serve returns.
    tokio::time::timeout(WAIT, get.text())
        .await
        .expect("the stream ended")
        .ok();
    tokio::time::timeout(WAIT, ended.recv())
        .await
        .expect("the session ended");
    tokio::time::timeout(WAIT, task)
        .await
        .expect("serve returned")
        .unwrap()
        .unwrap();
}
