//! What a role crate plugs into the runtime: the [`Service`] that answers inbound
//! requests and notifications, and the per-request [`RequestContext`].

use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use futures::future::BoxFuture;
use modelctx_transport::Extensions;
use modelctx_types::{
    ErrorData, JsonRpcNotification, JsonRpcRequest, Meta, ProgressToken, RawValue, RequestId,
    members,
};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use crate::error::SessionError;
use crate::lifecycle;
use crate::peer::{Peer, Progress};

/// Answers the requests and notifications a session receives.
///
/// The runtime calls [`Service::handle_request`] on a task of its own for every inbound
/// request (except `ping`, which it answers itself), under the session's concurrency
/// bound, and never waits for it on the receive loop. Notifications (and errors without
/// id, [`Service::handle_peer_error`]) are delivered in arrival order on one task.
/// `notifications/cancelled` and progress for the session's own requests are consumed
/// by the runtime and not delivered here.
pub trait Service: Send + Sync + 'static {
    /// Answers one request with its raw result or a JSON-RPC error. A panic is caught
    /// and answered with `-32603`.
    fn handle_request(
        self: Arc<Self>,
        request: JsonRpcRequest,
        context: RequestContext,
    ) -> BoxFuture<'static, Result<Box<RawValue>, ErrorData>>;

    /// Handles one notification. The default ignores it.
    fn handle_notification(
        self: Arc<Self>,
        notification: JsonRpcNotification,
        peer: Peer,
    ) -> BoxFuture<'static, ()> {
        let _ = (notification, peer);
        Box::pin(async {})
    }

    /// Handles an error response that carries no request id (`"id": null`): the peer
    /// reporting a failure it could not attribute to a request, such as a message of
    /// ours it could not parse. It answers none of our requests (those still wait for
    /// their own answers or time out) and is never answered. A response from the peer
    /// that could not be read (an error object without `message`, a `code` that is not
    /// an integer, both `result` and `error`) comes here too, as a
    /// `-32603` naming the request and what was wrong; that request has already failed
    /// ([`SessionError::is_invalid_response`](crate::SessionError::is_invalid_response)).
    /// Delivered in arrival order with the notifications. The default ignores it; the role crates hand it to
    /// the application (`ServerBuilder::on_peer_error`, `ClientBuilder::on_peer_error`).
    fn handle_peer_error(self: Arc<Self>, error: ErrorData, peer: Peer) -> BoxFuture<'static, ()> {
        let _ = (error, peer);
        Box::pin(async {})
    }
}

/// Decodes a request's params into `T`; a mismatch is `-32602 Invalid params`.
/// Absent params decode as JSON `null` (so `Option<_>` params accept them).
pub fn parse_params<T: DeserializeOwned>(params: Option<&RawValue>) -> Result<T, ErrorData> {
    let text = params.map_or("null", RawValue::get);
    serde_json::from_str(text)
        .map_err(|e| ErrorData::invalid_params(format!("Invalid params: {e}")))
}

/// What a request handler knows about the request it serves.
pub struct RequestContext {
    id: RequestId,
    /// The request's `_meta` as sent (its JSON text), when it has one.
    meta_raw: Option<Arc<str>>,
    /// Whether `meta_raw` is the transport's shared text (see
    /// [`RequestContext::unstable_shared_meta`]).
    meta_shared: bool,
    /// `_meta` decoded, on first use: most handlers never read it, and in protocol
    /// 2026-07-28 every request carries one (the envelope, which the server reads from
    /// the text).
    meta: OnceLock<Option<Meta>>,
    cancellation: CancellationToken,
    peer: Peer,
    /// Only when the caller attached a progress token: most requests need none.
    progress: Option<Arc<ProgressReporter>>,
    /// What the transport attached to the request (see [`Extensions`]).
    extensions: Extensions,
}

impl fmt::Debug for RequestContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestContext")
            .field("id", &self.id)
            .field("meta", &self.meta())
            .field("cancelled", &self.cancellation.is_cancelled())
            .finish()
    }
}

