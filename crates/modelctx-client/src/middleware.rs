//! Middleware around the requests a client answers for its server (sampling,
//! elicitation, roots, methods of its own) and the notifications it receives: what a
//! layer sees ([`McpRequest`], [`McpNotification`]), the rest of the chain a layer wraps
//! ([`Next`], [`NotificationNext`]), and the chains themselves, built once when the
//! client connects from the layers its builder was given (innermost: the client's
//! handlers).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use modelctx_session::RequestContext;
pub use modelctx_session::middleware::McpNotification;
use modelctx_types::{ErrorData, RawValue};

use crate::{ClientBuilder, RequestFn};

/// The client's handlers of requests from its server, by method.
pub(crate) type Handlers = Arc<HashMap<Cow<'static, str>, Arc<RequestFn>>>;

pub(crate) use modelctx_session::middleware::NotificationHandlers;

type Answer = BoxFuture<'static, Result<Box<RawValue>, ErrorData>>;

/// One request from the server as the client's middleware sees it: its method, its
/// params (raw JSON text) and its [`RequestContext`] (request id, `_meta`,
/// cancellation, the transport's [`Extensions`](modelctx_session::Extensions), the
/// peer). A layer may read it, rewrite its params, answer it itself or refuse it (an
/// `Err(ErrorData)`, sent to the server as a JSON-RPC error) instead of calling the
/// service it wraps.
pub type McpRequest = modelctx_session::middleware::McpMessage<RequestContext>;

/// The service a layer wraps: the layers inside it, then the client's handlers (a
/// request without one is `-32601 Method not found`; for notifications,
/// [`NotificationNext`]). Cheap to clone, as tower's pattern of cloning a service for
/// each call needs.
pub type Next<R = McpRequest, T = Box<RawValue>> = modelctx_session::middleware::Next<R, T>;

/// The service a notification layer wraps (see
/// [`ClientBuilder::notification_layer`](crate::ClientBuilder::notification_layer)).
pub type NotificationNext = Next<McpNotification, ()>;

/// The answer of the client's handler for `method`, or method not found.
pub(crate) fn answer(
    handlers: &Handlers,
    method: &str,
    params: Option<Box<RawValue>>,
    context: RequestContext,
) -> Answer {
    match handlers.get(method) {
        Some(handler) => handler(params, context),
        None => {
            let error = ErrorData::method_not_found(method);
            Box::pin(async move { Err(error) })
        }
    }
}

impl ClientBuilder {
    /// Wraps the client's answering of requests from its server in a tower
    /// [`Layer`](tower::Layer): its service sees each request ([`McpRequest`]: method,
    /// params, context, extensions) and may answer it, rewrite it, time it or refuse it
    /// with a JSON-RPC error before (or instead of) calling the [`Next`] service it
    /// wraps (the client's handlers). Layers nest in the order given: the first is
    /// outermost and sees a request first. Built once, at connection; a client without
    /// layers calls its handlers directly.
    ///
    /// Every request from the server passes through (`sampling/createMessage`,
    /// `elicitation/create`, `roots/list`, methods of
    /// [`request_handler`](Self::request_handler)s, and in protocol 2026-07-28 the input
    /// requests embedded in a server's answer), except `ping`, which the session answers
    /// itself. Notifications have layers of their own,
    /// [`notification_layer`](Self::notification_layer).
    ///
    /// ```
    /// use modelctx_client::{Client, McpRequest, Next};
    /// use tower::{ServiceExt, layer::layer_fn, service_fn};
    ///
    /// // Logs the method of every request from the server.
    /// let logged = layer_fn(|next: Next| {
    ///     service_fn(move |request: McpRequest| {
    ///         eprintln!("the server asks: {}", request.method());
    ///         next.clone().oneshot(request)
    ///     })
    /// });
    /// let builder = Client::builder("demo", "1.0.0").layer(logged);
    /// # let _ = builder;
    /// ```
    #[must_use]
    pub fn layer<L>(mut self, layer: L) -> Self
    where
        L: tower::Layer<Next> + Send + Sync + 'static,
        L::Service: tower::Service<McpRequest, Response = Box<RawValue>, Error = ErrorData>
            + Clone
            + Send
            + 'static,
        <L::Service as tower::Service<McpRequest>>::Future: Send + 'static,
    {
        self.layers.push(wrap(layer));
        self
    }

    /// Wraps the delivery of notifications from the server to the application's
    /// [`notification_handler`](Self::notification_handler)s (and the callbacks that
    /// stand on them) in a tower [`Layer`](tower::Layer): its service sees each
    /// notification ([`McpNotification`]: method, params, peer) and may rewrite it or
    /// keep it from the handler (by not calling the [`NotificationNext`] it wraps). A
    /// notification has no answer: an error of the service is dropped. The order and the
    /// cost are those of [`layer`](Self::layer). What the client keeps for itself comes
    /// first, whatever the layers do: its cache and subscriptions see every notification.
    #[must_use]
    pub fn notification_layer<L>(mut self, layer: L) -> Self
    where
        L: tower::Layer<NotificationNext> + Send + Sync + 'static,
        L::Service: tower::Service<McpNotification, Response = (), Error = ErrorData>
            + Clone
            + Send
            + 'static,
        <L::Service as tower::Service<McpNotification>>::Future: Send + 'static,
    {
        self.notification_layers.push(wrap(layer));
        self
    }
}

/// One layer given to the builder, waiting for the chain inside it.
pub(crate) type Wrap<R = McpRequest, T = Box<RawValue>> = modelctx_session::middleware::Wrap<R, T>;

pub(crate) use modelctx_session::middleware::wrap;

/// The layers of a client around its answering, built once.
pub(crate) type Chain<R = McpRequest, T = Box<RawValue>> =
    modelctx_session::middleware::Chain<R, T>;

/// The request chain of `layers`, around `handlers`.
pub(crate) fn request_chain(layers: Vec<Wrap>, handlers: &Handlers) -> Option<Arc<Chain>> {
    let handlers = handlers.clone();
    let innermost = move |request: McpRequest| {
        let (method, params, context) = request.into_parts();
        answer(&handlers, &method, params, context)
    };
    Chain::stack(layers, innermost).map(Arc::new)
}

/// The notification chain of `layers`, around `handlers`.
pub(crate) fn notification_chain(
    layers: Vec<Wrap<McpNotification, ()>>,
    handlers: &NotificationHandlers,
) -> Option<Arc<Chain<McpNotification, ()>>> {
    Chain::around_handlers(layers, handlers).map(Arc::new)
}

/// The answer to a request from the server: through `chain` when the client has
/// layers, else straight from its handler.
pub(crate) fn serve(
    chain: Option<&Chain>,
    handlers: &Handlers,
    method: Cow<'static, str>,
    params: Option<Box<RawValue>>,
    context: RequestContext,
) -> Answer {
    match chain {
        Some(chain) => chain.run(McpRequest::new(method, params, context)),
        None => answer(handlers, &method, params, context),
    }
}

pub(crate) use modelctx_session::middleware::notify;
