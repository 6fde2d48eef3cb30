//! `subscriptions/listen` (protocol 2026-07-28): one long-lived request whose answer
//! stream carries the change notifications its filter asks for, each tagged with the
//! subscription's id (the request's id). The client routes those notifications to the
//! [`Subscription`] they belong to, so several run at once on one client.
//!
//! `Client::subscribe` refuses the handshake era. It registers the request's id before the
//! request goes out (a `RequestHandle` sends on its first poll, so the acknowledgement
//! cannot arrive first) and returns once the server acknowledged (`Subscription::honored`,
//! the subset it will send). The client's service hands every notification whose `_meta`
//! names an open subscription to that [`Subscription`] *and* to the usual handlers, so
//! caching, reactions and observers keep working. After the server's closing answer `next`
//! drains what came before and ends; a stream that ends without that answer is reported
//! once as an error; nothing reopens it (its error says `is_interrupted`, and reopening is
//! the caller's call). Dropping it cancels the request.
//!
//! Invariant: what the server sent on the request reaches the caller in its order, the
//! acknowledgement and the changes before the end. `subscribe` waits on the channel and the
//! request in one select; when the request has ended it looks in the channel again before
//! reporting "ended before acknowledging", and an acknowledgement found there still opens
//! the subscription, already ended. `Watch::next` likewise drains its channel when the
//! session's end wins the select.
//!
//! `Client::watch` serves one filter in both eras: a subscription in 2026-07-28; in a
//! session, a `Watchers` entry fed from the session's own notifications (list changes the
//! server declared `listChanged` for, `notifications/resources/updated` for subscribed
//! URIs), unsubscribed when the watch is dropped.
//!
//! List changes in the era travel only on a listen stream: when the application reacts to a
//! list kind and the server advertises `listChanged` for it, `connect` opens one listen
//! request for those kinds (`watch_lists`) and waits (bounded) for its acknowledgement, so
//! a change right after `connect` is not missed; its notifications reach the same handlers
//! a session's would. Dropping the client ends it. A stream the server ends is not
//! reopened, but one that failed as interrupted (a restarted server, with a transport that
//! reconnects) is opened again, up to 8 times in a row without a change in between. Changes
//! made while no stream was open are not replayed.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use modelctx_session::{RequestHandle, RequestOptions, SessionError};
use modelctx_types::{
    JsonRpcNotification, Meta, RawValue, RequestId, ServerNotification, SubscriptionFilter,
    SubscriptionsAcknowledgedNotificationParams, SubscriptionsListenRequestParams, to_raw,
};
use tokio::sync::mpsc;

use crate::Client;

/// Where each open subscription's notifications go, by subscription id.
pub(crate) type Routes = Arc<Mutex<HashMap<RequestId, mpsc::UnboundedSender<JsonRpcNotification>>>>;

/// Hands a notification that belongs to a subscription (its `_meta` names one that is
/// open) to it. The client's notification handlers get it too (the caller goes on):
/// observers and reactions keep working whoever listens.
pub(crate) fn route(routes: &Routes, notification: &JsonRpcNotification) {
    let Some(params) = notification.params.as_deref() else {
        return;
    };
    if !params.get().contains(Meta::SUBSCRIPTION_ID) {
        return;
    }
    #[derive(serde::Deserialize)]
    struct Tagged {
        #[serde(rename = "_meta")]
        meta: Option<Meta>,
    }
    let Some(id) = serde_json::from_str::<Tagged>(params.get())
        .ok()
        .and_then(|t| t.meta)
        .and_then(|m| m.subscription_id())
    else {
        return;
    };
    let routes = routes.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(tx) = routes.get(&id) {
        let _ = tx.send(notification.clone());
    }
}