impl RequestContext {
    pub(crate) fn new(
        request: &JsonRpcRequest,
        cancellation: CancellationToken,
        peer: Peer,
    ) -> Self {
        // The transport may have found `_meta` already (streamable HTTP in the
        // stateless era): then it is not looked for again, and a `_meta` it read as
        // plain has no progress token.
        let found = peer
            .shared
            .found_meta
            .as_ref()
            .filter(|found| found.request == request.id);
        let (meta_raw, plain, meta_shared) = match found {
            Some(found) => (Some(found.text.clone()), found.plain, found.shared),
            None => (read_meta(request.params.as_deref()), false, false),
        };
        let meta = OnceLock::new();
        // Only a `_meta` that may name a progress token is decoded here (the reporter
        // needs it; a key may be spelled with escapes); any other is decoded when
        // something asks for it.
        let token = match &meta_raw {
            Some(raw) if !plain && (raw.contains(Meta::PROGRESS_TOKEN) || raw.contains('\\')) => {
                meta.get_or_init(|| decode_meta(raw))
                    .as_ref()
                    .and_then(Meta::progress_token)
            }
            _ => None,
        };
        let peer = peer.related_to(Some(request.id.clone()));
        Self {
            id: request.id.clone(),
            progress: token.map(|token| {
                Arc::new(ProgressReporter {
                    token: Some(token),
                    last: Mutex::new(None),
                    peer: peer.clone(),
                })
            }),
            meta_raw,
            meta_shared,
            meta,
            cancellation,
            peer,
            extensions: Extensions::new(),
        }
    }

    /// This context with what the transport attached to its request.
    pub(crate) fn with_extensions(mut self, extensions: Extensions) -> Self {
        self.extensions = extensions;
        self
    }

    /// What the transport attached to this request: for streamable HTTP, the
    /// [`Extensions`] that layers in front of the endpoint put in the HTTP request's
    /// extensions (an OAuth resource server puts the verified token's claims there).
    /// Empty for transports that attach nothing.
    pub fn extensions(&self) -> &Extensions {
        &self.extensions
    }

    /// The context of a request that did not come over the session: an input request
    /// embedded in a server's answer (protocol 2026-07-28), answered by the same handler
    /// as a request from the server. No `_meta`, no progress, its own cancellation.
    /// Unstable.
    #[doc(hidden)]
    pub fn unstable_detached(id: RequestId, peer: Peer) -> Self {
        Self {
            id,
            meta_raw: None,
            meta_shared: false,
            meta: OnceLock::new(),
            cancellation: CancellationToken::new(),
            peer,
            progress: None,
            extensions: Extensions::new(),
        }
    }

    /// The request id.
    pub fn request_id(&self) -> &RequestId {
        &self.id
    }

    /// The request's `_meta`, as sent.
    pub fn meta(&self) -> Option<&Meta> {
        self.meta
            .get_or_init(|| self.meta_raw.as_deref().and_then(decode_meta))
            .as_ref()
    }

    /// The request's `_meta` as its JSON text (valid JSON, as the request's params
    /// are), when the request has one (`None` also for `"_meta": null`), for a reader
    /// that wants a few of its keys without building the whole map. Unstable.
    #[doc(hidden)]
    pub fn unstable_meta_text(&self) -> Option<&str> {
        self.meta_raw.as_deref()
    }

    /// The request's `_meta` text when it is the transport's shared copy
    /// ([`FoundMeta::shared`](modelctx_transport::FoundMeta)): the same `Arc` comes
    /// again with every request that carries the same `_meta`, so a reader may key what
    /// it derives from the text by the `Arc`'s address while it holds the `Arc`.
    /// Unstable.
    #[doc(hidden)]
    pub fn unstable_shared_meta(&self) -> Option<&Arc<str>> {
        self.meta_raw.as_ref().filter(|_| self.meta_shared)
    }

    /// The `Mcp-Param-{Name}` headers that came with this request (lower-cased names,
    /// without the prefix), when its transport has HTTP headers. Unstable.
    #[doc(hidden)]
    pub fn mirrored_params(&self) -> Option<&[(String, String)]> {
        self.peer.shared.mirrored.as_deref()
    }

    /// The progress token the caller attached, if any.
    pub fn progress_token(&self) -> Option<&ProgressToken> {
        self.progress.as_ref().and_then(|p| p.token.as_ref())
    }

