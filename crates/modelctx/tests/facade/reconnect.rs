//! The streamable HTTP client through dropped connections and restarted servers, in
//! both eras: the server restarted on the same port between calls, a connection refused
//! until the server comes up (backoff), a `tools/call` in flight at the drop (fails as
//! interrupted, never sent again), a `tools/list` in flight at the drop (sent again,
//! answered once).
//!
//! The client reaches the server through a small TCP proxy on a fixed loopback port, so a
//! test can cut every connection, refuse new ones, and put a fresh server behind the
//! same port, at the moments it chooses.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use modelctx::client::{Client, ClientBuilder, ConnectMode, ListKind};
use modelctx::server::{Context, ResourceDef, Server, ToolDef};
use modelctx::session::SessionError;
use modelctx::transport::{
    ConnectionState, MessageStream, ReconnectPolicy, Transport, TransportError, TransportMessage,
};
use modelctx::types::{CallToolResult, JsonObject, ListToolsRequest, ListToolsResult, Tool};
use modelctx_http::{HttpClientHandle, StreamableHttpClientTransport, StreamableHttpService};
use modelctx_test::{text_of, within};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, oneshot};
use tokio::task::JoinSet;

const LIMIT: Duration = Duration::from_secs(20);

/// A TCP proxy on a fixed loopback port in front of whichever server is current.
struct Proxy {
    addr: SocketAddr,
    upstream: Arc<Mutex<SocketAddr>>,
    /// The accept loop and every connection it made: aborting them drops the sockets.
    tasks: Arc<Mutex<JoinSet<()>>>,
}

impl Proxy {
    async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let proxy = Self {
            addr: listener.local_addr().unwrap(),
            upstream: Arc::new(Mutex::new(upstream)),
            tasks: Arc::new(Mutex::new(JoinSet::new())),
        };
        proxy.accept(listener);
        proxy
    }

    fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    fn accept(&self, listener: TcpListener) {
        let upstream = self.upstream.clone();
        let tasks = self.tasks.clone();
        let inner_tasks = tasks.clone();
        tasks.lock().unwrap().spawn(async move {
            loop {
                let Ok((mut client, _)) = listener.accept().await else {
                    return;
                };
                let target = *upstream.lock().unwrap();
                inner_tasks.lock().unwrap().spawn(async move {
                    if let Ok(mut server) = TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
            }
        });
    }

    /// Cuts every connection and refuses new ones (the listener is closed when this
    /// returns).
    async fn down(&self) {
        let mut tasks = std::mem::take(&mut *self.tasks.lock().unwrap());
        tasks.shutdown().await;
    }

    /// Accepts again on the same port, in front of `upstream`.
    async fn up(&self, upstream: SocketAddr) {
        *self.upstream.lock().unwrap() = upstream;
        let listener = TcpListener::bind(self.addr).await.unwrap();
        self.accept(listener);
    }
}

/// Serves `server` over streamable HTTP on a loopback port of its own; returns its
/// address.
async fn serve(server: Server) -> SocketAddr {
    listen(StreamableHttpService::new(move |t| {
        server.serve(t);
    }))
    .await
}

/// Serves `service` on a loopback port of its own; returns its address.
async fn listen(service: StreamableHttpService) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(service.serve(listener, std::future::pending()));
    addr
}

fn tool(name: &str, text: &'static str) -> ToolDef {
    ToolDef::with_schema(
        Tool::without_arguments(name),
        move |_args: JsonObject, _cx: Context| async move { Ok::<_, String>(text.to_owned()) },
    )
}

/// A server with one tool, `hello`, answering `text`.
fn plain(text: &'static str) -> Server {
    Server::builder("restartable", "1.0.0")
        .tool(tool("hello", text))
        .unwrap()
        .build()
}

/// Short waits, so the tests run fast; many attempts, so a slow machine does not run
/// out of them.
fn policy() -> ReconnectPolicy {
    ReconnectPolicy::new()
        .initial_delay(Duration::from_millis(20))
        .max_delay(Duration::from_millis(200))
        .max_attempts(100)
}

