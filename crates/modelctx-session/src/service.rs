//! What a role crate plugs into the runtime: the [`Service`] that answers inbound
//! requests and notifications, and the per-request [`RequestContext`].
//!
//! [`RequestContext`] keeps a request's `_meta` as text: the `FoundMeta` that came with the
//! request (streamable HTTP in the stateless era, shared, no scan), or found by
//! `members::find` (serde for what the scan does not settle). It decodes the map on the
//! first `meta()` call, or at once when the text may name a `progressToken`, which the
//! reporter needs; the server reads the era's envelope from the text
//! (`unstable_meta_text`). The context also keeps where that text stands in the params
//! (`MetaPlace`), so `unstable_parse_params` decodes the params with the member cut out and
//! puts the shared text into the params' `_meta` field, when the method has that field
//! (`RequestMethod::UNSTABLE_META_SLOT`). The place is checked before use; anything else
//! (no slot, params rebuilt by an MRTR retry, params that do not decode) is decoded whole,
//! so outcomes and error messages are `parse_params`'s.

use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};

use futures_core::future::BoxFuture;
use modelctx_transport::{EraRead, Extensions, MetaPlace};
use modelctx_types::{
    ErrorData, JsonRpcNotification, JsonRpcRequest, Meta, MetaSlot, NotificationMethod,
    ProgressToken, RawValue, RequestId, members, to_raw,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::error::SessionError;
use crate::lifecycle;
use crate::peer::{Peer, Progress};

/// Answers the requests and notifications a session receives.
///
/// The runtime calls [`Service::handle_request`] on a task of its own for every inbound
/// request (except `ping`, which it answers itself), under the session's concurrency
/// bound, and never waits for it on the receive loop. Notifications (and errors without
/// id, [`Service::handle_error`]) are delivered in arrival order on one task.
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
    /// A response to none of our requests waiting for one, and a panic of
    /// [`handle_notification`](Self::handle_notification)'s future, come here too
    /// (`-32600` and `-32603`). Delivered in arrival order with the notifications. The
    /// default ignores it; the role crates hand it to
    /// the application (`ServerBuilder::on_error`, `ClientBuilder::on_error`).
    fn handle_error(self: Arc<Self>, error: ErrorData, peer: Peer) -> BoxFuture<'static, ()> {
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

/// Encodes a handler's result as the raw JSON of its response; a value that cannot be
/// encoded is `-32603 Internal error` (the handler's bug, not the caller's).
pub fn encode_result<T: Serialize + ?Sized>(result: &T) -> Result<Box<RawValue>, ErrorData> {
    to_raw(result).map_err(|e| ErrorData::internal_error(format!("cannot encode the result: {e}")))
}

/// A notification handler that takes its params raw (see [`notification_fn`]).
pub type NotificationFn =
    dyn Fn(Option<Box<RawValue>>, Peer) -> BoxFuture<'static, ()> + Send + Sync;

/// `handler` of notification method `N`, taking its params raw: they are decoded into
/// `N::Params` first, and a notification whose params do not decode is dropped (a
/// notification has no answer to refuse it with). Both roles store their typed
/// notification handlers this way.
///
/// ```
/// use modelctx_session::notification_fn;
/// use modelctx_types::ProgressNotification;
///
/// let handler = notification_fn::<ProgressNotification, _, _>(|params, _peer| async move {
///     println!("{} done", params.progress);
/// });
/// # let _ = handler;
/// ```
pub fn notification_fn<N, F, Fut>(handler: F) -> Arc<NotificationFn>
where
    N: NotificationMethod,
    F: Fn(N::Params, Peer) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let handler = Arc::new(handler);
    Arc::new(move |params, peer| {
        let handler = handler.clone();
        Box::pin(async move {
            if let Ok(params) = parse_params::<N::Params>(params.as_deref()) {
                handler(params, peer).await;
            }
        })
    })
}

/// What a request handler knows about the request it serves.
pub struct RequestContext {
    id: RequestId,
    /// The request's `_meta` as sent (its JSON text), when it has one.
    meta_raw: Option<Arc<str>>,
    /// Whether `meta_raw` is the transport's shared text (see
    /// [`RequestContext::unstable_shared_meta`]).
    meta_shared: bool,
    /// Where `meta_raw` stands in the request's params, when known.
    meta_at: Option<MetaPlace>,
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
    /// The request's `Mcp-Param-*` headers, when its transport gave them with it (see
    /// [`EraRead`]).
    mirrored: Option<Vec<(String, String)>>,
    /// Whether the request was embedded in a server's answer (see
    /// [`RequestContext::is_embedded`]).
    embedded: bool,
}

modelctx_types::__debug_shows!(RequestContext, |v| {
    id: &v.id,
    meta: &v.meta(),
    cancelled: &v.cancellation.is_cancelled(),
});

