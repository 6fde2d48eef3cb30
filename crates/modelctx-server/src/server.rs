//! What an application does with a [`Server`]: build it, serve sessions on transports,
//! and change its registries while it runs.

use std::sync::Arc;

use modelctx_session::SessionConfig;
use modelctx_transport::Transport;
use modelctx_types::{Implementation, ServerCapabilities, Tool};

use crate::builder::ServerBuilder;
use crate::handle::{PromptHandle, ResourceHandle, TemplateHandle, ToolHandle};
use crate::inner::{Server, WeakServer};
use crate::prompt::{PromptDef, RegisteredPrompt};
use crate::registry::{Entry, RegistrationError};
use crate::resource::{RegisteredResource, RegisteredTemplate, ResourceDef, TemplateDef};
use crate::service;
use crate::session::ServerSession;
use crate::tool::{RegisteredTool, ToolDef};

impl Server {
    /// Starts building a server with this name and version.
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ServerBuilder {
        ServerBuilder::new(name, version)
    }

    /// The server's name, version and title.
    pub fn info(&self) -> &Implementation {
        &self.inner.info
    }

    /// The capabilities the server advertises.
    pub fn capabilities(&self) -> &ServerCapabilities {
        &self.inner.capabilities
    }

    /// A handle on this server that does not keep it alive (see [`WeakServer`]).
    pub fn downgrade(&self) -> WeakServer {
        WeakServer {
            inner: Arc::downgrade(&self.inner),
        }
    }

    /// Serves one session over `transport`. Must be called within a tokio runtime.
    pub fn serve<T: Transport>(&self, transport: T) -> ServerSession {
        self.serve_with(transport, self.inner.session.clone())
    }

    /// Serves one session with explicit session settings. What the transport says of
    /// itself applies on top: a transport whose session starts initialised (stateless
    /// streamable HTTP) is served pre-initialised, and one that cannot carry requests
    /// to the peer is served without outbound requests.
    pub fn serve_with<T: Transport>(&self, transport: T, config: SessionConfig) -> ServerSession {
        service::start(&self.inner, transport, config)
    }

    /// Adds a tool while the server runs; connected sessions are told (debounced
    /// `notifications/tools/list_changed`) when `tools.listChanged` was advertised. The
    /// handle disables, enables, updates or removes it later, each change told the same
    /// way.
    pub fn add_tool(&self, tool: ToolDef) -> Result<ToolHandle, RegistrationError> {
        let id = self.add::<RegisteredTool>(tool)?;
        Ok(ToolHandle::new(self.clone(), id))
    }

    /// The definition of the tool called `name` as it is listed, if one is registered
    /// now.
    ///
    /// ```
    /// use modelctx_server::{NoArgs, Server, ToolDef};
    ///
    /// let hello = ToolDef::from_fn("hello", |_: NoArgs| async { "hello" }).description("Says hello.");
    /// let server = Server::builder("demo", "1.0.0").tool(hello)?.build();
    /// assert_eq!(server.tool("hello").unwrap().description.as_deref(), Some("Says hello."));
    /// assert!(server.tool("goodbye").is_none());
    /// # Ok::<(), modelctx_server::RegistrationError>(())
    /// ```
    pub fn tool(&self, name: &str) -> Option<Tool> {
        self.inner.registry.tool(name)
    }

    /// Removes the tool called `name`, enabled or not; returns whether there was one
    /// (and then tells connected sessions, as [`Server::add_tool`] does).
    pub fn remove_tool(&self, name: &str) -> bool {
        self.discard::<RegisteredTool>(name)
    }

    /// Adds a fixed resource while the server runs (announced like [`Server::add_tool`]).
    pub fn add_resource(&self, resource: ResourceDef) -> Result<ResourceHandle, RegistrationError> {
        let id = self.add::<RegisteredResource>(resource)?;
        Ok(ResourceHandle::new(self.clone(), id))
    }

    /// Removes the resource at `uri`, enabled or not; returns whether there was one.
    pub fn remove_resource(&self, uri: &str) -> bool {
        self.discard::<RegisteredResource>(uri)
    }

    /// Adds a resource template while the server runs (announced as a resources change).
    pub fn add_resource_template(
        &self,
        template: TemplateDef,
    ) -> Result<TemplateHandle, RegistrationError> {
        let id = self.add::<RegisteredTemplate>(template)?;
        Ok(TemplateHandle::new(self.clone(), id))
    }

    /// Removes the template `uri_template`, enabled or not; returns whether there was one.
    pub fn remove_resource_template(&self, uri_template: &str) -> bool {
        self.discard::<RegisteredTemplate>(uri_template)
    }

    /// Adds a prompt while the server runs (announced like [`Server::add_tool`]).
    pub fn add_prompt(&self, prompt: PromptDef) -> Result<PromptHandle, RegistrationError> {
        let id = self.add::<RegisteredPrompt>(prompt)?;
        Ok(PromptHandle::new(self.clone(), id))
    }

    /// Removes the prompt called `name`, enabled or not; returns whether there was one.
    pub fn remove_prompt(&self, name: &str) -> bool {
        self.discard::<RegisteredPrompt>(name)
    }

    /// Registers `def` and tells connected sessions its list changed; the id it got.
    fn add<E: Entry>(&self, def: E::Def) -> Result<String, RegistrationError> {
        let id = self.inner.registry.add::<E>(def)?;
        self.inner.announcer.changed(E::LIST);
        Ok(id)
    }

    fn discard<E: Entry>(&self, id: &str) -> bool {
        let removed = self.inner.registry.discard::<E>(id);
        if removed {
            self.inner.announcer.changed(E::LIST);
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

    /// Ends every open `subscriptions/listen` stream (protocol 2026-07-28) of this
    /// process, as at shutdown: each is answered with the empty result naming its
    /// subscription once the changes already sent on it, so its client knows the
    /// stream ended on purpose rather than broke. Returns how many were ended. Streams
    /// opened afterwards are served as usual.
    pub fn end_subscriptions(&self) -> usize {
        self.inner.announcer.end_listeners()
    }
}

impl WeakServer {
    /// The server, while a [`Server`] clone exists or a session it serves is running;
    /// `None` once neither is left.
    pub fn upgrade(&self) -> Option<Server> {
        self.inner.upgrade().map(|inner| Server { inner })
    }
}
