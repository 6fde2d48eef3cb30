//! Middleware around the requests and notifications a server receives: what a layer
//! sees ([`McpRequest`], [`McpNotification`]), the rest of the chain a layer wraps
//! ([`Next`], [`NotificationNext`]), and the chains themselves, built once by the
//! builder from the layers it was given (innermost: the server's own answering, its
//! handlers and registries; for notifications, its notification handlers).

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};

use futures::future::BoxFuture;
use modelctx_session::{Extensions, Peer, parse_params};
use modelctx_types::{ErrorData, RawValue, to_raw};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tower::util::BoxCloneService;
use tower::{Layer, Service, ServiceExt};

use crate::request::{Context, Serving};

/// What a request's answer is: its JSON-RPC result (as raw JSON) or its JSON-RPC error.
pub(crate) type Answer = BoxFuture<'static, Result<Box<RawValue>, ErrorData>>;

/// One request as the server's middleware sees it: its method, its params (raw JSON
/// text) and its [`Context`] (request id, `_meta`, the transport's [`Extensions`], the
/// session, the application's state). A layer may read it, rewrite its params, answer
/// it itself or refuse it (an `Err(ErrorData)`, sent to the client as a JSON-RPC error)
/// instead of calling the service it wraps.
pub struct McpRequest {
    method: Cow<'static, str>,
    params: Option<Box<RawValue>>,
    context: Context,
}

impl fmt::Debug for McpRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpRequest")
            .field("method", &self.method)
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

impl McpRequest {
    pub(crate) fn new(
        method: Cow<'static, str>,
        params: Option<Box<RawValue>>,
        context: Context,
    ) -> Self {
        Self {
            method,
            params,
            context,
        }
    }

    /// The request's method, such as `tools/call`.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The request's params as sent (their JSON text), if it has any. In protocol
    /// 2026-07-28 they include the request's `_meta` envelope.
    pub fn params(&self) -> Option<&RawValue> {
        self.params.as_deref()
    }

    /// The request's params decoded into `T` (absent params decode as `null`); a
    /// mismatch is `-32602 Invalid params`, ready to be returned as the answer.
    pub fn params_as<T: DeserializeOwned>(&self) -> Result<T, ErrorData> {
        parse_params(self.params.as_deref())
    }

    /// Replaces the request's params with `params` encoded: what the services inside
    /// this layer, and the handler, receive.
    pub fn set_params<T: Serialize>(&mut self, params: &T) -> Result<(), ErrorData> {
        let raw = to_raw(params)
            .map_err(|e| ErrorData::internal_error(format!("cannot encode the params: {e}")))?;
        self.params = Some(raw);
        Ok(())
    }

    /// Replaces the request's params with this raw JSON (or none).
    pub fn set_raw_params(&mut self, params: Option<Box<RawValue>>) {
        self.params = params;
    }

    /// The request's context, as its handler will see it.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// What the transport attached to the request (for streamable HTTP, what layers in
    /// front of the endpoint put in the HTTP request's extensions).
    pub fn extensions(&self) -> &Extensions {
        self.context.extensions()
    }
}

/// The service a layer wraps: the layers inside it, then the server's own answering
/// (for requests, its request handlers, else its registries, else `-32601 Method not
/// found`; for notifications, [`NotificationNext`], its notification handlers). Cheap to
/// clone, as tower's pattern of cloning a service for each call needs.
pub struct Next<R = McpRequest, T = Box<RawValue>>(BoxCloneService<R, T, ErrorData>);

/// The service a notification layer wraps (see
/// [`ServerBuilder::notification_layer`](crate::ServerBuilder::notification_layer)).
pub type NotificationNext = Next<McpNotification, ()>;

impl<R, T> Clone for Next<R, T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
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

/// One notification as the server's middleware sees it: its method, its params (raw
/// JSON text) and the session's peer. A layer may read it, rewrite its params, or drop
/// it by not calling the service it wraps; a notification has no answer, so an `Err`
/// is dropped too.
pub struct McpNotification {
    method: Cow<'static, str>,
    params: Option<Box<RawValue>>,
    peer: Peer,
    server: Arc<dyn Serving>,
}

impl fmt::Debug for McpNotification {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpNotification")
            .field("method", &self.method)
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

impl McpNotification {
    /// The notification's method, such as `notifications/roots/list_changed`.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The notification's params as sent (their JSON text), if it has any.
    pub fn params(&self) -> Option<&RawValue> {
        self.params.as_deref()
    }

    /// The notification's params decoded into `T` (absent params decode as `null`).
    pub fn params_as<T: DeserializeOwned>(&self) -> Result<T, ErrorData> {
        parse_params(self.params.as_deref())
    }

