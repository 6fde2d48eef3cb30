//! The chain of tower layers both roles put around what they answer: the service a
//! layer wraps ([`Next`]), one layer boxed for the chain ([`Wrap`], [`wrap`]), and the
//! chain itself ([`Chain`]), built once. The role crates give the request types and the
//! innermost service (the server's dispatch, the client's handlers).

use std::fmt;
use std::sync::Mutex;
use std::task::{Context as TaskContext, Poll};

use futures::future::BoxFuture;
use modelctx_types::ErrorData;
use tower::util::BoxCloneService;
use tower::{Layer, Service, ServiceExt};

/// The service a layer wraps: the layers inside it, then the role's own answering.
/// Cheap to clone, as tower's pattern of cloning a service for each call needs.
pub struct Next<R, T>(BoxCloneService<R, T, ErrorData>);

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
    Box::new(move |next| Next(BoxCloneService::new(layer.layer(next))))
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
    /// The chain of `layers` around `innermost`, the first given outermost; `None`
    /// without layers, so that a role without middleware answers as directly as if none
    /// existed.
    pub fn stack<S>(layers: Vec<Wrap<R, T>>, innermost: S) -> Option<Self>
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
    pub fn run(&self, request: R) -> BoxFuture<'static, Result<T, ErrorData>> {
        let service = self.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
        Box::pin(service.oneshot(request))
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
