//! `subscriptions/listen` (protocol 2026-07-28): one long-lived request whose answer
//! stream carries the change notifications its filter asks for, each tagged with the
//! subscription's id (the request's id). The client routes those notifications to the
//! [`Subscription`] they belong to, so several run at once on one client.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use modelctx_session::{RequestHandle, RequestOptions, SessionError};
use modelctx_types::{
    JsonRpcNotification, Meta, RawValue, RequestId, ServerNotification, SubscriptionFilter,
    SubscriptionsListenRequestParams, to_raw,
};
use tokio::sync::mpsc;

use crate::Client;

/// Where each open subscription's notifications go, by subscription id.
pub(crate) type Routes = Arc<Mutex<HashMap<RequestId, mpsc::UnboundedSender<JsonRpcNotification>>>>;

/// Takes a notification that belongs to a subscription (its `_meta` names one that is
/// open); `false` leaves it to the client's notification handlers.
pub(crate) fn route(routes: &Routes, notification: &JsonRpcNotification) -> bool {
    let Some(params) = notification.params.as_deref() else {
        return false;
    };
    if !params.get().contains(Meta::SUBSCRIPTION_ID) {
        return false;
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
        return false;
    };
    let routes = routes.lock().unwrap_or_else(|p| p.into_inner());
    match routes.get(&id) {
        Some(tx) => tx.send(notification.clone()).is_ok(),
        None => false,
    }
}

/// An open `subscriptions/listen` stream. [`next`](Subscription::next) yields the
/// server's acknowledgement, then each change notification; it ends when the server
/// ends the subscription, and reports an error when the stream is lost. Dropping it
/// (or [`close`](Subscription::close)) ends the request. Unstable, with the era.
#[derive(Debug)]
pub struct Subscription {
    id: RequestId,
    notifications: mpsc::UnboundedReceiver<JsonRpcNotification>,
    request: Option<RequestHandle<Box<RawValue>>>,
    routes: Routes,
}

impl Subscription {
    /// The subscription's id: the id of its `subscriptions/listen` request.
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// The next notification: `None` once the server ended the subscription, an error
    /// when the stream was lost (the connection closed, the request failed).
    pub async fn next(&mut self) -> Option<Result<ServerNotification, SessionError>> {
        let request = self.request.as_mut()?;
        tokio::select! {
            biased;
            notification = self.notifications.recv() => {
                let notification = notification?;
                Some(
                    ServerNotification::from_json_rpc(&notification)
                        .map_err(|e| SessionError::refused(format!("a malformed notification: {e}"))),
                )
            }
            ended = request => {
                self.request = None;
                match ended {
                    Ok(_) => None,
                    Err(e) => Some(Err(e)),
                }
            }
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
    /// Opens a `subscriptions/listen` stream for the changes `filter` asks for
    /// (protocol 2026-07-28 only; refused in a session of the handshake era). Unstable
    /// while the era is being built.
    #[doc(hidden)]
    pub fn unstable_subscribe(
        &self,
        filter: SubscriptionFilter,
    ) -> Result<Subscription, SessionError> {
        let Some(envelope) = self.envelope() else {
            return Err(SessionError::refused(
                "subscriptions/listen needs protocol 2026-07-28; this session negotiated the handshake era",
            ));
        };
        let params = SubscriptionsListenRequestParams::new(filter);
        let params = to_raw(&params).map_err(|e| SessionError::refused(e.to_string()))?;
        let mut options = RequestOptions::default();
        options.meta = Some(envelope);
        // Subscriptions stay open: no timeout.
        options.timeout = Some(std::time::Duration::from_secs(365 * 24 * 3600));
        let request =
            self.peer()
                .start_raw(Cow::Borrowed("subscriptions/listen"), Some(params), options);
        let Some(id) = request.id() else {
            // Refused before it was sent: the handle holds the reason.
            return Err(SessionError::refused(
                "subscriptions/listen was refused locally",
            ));
        };
        let (tx, notifications) = mpsc::unbounded_channel();
        let routes = self.inner.subscriptions.clone();
        routes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.clone(), tx);
        Ok(Subscription {
            id,
            notifications,
            request: Some(request),
            routes,
        })
    }
}

/// The subscription a stateless-era client opens at connect for the list changes its
/// application reacts to, so reactions and handlers written for a session keep
/// working: its notifications reach the same handlers. Dropped with the client, which
/// ends the request; if the server ends it, no new one is opened.
pub(crate) struct ListWatch {
    id: RequestId,
    routes: Routes,
    /// Drives the request and hands its notifications over; aborting it drops the
    /// request, which cancels it.
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ListWatch {
    fn drop(&mut self) {
        self.task.abort();
        self.routes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.id);
    }
}

/// How long connect waits for the server to acknowledge the list-change subscription
/// before going on (the subscription stays open either way).
const ACK_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Opens the list-change subscription for the `watched` kinds the server advertises
/// `listChanged` for, and waits (bounded) for its acknowledgement, so a change made
/// after connect returns is not missed. `None` when there is nothing to watch or the
/// request could not be sent.
pub(crate) async fn watch_lists(
    peer: &modelctx_session::Peer,
    envelope: &Meta,
    watched: &[crate::ListKind],
    caps: &modelctx_types::ServerCapabilities,
    routes: &Routes,
    service: Arc<crate::ClientService>,
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
    let params = to_raw(&SubscriptionsListenRequestParams::new(filter)).ok()?;
    let mut options = RequestOptions::default();
    options.meta = Some(envelope.clone());
    options.timeout = Some(std::time::Duration::from_secs(365 * 24 * 3600));
    let mut request = peer.start_raw(Cow::Borrowed("subscriptions/listen"), Some(params), options);
    let id = request.id()?;
    let (tx, mut notifications) = mpsc::unbounded_channel::<JsonRpcNotification>();
    routes
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(id.clone(), tx);
    let (acked_tx, acked) = tokio::sync::oneshot::channel::<()>();
    let peer = peer.clone();
    let task = tokio::spawn(async move {
        let mut acked_tx = Some(acked_tx);
        let mut open = true;
        loop {
            let notification = tokio::select! {
                biased;
                notification = notifications.recv() => notification,
                // The server ended the subscription (or it failed): what was already
                // routed is still delivered, then the task ends.
                _ = &mut request, if open => {
                    open = false;
                    notifications.close();
                    continue;
                }
            };
            let Some(notification) = notification else {
                return;
            };
            if notification.method == "notifications/subscriptions/acknowledged" {
                if let Some(tx) = acked_tx.take() {
                    let _ = tx.send(());
                }
                continue;
            }
            service.deliver(notification, peer.clone()).await;
        }
    });
    let _ = tokio::time::timeout(ACK_WAIT, acked).await;
    Some(ListWatch {
        id,
        routes: routes.clone(),
        task,
    })
}