/// An open `subscriptions/listen` stream (protocol 2026-07-28), from
/// [`Client::subscribe`]: [`honored`](Subscription::honored) is what the server
/// acknowledged it will send, [`next`](Subscription::next) each change it sends. The
/// same notifications also reach the client's notification handlers and list-change
/// reactions. It ends when the server ends the subscription; a stream that breaks
/// instead is reported as an error, and nothing opens a new one. Dropping it (or
/// [`close`](Subscription::close)) ends the request.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
///
/// use modelctx_client::Client;
/// use modelctx_server::{Context, ResourceDef, Server};
/// use modelctx_types::{ServerNotification, SubscriptionFilter};
///
/// let motd = ResourceDef::new("mem://motd", "motd", |_cx: Context| async { Ok::<_, String>("hello") });
/// let server = Server::builder("news", "1.0.0").resource(motd)?.build();
/// let (client_side, server_side) = modelctx_memory::pair();
/// let _session = server.serve(server_side);
/// // The client speaks protocol 2026-07-28 unless told otherwise.
/// let client = Client::builder("me", "1.0.0").connect(client_side).await?;
///
/// let filter = SubscriptionFilter::new().with_resource_subscriptions(vec!["mem://motd".into()]);
/// let mut subscription = client.subscribe(filter).await?;
/// assert!(subscription.honored().resource_subscriptions.is_some());
/// server.notify_resource_updated("mem://motd").await;
/// let change = modelctx_test::within(Duration::from_secs(10), "the update", subscription.next()).await;
/// match change {
///     Some(Ok(ServerNotification::ResourceUpdated(n))) => assert_eq!(n.params.uri, "mem://motd"),
///     other => panic!("expected an update, got {other:?}"),
/// }
/// subscription.close();
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Subscription {
    id: RequestId,
    honored: SubscriptionFilter,
    notifications: mpsc::UnboundedReceiver<JsonRpcNotification>,
    request: Option<RequestHandle<Box<RawValue>>>,
    /// Why the stream ended without the server's closing answer, once drained.
    lost: Option<SessionError>,
    routes: Routes,
}

/// The notification that acknowledges a subscription.
const ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";

fn decode(notification: &JsonRpcNotification) -> Result<ServerNotification, SessionError> {
    ServerNotification::from_json_rpc(notification)
        .map_err(|e| SessionError::refused(format!("a malformed notification: {e}")))
}

impl Subscription {
    /// The subscription's id: the id of its `subscriptions/listen` request.
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// What the server acknowledged it will send: the subset of the requested filter it
    /// honours.
    pub fn honored(&self) -> &SubscriptionFilter {
        &self.honored
    }

    /// The next change: `None` once the server ended the subscription (after every
    /// change it sent before), an error when the stream was lost (the connection
    /// closed, the request failed without the server's closing answer).
    pub async fn next(&mut self) -> Option<Result<ServerNotification, SessionError>> {
        loop {
            let notification = if let Some(request) = self.request.as_mut() {
                tokio::select! {
                    biased;
                    notification = self.notifications.recv() => notification,
                    ended = request => {
                        self.request = None;
                        // Nothing more comes in; what came before the end is still
                        // delivered first.
                        self.notifications.close();
                        if let Err(e) = ended {
                            self.lost = Some(e);
                        }
                        continue;
                    }
                }
            } else {
                self.notifications.recv().await
            };
            let Some(notification) = notification else {
                return self.lost.take().map(Err);
            };
            if notification.method == ACKNOWLEDGED {
                continue;
            }
            return Some(decode(&notification));
        }
    }

    /// Ends the subscription (the request is cancelled).
    pub fn close(mut self) {
        self.request.take();
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.routes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.id);
    }
}

impl Client {
    /// Opens a `subscriptions/listen` stream for the changes `filter` asks for and waits
    /// for the server's acknowledgement (protocol 2026-07-28 only; refused in a session
    /// of the handshake era, whose servers announce changes on their own). Several
    /// subscriptions run at once on one client, each hearing only its own changes.
    pub async fn subscribe(
        &self,
        filter: SubscriptionFilter,
    ) -> Result<Subscription, SessionError> {
        self.subscribe_with(filter, RequestOptions::default()).await
    }

