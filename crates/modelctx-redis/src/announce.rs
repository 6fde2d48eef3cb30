//! [`Announcements`]: list changes and resource updates carried between server
//! processes on Redis pub/sub.
//!
//! Channel `<prefix>announce`; a message is JSON `{"from": <instance>, "kind", "uri"}`, the
//! instance being 128 random bits drawn at `connect`, and a subscriber drops its own
//! instance's messages (the server told its own sessions already). `publish` is a
//! `try_send` into a bounded queue (full: dropped) drained by a task that sends `PUBLISH`,
//! once more after a failure. A task on a dedicated pub/sub connection (`connect` returns
//! once it is subscribed) hands each announcement to the live receivers (weak references).
//! An idle subscriber pings; the stream's end or a failed ping makes it reconnect with
//! backoff. Pub/sub is at most once, so after a reconnect the subscriber hands its
//! receivers all three list changes: a client re-reads its lists once rather than missing a
//! change made while this process was away; resource updates missed then are lost. The
//! tasks end when the last clone of the bus is dropped.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures::StreamExt;
use modelctx_store::{Announcement, AnnouncementBus, AnnouncementReceiver};
use redis::aio::ConnectionManager;
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};

crate::config::config! {
    /// Channel name and queue bound of a [`Announcements`].
    pub struct AnnouncementsConfig {
        prefix: String = crate::DEFAULT_PREFIX.to_owned(),
        max_queued: usize = 1024,
    }

    /// The channel is `<prefix>announce` (default prefix `"modelctx:"`): processes that
    /// serve one endpoint use the same prefix.
    prefix(prefix: impl Into<String>) => prefix = prefix.into();

    /// Announcements waiting to be published at most (default 1,024; at least 1): one
    /// more while Redis is slow or away is dropped, not queued without bound.
    max_queued(announcements: usize) => max_queued = announcements.max(1);
}

/// An [`AnnouncementBus`] on Redis pub/sub: give it to every server of the processes
/// behind one endpoint (`ServerBuilder::announcements`), and a list change or resource
/// update raised in one reaches the sessions and `subscriptions/listen` streams of all.
///
/// Each announcement is one message on the channel `<prefix>announce`: a JSON object
/// naming the process that raised it and the kind of list, or the resource's URI. A
/// process ignores its own messages (it told its own sessions already). Publishing goes
/// through a bounded queue to a task that sends `PUBLISH` on a reconnecting connection
/// (one retry after a failure); receiving is a task holding a dedicated subscriber
/// connection, which pings Redis when idle (every 15 s) and reconnects when the
/// connection ends or stops answering.
///
/// Pub/sub delivers at most once: what is published while a process is not subscribed
/// never reaches it. After reconnecting, the subscriber therefore tells its servers that
/// every list changed (clients re-read their lists once); resource updates missed
/// meanwhile are lost.
///
/// One bus per server: the process is identified by the bus, so two servers that share
/// one bus in one process do not hear each other's announcements.
///
/// Cloning is cheap; the tasks end when the last clone is dropped.
#[derive(Clone)]
pub struct Announcements {
    inner: Arc<Inner>,
}

struct Inner {
    /// This process's id on the channel (random).
    instance: String,
    channel: String,
    queue: mpsc::Sender<Announcement>,
    receivers: Arc<Receivers>,
    /// Dropped with the bus: stops the subscriber task.
    _stop: oneshot::Sender<()>,
}

#[derive(Default)]
struct Receivers(Mutex<Vec<Weak<dyn AnnouncementReceiver>>>);

impl Receivers {
    /// Hands `announcement` to every live receiver, forgetting dropped ones.
    fn deliver(&self, announcement: &Announcement) {
        let live: Vec<_> = {
            let mut receivers = self.0.lock().unwrap_or_else(|p| p.into_inner());
            receivers.retain(|r| r.strong_count() > 0);
            receivers.iter().filter_map(Weak::upgrade).collect()
        };
        for receiver in live {
            receiver.receive(announcement.clone());
        }
    }
}

modelctx_types::__debug_shows!(Announcements, |v| {
    channel: &v.inner.channel,
    instance: &v.inner.instance,
});

/// One message on the channel.
#[derive(Debug, Serialize, Deserialize)]
struct Message {
    /// The process that raised it.
    from: String,
    /// `tools`, `resources`, `prompts` (a list changed) or `resource` (with `uri`).
    kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    uri: Option<String>,
}

impl Message {
    fn new(from: &str, announcement: &Announcement) -> Option<Self> {
        let (kind, uri) = match announcement {
            Announcement::ToolsListChanged => ("tools", None),
            Announcement::ResourcesListChanged => ("resources", None),
            Announcement::PromptsListChanged => ("prompts", None),
            Announcement::ResourceUpdated(uri) => ("resource", Some(uri.clone())),
            _ => return None,
        };
        Some(Self {
            from: from.to_owned(),
            kind: kind.to_owned(),
            uri,
        })
    }

    fn announcement(self) -> Option<Announcement> {
        Some(match (self.kind.as_str(), self.uri) {
            ("tools", _) => Announcement::ToolsListChanged,
            ("resources", _) => Announcement::ResourcesListChanged,
            ("prompts", _) => Announcement::PromptsListChanged,
            ("resource", Some(uri)) => Announcement::ResourceUpdated(uri),
            _ => return None,
        })
    }
}

/// How often an idle subscriber checks that Redis still answers.
const IDLE_PING: Duration = Duration::from_secs(15);
/// The longest wait between two attempts to reconnect the subscriber.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