/// A transport to `url` that reconnects by [`policy`].
fn reconnecting(url: &str) -> StreamableHttpClientTransport {
    StreamableHttpClientTransport::builder(url)
        .reconnect_policy(policy())
        .build()
        .unwrap()
}

/// Connects the client `builder` makes over `transport`; the client, and the
/// transport's handle.
async fn connect_with(
    builder: ClientBuilder,
    transport: StreamableHttpClientTransport,
) -> (Client, HttpClientHandle) {
    let handle = transport.handle();
    let client = within(LIMIT, "connecting", builder.connect(transport))
        .await
        .unwrap();
    (client, handle)
}

/// Connects a client in `mode` to `url` through a transport that reconnects.
async fn connect(url: &str, mode: ConnectMode) -> (Client, HttpClientHandle) {
    connect_with(
        Client::builder("survivor", "1.0.0").mode(mode),
        reconnecting(url),
    )
    .await
}

/// Calls `hello`, waiting for `what` at most [`LIMIT`].
async fn call_hello(client: &Client, what: &str) -> Result<CallToolResult, SessionError> {
    within(LIMIT, what, client.call_tool("hello", JsonObject::new())).await
}

/// The call after a restart: the new server answers `hello` with "second"; in 2025 through
/// a new session (not `before`), started with the saved initialize.
async fn the_new_server_answers(
    client: &Client,
    handle: &HttpClientHandle,
    before: &Option<String>,
    era: &str,
) {
    let second = call_hello(client, "the call after the restart")
        .await
        .unwrap_or_else(|e| panic!("{era}: {e}"));
    assert_eq!(text_of(&second), "second", "{era}");
    if era == "2025" {
        let now = handle.session_id();
        assert!(
            now.is_some() && now != *before,
            "{era}: {before:?} -> {now:?}"
        );
    }
}

