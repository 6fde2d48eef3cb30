//! Middleware around the requests and notifications a server receives: what a layer
//! sees ([`McpRequest`], [`McpNotification`]), the rest of the chain a layer wraps
//! ([`Next`], [`NotificationNext`]), and the chains themselves, built once by the
//! builder from the layers it was given (innermost: the server's own answering, its
//! handlers and registries; for notifications, its notification handlers).

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use modelctx_session::{Extensions, Peer, parse_params};
use modelctx_types::{ErrorData, RawValue, to_raw};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tower::service_fn;

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
pub type Next<R = McpRequest, T = Box<RawValue>> = modelctx_session::middleware::Next<R, T>;

/// The service a notification layer wraps (see
/// [`ServerBuilder::notification_layer`](crate::ServerBuilder::notification_layer)).
pub type NotificationNext = Next<McpNotification, ()>;

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
fn deliver(notification: McpNotification) -> BoxFuture<'static, Result<(), ErrorData>> {
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

/// The server's own answering, innermost in the chain.
fn dispatch(request: McpRequest) -> Answer {
    let McpRequest {
        method,
        params,
        context,
    } = request;
    context.server.clone().dispatch(&method, params, context)
}

/// One layer given to the builder, waiting for the chain inside it.
pub(crate) type Wrap<R = McpRequest, T = Box<RawValue>> = modelctx_session::middleware::Wrap<R, T>;

pub(crate) use modelctx_session::middleware::wrap;

/// The layers of a server around its answering, built once.
pub(crate) type Chain<R = McpRequest, T = Box<RawValue>> =
    modelctx_session::middleware::Chain<R, T>;

/// The request chain of `layers`.
pub(crate) fn request_chain(layers: Vec<Wrap>) -> Option<Chain> {
    Chain::stack(layers, service_fn(dispatch))
}

/// Runs `method` through the request chain.
pub(crate) fn call(
    chain: &Chain,
    method: Cow<'static, str>,
    params: Option<Box<RawValue>>,
    context: Context,
) -> Answer {
    chain.run(McpRequest::new(method, params, context))
}

/// The notification chain of `layers`.
pub(crate) fn notification_chain(
    layers: Vec<Wrap<McpNotification, ()>>,
) -> Option<Chain<McpNotification, ()>> {
    Chain::stack(layers, service_fn(deliver))
}

/// Runs notification `method` through the chain, for `server`'s handlers.
pub(crate) fn notify(
    chain: &Chain<McpNotification, ()>,
    method: Cow<'static, str>,
    params: Option<Box<RawValue>>,
    peer: Peer,
    server: Arc<dyn Serving>,
) -> BoxFuture<'static, ()> {
    chain.notify(McpNotification {
        method,
        params,
        peer,
        server,
    })
}