    /// [`subscribe`](Self::subscribe) with request options: a caller's
    /// [`RequestOptions::id`] becomes the subscription's id (the one the server tags
    /// its notifications with, and [`Subscription::id`]) before anything is sent; a
    /// caller's `_meta` keys travel with the envelope. No timeout unless one is set.
    pub async fn subscribe_with(
        &self,
        filter: SubscriptionFilter,
        options: RequestOptions,
    ) -> Result<Subscription, SessionError> {
        let Some(envelope) = self.envelope() else {
            return Err(SessionError::refused(
                "subscriptions/listen needs protocol 2026-07-28; this session negotiated the handshake era",
            ));
        };
        open(
            self.peer(),
            envelope,
            &self.inner.subscriptions,
            filter,
            options,
        )
        .await
    }
}

/// Starts a `subscriptions/listen` request with `envelope`, routes its notifications
/// through `routes`, and waits for the acknowledgement.
async fn open(
    peer: &modelctx_session::Peer,
    envelope: Meta,
    routes: &Routes,
    filter: SubscriptionFilter,
    options: RequestOptions,
) -> Result<Subscription, SessionError> {
    let params = SubscriptionsListenRequestParams::new(filter);
    let params = to_raw(&params).map_err(|e| SessionError::refused(e.to_string()))?;
    let mut options = crate::stateless::with_envelope(options, &envelope);
    // Subscriptions stay open: no timeout, unless the caller wants one.
    if options.timeout.is_none() {
        options.timeout = Some(std::time::Duration::from_secs(365 * 24 * 3600));
    }
    let mut request = peer.start_raw(Cow::Borrowed("subscriptions/listen"), Some(params), options);
    let Some(id) = request.id() else {
        // Refused before it was sent: the handle holds the reason.
        return Err(match (&mut request).await {
            Err(e) => e,
            Ok(_) => SessionError::refused("subscriptions/listen was refused locally"),
        });
    };
    // Registered before the request goes out (a handle sends on its first poll), so
    // the acknowledgement cannot come first.
    let (tx, mut notifications) = mpsc::unbounded_channel();
    let routes = routes.clone();
    routes
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(id.clone(), tx);
    let mut unroute = Unroute(Some((routes.clone(), id.clone())));
    // The request's end, when it was seen together with the acknowledgement.
    let mut ended = None;
    let honored = loop {
        tokio::select! {
            biased;
            notification = notifications.recv() => {
                let Some(notification) = notification else {
                    return Err(SessionError::refused("the subscription's route closed"));
                };
                if let Some(honored) = acknowledgement(&notification)? {
                    break honored;
                }
            }
            end = &mut request => {
                // The receive task routes each notification before it completes the
                // request with the answer sent after it, but a select polls its
                // branches one after the other: both may have happened after `recv`
                // found the channel empty and before the request was polled. What
                // the server sent before its answer is in the channel now.
                notifications.close();
                let mut honored = None;
                while let Ok(notification) = notifications.try_recv() {
                    honored = acknowledgement(&notification)?;
                    if honored.is_some() {
                        break;
                    }
                }
                let Some(honored) = honored else {
                    return Err(end.err().unwrap_or_else(|| {
                        SessionError::refused(
                            "the server ended the subscription before acknowledging it",
                        )
                    }));
                };
                ended = Some(end);
                break honored;
            }
        }
    };
    unroute.0 = None;
    // Ended already: the changes left in the channel come first, then the end.
    let (request, lost) = match ended {
        None => (Some(request), None),
        Some(end) => (None, end.err()),
    };
    Ok(Subscription {
        id,
        honored,
        notifications,
        request,
        lost,
        routes,
    })
}