impl Announcements {
    /// Connects to the Redis at `url` (publisher and subscriber), subscribes, and
    /// returns once the subscription is in place. Must be called within a tokio
    /// runtime; fails when Redis cannot be reached within 5 s.
    pub async fn connect(
        url: &str,
        config: AnnouncementsConfig,
    ) -> Result<Self, redis::RedisError> {
        let client = redis::Client::open(url)?;
        let conn = crate::connect(url).await?;
        let channel = format!("{}announce", config.prefix);
        let subscriber = subscribe(&client, &channel).await?;
        let instance = instance_id();
        let receivers = Arc::new(Receivers::default());
        let (queue, rx) = mpsc::channel(config.max_queued);
        let (stop, stopped) = oneshot::channel();
        tokio::spawn(publish_loop(conn, channel.clone(), instance.clone(), rx));
        tokio::spawn(subscribe_loop(
            client,
            subscriber,
            channel.clone(),
            instance.clone(),
            receivers.clone(),
            stopped,
        ));
        Ok(Self {
            inner: Arc::new(Inner {
                instance,
                channel,
                queue,
                receivers,
                _stop: stop,
            }),
        })
    }
}

impl AnnouncementBus for Announcements {
    fn publish(&self, announcement: Announcement) {
        // Full: Redis is away or slow; the announcement is dropped (at most once).
        let _ = self.inner.queue.try_send(announcement);
    }

    fn subscribe(&self, receiver: Weak<dyn AnnouncementReceiver>) {
        self.inner
            .receivers
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(receiver);
    }
}

/// A random id for this bus, so it can tell its own messages apart.
fn instance_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let word = |salt: u64| {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(salt);
        hasher.write_u32(std::process::id());
        if let Ok(now) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
            hasher.write_u128(now.as_nanos());
        }
        hasher.finish()
    };
    format!("{:016x}{:016x}", word(1), word(2))
}

/// A subscriber connection subscribed to `channel`, within the connect timeout.
async fn subscribe(
    client: &redis::Client,
    channel: &str,
) -> redis::RedisResult<redis::aio::PubSub> {
    let connecting = async {
        let mut pubsub = client.get_async_pubsub().await?;
        pubsub.subscribe(channel).await?;
        Ok(pubsub)
    };
    match tokio::time::timeout(crate::CONNECT_TIMEOUT, connecting).await {
        Ok(result) => result,
        Err(_) => Err(redis::RedisError::from((
            redis::ErrorKind::Io,
            "timed out subscribing",
        ))),
    }
}

async fn publish_loop(
    mut conn: ConnectionManager,
    channel: String,
    instance: String,
    mut rx: mpsc::Receiver<Announcement>,
) {
    while let Some(announcement) = rx.recv().await {
        let Some(message) = Message::new(&instance, &announcement) else {
            continue;
        };
        let Ok(payload) = serde_json::to_string(&message) else {
            continue;
        };
        // A failure makes the connection manager reconnect; the retry goes on the new
        // connection. A second failure drops the announcement.
        for _ in 0..2 {
            let sent: redis::RedisResult<i64> = redis::cmd("PUBLISH")
                .arg(&channel)
                .arg(&payload)
                .query_async(&mut conn)
                .await;
            if sent.is_ok() {
                break;
            }
        }
    }
}

async fn subscribe_loop(
    client: redis::Client,
    first: redis::aio::PubSub,
    channel: String,
    instance: String,
    receivers: Arc<Receivers>,
    mut stopped: oneshot::Receiver<()>,
) {
    let mut current = Some(first);
    let mut backoff = Duration::from_millis(50);
    loop {
        let pubsub = match current.take() {
            Some(pubsub) => pubsub,
            None => {
                let attempt = tokio::select! {
                    _ = &mut stopped => return,
                    attempt = subscribe(&client, &channel) => attempt,
                };
                match attempt {
                    Ok(pubsub) => {
                        backoff = Duration::from_millis(50);
                        // Whatever was published while away is lost: every list may
                        // have changed.
                        for announcement in [
                            Announcement::ToolsListChanged,
                            Announcement::ResourcesListChanged,
                            Announcement::PromptsListChanged,
                        ] {
                            receivers.deliver(&announcement);
                        }
                        pubsub
                    }
                    Err(_) => {
                        tokio::select! {
                            _ = &mut stopped => return,
                            _ = tokio::time::sleep(backoff) => {}
                        }
                        backoff = (backoff * 2).min(MAX_BACKOFF);
                        continue;
                    }
                }
            }
        };
        let (mut sink, mut messages) = pubsub.split();
        loop {
            let next = tokio::select! {
                _ = &mut stopped => return,
                next = tokio::time::timeout(IDLE_PING, messages.next()) => next,
            };
            match next {
                Ok(Some(message)) => {
                    let Ok(message) =
                        serde_json::from_slice::<Message>(message.get_payload_bytes())
                    else {
                        continue;
                    };
                    if message.from == instance {
                        continue;
                    }
                    if let Some(announcement) = message.announcement() {
                        receivers.deliver(&announcement);
                    }
                }
                // The connection ended.
                Ok(None) => break,
                Err(_idle) => {
                    let pong =
                        tokio::time::timeout(crate::RESPONSE_TIMEOUT, sink.ping::<redis::Value>())
                            .await;
                    if !matches!(pong, Ok(Ok(_))) {
                        break;
                    }
                }
            }
        }
    }
}
