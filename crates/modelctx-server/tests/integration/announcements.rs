//! A server with an `AnnouncementBus`: what it changes itself is published (a list
//! change once per debounce window, a resource update at once) as well as told to its
//! sessions; what the bus hands it from other processes is told to its sessions and
//! never published again (two processes would echo it back and forth).

use std::sync::{Arc, Mutex, Weak};

use modelctx_memory::MockPeer;
use modelctx_server::{Context, ResourceDef, Server, ToolDef};
use modelctx_session::announce::{Announcement, AnnouncementBus, AnnouncementReceiver};
use modelctx_types::{CallToolResult, Tool};
use serde_json::json;
use tokio::sync::mpsc;

use crate::support::{handshake, serve};

const URI: &str = "file:///watched.txt";

/// A bus in this process: records what is published, hands on what a test delivers.
struct TestBus {
    published: mpsc::UnboundedSender<Announcement>,
    receivers: Mutex<Vec<Weak<dyn AnnouncementReceiver>>>,
}

impl std::fmt::Debug for TestBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TestBus")
    }
}

impl AnnouncementBus for TestBus {
    fn publish(&self, announcement: Announcement) {
        let _ = self.published.send(announcement);
    }

    fn subscribe(&self, receiver: Weak<dyn AnnouncementReceiver>) {
        self.receivers.lock().unwrap().push(receiver);
    }
}

impl TestBus {
    /// An announcement from another process.
    fn deliver(&self, announcement: Announcement) {
        for receiver in self.receivers.lock().unwrap().iter() {
            if let Some(receiver) = receiver.upgrade() {
                receiver.receive(announcement.clone());
            }
        }
    }
}

fn tool(name: &str) -> ToolDef {
    let tool = Tool::new(
        name,
        json!({"type": "object"}).as_object().cloned().unwrap(),
    );
    ToolDef::with_schema(tool, |_args, _cx: Context| async move {
        Ok::<_, String>(CallToolResult::text("ok"))
    })
}

/// A server on `bus` and one 2025-era session subscribed to [`URI`].
async fn setup() -> (
    Server,
    Arc<TestBus>,
    mpsc::UnboundedReceiver<Announcement>,
    MockPeer,
) {
    let (published, heard) = mpsc::unbounded_channel();
    let bus = Arc::new(TestBus {
        published,
        receivers: Mutex::new(Vec::new()),
    });
    let server = Server::builder("announcing", "1.0.0")
        .tool(tool("first"))
        .unwrap()
        .resource(ResourceDef::new(URI, "watched", |_cx| async {
            Ok::<_, String>("text")
        }))
        .unwrap()
        .announcements(bus.clone())
        .build();
    let (_session, mut mock) = serve(&server);
    handshake(&mut mock, json!({})).await;
    mock.request("sub", "resources/subscribe", json!({"uri": URI}))
        .await;
    mock.expect_result("sub").await;
    (server, bus, heard, mock)
}

#[tokio::test]
async fn local_changes_are_published_once_per_window_and_told() {
    let (server, _bus, mut heard, mut mock) = setup().await;
    server.add_tool(tool("second")).unwrap();
    server.add_tool(tool("third")).unwrap();
    mock.expect_notification("notifications/tools/list_changed")
        .await;
    // Published before the window's local delivery: one for both changes.
    assert_eq!(heard.try_recv(), Ok(Announcement::ToolsListChanged));
    assert!(heard.try_recv().is_err(), "one announcement per window");

    assert_eq!(server.notify_resource_updated(URI).await, 1);
    assert_eq!(
        heard.try_recv(),
        Ok(Announcement::ResourceUpdated(URI.to_owned()))
    );
    let updated = mock
        .expect_notification("notifications/resources/updated")
        .await;
    let params: serde_json::Value = serde_json::from_str(updated.params.unwrap().get()).unwrap();
    assert_eq!(params["uri"], URI);
}

#[tokio::test]
async fn other_processes_changes_are_told_and_not_published_again() {
    let (_server, bus, mut heard, mut mock) = setup().await;
    bus.deliver(Announcement::ToolsListChanged);
    mock.expect_notification("notifications/tools/list_changed")
        .await;
    bus.deliver(Announcement::ResourceUpdated(URI.to_owned()));
    mock.expect_notification("notifications/resources/updated")
        .await;
    // Prompts were not declared: nothing to tell, and the session hears nothing more
    // before the answer to a ping.
    bus.deliver(Announcement::PromptsListChanged);
    bus.deliver(Announcement::ResourceUpdated(
        "file:///other.txt".to_owned(),
    ));
    mock.request("ping", "ping", json!({})).await;
    mock.expect_result("ping").await;
    assert!(
        heard.try_recv().is_err(),
        "nothing published: {:?}",
        heard.try_recv()
    );
}