/// The two eras: the handshake (2025-11-25) and 2026-07-28.
fn eras() -> [(ConnectMode, &'static str); 2] {
    [
        (ConnectMode::Handshake, "2025"),
        (ConnectMode::Auto, "2026"),
    ]
}

#[tokio::test]
async fn a_server_restarted_on_the_same_port_between_calls_is_used_again() {
    for (mode, era) in eras() {
        let proxy = Proxy::start(serve(plain("first")).await).await;
        let (client, handle) = connect(&proxy.url(), mode).await;
        let first = call_hello(&client, "the first call").await.unwrap();
        assert_eq!(text_of(&first), "first", "{era}");
        let session = handle.session_id();
        assert_eq!(session.is_some(), era == "2025", "{era}: {session:?}");

        // The server goes away and a new one, which knows no session, takes its port.
        proxy.down().await;
        proxy.up(serve(plain("second")).await).await;

        the_new_server_answers(&client, &handle, &session, era).await;
        if era != "2025" {
            assert_eq!(handle.session_id(), None, "{era}");
        }
        client.close().await;
    }
}

#[tokio::test]
async fn a_refused_connection_is_tried_again_until_the_server_comes_up() {
    for (mode, era) in eras() {
        // A port nobody listens on yet.
        let proxy = Proxy::start(serve(plain("up")).await).await;
        proxy.down().await;
        let transport = reconnecting(&proxy.url());
        let handle = transport.handle();
        let mut state = handle.connection_state();
        let connecting = tokio::spawn(
            Client::builder("patient", "1.0.0")
                .mode(mode)
                .connect(transport),
        );
        // The first attempt was refused: the transport is backing off.
        within(
            LIMIT,
            "reconnecting",
            state.wait_for(|s| matches!(s, ConnectionState::Reconnecting { .. })),
        )
        .await
        .unwrap();
        proxy.up(serve(plain("up")).await).await;
        let client = within(LIMIT, "connecting", connecting)
            .await
            .unwrap()
            .unwrap_or_else(|e| panic!("{era}: {e}"));
        let result = call_hello(&client, "a call").await.unwrap();
        assert_eq!(text_of(&result), "up", "{era}");
        assert_eq!(
            *handle.connection_state().borrow(),
            ConnectionState::Connected
        );
        client.close().await;
    }
}

#[tokio::test]
async fn a_refused_connection_fails_as_undelivered_once_the_attempts_are_used_up() {
    let proxy = Proxy::start(serve(plain("up")).await).await;
    proxy.down().await;
    // Without a policy: at once.
    let transport = StreamableHttpClientTransport::new(&proxy.url()).unwrap();
    let connect = Client::builder("hasty", "1.0.0")
        .mode(ConnectMode::Handshake)
        .connect(transport);
    let error = within(LIMIT, "connecting", connect).await.unwrap_err();
    assert!(error.is_undelivered(), "{error}");
    assert!(!error.is_interrupted(), "{error}");
    assert!(error.to_string().contains("not delivered"), "{error}");

    // With one: after its attempts, saying how many.
    let transport = StreamableHttpClientTransport::builder(&proxy.url())
        .reconnect_policy(policy().max_attempts(3))
        .build()
        .unwrap();
    let state = transport.handle().connection_state();
    let connect = Client::builder("patient", "1.0.0")
        .mode(ConnectMode::Handshake)
        .connect(transport);
    let error = within(LIMIT, "connecting", connect).await.unwrap_err();
    assert!(error.is_undelivered(), "{error}");
    assert!(error.to_string().contains("4 attempts"), "{error}");
    assert!(
        matches!(&*state.borrow(), ConnectionState::Failed(_)),
        "{:?}",
        *state.borrow()
    );
}

/// Without a policy nothing is retried, but nothing stays broken either: a call made
/// while the server is down fails at once as undelivered, and the next call, once a new
/// server holds the port, is answered (in 2025 through a new session).
#[tokio::test]
async fn without_a_policy_a_call_fails_at_once_and_the_next_one_reaches_the_new_server() {
    for (mode, era) in eras() {
        let proxy = Proxy::start(serve(plain("first")).await).await;
        let (client, handle) = connect_with(
            Client::builder("plain", "1.0.0").mode(mode),
            StreamableHttpClientTransport::new(&proxy.url()).unwrap(),
        )
        .await;
        let first = call_hello(&client, "a call").await.unwrap();
        assert_eq!(text_of(&first), "first", "{era}");
        let session = handle.session_id();

        proxy.down().await;
        let error = call_hello(&client, "the call while the server is down")
            .await
            .unwrap_err();
        assert!(error.is_undelivered(), "{era}: {error}");

        proxy.up(serve(plain("second")).await).await;
        the_new_server_answers(&client, &handle, &session, era).await;
        client.close().await;
    }
}

/// A server whose `slow` tool counts its calls, says it started, and never ends.
fn with_slow_tool(calls: Arc<AtomicUsize>, started: Arc<Notify>) -> Server {
    let slow = ToolDef::with_schema(
        Tool::without_arguments("slow"),
        move |_args: JsonObject, _cx: Context| {
            calls.fetch_add(1, Ordering::SeqCst);
            started.notify_one();
            async move {
                std::future::pending::<()>().await;
                Ok::<_, String>(String::new())
            }
        },
    );
    Server::builder("restartable", "1.0.0")
        .tool(slow)
        .unwrap()
        .tool(tool("hello", "after"))
        .unwrap()
        .build()
}

#[tokio::test]
async fn a_tool_call_in_flight_at_the_drop_fails_as_interrupted_and_is_not_sent_again() {
    for (mode, era) in eras() {
        let calls = Arc::new(AtomicUsize::new(0));
        let started = Arc::new(Notify::new());
        let first = serve(with_slow_tool(calls.clone(), started.clone())).await;
        let proxy = Proxy::start(first).await;
        let (client, _handle) = connect(&proxy.url(), mode).await;
        // Listed first, so the call sends nothing else (its output schema check).
        within(LIMIT, "listing", client.list_all_tools())
            .await
            .unwrap();

        let call = {
            let client = client.clone();
            tokio::spawn(async move { client.call_tool("slow", JsonObject::new()).await })
        };
        within(LIMIT, "the tool starting", started.notified()).await;
        proxy.down().await;
        proxy
            .up(serve(with_slow_tool(calls.clone(), started.clone())).await)
            .await;

        let error = within(LIMIT, "the call failing", call)
            .await
            .unwrap()
            .expect_err("the call cannot have an answer");
        assert!(error.is_interrupted(), "{era}: {error}");
        assert!(
            error.to_string().contains("may or may not have run"),
            "{era}: {error}"
        );
        // The client goes on with the new server, and the call ran once in all.
        let after = call_hello(&client, "a call after").await.unwrap();
        assert_eq!(text_of(&after), "after", "{era}");
        assert_eq!(calls.load(Ordering::SeqCst), 1, "{era}");
        client.close().await;
    }
}

/// A server whose `tools/list` counts its calls; the first one it gets says so and
/// never answers when `hang` is set.
fn with_counted_list(lists: Arc<AtomicUsize>, hang: Option<oneshot::Sender<()>>) -> Server {
    let hang = Arc::new(Mutex::new(hang));
    Server::builder("restartable", "1.0.0")
        .request_handler::<ListToolsRequest, _, _>(move |_params, _cx| {
            lists.fetch_add(1, Ordering::SeqCst);
            let hanging = hang.lock().unwrap().take();
            async move {
                if let Some(started) = hanging {
                    let _ = started.send(());
                    std::future::pending::<()>().await;
                }
                Ok(ListToolsResult::new(vec![Tool::without_arguments(
                    "listed",
                )]))
            }
        })
        .build()
}

#[tokio::test]
async fn a_list_in_flight_at_the_drop_is_sent_again_and_answered_once() {
    for (mode, era) in eras() {
        let first_lists = Arc::new(AtomicUsize::new(0));
        let (started, listed) = oneshot::channel();
        let proxy =
            Proxy::start(serve(with_counted_list(first_lists.clone(), Some(started))).await).await;
        let (client, _handle) = connect(&proxy.url(), mode).await;

        let list = {
            let client = client.clone();
            tokio::spawn(async move { client.list_tools(None).await })
        };
        within(LIMIT, "the list starting", listed).await.unwrap();
        let second_lists = Arc::new(AtomicUsize::new(0));
        proxy.down().await;
        proxy
            .up(serve(with_counted_list(second_lists.clone(), None)).await)
            .await;

        let page = within(LIMIT, "the list being answered", list)
            .await
            .unwrap()
            .unwrap_or_else(|e| panic!("{era}: {e}"));
        assert_eq!(page.tools.len(), 1, "{era}");
        assert_eq!(page.tools[0].name, "listed", "{era}");
        assert_eq!(first_lists.load(Ordering::SeqCst), 1, "{era}");
        assert_eq!(second_lists.load(Ordering::SeqCst), 1, "{era}");
        client.close().await;
    }
}

/// A server with one subscribable resource.
fn with_resource() -> Server {
    Server::builder("restartable", "1.0.0")
        .resource(ResourceDef::new(
            "test://watched",
            "watched",
            |_cx: Context| async { Ok::<_, String>("contents") },
        ))
        .unwrap()
        .tool(tool("hello", "resource server"))
        .unwrap()
        .build()
}

/// Subscribes `client` to `test://watched`.
async fn subscribe_to_watched(client: &Client) {
    within(
        LIMIT,
        "subscribing",
        client.subscribe_resource("test://watched"),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn a_new_session_of_a_restarted_server_gets_the_subscriptions_of_the_old() {
    let first = with_resource();
    let proxy = Proxy::start(serve(first.clone()).await).await;
    let (client, _handle) = connect(&proxy.url(), ConnectMode::Handshake).await;
    subscribe_to_watched(&client).await;
    assert_eq!(first.notify_resource_updated("test://watched").await, 1);

    let second = with_resource();
    proxy.down().await;
    proxy.up(serve(second.clone()).await).await;
    // The next request starts a new session, which is subscribed again before it goes.
    call_hello(&client, "a call after the restart")
        .await
        .unwrap();
    assert_eq!(second.notify_resource_updated("test://watched").await, 1);
    client.close().await;
}

/// A server transport that says when a request of `method` arrives (every message goes
/// through `recv`: the wrapper declines direct delivery).
struct Spy<T> {
    inner: T,
    method: &'static str,
    seen: Arc<Notify>,
}

struct SpyStream<S> {
    inner: S,
    method: &'static str,
    seen: Arc<Notify>,
}

impl<T: Transport> Transport for Spy<T> {
    type Sink = T::Sink;
    type Stream = SpyStream<T::Stream>;

    fn split(self) -> (T::Sink, SpyStream<T::Stream>) {
        let (sink, inner) = self.inner.split();
        let (method, seen) = (self.method, self.seen);
        (
            sink,
            SpyStream {
                inner,
                method,
                seen,
            },
        )
    }

    fn info(&self) -> modelctx_transport::TransportInfo {
        self.inner.info()
    }
}

impl<S: MessageStream> MessageStream for SpyStream<S> {
    fn recv(&mut self) -> BoxFuture<'_, Option<Result<TransportMessage, TransportError>>> {
        Box::pin(async move {
            let next = self.inner.recv().await;
            if let Some(Ok(m)) = &next
                && m.message.method() == Some(self.method)
            {
                self.seen.notify_one();
            }
            next
        })
    }
}

async fn serve_spied(server: Server, method: &'static str, seen: Arc<Notify>) -> SocketAddr {
    listen(StreamableHttpService::new(move |inner| {
        server.serve(Spy {
            inner,
            method,
            seen: seen.clone(),
        });
    }))
    .await
}

#[tokio::test]
async fn the_clients_list_watch_listens_again_on_a_restarted_server() {
    let first_listens = Arc::new(Notify::new());
    let proxy = Proxy::start(
        serve_spied(
            plain("first"),
            "subscriptions/listen",
            first_listens.clone(),
        )
        .await,
    )
    .await;
    let (changed_tx, mut changed) = tokio::sync::mpsc::unbounded_channel();
    let watcher =
        Client::builder("watcher", "1.0.0").on_list_changed(ListKind::Tools, move |kind| {
            let _ = changed_tx.send(kind);
        });
    let (client, _handle) = connect_with(watcher, reconnecting(&proxy.url())).await;
    assert_eq!(
        client.protocol_version(),
        &modelctx::types::ProtocolVersion::V2026_07_28
    );
    within(LIMIT, "the first listen", first_listens.notified()).await;

    let second = plain("second");
    let second_listens = Arc::new(Notify::new());
    proxy.down().await;
    proxy
        .up(serve_spied(
            second.clone(),
            "subscriptions/listen",
            second_listens.clone(),
        )
        .await)
        .await;
    // The interrupted stream is opened again on the new server...
    within(LIMIT, "listening again", second_listens.notified()).await;
    // ... and a change there reaches the client's reaction.
    second.add_tool(tool("new", "new")).unwrap();
    let kind = within(LIMIT, "the change", changed.recv()).await.unwrap();
    assert_eq!(kind, ListKind::Tools);
    client.close().await;
}

#[tokio::test]
async fn a_session_forgotten_by_a_restarted_server_is_started_again_without_waiting_for_a_request()
{
    let proxy = Proxy::start(serve(with_resource()).await).await;
    let (client, handle) = connect(&proxy.url(), ConnectMode::Handshake).await;
    subscribe_to_watched(&client).await;
    let session = handle.session_id();

    let subscribed = Arc::new(Notify::new());
    proxy.down().await;
    proxy
        .up(serve_spied(with_resource(), "resources/subscribe", subscribed.clone()).await)
        .await;
    // No request from the client: its standalone stream found the session gone, and
    // the transport started a new one, subscriptions included.
    within(
        LIMIT,
        "the subscription in the new session",
        subscribed.notified(),
    )
    .await;
    assert_ne!(handle.session_id(), session);
    client.close().await;
}