/// What `notification` acknowledges when it is the subscription's acknowledgement
/// (`None` for any other notification).
fn acknowledgement(
    notification: &JsonRpcNotification,
) -> Result<Option<SubscriptionFilter>, SessionError> {
    if notification.method != ACKNOWLEDGED {
        return Ok(None);
    }
    let params = notification
        .params
        .as_deref()
        .map(RawValue::get)
        .unwrap_or("{}");
    let ack: SubscriptionsAcknowledgedNotificationParams = serde_json::from_str(params)
        .map_err(|e| SessionError::refused(format!("a malformed acknowledgement: {e}")))?;
    Ok(Some(ack.notifications))
}

/// Forgets a subscription's route unless disarmed (an abandoned or failed subscribe).
struct Unroute(Option<(Routes, RequestId)>);

impl Drop for Unroute {
    fn drop(&mut self) {
        if let Some((routes, id)) = self.0.take() {
            routes.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
        }
    }
}

/// The subscription a stateless-era client opens at connect for the list changes its
/// application reacts to, so reactions and handlers written for a session keep
/// working: its notifications reach the same handlers (every subscription's do).
/// Dropped with the client, which ends the request; if the server ends it, no new one
/// is opened.
pub(crate) struct ListWatch {
    /// Opens the subscription and drains it (its changes reach the handlers by routing);
    /// aborting it drops the subscription, which cancels the request.
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ListWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// How long connect waits for the server to acknowledge the list-change subscription
/// before going on (the subscription stays open either way).
const ACK_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// How many times in a row the list watch is opened again after its stream was
/// interrupted without bringing a change in between.
const MAX_REOPEN: u32 = 8;

/// Opens the list-change subscription for the `watched` kinds the server advertises
/// `listChanged` for, and waits (bounded) for its acknowledgement, so a change made
/// after connect returns is not missed. `None` when there is nothing to watch.
pub(crate) async fn watch_lists(
    peer: &modelctx_session::Peer,
    envelope: &Meta,
    watched: &[crate::ListKind],
    caps: &modelctx_types::ServerCapabilities,
    routes: &Routes,
) -> Option<ListWatch> {
    use crate::ListKind;
    let kinds: Vec<ListKind> = watched
        .iter()
        .copied()
        .filter(|k| k.advertised(caps))
        .collect();
    if kinds.is_empty() {
        return None;
    }
    let filter = SubscriptionFilter::new()
        .with_tools_list_changed(kinds.contains(&ListKind::Tools))
        .with_resources_list_changed(kinds.contains(&ListKind::Resources))
        .with_prompts_list_changed(kinds.contains(&ListKind::Prompts));
    let (peer, envelope, routes) = (peer.clone(), envelope.clone(), routes.clone());
    let (acked_tx, acked) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let mut acked_tx = Some(acked_tx);
        let mut reopened = 0;
        loop {
            let options = RequestOptions::default();
            let opened = open(&peer, envelope.clone(), &routes, filter.clone(), options).await;
            if let Some(acked) = acked_tx.take() {
                let _ = acked.send(());
            }
            let Ok(mut subscription) = opened else {
                return;
            };
            let mut lost = None;
            let mut changes = 0;
            while let Some(next) = subscription.next().await {
                match next {
                    Ok(_) => changes += 1,
                    Err(e) => lost = Some(e),
                }
            }
            if changes > 0 {
                reopened = 0;
            }
            // The connection dropped under the stream (a restarted server, with a
            // transport that reconnects): listen again, so that list changes keep
            // coming. The server ending it, or any other failure, ends the watch.
            match lost {
                Some(e) if e.is_interrupted() && !peer.is_closed() && reopened < MAX_REOPEN => {
                    reopened += 1;
                }
                _ => return,
            }
        }
    });
    let _ = tokio::time::timeout(ACK_WAIT, acked).await;
    Some(ListWatch { task })
}

/// The watches of the handshake era: each with what it asked for and where its
/// notifications go.
pub(crate) type Watchers = Arc<
    Mutex<
        Vec<(
            u64,
            SubscriptionFilter,
            mpsc::UnboundedSender<JsonRpcNotification>,
        )>,
    >,
>;

