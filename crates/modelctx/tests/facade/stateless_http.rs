//! A session-less streamable HTTP service hosts a `Server` with plain `Server::serve`: the
//! transport says that its session starts initialised and cannot carry requests to the
//! client, and the server applies it — no session settings to get right by hand.

use std::time::Duration;

use modelctx::client::{Client, ConnectMode};
use modelctx::http::{
    StreamableHttpClientTransport, StreamableHttpServerConfig, StreamableHttpService,
};
use modelctx::server::{Context, NoArgs, Server, ToolDef};
use modelctx::types::ListRootsRequest;

const WAIT: Duration = Duration::from_secs(10);

/// `hello` answers "hi"; `ask` sends the client a request and answers what became of it.
fn server() -> Server {
    let hello = ToolDef::new("hello", |_: NoArgs, _cx: Context| async {
        Ok::<_, String>("hi")
    });
    let ask = ToolDef::new("ask", |_: NoArgs, cx: Context| async move {
        match cx.request::<ListRootsRequest>(Default::default()).await {
            Ok(_) => Ok::<_, String>("answered".to_owned()),
            Err(e) => Ok(format!("refused: {e}")),
        }
    });
    Server::builder("stateless", "1.0.0")
        .tool(hello)
        .unwrap()
        .tool(ask)
        .unwrap()
        .build()
}

