//! List changes and resource updates across processes: two servers (the "instances" A
//! and B) share one Redis through `modelctx_redis::Announcements`; a change raised on A reaches the
//! clients of B in both eras — a 2026-07-28 `subscriptions/listen` stream, a 2025-era
//! session's GET stream, a 2025-era in-memory session — and a Redis restart does not
//! stop later announcements.

use std::sync::Arc;

use crate::support::{RedisServer, WITHIN};
use modelctx::client::{Client, ConnectMode, Watch};
use modelctx::http::{
    StreamableHttpClientTransport, StreamableHttpServerConfig, StreamableHttpService,
};
use modelctx::server::{Context, ResourceDef, Server, ToolDef};
use modelctx::session::announce::{Announcement, AnnouncementBus, AnnouncementReceiver};
use modelctx::transport::Transport;
use modelctx::types::{CallToolResult, ServerNotification, SubscriptionFilter, Tool};
use modelctx_test::within;
use serde_json::json;
use tokio::sync::mpsc;

const URI: &str = "file:///shared.txt";

async fn bus(redis: &RedisServer) -> Arc<modelctx_redis::Announcements> {
    Arc::new(redis.announcements("fan:").await)
}

/// One instance's server: tools and a subscribable resource, announcing through `bus`.
fn instance(name: &str, bus: Arc<modelctx_redis::Announcements>) -> Server {
    Server::builder(name, "1.0.0")
        .enable_tools()
        .resource(ResourceDef::new(URI, "shared", |_cx| async {
            Ok::<_, String>("shared")
        }))
        .unwrap()
        .announcements(bus)
        .build()
}

fn extra_tool(name: &str) -> ToolDef {
    let tool = Tool::new(name, json!({"type": "object"}).as_object().unwrap().clone());
    ToolDef::with_schema(tool, |_args, _cx: Context| async move {
        Ok::<_, String>(CallToolResult::text("extra"))
    })
}