/// Hands a change notification to every watch of the handshake era that asked for it.
pub(crate) fn route_to_watchers(watchers: &Watchers, notification: &JsonRpcNotification) {
    let watchers = watchers.lock().unwrap_or_else(|p| p.into_inner());
    if watchers.is_empty() {
        return;
    }
    let uri = || {
        #[derive(serde::Deserialize)]
        struct Updated {
            uri: String,
        }
        notification
            .params
            .as_deref()
            .and_then(|p| serde_json::from_str::<Updated>(p.get()).ok())
            .map(|u| u.uri)
    };
    for (_, filter, tx) in watchers.iter() {
        let wanted = match notification.method.as_ref() {
            "notifications/tools/list_changed" => filter.tools_list_changed == Some(true),
            "notifications/prompts/list_changed" => filter.prompts_list_changed == Some(true),
            "notifications/resources/list_changed" => filter.resources_list_changed == Some(true),
            "notifications/resources/updated" => uri().is_some_and(|uri| {
                filter
                    .resource_subscriptions
                    .as_ref()
                    .is_some_and(|uris| uris.contains(&uri))
            }),
            _ => false,
        };
        if wanted {
            let _ = tx.send(notification.clone());
        }
    }
}

/// The changes a filter asks for, in either era ([`Client::watch`]): a
/// `subscriptions/listen` stream in protocol 2026-07-28; in the handshake era, the
/// server's own announcements — list changes it declared `listChanged` for, and
/// `resources/subscribe` for each URI when it supports subscriptions — picked out of
/// the session's notifications. [`honored`](Watch::honored) says what will come;
/// dropping the watch ends it (unsubscribing its URIs). Each change comes typed, as a
/// [`ServerNotification`].
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
///
/// use modelctx_client::Client;
/// use modelctx_server::{Context, ResourceDef, Server};
/// use modelctx_types::{ServerNotification, SubscriptionFilter};
///
/// let motd = ResourceDef::new("mem://motd", "motd", |_cx: Context| async { Ok::<_, String>("hello") });
/// let server = Server::builder("news", "1.0.0").resource(motd)?.build();
/// let (client_side, server_side) = modelctx_memory::pair();
/// let _session = server.serve(server_side);
/// let client = Client::builder("me", "1.0.0").connect(client_side).await?;
///
/// let filter = SubscriptionFilter::new().with_resource_subscriptions(vec!["mem://motd".into()]);
/// let mut watch = client.watch(filter).await?;
/// server.notify_resource_updated("mem://motd").await;
/// let change = modelctx_test::within(Duration::from_secs(10), "the update", watch.next()).await;
/// match change {
///     Some(Ok(ServerNotification::ResourceUpdated(n))) => assert_eq!(n.params.uri, "mem://motd"),
///     other => panic!("expected an update, got {other:?}"),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Watch {
    inner: WatchKind,
}

#[derive(Debug)]
enum WatchKind {
    Listen(Box<Subscription>),
    Session {
        key: u64,
        honored: SubscriptionFilter,
        notifications: mpsc::UnboundedReceiver<JsonRpcNotification>,
        client: Client,
    },
}

impl Watch {
    /// What the server will announce: the filter as acknowledged (2026-07-28), or the
    /// part of it the server's capabilities serve (handshake era).
    pub fn honored(&self) -> &SubscriptionFilter {
        match &self.inner {
            WatchKind::Listen(subscription) => subscription.honored(),
            WatchKind::Session { honored, .. } => honored,
        }
    }