async fn stateless_url() -> String {
    let server = server();
    let service = StreamableHttpService::with_config(
        StreamableHttpServerConfig::default().sessionless(),
        move |t| {
            server.serve(t);
        },
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(service.serve(listener, std::future::pending::<()>()));
    url
}

/// A client of `url` at protocol 2025-11-25 (with its handshake).
async fn connect_2025(url: &str) -> Client {
    let transport = StreamableHttpClientTransport::new(url).unwrap();
    Client::builder("t", "1.0.0")
        .mode(ConnectMode::Handshake)
        .connect(transport)
        .await
        .unwrap()
}

async fn text_of(client: &Client, tool: &str) -> String {
    let result = tokio::time::timeout(WAIT, client.call_tool(tool, serde_json::Map::new()))
        .await
        .expect("the call answers in time")
        .expect("the call succeeds");
    result.content[0].as_text().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn a_stateless_service_serves_a_plainly_served_server_in_both_eras() {
    let url = stateless_url().await;
    for (mode, version) in [
        (ConnectMode::Handshake, "2025-11-25"),
        (ConnectMode::Auto, "2026-07-28"),
    ] {
        let transport = StreamableHttpClientTransport::new(&url).unwrap();
        let client = tokio::time::timeout(
            WAIT,
            Client::builder("t", "1.0.0").mode(mode).connect(transport),
        )
        .await
        .expect("connects in time")
        .expect("connects");
        assert_eq!(client.protocol_version().as_str(), version);
        // Every POST is a fresh session, served at once without a handshake of its own.
        assert_eq!(text_of(&client, "hello").await, "hi");
        assert_eq!(text_of(&client, "hello").await, "hi");
        client.close().await;
    }
}

#[tokio::test]
async fn a_request_to_the_client_over_stateless_http_2025_fails_at_once() {
    let url = stateless_url().await;
    let client = connect_2025(&url).await;
    // Nothing could carry the request back: it is refused, not left waiting.
    let answer = text_of(&client, "ask").await;
    assert!(
        answer.starts_with("refused:") && answer.contains("stateless"),
        "{answer}"
    );
    client.close().await;
}

/// What the tools of [`kept_server`] tell the test, and what the test tells them.
struct Signals {
    /// `linger`'s leftover: its request's cancellation fired after the answer.
    over: tokio::sync::mpsc::UnboundedReceiver<()>,
    /// Tells `linger`'s leftover to close its session.
    close: tokio::sync::mpsc::UnboundedSender<()>,
    /// `linger`'s leftover closed (or tried to).
    closed: tokio::sync::mpsc::UnboundedReceiver<()>,
    /// `hold` is running.
    holding: tokio::sync::mpsc::UnboundedReceiver<()>,
    /// Lets one `hold` answer.
    release: tokio::sync::mpsc::UnboundedSender<()>,
}

/// `linger` answers at once and leaves a task behind holding its `Context`: the task
/// waits for its request's cancellation, then for the test's word to close the session.
/// `hold` answers "held" when the test releases it. `hello` answers "hi".
fn kept_server() -> (Server, Signals) {
    use std::sync::Arc;
    use tokio::sync::{Mutex, mpsc};
    let (over_tx, over) = mpsc::unbounded_channel();
    let (close, close_rx) = mpsc::unbounded_channel::<()>();
    let (closed_tx, closed) = mpsc::unbounded_channel();
    let (holding_tx, holding) = mpsc::unbounded_channel();
    let (release, release_rx) = mpsc::unbounded_channel::<()>();
    let close_rx = Arc::new(Mutex::new(close_rx));
    let release_rx = Arc::new(Mutex::new(release_rx));
    let linger = ToolDef::new("linger", move |_: NoArgs, cx: Context| {
        let (over_tx, closed_tx, close_rx) = (over_tx.clone(), closed_tx.clone(), close_rx.clone());
        async move {
            tokio::spawn(async move {
                cx.cancellation().cancelled().await;
                let _ = over_tx.send(());
                close_rx.lock().await.recv().await;
                cx.session().close().await;
                cx.peer().close().await;
                let _ = closed_tx.send(());
            });
            Ok::<_, String>("left")
        }
    });
    let hold = ToolDef::new("hold", move |_: NoArgs, _cx: Context| {
        let (holding_tx, release_rx) = (holding_tx.clone(), release_rx.clone());
        async move {
            let _ = holding_tx.send(());
            release_rx.lock().await.recv().await;
            Ok::<_, String>("held")
        }
    });
    let hello = ToolDef::new("hello", |_: NoArgs, _cx: Context| async {
        Ok::<_, String>("hi")
    });
    let server = Server::builder("kept", "1.0.0")
        .tool(linger)
        .unwrap()
        .tool(hold)
        .unwrap()
        .tool(hello)
        .unwrap()
        .build();
    let signals = Signals {
        over,
        close,
        closed,
        holding,
        release,
    };
    (server, signals)
}

async fn next<T>(rx: &mut tokio::sync::mpsc::UnboundedReceiver<T>, what: &str) -> T {
    tokio::time::timeout(WAIT, rx.recv())
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
        .expect(what)
}

/// Session-less JSON mode serves POST after POST with one kept session, and a request's
/// `Context` is good for that request only: its cancellation fires once the request has
/// ended, and a handler's leftover that closes "its" session later leaves alone the
/// other client's request the session serves by then. A session lent when every
/// session is closed is not kept.
#[tokio::test]
async fn a_kept_session_serves_each_request_alone_in_session_less_json_mode() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let (server, mut signals) = kept_server();
    let started = Arc::new(AtomicUsize::new(0));
    let counter = started.clone();
    let service = StreamableHttpService::with_config(
        StreamableHttpServerConfig::default()
            .sessionless()
            .json_response(),
        move |t| {
            counter.fetch_add(1, Ordering::SeqCst);
            server.serve(t);
        },
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(
        service
            .clone()
            .serve(listener, std::future::pending::<()>()),
    );
    let client = connect_2025(&url).await;
    // (The handshake's POSTs change or build sessions of their own.)
    let after_handshake = started.load(Ordering::SeqCst);

    assert_eq!(text_of(&client, "linger").await, "left");
    next(&mut signals.over, "the ended request's cancellation").await;

    // Another request, lent the same session, is in flight when the leftover closes.
    let holder = client.clone();
    let held = tokio::spawn(async move { text_of(&holder, "hold").await });
    next(&mut signals.holding, "hold to run").await;
    signals.close.send(()).unwrap();
    next(&mut signals.closed, "the leftover's close").await;
    signals.release.send(()).unwrap();
    assert_eq!(held.await.unwrap(), "held");
    assert_eq!(
        started.load(Ordering::SeqCst),
        after_handshake + 1,
        "one kept session served linger and hold"
    );

    // Closed while lent: not kept.
    let holder = client.clone();
    let held = tokio::spawn(async move { text_of(&holder, "hold").await });
    next(&mut signals.holding, "hold to run again").await;
    service.close_all_sessions();
    signals.release.send(()).unwrap();
    assert_eq!(
        held.await.unwrap(),
        "held",
        "a lent session finishes its POST"
    );
    assert_eq!(text_of(&client, "hello").await, "hi");
    assert_eq!(
        started.load(Ordering::SeqCst),
        after_handshake + 2,
        "the session lent during close_all_sessions was not kept"
    );
    client.close().await;
}