/// Serves `server` over streamable HTTP (both eras) on loopback; returns its URL and
/// what stops it.
async fn serve_http(server: Server) -> (String, tokio::sync::oneshot::Sender<()>) {
    let service = StreamableHttpService::with_config(
        StreamableHttpServerConfig::default(),
        move |transport| {
            server.serve(transport);
        },
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(service.serve(listener, async move {
        let _ = stopped.await;
    }));
    (url, stop)
}

fn filter() -> SubscriptionFilter {
    SubscriptionFilter::new()
        .with_tools_list_changed(true)
        .with_resource_subscriptions(vec![URI.to_owned()])
}

/// A client connected over `transport` in `mode`, watching [`filter`].
async fn watch(transport: impl Transport, mode: ConnectMode) -> (Client, Watch) {
    let client = Client::builder("watcher", "1.0.0").mode(mode);
    let client = within(WITHIN, "connect", client.connect(transport))
        .await
        .unwrap();
    let watch = within(WITHIN, "the watch", client.watch(filter()))
        .await
        .unwrap();
    (client, watch)
}

async fn http_watch(url: &str, mode: ConnectMode) -> (Client, Watch) {
    watch(
        StreamableHttpClientTransport::builder(url).build().unwrap(),
        mode,
    )
    .await
}

async fn memory_watch(server: &Server, mode: ConnectMode) -> (Client, Watch) {
    let (client_side, server_side) = modelctx::memory::pair();
    let _session = server.serve(server_side);
    watch(client_side, mode).await
}

/// The next change a watch hears.
async fn next(watch: &mut Watch, who: &str) -> ServerNotification {
    within(WITHIN, who, watch.next())
        .await
        .unwrap_or_else(|| panic!("{who}: the watch ended"))
        .unwrap_or_else(|e| panic!("{who}: {e}"))
}

fn is_tools_changed(n: &ServerNotification) -> bool {
    matches!(n, ServerNotification::ToolListChanged(_))
}

fn is_updated(n: &ServerNotification) -> bool {
    matches!(n, ServerNotification::ResourceUpdated(u) if u.params.uri == URI)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_on_one_instance_reaches_every_client_of_the_other() {
    let redis = RedisServer::start();
    let server_a = instance("a", bus(&redis).await);
    let server_b = instance("b", bus(&redis).await);
    let (url_b, _stop_b) = serve_http(server_b.clone()).await;

    // B's clients: a 2026-07-28 listen stream and a 2025-era GET stream over HTTP, and a
    // 2025-era in-memory session. A has a client of its own.
    let (listen_client, listen) = http_watch(&url_b, ConnectMode::Discover).await;
    assert_eq!(listen_client.protocol_version().as_str(), "2026-07-28");
    let (get_client, get_stream) = http_watch(&url_b, ConnectMode::Handshake).await;
    assert_eq!(get_client.protocol_version().as_str(), "2025-11-25");
    let (_memory_client, memory) = memory_watch(&server_b, ConnectMode::Handshake).await;
    let (_own_client, mut own) = memory_watch(&server_a, ConnectMode::Handshake).await;
    let mut watches = [
        ("2026 listen stream on B", listen),
        ("2025 GET stream on B", get_stream),
        ("2025 in-memory session on B", memory),
    ];

    server_a.add_tool(extra_tool("from_a")).unwrap();
    for (who, watch) in &mut watches {
        let change = next(watch, who).await;
        assert!(is_tools_changed(&change), "{who}: {change:?}");
    }
    let change = next(&mut own, "A's own session").await;
    assert!(is_tools_changed(&change), "{change:?}");

    // A resource update goes out at once; it counts A's own subscribers only.
    let told = server_a.notify_resource_updated(URI).await;
    assert_eq!(told, 1, "A's one subscribed session");
    for (who, watch) in &mut watches {
        let change = next(watch, who).await;
        assert!(is_updated(&change), "{who}: {change:?}");
    }
    // A's session heard the update once, and the list change once: what comes next
    // for it is a change made on B.
    let change = next(&mut own, "A's own session").await;
    assert!(is_updated(&change), "{change:?}");
    server_b.notify_resource_updated(URI).await;
    let change = next(&mut own, "A's own session").await;
    assert!(
        is_updated(&change),
        "no repeat of A's own announcements: {change:?}"
    );
}

/// Records what a bus hands it.
struct Recorder(mpsc::UnboundedSender<Announcement>);

impl AnnouncementReceiver for Recorder {
    fn receive(&self, announcement: Announcement) {
        let _ = self.0.send(announcement);
    }
}

fn recorder(
    bus: &modelctx_redis::Announcements,
) -> (
    Arc<dyn AnnouncementReceiver>,
    mpsc::UnboundedReceiver<Announcement>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let receiver: Arc<dyn AnnouncementReceiver> = Arc::new(Recorder(tx));
    bus.subscribe(Arc::downgrade(&receiver));
    (receiver, rx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bus_hands_a_process_only_the_announcements_of_others() {
    let redis = RedisServer::start();
    let (a, b) = (bus(&redis).await, bus(&redis).await);
    let (_keep_a, mut heard_a) = recorder(&a);
    let (_keep_b, mut heard_b) = recorder(&b);

    a.publish(Announcement::ToolsListChanged);
    b.publish(Announcement::ResourceUpdated(URI.to_owned()));
    a.publish(Announcement::PromptsListChanged);
    // Redis delivers the channel's messages to every subscriber in one order: A hears
    // only B's, B hears A's two, in order.
    assert_eq!(
        within(WITHIN, "A hears B", heard_a.recv()).await,
        Some(Announcement::ResourceUpdated(URI.to_owned()))
    );
    assert_eq!(
        within(WITHIN, "B hears A", heard_b.recv()).await,
        Some(Announcement::ToolsListChanged)
    );
    assert_eq!(
        within(WITHIN, "B hears A again", heard_b.recv()).await,
        Some(Announcement::PromptsListChanged)
    );
    // A's own prompt change came after B's update on the channel; B's next message
    // proves A read past it without handing it on.
    b.publish(Announcement::ResourcesListChanged);
    assert_eq!(
        within(WITHIN, "A hears B again", heard_a.recv()).await,
        Some(Announcement::ResourcesListChanged)
    );

    // Garbage on the channel is ignored; a dropped receiver is forgotten.
    let mut conn = redis.connection().await;
    let _: i64 = redis::cmd("PUBLISH")
        .arg("fan:announce")
        .arg("not json")
        .query_async(&mut conn)
        .await
        .unwrap();
    drop(_keep_b);
    a.publish(Announcement::ToolsListChanged);
    b.publish(Announcement::PromptsListChanged);
    assert_eq!(
        within(WITHIN, "A after garbage", heard_a.recv()).await,
        Some(Announcement::PromptsListChanged)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn announcements_flow_again_after_redis_restarts() {
    let mut redis = RedisServer::start();
    let server_a = instance("a", bus(&redis).await);
    let server_b = instance("b", bus(&redis).await);
    let (_client_b, mut watch_b) = memory_watch(&server_b, ConnectMode::Discover).await;

    redis.restart();
    // Raised while the subscribers may be away: never blocks, may be lost.
    within(WITHIN, "changes while Redis restarts", async {
        server_a.add_tool(extra_tool("during")).unwrap();
        server_a.notify_resource_updated("file:///other.txt").await
    })
    .await;

    // B's subscriber, once back, tells B's sessions that the lists may have changed
    // (what it missed is lost): the sign that it is subscribed again.
    let change = next(&mut watch_b, "B after the restart").await;
    assert!(is_tools_changed(&change), "{change:?}");
    // A later announcement from A reaches B.
    server_a.notify_resource_updated(URI).await;
    loop {
        let change = next(&mut watch_b, "B after the restart").await;
        if is_updated(&change) {
            break;
        }
        assert!(is_tools_changed(&change), "{change:?}");
    }
}