impl RequestContext {
    pub(crate) fn new(
        request: &JsonRpcRequest,
        cancellation: CancellationToken,
        peer: Peer,
        era: Option<Box<EraRead>>,
        shares_session: bool,
    ) -> Self {
        // The transport may have found `_meta` already (streamable HTTP in the
        // stateless era): then it is not looked for again, and a `_meta` it read as
        // plain has no progress token.
        let (mirrored, era_meta) = match era {
            Some(era) => {
                let EraRead { mirrored, meta } = *era;
                (Some(mirrored), meta)
            }
            None => (None, None),
        };
        let found = era_meta.as_ref();
        let (meta_raw, plain, meta_shared, meta_at) = match found {
            Some(found) => (
                Some(found.text.clone()),
                found.plain,
                found.shared,
                found.at,
            ),
            None => {
                let (meta, at) = read_meta(request.params.as_deref()).unzip();
                (meta, false, false, at.flatten())
            }
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
        let peer = if shares_session {
            peer.related_to_era_request(request.id.clone(), cancellation.clone())
        } else {
            peer.related_to_request(request.id.clone(), cancellation.clone())
        };
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
            meta_at,
            meta,
            cancellation,
            peer,
            extensions: Extensions::new(),
            mirrored,
            embedded: false,
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
            meta_at: None,
            meta: OnceLock::new(),
            cancellation: CancellationToken::new(),
            peer,
            progress: None,
            extensions: Extensions::new(),
            mirrored: None,
            embedded: true,
        }
    }

    /// Whether this request came embedded in a server's `input_required` answer
    /// (protocol 2026-07-28) rather than over the session. Such a request has no
    /// `_meta`, no progress and no id of the server's own: its rules are the 2026-07-28
    /// ones (a URL-mode elicitation carries no `elicitationId`, for one).
    ///
    /// ```
    /// use modelctx_session::RequestContext;
    ///
    /// fn note(cx: &RequestContext) -> &'static str {
    ///     if cx.is_embedded() { "asked inside an answer" } else { "asked over the session" }
    /// }
    /// ```
    pub fn is_embedded(&self) -> bool {
        self.embedded
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

    /// Decodes this request's params `params` as [`parse_params`] does, handing over the
    /// `_meta` this context has read already instead of reading it again: when it knows
    /// where that `_meta` stands in `params`, the rest is decoded and `slot` (where `T`
    /// keeps its `_meta`) gets the text this context holds. Whatever that does not settle
    /// (the text is not where it was found, params that do not decode) is decoded whole,
    /// so the outcome, errors included, is [`parse_params`]'s. Unstable.
    #[doc(hidden)]
    pub fn unstable_parse_params<T: DeserializeOwned>(
        &self,
        params: Option<&RawValue>,
        slot: Option<MetaSlot<T>>,
    ) -> Result<T, ErrorData> {
        if let (Some(slot), Some(raw), Some(text), Some(at)) =
            (slot, params, &self.meta_raw, self.meta_at)
            && let Some(mut decoded) = with_scratch(|rest| {
                cut_meta(raw.get(), text, at, rest)?;
                serde_json::from_str::<T>(rest).ok()
            })
            && let Some(field) = slot(&mut decoded)
        {
            *field = Some(Meta::unstable_from_shared_text(text.clone()));
            return Ok(decoded);
        }
        parse_params(params)
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
        self.mirrored.as_deref()
    }

    /// The progress token the caller attached, if any.
    pub fn progress_token(&self) -> Option<&ProgressToken> {
        self.progress.as_ref().and_then(|p| p.token.as_ref())
    }

    /// The peer, related to this request: what it sends travels with the request.
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// Fires when the caller cancels the request or the session ends, and, on a session
    /// that may serve requests of several clients in turn (the stateless era,
    /// session-less streamable HTTP), when the request has ended.
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

modelctx_types::__debug_shows!(ProgressReporter, |v| { token: &v.token });

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

/// Takes `_meta` out of raw params as text, without decoding it or the rest, with where
/// it stands in them: `None` when the params carry none (or `null`), or are not an
/// object with at most one `_meta`. A quick scan finds it ([`members::find`]); what
/// that does not settle (a key spelled with escapes) is read by serde.
fn read_meta(params: Option<&RawValue>) -> Option<(Arc<str>, Option<MetaPlace>)> {
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
    // Both readers hand out a slice of `raw`.
    let place = (meta.as_ptr() as usize)
        .checked_sub(raw.as_ptr() as usize)
        .filter(|offset| offset + meta.len() <= raw.len())
        .map(|offset| MetaPlace {
            offset,
            params_len: raw.len(),
        });
    (meta != "null").then(|| (Arc::from(meta), place))
}

/// Writes into `out` (cleared first) `params` without their `_meta` member, whose value
/// `meta` stands at `at`: `None` when the params are not the text `at` describes, the
/// text there is not `meta`, or it is not the value of a member spelled `"_meta"`. The
/// member goes with the comma that separates it from its neighbour.
fn cut_meta(params: &str, meta: &str, at: MetaPlace, out: &mut String) -> Option<()> {
    if params.len() != at.params_len || params.get(at.offset..)?.get(..meta.len())? != meta {
        return None;
    }
    let span = members::member_span(params, at.offset, meta.len(), "_meta")?;
    out.clear();
    out.reserve(params.len() - span.len());
    out.push_str(&params[..span.start]);
    out.push_str(&params[span.end..]);
    Some(())
}

/// [`cut_meta`] into a string of its own.
#[cfg(test)]
fn without_meta(params: &str, meta: &str, at: MetaPlace) -> Option<String> {
    let mut out = String::new();
    cut_meta(params, meta, at, &mut out)?;
    Some(out)
}

/// Runs `f` with this thread's scratch string (a fresh one when it is in use): the
/// params [`RequestContext::unstable_parse_params`] decodes are written there, so a
/// request's decoding allocates nothing for them. A scratch string grown past
/// [`SCRATCH_KEPT`] is not kept.
fn with_scratch<R>(f: impl FnOnce(&mut String) -> R) -> R {
    thread_local! {
        static SCRATCH: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
    }
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut scratch) => {
            let out = f(&mut scratch);
            if scratch.capacity() > SCRATCH_KEPT {
                *scratch = String::new();
            }
            out
        }
        Err(_) => f(&mut String::new()),
    })
}

