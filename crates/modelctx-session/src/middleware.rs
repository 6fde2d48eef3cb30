//! The chain of tower layers both roles put around what they answer: what a layer
//! sees ([`McpMessage`]: a request with its context, or a [`McpNotification`]), the
//! service a layer wraps ([`Next`]), one layer boxed for the chain ([`Wrap`],
//! [`wrap`]), and the chain itself ([`Chain`]), built once. The role crates give the
//! request's context and the innermost service (the server's dispatch, the client's
//! handlers); a notification's is the role's handlers ([`NotificationHandlers`]).

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};

use futures_core::future::BoxFuture;
use modelctx_transport::Extensions;
use modelctx_types::{ErrorData, RawValue, to_raw};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tower::{Layer, Service};

use crate::peer::Peer;
use crate::service::{NotificationFn, RequestContext, parse_params};

/// One message as a role's middleware sees it: its method, its params (raw JSON text)
/// and what comes with it, `C`. For a request (the roles' `McpRequest`) that is its
/// context (the server's `Context`, the client's [`RequestContext`]: request id,
/// `_meta`, the transport's [`Extensions`], ...): a layer may read the request, rewrite
/// its params, answer it itself or refuse it (an `Err(ErrorData)`, sent to the peer as
/// a JSON-RPC error) instead of calling the service it wraps. For a notification
/// ([`McpNotification`]) it is the session's [`Peer`]: a layer may read it, rewrite its
/// params, or keep it from the application's handler by not calling the service it
/// wraps; a notification has no answer, so an `Err` is dropped too.
pub struct McpMessage<C> {
    method: Cow<'static, str>,
    params: Option<Box<RawValue>>,
    with: C,
}

/// One notification as a role's middleware sees it, with the session's peer (see
/// [`McpMessage`]).
pub type McpNotification = McpMessage<Peer>;

impl<C> fmt::Debug for McpMessage<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpMessage")
            .field("method", &self.method)
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

impl<C> McpMessage<C> {
    /// The message as the role's chain receives it. Public only because the role
    /// crates, which make the messages, are other crates; not for applications.
    #[doc(hidden)]
    pub fn new(method: Cow<'static, str>, params: Option<Box<RawValue>>, with: C) -> Self {
        Self {
            method,
            params,
            with,
        }
    }

    /// The message taken apart for the role's own answering, innermost in the chain.
    /// Public for the same reason as [`new`](Self::new).
    #[doc(hidden)]
    pub fn into_parts(self) -> (Cow<'static, str>, Option<Box<RawValue>>, C) {
        (self.method, self.params, self.with)
    }

    /// The message's method, such as `tools/call`, `sampling/createMessage` or
    /// `notifications/message`.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The message's params as sent (their JSON text), if it has any. In protocol
    /// 2026-07-28 a client's request's params include its `_meta` envelope.
    pub fn params(&self) -> Option<&RawValue> {
        self.params.as_deref()
    }

    /// The message's params decoded into `T` (absent params decode as `null`); a
    /// mismatch is `-32602 Invalid params`, ready to be returned as a request's answer.
    pub fn params_as<T: DeserializeOwned>(&self) -> Result<T, ErrorData> {
        parse_params(self.params.as_deref())
    }

    /// Replaces the message's params with `params` encoded: what the services inside
    /// this layer, and the handler, receive.
    pub fn set_params<T: Serialize>(&mut self, params: &T) -> Result<(), ErrorData> {
        let raw = to_raw(params)
            .map_err(|e| ErrorData::internal_error(format!("cannot encode the params: {e}")))?;
        self.params = Some(raw);
        Ok(())
    }

    /// Replaces the message's params with this raw JSON (or none).
    pub fn set_raw_params(&mut self, params: Option<Box<RawValue>>) {
        self.params = params;
    }
}

impl<C: AsRef<Extensions>> McpMessage<C> {
    /// The request's context, as its handler will see it.
    pub fn context(&self) -> &C {
        &self.with
    }

    /// What the transport attached to the request (for streamable HTTP, what layers in
    /// front of the endpoint put in the HTTP request's extensions).
    pub fn extensions(&self) -> &Extensions {
        self.with.as_ref()
    }
}

impl McpMessage<Peer> {
    /// The session's peer, to send to the other side.
    pub fn peer(&self) -> &Peer {
        &self.with
    }
}

impl AsRef<Extensions> for RequestContext {
    fn as_ref(&self) -> &Extensions {
        self.extensions()
    }
}

/// The service a layer wraps: the layers inside it, then the role's own answering.
/// Cheap to clone, as tower's pattern of cloning a service for each call needs.
pub struct Next<R, T>(Box<dyn Boxed<R, T>>);

impl<R, T> Next<R, T> {
    fn new<S>(service: S) -> Self
    where
        S: Service<R, Response = T, Error = ErrorData> + Clone + Send + 'static,
        S::Future: Send + 'static,
    {
        Self(Box::new(service))
    }
}

impl<R, T> Clone for Next<R, T> {
    fn clone(&self) -> Self {
        Self(self.0.clone_boxed())
    }
}

/// A service of the chain with its type erased: its future boxed, and cloned through
/// the box.
trait Boxed<R, T>: Send {
    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), ErrorData>>;
    fn call(&mut self, request: R) -> BoxFuture<'static, Result<T, ErrorData>>;
    fn clone_boxed(&self) -> Box<dyn Boxed<R, T>>;
}

