//! The host half: [`AppBridge`], the host end of the View<->Host dialect for one view,
//! over any message channel the host supplies ([`ViewLink`]), on a connected
//! [`Client`] of the view's own server.

mod dispatch;
mod types;
mod view;

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::future::BoxFuture;
use modelctx_client::Client;
use modelctx_session::RequestOptions;
use modelctx_types::{CallToolRequestParams, CallToolResult, Implementation, JsonObject};
use serde_json::{Value, json};
use tokio::sync::{Notify, Semaphore, mpsc, oneshot, watch};

pub use types::{
    BridgeError, BridgeErrorKind, ContainerDimensions, Decision, DisplayMode, HostContext,
    ModelContext, Platform, Theme, UiMessage, ViewLog, ViewSize,
};
pub use view::{SandboxPolicy, UiView};

use crate::meta::{UiPermissions, to_value};

/// One end of the channel between the bridge and a view: JSON-RPC messages as JSON
/// values, each way. A host connects the other end to wherever its view runs (a
/// webview's IPC, a WebSocket to a page that relays `postMessage`, a test's fake view);
/// [`ViewLink::pair`] makes both ends in process.
#[derive(Debug)]
pub struct ViewLink {
    tx: mpsc::Sender<Value>,
    rx: mpsc::Receiver<Value>,
}

impl ViewLink {
    /// The end that sends on `to_peer` and receives from `from_peer`.
    pub fn new(to_peer: mpsc::Sender<Value>, from_peer: mpsc::Receiver<Value>) -> Self {
        Self {
            tx: to_peer,
            rx: from_peer,
        }
    }

    /// Two connected ends, each direction holding up to `capacity` messages.
    pub fn pair(capacity: usize) -> (Self, Self) {
        let (a_tx, a_rx) = mpsc::channel(capacity.max(1));
        let (b_tx, b_rx) = mpsc::channel(capacity.max(1));
        (Self::new(a_tx, b_rx), Self::new(b_tx, a_rx))
    }

    /// Sends `message` to the peer; false once the peer's end is gone.
    pub async fn send(&self, message: Value) -> bool {
        self.tx.send(message).await.is_ok()
    }

    /// The next message from the peer; `None` once its end is gone.
    pub async fn recv(&mut self) -> Option<Value> {
        self.rx.recv().await
    }
}

type Decide<T> = dyn Fn(T) -> BoxFuture<'static, Decision> + Send + Sync;
type See<T> = dyn Fn(T) + Send + Sync;
/// The host's filter of declared origins.
type Allowed = dyn Fn(&str) -> bool + Send + Sync;

/// The host's callbacks. Those that decide default to deny (no link opened, no message
/// posted, no display mode changed); model-context updates are kept by default.
#[derive(Default)]
struct Handlers {
    open_link: Option<Arc<Decide<String>>>,
    message: Option<Arc<Decide<UiMessage>>>,
    display_mode: Option<Arc<Decide<DisplayMode>>>,
    model_context: Option<Arc<Decide<ModelContext>>>,
    size: Option<Arc<See<ViewSize>>>,
    log: Option<Arc<See<ViewLog>>>,
}

fn decide<T, F, Fut>(f: F) -> Arc<Decide<T>>
where
    T: Send + 'static,
    F: Fn(T) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Decision> + Send + 'static,
{
    Arc::new(move |value| Box::pin(f(value)))
}

/// Where the view is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Before `ui/notifications/initialized`: host messages are held.
    Starting,
    /// Initialized: host messages go out at once.
    Ready,
    /// Torn down, or the channel closed.
    Closed,
}

/// What the view and the host have done so far.
struct State {
    /// `ui/initialize` was answered.
    answered: bool,
    /// Host notifications waiting for `initialized`, in order.
    held: Vec<Value>,
    /// The display modes the view declared, if it did.
    app_modes: Option<Vec<DisplayMode>>,
    context: HostContext,
    input_sent: bool,
    finished: bool,
    model_context: Option<ModelContext>,
    size: Option<ViewSize>,
    next_id: u64,
    /// Host requests awaiting the view's answer, by id.
    pending: HashMap<String, oneshot::Sender<Result<Value, Value>>>,
    /// The view's requests being answered, by their id's JSON text, to cancel.
    in_flight: HashMap<String, tokio::task::AbortHandle>,
}

