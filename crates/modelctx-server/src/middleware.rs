//! Middleware around the requests a server answers: the request a layer sees
//! ([`McpRequest`]), the rest of the chain a layer wraps ([`Next`]), and the chain
//! itself, built once by the builder from the layers it was given (innermost: the
//! server's own answering, its handlers and registries).

use std::borrow::Cow;
use std::fmt;
use std::sync::Mutex;
use std::task::{Context as TaskContext, Poll};

use futures::future::BoxFuture;
use modelctx_session::{Extensions, parse_params};
use modelctx_types::{ErrorData, RawValue, to_raw};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tower::util::BoxCloneService;
use tower::{Layer, Service, ServiceExt};

use crate::request::Context;

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
/// (its request handlers, else its registries, else `-32601 Method not found`).
/// Cheap to clone, as tower's pattern of cloning a service for each call needs.
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

/// The layers of a server around its own answering, built once. A call clones the
/// outermost service (tower's way of calling a service shared by concurrent callers),
/// waits until it is ready and calls it.
pub(crate) struct Chain(Mutex<Next>);

impl Chain {
    /// The chain of `layers`, the first given outermost; `None` without layers, so
    /// that a server without middleware answers as directly as before any existed.
    pub(crate) fn stack(layers: Vec<Wrap>) -> Option<Self> {
        if layers.is_empty() {
            return None;
        }
        let innermost = Next(BoxCloneService::new(Dispatch));
        let outermost = layers
            .into_iter()
            .rev()
            .fold(innermost, |next, wrap| wrap(next));
        Some(Self(Mutex::new(outermost)))
    }

    /// Runs `method` through the chain.
    pub(crate) fn call(
        &self,
        method: Cow<'static, str>,
        params: Option<Box<RawValue>>,
        context: Context,
    ) -> Answer {
        let service = self.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let request = McpRequest::new(method, params, context);
        Box::pin(service.oneshot(request))
    }
}