    /// The next change; `None` once the watch ended (the server ended the
    /// subscription, or the session closed).
    pub async fn next(&mut self) -> Option<Result<ServerNotification, SessionError>> {
        match &mut self.inner {
            WatchKind::Listen(subscription) => subscription.next().await,
            WatchKind::Session {
                notifications,
                client,
                ..
            } => {
                let peer = client.peer().clone();
                tokio::select! {
                    biased;
                    next = notifications.recv() => next.map(|n| decode(&n)),
                    // Every notification that arrived before the session ended was
                    // routed before it ended, but maybe after `recv` was polled:
                    // those still come, one per call, before the end.
                    () = peer.closed() => notifications.try_recv().ok().map(|n| decode(&n)),
                }
            }
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let WatchKind::Session {
            key,
            honored,
            client,
            ..
        } = &self.inner
        else {
            return;
        };
        client
            .inner
            .watchers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|(k, _, _)| k != key);
        let uris = honored.resource_subscriptions.clone().unwrap_or_default();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if uris.is_empty() || client.peer().is_closed() {
            return;
        }
        let client = client.clone();
        runtime.spawn(async move {
            for uri in uris {
                // Best effort: nobody waits for the answers.
                let params = modelctx_types::ResourceRequestParams::new(uri);
                let _ = client
                    .request::<modelctx_types::UnsubscribeRequest>(params)
                    .await;
            }
        });
    }
}