struct Shared {
    client: Client,
    view: UiView,
    policy: SandboxPolicy,
    info: Implementation,
    handlers: Handlers,
    state: Mutex<State>,
    phase: watch::Sender<Phase>,
    out: mpsc::UnboundedSender<Value>,
    /// Bounds the view's requests in flight.
    requests: Arc<Semaphore>,
    stop: Notify,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn phase(&self) -> Phase {
        *self.phase.borrow()
    }

    /// Sends `message` now (answers, and anything once the view is initialized).
    fn send(&self, message: Value) {
        // A closed writer means the view is gone; nothing is left to tell.
        let _ = self.out.send(message);
    }

    /// Sends a host notification or request: held until the view is initialized (the
    /// dialect forbids any before), refused once the view is closed.
    fn send_after_initialized(&self, state: &mut State, message: Value) -> Result<(), BridgeError> {
        match self.phase() {
            Phase::Ready => {
                self.send(message);
                Ok(())
            }
            Phase::Starting => {
                state.held.push(message);
                Ok(())
            }
            Phase::Closed => Err(closed()),
        }
    }

    /// Marks the view closed and answers every host request still waiting.
    fn close(&self) {
        self.phase.send_replace(Phase::Closed);
        let (pending, in_flight) = {
            let mut state = self.state();
            (
                std::mem::take(&mut state.pending),
                std::mem::take(&mut state.in_flight),
            )
        };
        drop(pending);
        // The view is gone: nobody waits for these answers.
        for (_, task) in in_flight {
            task.abort();
        }
    }
}

/// Returns once the phase is `Closed` (or its sender is gone).
async fn until_closed(phase: &mut watch::Receiver<Phase>) {
    // The borrow the wait returns is not `Send`: dropped here, before any await.
    let _ = phase.wait_for(|p| *p == Phase::Closed).await.is_ok();
}

fn closed() -> BridgeError {
    BridgeError::new(BridgeErrorKind::Closed, "the view's channel is closed")
}

fn order(message: &str) -> BridgeError {
    BridgeError::new(BridgeErrorKind::Order, message)
}

/// Sets up an [`AppBridge`]: the host's name, context, callbacks and grants.
#[must_use]
pub struct AppBridgeBuilder {
    client: Client,
    view: UiView,
    info: Implementation,
    context: HostContext,
    handlers: Handlers,
    granted: UiPermissions,
    origins: Option<Box<Allowed>>,
    teardown_wait: Duration,
    max_requests: usize,
}

modelctx_types::__debug_shows!(AppBridgeBuilder, |v| {
    view: &v.view.uri(),
    info: &v.info,
    context: &v.context,
    ..
});