impl<R, T, S> Boxed<R, T> for S
where
    S: Service<R, Response = T, Error = ErrorData> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), ErrorData>> {
        Service::poll_ready(self, cx)
    }

    fn call(&mut self, request: R) -> BoxFuture<'static, Result<T, ErrorData>> {
        Box::pin(Service::call(self, request))
    }

    fn clone_boxed(&self) -> Box<dyn Boxed<R, T>> {
        Box::new(self.clone())
    }
}

impl<R, T> fmt::Debug for Next<R, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Next")
    }
}

impl<R, T> Service<R> for Next<R, T> {
    type Response = T;
    type Error = ErrorData;
    type Future = BoxFuture<'static, Result<T, ErrorData>>;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), ErrorData>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> Self::Future {
        self.0.call(request)
    }
}

/// One layer given to a builder, waiting for the chain inside it.
pub type Wrap<R, T> = Box<dyn FnOnce(Next<R, T>) -> Next<R, T> + Send + Sync>;

/// `layer`, boxed for the chain.
pub fn wrap<R, T, L>(layer: L) -> Wrap<R, T>
where
    R: 'static,
    T: 'static,
    L: Layer<Next<R, T>> + Send + Sync + 'static,
    L::Service: Service<R, Response = T, Error = ErrorData> + Clone + Send + 'static,
    <L::Service as Service<R>>::Future: Send + 'static,
{
    Box::new(move |next| Next::new(layer.layer(next)))
}

/// The role's own answering, as the service the innermost layer wraps: always ready.
#[derive(Clone)]
struct Innermost<F>(F);

impl<R, T, F, Fut> Service<R> for Innermost<F>
where
    F: Fn(R) -> Fut,
    Fut: Future<Output = Result<T, ErrorData>>,
{
    type Response = T;
    type Error = ErrorData;
    type Future = Fut;

    fn poll_ready(&mut self, _: &mut TaskContext<'_>) -> Poll<Result<(), ErrorData>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: R) -> Fut {
        (self.0)(request)
    }
}

/// Layers around a role's answering, built once. A call clones the outermost service
/// (tower's way of calling a service shared by concurrent callers), waits until it is
/// ready and calls it.
pub struct Chain<R, T>(Mutex<Next<R, T>>);

impl<R, T> fmt::Debug for Chain<R, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Chain")
    }
}

impl<R: Send + 'static, T: 'static> Chain<R, T> {
    /// The chain of `layers` around `innermost` (the role's own answering), the first
    /// given outermost; `None` without layers, so that a role without middleware
    /// answers as directly as if none existed.
    pub fn stack<F, Fut>(layers: Vec<Wrap<R, T>>, innermost: F) -> Option<Self>
    where
        F: Fn(R) -> Fut + Clone + Send + 'static,
        Fut: Future<Output = Result<T, ErrorData>> + Send + 'static,
    {
        if layers.is_empty() {
            return None;
        }
        let innermost = Next::new(Innermost(innermost));
        let outermost = layers
            .into_iter()
            .rev()
            .fold(innermost, |next, wrap| wrap(next));
        Some(Self(Mutex::new(outermost)))
    }

    /// Runs `request` through the chain.
    pub fn run(&self, request: R) -> BoxFuture<'static, Result<T, ErrorData>> {
        let mut service = self.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
        Box::pin(async move {
            std::future::poll_fn(|cx| Service::poll_ready(&mut service, cx)).await?;
            Service::call(&mut service, request).await
        })
    }
}

impl<R: Send + 'static> Chain<R, ()> {
    /// Runs `notification` through the chain. A notification has no answer, so a
    /// layer's error has nowhere to go and is dropped.
    pub fn notify(&self, notification: R) -> BoxFuture<'static, ()> {
        let ran = self.run(notification);
        Box::pin(async move {
            let _ = ran.await;
        })
    }
}

/// A role's notification handlers, by method: the innermost of its notification chain.
pub type NotificationHandlers = Arc<HashMap<Cow<'static, str>, Arc<NotificationFn>>>;

/// Hands a notification to the handler for its method, if any.
fn deliver(
    handlers: &NotificationHandlers,
    method: &str,
    params: Option<Box<RawValue>>,
    peer: Peer,
) -> BoxFuture<'static, ()> {
    match handlers.get(method) {
        Some(handler) => handler(params, peer),
        None => Box::pin(async {}),
    }
}

impl Chain<McpNotification, ()> {
    /// The notification chain of `layers` around `handlers` (see
    /// [`stack`](Self::stack)); `None` without layers.
    pub fn around_handlers(
        layers: Vec<Wrap<McpNotification, ()>>,
        handlers: &NotificationHandlers,
    ) -> Option<Self> {
        let handlers = handlers.clone();
        let innermost = move |notification: McpNotification| {
            let (method, params, peer) = notification.into_parts();
            let delivered = deliver(&handlers, &method, params, peer);
            async move {
                delivered.await;
                Ok(())
            }
        };
        Self::stack(layers, innermost)
    }
}

/// Delivers notification `method`: through `chain` when the role has notification
/// layers, else straight to its handler in `handlers`, if any.
pub fn notify(
    chain: Option<&Chain<McpNotification, ()>>,
    handlers: &NotificationHandlers,
    method: Cow<'static, str>,
    params: Option<Box<RawValue>>,
    peer: Peer,
) -> BoxFuture<'static, ()> {
    match chain {
        Some(chain) => chain.notify(McpNotification::new(method, params, peer)),
        None => deliver(handlers, &method, params, peer),
    }
}