impl Client {
    /// Watches the changes `filter` asks for with the same code in either era: a
    /// [`subscribe`](Self::subscribe) stream in protocol 2026-07-28; in the handshake
    /// era the list changes the server declared `listChanged` for, and
    /// `resources/subscribe` for the filter's URIs when the server supports
    /// subscriptions (its `notifications/resources/updated` then come here). What the
    /// server cannot announce is left out of [`Watch::honored`].
    pub async fn watch(&self, filter: SubscriptionFilter) -> Result<Watch, SessionError> {
        if self.envelope().is_some() {
            return Ok(Watch {
                inner: WatchKind::Listen(Box::new(self.subscribe(filter).await?)),
            });
        }
        let caps = self.server_capabilities();
        let listed = |on: Option<bool>, declared: Option<Option<bool>>| {
            (on == Some(true) && declared.flatten() == Some(true)).then_some(true)
        };
        let mut honored = SubscriptionFilter::new();
        honored.tools_list_changed = listed(
            filter.tools_list_changed,
            caps.tools.as_ref().map(|c| c.list_changed),
        );
        honored.prompts_list_changed = listed(
            filter.prompts_list_changed,
            caps.prompts.as_ref().map(|c| c.list_changed),
        );
        honored.resources_list_changed = listed(
            filter.resources_list_changed,
            caps.resources.as_ref().map(|c| c.list_changed),
        );
        let subscribable = caps
            .resources
            .as_ref()
            .is_some_and(|r| r.subscribe == Some(true));
        let (tx, notifications) = mpsc::unbounded_channel();
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let key = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let wanted = filter.resource_subscriptions.clone().unwrap_or_default();
        let mut watching = honored.clone();
        watching.resource_subscriptions = subscribable.then(|| wanted.clone());
        // Registered before subscribing, so no update is missed.
        self.inner
            .watchers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((key, watching, tx));
        let mut watch = Watch {
            inner: WatchKind::Session {
                key,
                honored,
                notifications,
                client: self.clone(),
            },
        };
        if subscribable && !wanted.is_empty() {
            let mut subscribed = Vec::new();
            for uri in wanted {
                let params = modelctx_types::ResourceRequestParams::new(uri.clone());
                self.request::<modelctx_types::SubscribeRequest>(params)
                    .await?;
                subscribed.push(uri);
                if let WatchKind::Session { honored, .. } = &mut watch.inner {
                    honored.resource_subscriptions = Some(subscribed.clone());
                }
            }
        }
        Ok(watch)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc as blocking;
    use std::time::Duration;

    use futures::future::BoxFuture;
    use modelctx_transport::{MessageSink, MessageStream, TransportError, TransportMessage};
    use modelctx_types::{
        ErrorData, JsonRpcErrorResponse, JsonRpcMessage, JsonRpcRequest, JsonRpcResultResponse,
        ProtocolVersion,
    };
    use serde_json::{Value, json};

    use super::*;
    use crate::ConnectMode;
    use modelctx_test::within;

    const WAIT: Duration = Duration::from_secs(5);

    fn notification(method: &'static str, mut params: Value) -> JsonRpcMessage {
        if params.is_null() {
            params = json!({});
        }
        JsonRpcMessage::Notification(JsonRpcNotification::new(
            method,
            Some(to_raw(&params).unwrap()),
        ))
    }

    /// The closing answer of a `subscriptions/listen`: the server's end, or a failure.
    type Closing = fn(RequestId) -> JsonRpcMessage;

    fn the_end(id: RequestId) -> JsonRpcMessage {
        let result = json!({"resultType": "complete", "_meta": {Meta::SUBSCRIPTION_ID: id}});
        JsonRpcResultResponse::new(id, to_raw(&result).unwrap()).into()
    }

    fn a_failure(id: RequestId) -> JsonRpcMessage {
        JsonRpcErrorResponse::new(Some(id), ErrorData::internal_error("gone")).into()
    }

    /// A server so fast that a `subscriptions/listen` is acknowledged, sent a change and
    /// answered (`closing`) while the client is still sending it: the sink returns
    /// only once the client's receive task has handled all three (routed the
    /// notifications, completed the request). The request's first poll then finds it
    /// ended, after `Client::subscribe` looked for the acknowledgement and found none.
    struct FastServer {
        to_client: mpsc::UnboundedSender<TransportMessage>,
        /// How many messages the client had taken each time it asked for the next.
        asked: Mutex<blocking::Receiver<usize>>,
        taken: Arc<AtomicUsize>,
        closing: Closing,
    }

    impl FastServer {
        fn answer(&self, request: JsonRpcRequest) {
            let id = request.id;
            let tag = json!({Meta::SUBSCRIPTION_ID: id});
            let filter = serde_json::from_str::<Value>(request.params.as_deref().unwrap().get())
                .unwrap()["notifications"]
                .clone();
            let sent = [
                notification(ACKNOWLEDGED, json!({"notifications": filter, "_meta": tag})),
                notification("notifications/prompts/list_changed", json!({"_meta": tag})),
                (self.closing)(id),
            ];
            let target = self.taken.load(Ordering::SeqCst) + sent.len();
            for message in sent {
                self.to_client.send(TransportMessage::new(message)).unwrap();
            }
            // The receive task asks for the next message once it handled the last.
            let asked = self.asked.lock().unwrap();
            let handled = tokio::task::block_in_place(|| {
                loop {
                    match asked.recv_timeout(WAIT) {
                        Ok(taken) if taken >= target => break true,
                        Ok(_) => {}
                        Err(_) => break false,
                    }
                }
            });
            assert!(
                handled,
                "the client's receive task did not handle the answer"
            );
        }
    }

    impl MessageSink for FastServer {
        fn send(&self, message: TransportMessage) -> BoxFuture<'_, Result<(), TransportError>> {
            if let JsonRpcMessage::Request(request) = message.message
                && request.method == "subscriptions/listen"
            {
                self.answer(request);
            }
            Box::pin(std::future::ready(Ok(())))
        }

        fn close(&self) -> BoxFuture<'_, ()> {
            Box::pin(async {})
        }
    }

    /// The client's side of [`FastServer`]: says each time the receive task asks for
    /// the next message how many it had taken.
    struct FromServer {
        from_server: mpsc::UnboundedReceiver<TransportMessage>,
        asking: blocking::Sender<usize>,
        taken: Arc<AtomicUsize>,
    }

    impl MessageStream for FromServer {
        fn recv(&mut self) -> BoxFuture<'_, Option<Result<TransportMessage, TransportError>>> {
            let _ = self.asking.send(self.taken.load(Ordering::SeqCst));
            Box::pin(async move {
                let message = self.from_server.recv().await?;
                self.taken.fetch_add(1, Ordering::SeqCst);
                Some(Ok(message))
            })
        }
    }

    async fn fast_server(closing: Closing) -> Client {
        let (to_client, from_server) = mpsc::unbounded_channel();
        let (asking, asked) = blocking::channel();
        let taken = Arc::new(AtomicUsize::new(0));
        let sink = FastServer {
            to_client,
            asked: Mutex::new(asked),
            taken: taken.clone(),
            closing,
        };
        let stream = FromServer {
            from_server,
            asking,
            taken,
        };
        let pinned = ConnectMode::Pin(ProtocolVersion::V2026_07_28);
        within(
            WAIT,
            "the client",
            Client::builder("c", "1")
                .mode(pinned)
                .connect((sink, stream)),
        )
        .await
        .unwrap()
    }

    // The server's answer completing the request before `subscribe` saw the
    // acknowledgement routed just before it: the subscription still opens, and
    // delivers what came before the end, then the end.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_answer_that_overtakes_the_acknowledgement_ends_the_subscription_after_it() {
        for (closing, lost) in [(the_end as Closing, false), (a_failure, true)] {
            let client = fast_server(closing).await;
            let filter = SubscriptionFilter::new().with_prompts_list_changed(true);
            let mut subscription =
                within(WAIT, "the subscription", client.subscribe(filter.clone()))
                    .await
                    .unwrap();
            assert_eq!(subscription.honored(), &filter);
            let change = within(WAIT, "the change", subscription.next()).await;
            assert!(
                matches!(change, Some(Ok(ServerNotification::PromptListChanged(_)))),
                "{change:?}"
            );
            let end = within(WAIT, "the end", subscription.next()).await;
            match end {
                None => assert!(!lost, "the failure was not reported"),
                Some(Err(_)) => assert!(lost, "the server's end reported as a failure"),
                Some(Ok(other)) => panic!("{other:?}"),
            }
            assert!(subscription.next().await.is_none());
        }
    }

    // The session ending right after the server's last changes: each still comes out
    // of the handshake-era watch before its end (the end used to win a coin toss with
    // each queued change).
    #[tokio::test(flavor = "current_thread")]
    async fn a_watch_hears_every_change_sent_before_the_session_ended() {
        use modelctx_transport::Transport;
        const CHANGES: usize = 16;
        let (client_side, server_side) = modelctx_memory::pair();
        let (sink, mut stream) = server_side.split();
        let (go_tx, go) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            while let Some(Ok(message)) = stream.recv().await {
                let JsonRpcMessage::Request(request) = message.message else {
                    continue;
                };
                let params: Value =
                    serde_json::from_str(request.params.as_deref().unwrap().get()).unwrap();
                let result = json!({
                    "protocolVersion": params["protocolVersion"],
                    "capabilities": {"tools": {"listChanged": true}},
                    "serverInfo": {"name": "s", "version": "1"},
                });
                let answer = JsonRpcResultResponse::new(request.id, to_raw(&result).unwrap());
                sink.send(JsonRpcMessage::from(answer).into())
                    .await
                    .unwrap();
                break;
            }
            let _ = go.await;
            for _ in 0..CHANGES {
                let change = notification("notifications/tools/list_changed", Value::Null);
                sink.send(change.into()).await.unwrap();
            }
            sink.close().await;
            // The client's messages are read no more (its stream ends with this task).
            drop(stream);
        });
        let client = within(
            WAIT,
            "the handshake",
            Client::builder("c", "1")
                .mode(ConnectMode::Handshake)
                .connect(client_side),
        )
        .await
        .unwrap();
        let filter = SubscriptionFilter::new().with_tools_list_changed(true);
        let mut watch = within(WAIT, "the watch", client.watch(filter.clone()))
            .await
            .unwrap();
        assert_eq!(watch.honored(), &filter);
        go_tx.send(()).unwrap();
        within(WAIT, "the session's end", client.closed()).await;
        for n in 0..CHANGES {
            let change = within(WAIT, "a change", watch.next()).await;
            assert!(
                matches!(change, Some(Ok(ServerNotification::ToolListChanged(_)))),
                "change {n}: {change:?}"
            );
        }
        assert!(within(WAIT, "the end", watch.next()).await.is_none());
    }
}