    /// The peer, related to this request: what it sends travels with the request.
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// Fires when the caller cancels the request or the session ends.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancellation
    }

    /// Whether the request was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancellation.is_cancelled()
    }

    /// Reports progress to the caller. Without a progress token this sends nothing and
    /// succeeds; a value that does not increase on the previous one is refused.
    pub async fn report_progress(&self, progress: Progress) -> Result<(), SessionError> {
        match &self.progress {
            Some(reporter) => reporter.report(progress).await,
            None => Ok(()),
        }
    }

    /// A cloneable progress reporter for this request.
    pub fn progress_reporter(&self) -> Arc<ProgressReporter> {
        match &self.progress {
            Some(reporter) => reporter.clone(),
            None => Arc::new(ProgressReporter {
                token: None,
                last: Mutex::new(None),
                peer: self.peer.clone(),
            }),
        }
    }
}

/// Sends `notifications/progress` for one request, enforcing increasing values.
pub struct ProgressReporter {
    token: Option<ProgressToken>,
    last: Mutex<Option<f64>>,
    peer: Peer,
}

impl fmt::Debug for ProgressReporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProgressReporter")
            .field("token", &self.token)
            .finish()
    }
}

impl ProgressReporter {
    /// Reports progress; see [`RequestContext::report_progress`].
    pub async fn report(&self, progress: Progress) -> Result<(), SessionError> {
        let Some(token) = &self.token else {
            return Ok(());
        };
        {
            let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(prev) = *last
                && progress.progress.partial_cmp(&prev) != Some(std::cmp::Ordering::Greater)
            {
                return Err(SessionError::refused(format!(
                    "progress must increase: {} after {prev}",
                    progress.progress
                )));
            }
            *last = Some(progress.progress);
        }
        let mut params = serde_json::to_value(&progress).unwrap_or_default();
        if let Some(obj) = params.as_object_mut() {
            obj.insert(
                "progressToken".to_owned(),
                serde_json::to_value(token).unwrap_or_default(),
            );
        }
        let raw = modelctx_types::to_raw(&params).ok();
        self.peer
            .notify_raw(std::borrow::Cow::Borrowed(lifecycle::PROGRESS), raw)
            .await
    }
}

/// Takes `_meta` out of raw params as text, without decoding it or the rest: `None`
/// when the params carry none (or `null`), or are not an object with at most one
/// `_meta`. A quick scan finds it ([`members::find`]); what that does not settle (a
/// key spelled with escapes) is read by serde.
fn read_meta(params: Option<&RawValue>) -> Option<Arc<str>> {
    let raw = params?.get();
    if !raw.contains("\"_meta\"") {
        return None;
    }
    let meta = match members::find(raw, ["_meta"]) {
        Some([meta]) => meta?,
        None => {
            #[derive(Deserialize)]
            struct MetaOnly<'a> {
                #[serde(rename = "_meta", borrow)]
                meta: Option<&'a RawValue>,
            }
            serde_json::from_str::<MetaOnly<'_>>(raw).ok()?.meta?.get()
        }
    };
    (meta != "null").then(|| Arc::from(meta))
}

/// `_meta` decoded from its text; `None` when it is not an object.
fn decode_meta(raw: &str) -> Option<Meta> {
    serde_json::from_str::<Meta>(raw).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta_of(params: &str) -> Option<Arc<str>> {
        let raw = RawValue::from_string(params.to_owned()).unwrap();
        read_meta(Some(&raw))
    }

    #[test]
    fn meta_is_taken_as_its_text() {
        assert_eq!(meta_of(r#"{"name":"t"}"#), None);
        assert_eq!(meta_of(r#"{"_meta":null}"#), None);
        assert_eq!(
            meta_of(r#"{"a":{"_meta":1},"_meta":{"k":[1,"}"]},"b":2}"#).as_deref(),
            Some(r#"{"k":[1,"}"]}"#)
        );
        // What the quick scan does not settle, serde reads: a key with escapes...
        assert_eq!(
            meta_of(r#"{"a":{"_meta":0},"\u005fmeta":{"k":1}}"#).as_deref(),
            Some(r#"{"k":1}"#)
        );
        // ...a `_meta` twice (refused), params that are no object.
        assert_eq!(meta_of(r#"{"_meta":{},"_meta":{}}"#), None);
        assert_eq!(meta_of(r#""_meta""#), None);
    }
}