impl AppBridgeBuilder {
    /// Names the host in `ui/initialize`'s answer (by default, the client's name).
    pub fn host_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.info = Implementation::new(name, version);
        self
    }

    /// The host context the view starts with.
    pub fn host_context(mut self, context: HostContext) -> Self {
        self.context = context;
        self
    }

    /// Grants these of the permissions the resource asks for (none by default).
    pub fn grant(mut self, permissions: UiPermissions) -> Self {
        self.granted = permissions;
        self
    }

    /// Lets into the sandbox only the declared origins `allowed` accepts (the host's
    /// global allow or block list; every well-formed declared origin by default). See
    /// [`SandboxPolicy::restrict`].
    pub fn restrict_origins(
        mut self,
        allowed: impl Fn(&str) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.origins = Some(Box::new(allowed));
        self
    }

    /// How long [`AppBridge::teardown`] waits for the view's answer (10 s by default).
    pub fn teardown_wait(mut self, wait: Duration) -> Self {
        self.teardown_wait = wait;
        self
    }

    /// How many of the view's requests may be in flight at once (32 by default); one
    /// more is answered `-32005` at once.
    pub fn max_requests(mut self, n: usize) -> Self {
        self.max_requests = n.max(1);
        self
    }

    /// Decides `ui/open-link` (the URL, already checked to be `http` or `https`):
    /// without this callback every link is refused, and `openLinks` is not offered.
    pub fn on_open_link<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Decision> + Send + 'static,
    {
        self.handlers.open_link = Some(decide(f));
        self
    }

    /// Decides `ui/message` (to add the content to the conversation): without this
    /// callback every message is refused, and `message` is not offered.
    pub fn on_message<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(UiMessage) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Decision> + Send + 'static,
    {
        self.handlers.message = Some(decide(f));
        self
    }

    /// Decides `ui/request-display-mode` for a mode both the host offers and the view
    /// declared (any other request is answered with the current mode without asking):
    /// without this callback the mode never changes.
    pub fn on_display_mode<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(DisplayMode) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Decision> + Send + 'static,
    {
        self.handlers.display_mode = Some(decide(f));
        self
    }

    /// Decides `ui/update-model-context`; without this callback every update is kept
    /// (read it with [`AppBridge::model_context`]).
    pub fn on_model_context<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(ModelContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Decision> + Send + 'static,
    {
        self.handlers.model_context = Some(decide(f));
        self
    }

    /// Called with every size the view reports (to resize its frame).
    pub fn on_size_changed(mut self, f: impl Fn(ViewSize) + Send + Sync + 'static) -> Self {
        self.handlers.size = Some(Arc::new(f));
        self
    }

    /// Called with every log message of the view.
    pub fn on_log(mut self, f: impl Fn(ViewLog) + Send + Sync + 'static) -> Self {
        self.handlers.log = Some(Arc::new(f));
        self
    }

    /// Starts speaking to the view on `link` (on the current tokio runtime).
    pub fn start(self, link: ViewLink) -> AppBridge {
        let mut policy = self.view.sandbox(self.granted);
        if let Some(allowed) = &self.origins {
            policy = policy.restrict(allowed);
        }
        let (out, mut out_rx) = mpsc::unbounded_channel::<Value>();
        let (phase, _) = watch::channel(Phase::Starting);
        let shared = Arc::new(Shared {
            client: self.client,
            view: self.view,
            policy,
            info: self.info,
            handlers: self.handlers,
            state: Mutex::new(State {
                answered: false,
                held: Vec::new(),
                app_modes: None,
                context: self.context,
                input_sent: false,
                finished: false,
                model_context: None,
                size: None,
                next_id: 0,
                pending: HashMap::new(),
                in_flight: HashMap::new(),
            }),
            phase,
            out,
            requests: Arc::new(Semaphore::new(self.max_requests)),
            stop: Notify::new(),
        });
        let ViewLink { tx, mut rx } = link;
        // The writer: the reader never waits on a view that does not read. It ends
        // when the view is closed, dropping its end of the channel.
        let mut phase = shared.phase.subscribe();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    biased;
                    message = out_rx.recv() => {
                        let Some(message) = message else { break };
                        if tx.send(message).await.is_err() {
                            break;
                        }
                    }
                    () = until_closed(&mut phase) => break,
                }
            }
        });
        let reader = shared.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    message = rx.recv() => match message {
                        Some(message) => dispatch::handle(&reader, message),
                        None => break,
                    },
                    () = reader.stop.notified() => break,
                }
            }
            reader.close();
        });
        AppBridge {
            shared,
            teardown_wait: self.teardown_wait,
        }
    }
}

/// The host end of one view's View<->Host dialect (`ui/initialize`, tool input and
/// results, `ui/open-link`, `ui/message`, display modes, model context, size and host
/// context changes, teardown), on the [`Client`] of the view's own server.
///
/// The bridge reads the view's UI resource through the client ([`UiView::load`]) and
/// builds its sandbox policy ([`UiView::sandbox`]); the host renders the HTML under
/// that policy and connects the view's messages to a [`ViewLink`]. Everything the view
/// sends is checked: a malformed message, a request before `ui/initialize`, a call of a
/// tool that is not visible to the app (or not on this server) gets a JSON-RPC error
/// and never reaches the server. Resources and logging pass through. The host's
/// decisions are callbacks that deny unless given.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use modelctx_apps::bridge::{AppBridge, UiView, ViewLink};
/// use modelctx_apps::{Apps, ServerBuilderAppsExt, ToolUi, UiResource};
/// use modelctx_client::{Client, ClientExtension};
/// use modelctx_server::{Context, NoArgs, Server, ToolDef};
/// use serde_json::json;
///
/// let time = ToolDef::new("time", |_: NoArgs, _cx: Context| async { Ok::<_, String>("12:00") });
/// let apps = Apps::new()
///     .resource(UiResource::html("ui://clock/face", "Clock", "<!doctype html><p></p>"))?
///     .tool(ToolUi::new("ui://clock/face").link(time))?;
/// let server = Server::builder("clock", "1.0.0").apps(apps)?.build();
/// let (client_end, server_end) = modelctx_memory::pair();
/// server.serve(server_end);
/// let client = Client::builder("host", "1.0.0")
///     .extension(ClientExtension::new(modelctx_apps::EXTENSION_ID).settings(modelctx_apps::client_settings()))
///     .connect(client_end)
///     .await?;
///
/// let tool = client.list_all_tools().await?.remove(0);
/// let view = UiView::load(&client, &tool).await?;
/// let (host_end, mut page) = ViewLink::pair(16);
/// let bridge = AppBridge::builder(client, view).start(host_end);
///
/// // The page (here, a stand-in) initializes...
/// page.send(json!({"jsonrpc": "2.0", "id": 1, "method": "ui/initialize",
///     "params": {"protocolVersion": "2026-01-26", "appInfo": {"name": "face", "version": "1"}, "appCapabilities": {}}})).await;
/// let answer = page.recv().await.unwrap();
/// assert_eq!(answer["result"]["protocolVersion"], "2026-01-26");
/// page.send(json!({"jsonrpc": "2.0", "method": "ui/notifications/initialized"})).await;
///
/// // ... and receives the tool's input and result.
/// let result = bridge.call_tool(Default::default()).await?;
/// assert_eq!(page.recv().await.unwrap()["method"], "ui/notifications/tool-input");
/// assert_eq!(page.recv().await.unwrap()["params"]["content"][0]["text"], "12:00");
/// # let _ = result;
/// # Ok(()) }
/// ```
pub struct AppBridge {
    shared: Arc<Shared>,
    teardown_wait: Duration,
}