/// The largest scratch string [`with_scratch`] keeps for the next request.
const SCRATCH_KEPT: usize = 16 * 1024;

/// `_meta` decoded from its text; `None` when it is not an object.
fn decode_meta(raw: &str) -> Option<Meta> {
    serde_json::from_str::<Meta>(raw).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta_of(params: &str) -> Option<Arc<str>> {
        let raw = RawValue::from_string(params.to_owned()).unwrap();
        read_meta(Some(&raw)).map(|(meta, _)| meta)
    }

    /// `params` without their `_meta`, found by [`read_meta`].
    fn cut(params: &str) -> Option<String> {
        let raw = RawValue::from_string(params.to_owned()).unwrap();
        let (meta, at) = read_meta(Some(&raw))?;
        without_meta(params, &meta, at?)
    }

    #[test]
    fn meta_is_cut_out_of_params_with_its_comma() {
        let meta = r#"{"k":[1,"}"]}"#;
        let cases = [
            (
                format!(r#"{{"name":"t","_meta":{meta}}}"#),
                r#"{"name":"t"}"#,
            ),
            (
                format!(r#"{{"_meta":{meta},"name":"t"}}"#),
                r#"{"name":"t"}"#,
            ),
            (
                format!(r#"{{"a":1,"_meta":{meta},"b":2}}"#),
                r#"{"a":1,"b":2}"#,
            ),
            (format!(r#"{{"_meta":{meta}}}"#), "{}"),
            (
                format!("{{ \"_meta\" :\n {meta} , \"name\":\"t\" }}"),
                "{  \"name\":\"t\" }",
            ),
            (
                format!("{{\"a\":\"x,\" ,\t\"_meta\": {meta}}}"),
                "{\"a\":\"x,\" }",
            ),
        ];
        for (params, rest) in cases {
            assert_eq!(cut(&params).as_deref(), Some(rest), "{params}");
            // What is left is the params without the member, as serde sees them.
            let mut whole: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(&params).unwrap();
            whole.remove("_meta");
            let left: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(rest).unwrap();
            assert_eq!(left, whole);
        }
        // A key spelled with escapes is read by serde, and not cut.
        assert_eq!(cut(r#"{"\u005fmeta":{"k":1},"a":1}"#), None);
        // The place must describe the params it is used on.
        let params = r#"{"a":1,"_meta":{"k":1}}"#;
        let raw = RawValue::from_string(params.to_owned()).unwrap();
        let (meta, at) = read_meta(Some(&raw)).unwrap();
        let at = at.unwrap();
        assert_eq!(
            without_meta(params, &meta, at).as_deref(),
            Some(r#"{"a":1}"#)
        );
        assert_eq!(without_meta(r#"{"a":1,"_meta":{"k":2}}"#, &meta, at), None);
        assert_eq!(without_meta(r#"{"a":12,"_meta":{"k":1}}"#, &meta, at), None);
        let moved = MetaPlace {
            offset: at.offset - 1,
            ..at
        };
        assert_eq!(without_meta(params, &meta, moved), None);
        let beyond = MetaPlace {
            offset: params.len(),
            ..at
        };
        assert_eq!(without_meta(params, &meta, beyond), None);
        // A value that is not a member's (an element of an array) is not cut.
        let params = r#"{"a":[{"k":1}],"_meta":{"k":1}}"#;
        let inner = MetaPlace {
            offset: params.find('[').unwrap() + 1,
            params_len: params.len(),
        };
        assert_eq!(without_meta(params, r#"{"k":1}"#, inner), None);
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