    /// Replaces the notification's params with this raw JSON (or none).
    pub fn set_raw_params(&mut self, params: Option<Box<RawValue>>) {
        self.params = params;
    }

    /// The session's peer, to send to the client.
    pub fn peer(&self) -> &Peer {
        &self.peer
    }
}

/// The server's notification handlers, innermost in the notification chain.
#[derive(Clone, Copy)]
struct Deliver;

impl Service<McpNotification> for Deliver {
    type Response = ();
    type Error = ErrorData;
    type Future = BoxFuture<'static, Result<(), ErrorData>>;

    fn poll_ready(&mut self, _: &mut TaskContext<'_>) -> Poll<Result<(), ErrorData>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, notification: McpNotification) -> Self::Future {
        let McpNotification {
            method,
            params,
            peer,
            server,
        } = notification;
        let delivered = server.notify(&method, params, peer);
        Box::pin(async move {
            delivered.await;
            Ok(())
        })
    }
}

/// The server's own answering, innermost in the chain.
#[derive(Clone, Copy)]
struct Dispatch;

impl Service<McpRequest> for Dispatch {
    type Response = Box<RawValue>;
    type Error = ErrorData;
    type Future = Answer;

    fn poll_ready(&mut self, _: &mut TaskContext<'_>) -> Poll<Result<(), ErrorData>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: McpRequest) -> Answer {
        let McpRequest {
            method,
            params,
            context,
        } = request;
        context.server.clone().dispatch(&method, params, context)
    }
}

/// One layer given to the builder, waiting for the chain inside it.
pub(crate) type Wrap<R = McpRequest, T = Box<RawValue>> =
    Box<dyn FnOnce(Next<R, T>) -> Next<R, T> + Send + Sync>;

/// `layer`, boxed for the chain.
pub(crate) fn wrap<R, T, L>(layer: L) -> Wrap<R, T>
where
    R: 'static,
    T: 'static,
    L: Layer<Next<R, T>> + Send + Sync + 'static,
    L::Service: Service<R, Response = T, Error = ErrorData> + Clone + Send + 'static,
    <L::Service as Service<R>>::Future: Send + 'static,
{
    Box::new(move |next| Next(BoxCloneService::new(layer.layer(next))))
}

/// The layers of a server around one of its answerings, built once. A call clones the
/// outermost service (tower's way of calling a service shared by concurrent callers),
/// waits until it is ready and calls it.
pub(crate) struct Chain<R = McpRequest, T = Box<RawValue>>(Mutex<Next<R, T>>);

impl<R: Send + 'static, T: 'static> Chain<R, T> {
    /// The chain of `layers` around `innermost`, the first given outermost; `None`
    /// without layers, so that a server without middleware answers as directly as
    /// before any existed.
    fn stack<S>(layers: Vec<Wrap<R, T>>, innermost: S) -> Option<Self>
    where
        S: Service<R, Response = T, Error = ErrorData> + Clone + Send + 'static,
        S::Future: Send + 'static,
    {
        if layers.is_empty() {
            return None;
        }
        let innermost = Next(BoxCloneService::new(innermost));
        let outermost = layers
            .into_iter()
            .rev()
            .fold(innermost, |next, wrap| wrap(next));
        Some(Self(Mutex::new(outermost)))
    }

    /// Runs `request` through the chain.
    fn run(&self, request: R) -> BoxFuture<'static, Result<T, ErrorData>> {
        let service = self.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
        Box::pin(service.oneshot(request))
    }
}

impl Chain {
    /// The request chain of `layers`.
    pub(crate) fn requests(layers: Vec<Wrap>) -> Option<Self> {
        Self::stack(layers, Dispatch)
    }

    /// Runs `method` through the chain.
    pub(crate) fn call(
        &self,
        method: Cow<'static, str>,
        params: Option<Box<RawValue>>,
        context: Context,
    ) -> Answer {
        self.run(McpRequest::new(method, params, context))
    }
}

impl Chain<McpNotification, ()> {
    /// The notification chain of `layers`.
    pub(crate) fn notifications(layers: Vec<Wrap<McpNotification, ()>>) -> Option<Self> {
        Self::stack(layers, Deliver)
    }

    /// Runs notification `method` through the chain, for `server`'s handlers.
    pub(crate) fn notify(
        &self,
        method: Cow<'static, str>,
        params: Option<Box<RawValue>>,
        peer: Peer,
        server: Arc<dyn Serving>,
    ) -> BoxFuture<'static, ()> {
        let ran = self.run(McpNotification {
            method,
            params,
            peer,
            server,
        });
        Box::pin(async move {
            // A notification has no answer: a layer's error has nowhere to go.
            let _ = ran.await;
        })
    }
}