modelctx_types::__debug_shows!(AppBridge, |v| {
    view: &v.shared.view.uri(),
    phase: &v.shared.phase(),
    ..
});

impl AppBridge {
    /// A bridge for `view` on `client` (the connection to the view's own server).
    pub fn builder(client: Client, view: UiView) -> AppBridgeBuilder {
        let info = client.info().clone();
        AppBridgeBuilder {
            client,
            view,
            info,
            context: HostContext::default(),
            handlers: Handlers::default(),
            granted: UiPermissions::default(),
            origins: None,
            teardown_wait: Duration::from_secs(10),
            max_requests: 32,
        }
    }

    /// The view.
    pub fn view(&self) -> &UiView {
        &self.shared.view
    }

    /// The sandbox policy the host must render the view under.
    pub fn sandbox(&self) -> &SandboxPolicy {
        &self.shared.policy
    }

    /// Waits until the view has sent `ui/notifications/initialized`; an error once the
    /// channel is closed first.
    pub async fn initialized(&self) -> Result<(), BridgeError> {
        let mut phase = self.shared.phase.subscribe();
        let reached = phase.wait_for(|p| *p != Phase::Starting).await;
        match reached.as_deref() {
            Ok(Phase::Ready) => Ok(()),
            _ => Err(closed()),
        }
    }

    /// Whether the view is torn down or its channel closed.
    pub fn is_closed(&self) -> bool {
        self.shared.phase() == Phase::Closed
    }

    /// Sends tool arguments still being streamed (`ui/notifications/tool-input-partial`);
    /// refused once the complete input is sent.
    pub fn send_tool_input_partial(&self, arguments: JsonObject) -> Result<(), BridgeError> {
        let mut state = self.shared.state();
        if state.input_sent {
            return Err(order(
                "the complete tool input is sent: no partial input after it",
            ));
        }
        let message = notification(
            "ui/notifications/tool-input-partial",
            json!({"arguments": arguments}),
        );
        self.shared.send_after_initialized(&mut state, message)
    }

    /// Sends the complete tool arguments (`ui/notifications/tool-input`), once.
    pub fn send_tool_input(&self, arguments: JsonObject) -> Result<(), BridgeError> {
        let mut state = self.shared.state();
        if state.input_sent {
            return Err(order("the tool input is sent at most once"));
        }
        let message = notification(
            "ui/notifications/tool-input",
            json!({"arguments": arguments}),
        );
        self.shared.send_after_initialized(&mut state, message)?;
        state.input_sent = true;
        Ok(())
    }

    /// Sends the tool's result (`ui/notifications/tool-result`), once, after its input.
    pub fn send_tool_result(&self, result: &CallToolResult) -> Result<(), BridgeError> {
        self.finish("ui/notifications/tool-result", to_value(result), true)
    }

    /// Tells the view the tool call was cancelled (`ui/notifications/tool-cancelled`),
    /// instead of a result.
    pub fn send_tool_cancelled(&self, reason: impl Into<String>) -> Result<(), BridgeError> {
        self.finish(
            "ui/notifications/tool-cancelled",
            json!({"reason": reason.into()}),
            false,
        )
    }

