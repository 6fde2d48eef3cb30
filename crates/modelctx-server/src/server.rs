//! The built server: its identity, capabilities, registries and handlers, shared by
//! every session it serves, and the changes to its registries while it runs.

use std::any::Any;
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use modelctx_session::tasks::TaskHost;
use modelctx_session::{Peer, SessionConfig};
use modelctx_types::{ErrorData, Implementation, RawValue, ServerCapabilities};

use crate::context::Context;
use crate::mrtr;
use crate::prompt::PromptDef;
use crate::registry::{Announcer, ListKind, RegistrationError, Registry};
use crate::resource::{ResourceDef, TemplateDef};
use crate::stateless;
use crate::tool::ToolDef;

pub(crate) type RequestFn = dyn Fn(Option<Box<RawValue>>, Context) -> BoxFuture<'static, Result<Box<RawValue>, ErrorData>>
    + Send
    + Sync;
pub(crate) type NotificationFn =
    dyn Fn(Option<Box<RawValue>>, Peer) -> BoxFuture<'static, ()> + Send + Sync;
pub(crate) type PeerErrorFn = dyn Fn(ErrorData, &Peer) + Send + Sync;

/// An MCP server: its identity, capabilities, registries and handlers. Cheap to clone;
/// serve it on as many transports as you like.
#[derive(Clone)]
pub struct Server {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) info: Implementation,
    /// `info`, encoded once: every result of the stateless era carries it in `_meta`.
    pub(crate) info_json: Arc<RawValue>,
    pub(crate) instructions: Option<String>,
    pub(crate) capabilities: ServerCapabilities,
    pub(crate) requests: HashMap<Cow<'static, str>, Arc<RequestFn>>,
    pub(crate) notifications: HashMap<Cow<'static, str>, Arc<NotificationFn>>,
    pub(crate) session: SessionConfig,
    pub(crate) registry: Registry,
    pub(crate) announcer: Arc<Announcer>,
    pub(crate) state: Option<Arc<dyn Any + Send + Sync>>,
    pub(crate) page_size: usize,
    /// Serves the stateless era (2026-07-28) beside the handshake era.
    pub(crate) stateless_era: bool,
    /// Seals the `requestState` of multi round-trip requests (the process's key unless
    /// given).
    pub(crate) state_key: Option<mrtr::StateKey>,
    /// Where the ids of single-use rounds are remembered, when rounds are single-use.
    pub(crate) single_use: Option<Arc<dyn modelctx_transport::SingleUseIds>>,
    /// The caching hints of cacheable results in the 2026-07-28 era.
    pub(crate) cache_hints: stateless::CacheHints,
    /// The envelopes of 2026-07-28 requests read so far, shared by requests that carry
    /// the same (see `stateless::envelope_cached`).
    pub(crate) envelopes: stateless::EnvelopeCache,
    /// Runs task-augmented requests (2025-11-25 tasks), when enabled.
    pub(crate) tasks: Option<Arc<TaskHost>>,
    /// Hears errors a client could not attribute to a request.
    pub(crate) on_peer_error: Option<Arc<PeerErrorFn>>,
    /// The bound on running handlers every session of this server shares.
    pub(crate) handler_limit: Option<modelctx_session::HandlerLimit>,
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut methods: Vec<_> = self.inner.requests.keys().collect();
        methods.sort();
        f.debug_struct("Server")
            .field("info", &self.inner.info)
            .field("capabilities", &self.inner.capabilities)
            .field("methods", &methods)
            .finish()
    }
}

impl Server {
    /// The server's name, version and title.
    pub fn info(&self) -> &Implementation {
        &self.inner.info
    }

    /// The capabilities the server advertises.
    pub fn capabilities(&self) -> &ServerCapabilities {
        &self.inner.capabilities
    }

    /// Adds a tool while the server runs; connected sessions are told (debounced
    /// `notifications/tools/list_changed`) when `tools.listChanged` was advertised.
    pub fn add_tool(&self, tool: ToolDef) -> Result<(), RegistrationError> {
        self.inner.registry.add_tool(tool)?;
        self.inner.announcer.changed(ListKind::Tools);
        Ok(())
    }

    /// Removes the tool called `name`; returns whether there was one (and then tells
    /// connected sessions, as [`Server::add_tool`] does).
    pub fn remove_tool(&self, name: &str) -> bool {
        let removed = self.inner.registry.remove_tool(name);
        if removed {
            self.inner.announcer.changed(ListKind::Tools);
        }
        removed
    }

    /// Adds a fixed resource while the server runs (announced like [`Server::add_tool`]).
    pub fn add_resource(&self, resource: ResourceDef) -> Result<(), RegistrationError> {
        self.inner.registry.add_resource(resource)?;
        self.inner.announcer.changed(ListKind::Resources);
        Ok(())
    }

    /// Removes the resource at `uri`; returns whether there was one.
    pub fn remove_resource(&self, uri: &str) -> bool {
        let removed = self.inner.registry.remove_resource(uri);
        if removed {
            self.inner.announcer.changed(ListKind::Resources);
        }
        removed
    }

    /// Adds a resource template while the server runs (announced as a resources change).
    pub fn add_resource_template(&self, template: TemplateDef) -> Result<(), RegistrationError> {
        self.inner.registry.add_template(template)?;
        self.inner.announcer.changed(ListKind::Resources);
        Ok(())
    }

    /// Removes the template `uri_template`; returns whether there was one.
    pub fn remove_resource_template(&self, uri_template: &str) -> bool {
        let removed = self.inner.registry.remove_template(uri_template);
        if removed {
            self.inner.announcer.changed(ListKind::Resources);
        }
        removed
    }

    /// Adds a prompt while the server runs (announced like [`Server::add_tool`]).
    pub fn add_prompt(&self, prompt: PromptDef) -> Result<(), RegistrationError> {
        self.inner.registry.add_prompt(prompt)?;
        self.inner.announcer.changed(ListKind::Prompts);
        Ok(())
    }

    /// Removes the prompt called `name`; returns whether there was one.
    pub fn remove_prompt(&self, name: &str) -> bool {
        let removed = self.inner.registry.remove_prompt(name);
        if removed {
            self.inner.announcer.changed(ListKind::Prompts);
        }
        removed
    }

    /// Marks the resource at `uri` changed: every session subscribed to it gets
    /// `notifications/resources/updated` (with [`ServerBuilder::announcements`], those
    /// of other processes too). Returns how many sessions and `subscriptions/listen`
    /// streams of this process were told.
    pub async fn notify_resource_updated(&self, uri: &str) -> usize {
        self.inner.announcer.resource_updated(uri).await
    }
}

impl Context {
    /// The server serving this request (to change its registries, announce resource
    /// updates, ...).
    pub fn server(&self) -> Server {
        let server: Arc<dyn Any + Send + Sync> = self.server.clone();
        let inner = Arc::downcast::<Inner>(server)
            .unwrap_or_else(|_| unreachable!("a context is made with its server's internals"));
        Server { inner }
    }
}
