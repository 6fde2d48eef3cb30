//! Middleware around the requests and notifications a server receives: what a layer
//! sees ([`McpRequest`], [`McpNotification`]), the rest of the chain a layer wraps
//! ([`Next`], [`NotificationNext`]), and the chains themselves, built once by the
//! builder from the layers it was given (innermost: the server's own answering, its
//! handlers and registries; for notifications, its notification handlers).

use std::borrow::Cow;

use futures_core::future::BoxFuture;
pub use modelctx_session::middleware::McpNotification;
pub(crate) use modelctx_session::middleware::{NotificationHandlers, notify};
use modelctx_types::{ErrorData, RawValue};

use crate::request::Context;

/// What a request's answer is: its JSON-RPC result (as raw JSON) or its JSON-RPC error.
pub(crate) type Answer = BoxFuture<'static, Result<Box<RawValue>, ErrorData>>;

/// One request as the server's middleware sees it: its method, its params (raw JSON
/// text) and its [`Context`] (request id, `_meta`, the transport's
/// [`Extensions`](modelctx_session::Extensions), the session, the application's
/// state). A layer may read it, rewrite its params, answer it itself or refuse it (an
/// `Err(ErrorData)`, sent to the client as a JSON-RPC error) instead of calling the
/// service it wraps.
pub type McpRequest = modelctx_session::middleware::McpMessage<Context>;

/// The service a layer wraps: the layers inside it, then the server's own answering
/// (for requests, its request handlers, else its registries, else `-32601 Method not
/// found`; for notifications, [`NotificationNext`], its notification handlers). Cheap to
/// clone, as tower's pattern of cloning a service for each call needs.
pub type Next<R = McpRequest, T = Box<RawValue>> = modelctx_session::middleware::Next<R, T>;

/// The service a notification layer wraps (see
/// [`ServerBuilder::notification_layer`](crate::ServerBuilder::notification_layer)).
pub type NotificationNext = Next<McpNotification, ()>;

/// The server's own answering, innermost in the chain.
fn dispatch(request: McpRequest) -> Answer {
    let (method, params, context) = request.into_parts();
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
    Chain::stack(layers, dispatch)
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