    fn finish(&self, method: &str, params: Value, needs_input: bool) -> Result<(), BridgeError> {
        let mut state = self.shared.state();
        if state.finished {
            return Err(order(
                "the tool call already has its result or cancellation",
            ));
        }
        if needs_input && !state.input_sent {
            return Err(order("the tool input goes before its result"));
        }
        self.shared
            .send_after_initialized(&mut state, notification(method, params))?;
        state.finished = true;
        Ok(())
    }

    /// Runs the view's tool with `arguments`: sends them as the tool input, calls the
    /// tool on the server, and sends the result (or, when the call fails, a
    /// cancellation with the reason).
    pub async fn call_tool(&self, arguments: JsonObject) -> Result<CallToolResult, BridgeError> {
        let name = self.shared.view.tool().name.clone();
        self.send_tool_input(arguments.clone())?;
        let params = CallToolRequestParams::new(name.as_str()).with_arguments(arguments);
        match self
            .shared
            .client
            .call_tool_with(params, RequestOptions::default())
            .await
        {
            Ok(result) => {
                self.send_tool_result(&result)?;
                Ok(result)
            }
            Err(error) => {
                let reason = error.to_string();
                self.send_tool_cancelled(reason)?;
                Err(BridgeError::server(
                    format!("the tool {name} failed"),
                    error,
                ))
            }
        }
    }

    /// Changes the host context and tells the view the fields `change` sets
    /// (`ui/notifications/host-context-changed`). A display mode the view did not
    /// declare is refused.
    pub fn update_host_context(&self, change: HostContext) -> Result<(), BridgeError> {
        let mut state = self.shared.state();
        if let (Some(mode), Some(declared)) = (change.display_mode, &state.app_modes)
            && !declared.contains(&mode)
        {
            return Err(order("the view did not declare this display mode"));
        }
        state.context.merge(&change);
        let message = notification("ui/notifications/host-context-changed", to_value(&change));
        self.shared.send_after_initialized(&mut state, message)
    }

    /// The host context as the view knows it.
    pub fn host_context(&self) -> HostContext {
        self.shared.state().context.clone()
    }

    /// The view's display mode.
    pub fn display_mode(&self) -> DisplayMode {
        self.shared
            .state()
            .context
            .display_mode
            .unwrap_or(DisplayMode::Inline)
    }

    /// The last model context the view set and the host kept.
    pub fn model_context(&self) -> Option<ModelContext> {
        self.shared.state().model_context.clone()
    }

    /// The last size the view reported.
    pub fn view_size(&self) -> Option<ViewSize> {
        self.shared.state().size
    }

    /// Tears the view down: sends `ui/resource-teardown` with `reason` and waits for the
    /// view's answer (up to the builder's `teardown_wait`), then stops the bridge. A view
    /// that never initialized is stopped at once. The bridge is closed afterwards
    /// whatever the view answered.
    pub async fn teardown(&self, reason: impl Into<String>) -> Result<(), BridgeError> {
        let answer = {
            let mut state = self.shared.state();
            if self.shared.phase() != Phase::Ready {
                None
            } else {
                state.next_id += 1;
                let id = format!("host-{}", state.next_id);
                let (tx, rx) = oneshot::channel();
                state.pending.insert(id.clone(), tx);
                self.shared.send(json!({
                    "jsonrpc": "2.0", "id": id, "method": "ui/resource-teardown",
                    "params": {"reason": reason.into()},
                }));
                Some(rx)
            }
        };
        let outcome = match answer {
            None => Ok(()),
            Some(rx) => match tokio::time::timeout(self.teardown_wait, rx).await {
                Ok(Ok(Ok(_))) => Ok(()),
                Ok(Ok(Err(error))) => Err(BridgeError::new(
                    BridgeErrorKind::View,
                    format!("the view answered the teardown with an error: {error}"),
                )),
                Ok(Err(_)) => Err(closed()),
                Err(_) => Err(BridgeError::new(
                    BridgeErrorKind::Timeout,
                    "the view did not answer the teardown in time",
                )),
            },
        };
        self.shared.stop.notify_one();
        self.shared.close();
        outcome
    }
}

impl Drop for AppBridge {
    fn drop(&mut self) {
        self.shared.stop.notify_one();
    }
}

fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}
