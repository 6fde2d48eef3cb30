//! Middleware around the requests a client answers for its server (sampling,
//! elicitation, roots, methods of its own): the request a layer sees ([`McpRequest`]),
//! the rest of the chain a layer wraps ([`Next`]), and the chain itself, built once
//! when the client connects from the layers its builder was given (innermost: the
//! client's handlers).

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};

use futures::future::BoxFuture;
use modelctx_session::{Extensions, RequestContext, parse_params};
use modelctx_types::{ErrorData, RawValue, to_raw};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tower::util::BoxCloneService;
use tower::{Layer, Service, ServiceExt};

use crate::RequestFn;

/// The client's handlers of requests from its server, by method.
pub(crate) type Handlers = Arc<HashMap<Cow<'static, str>, Arc<RequestFn>>>;

type Answer = BoxFuture<'static, Result<Box<RawValue>, ErrorData>>;

/// One request from the server as the client's middleware sees it: its method, its
/// params (raw JSON text) and its context (request id, `_meta`, cancellation, the
/// transport's [`Extensions`], the peer). A layer may read it, rewrite its params,
/// answer it itself or refuse it (an `Err(ErrorData)`, sent to the server as a
/// JSON-RPC error) instead of calling the service it wraps.
pub struct McpRequest {
    method: Cow<'static, str>,
    params: Option<Box<RawValue>>,
    context: RequestContext,
    handlers: Handlers,
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
    /// The request's method, such as `sampling/createMessage`.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The request's params as sent (their JSON text), if it has any.
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
    pub fn context(&self) -> &RequestContext {
        &self.context
    }

    /// What the transport attached to the request.
    pub fn extensions(&self) -> &Extensions {
        self.context.extensions()
    }
}

/// The service a layer wraps: the layers inside it, then the client's handlers (a
/// method without one is `-32601 Method not found`). Cheap to clone, as tower's pattern
/// of cloning a service for each call needs.
#[derive(Clone)]
pub struct Next(BoxCloneService<McpRequest, Box<RawValue>, ErrorData>);

impl fmt::Debug for Next {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Next")
    }
}

impl Service<McpRequest> for Next {
    type Response = Box<RawValue>;
    type Error = ErrorData;
    type Future = BoxFuture<'static, Result<Box<RawValue>, ErrorData>>;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), ErrorData>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, request: McpRequest) -> Self::Future {
        self.0.call(request)
    }
}

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

/// The client's handlers, innermost in the chain.
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
        answer(
            &request.handlers,
            &request.method,
            request.params,
            request.context,
        )
    }
}

/// One layer given to the builder, waiting for the chain inside it.
pub(crate) type Wrap = Box<dyn FnOnce(Next) -> Next + Send + Sync>;

/// `layer`, boxed for the chain.
pub(crate) fn wrap<L>(layer: L) -> Wrap
where
    L: Layer<Next> + Send + Sync + 'static,
    L::Service:
        Service<McpRequest, Response = Box<RawValue>, Error = ErrorData> + Clone + Send + 'static,
    <L::Service as Service<McpRequest>>::Future: Send + 'static,
{
    Box::new(move |next| Next(BoxCloneService::new(layer.layer(next))))
}

/// The layers of a client around its handlers, built once. A call clones the
/// outermost service (tower's way of calling a service shared by concurrent callers),
/// waits until it is ready and calls it.
pub(crate) struct Chain(Mutex<Next>);

impl Chain {
    /// The chain of `layers`, the first given outermost; `None` without layers, so
    /// that a client without middleware calls its handlers directly.
    pub(crate) fn stack(layers: Vec<Wrap>) -> Option<Arc<Self>> {
        if layers.is_empty() {
            return None;
        }
        let innermost = Next(BoxCloneService::new(Dispatch));
        let outermost = layers
            .into_iter()
            .rev()
            .fold(innermost, |next, wrap| wrap(next));
        Some(Arc::new(Self(Mutex::new(outermost))))
    }

    /// Runs `method` through the chain, to `handlers` innermost.
    pub(crate) fn call(
        &self,
        handlers: &Handlers,
        method: Cow<'static, str>,
        params: Option<Box<RawValue>>,
        context: RequestContext,
    ) -> Answer {
        let service = self.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let request = McpRequest {
            method,
            params,
            context,
            handlers: handlers.clone(),
        };
        Box::pin(service.oneshot(request))
    }
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
        Some(chain) => chain.call(handlers, method, params, context),
        None => answer(handlers, &method, params, context),
    }
}
