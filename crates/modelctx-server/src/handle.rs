//! Handles on what [`Server::add_tool`] (and `add_prompt`, `add_resource`,
//! `add_resource_template`) registered while the server runs: disable and enable it,
//! update or remove it. Each change that alters what clients can list is announced as
//! the kind's list change, as adding is (debounced, when `listChanged` was advertised).
//!
//! A disabled registration is left out of its list and answered as if unknown, and its
//! identifier stays taken until it is removed. A handle follows its registration: an
//! update that renames it moves the handle to the new identifier. Dropping a handle
//! leaves the registration as it is.

use crate::inner::Server;
use crate::prompt::{PromptDef, RegisteredPrompt};
use crate::registry::{Entry, RegistrationError};
use crate::resource::{RegisteredResource, RegisteredTemplate, ResourceDef, TemplateDef};
use crate::tool::{RegisteredTool, ToolDef};

macro_rules! handle {
    ($(#[$doc:meta])* $name:ident, $entry:ty, $def:ty, $id:literal) => {
        $(#[$doc])*
        #[derive(Clone)]
        pub struct $name {
            server: Server,
            id: String,
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($name)).field("id", &self.id).finish_non_exhaustive()
            }
        }

        impl $name {
            pub(crate) fn new(server: Server, id: String) -> Self {
                Self { server, id }
            }

            #[doc = concat!("The ", $id, " it handles.")]
            pub fn id(&self) -> &str {
                &self.id
            }

            /// Whether it is registered and enabled.
            pub fn is_enabled(&self) -> bool {
                self.server.inner.registry.state::<$entry>(&self.id) == Some(true)
            }

            /// Whether it is still registered (enabled or not).
            pub fn is_registered(&self) -> bool {
                self.server.inner.registry.state::<$entry>(&self.id).is_some()
            }

            /// Takes it out of its list and answers requests for it as if it were
            /// unknown, until [`enable`](Self::enable); returns whether it was enabled.
            pub fn disable(&self) -> bool {
                self.set_enabled(false)
            }

            /// Puts a disabled registration back; returns whether it was disabled.
            pub fn enable(&self) -> bool {
                self.set_enabled(true)
            }

            fn set_enabled(&self, enabled: bool) -> bool {
                let moved = self.server.inner.registry.set_enabled::<$entry>(&self.id, enabled);
                if moved {
                    self.server.inner.announcer.changed(<$entry as Entry>::LIST);
                }
                moved
            }

            /// Replaces the registration with `def`, enabled or disabled as it was; the
            /// handle follows it when `def` names it differently. Refused like a
            /// registration (an invalid definition, a name in use), or when it was
            /// removed.
            pub fn update(&mut self, def: $def) -> Result<(), RegistrationError> {
                let id = self.server.inner.registry.replace::<$entry>(&self.id, def)?;
                self.id = id;
                self.server.inner.announcer.changed(<$entry as Entry>::LIST);
                Ok(())
            }

            /// Removes the registration, enabled or not; returns whether it was still
            /// registered.
            pub fn remove(self) -> bool {
                let removed = self.server.inner.registry.discard::<$entry>(&self.id);
                if removed {
                    self.server.inner.announcer.changed(<$entry as Entry>::LIST);
                }
                removed
            }
        }
    };
}

handle!(
    /// A tool registered with [`Server::add_tool`]: disable, enable, update or remove
    /// it, each change announced as `notifications/tools/list_changed`. A disabled
    /// registration leaves its list and is answered as unknown; its identifier stays
    /// taken until it is removed. Dropping a handle leaves the registration as it is.
    ToolHandle,
    RegisteredTool,
    ToolDef,
    "name of the tool"
);
handle!(
    /// A prompt registered with [`Server::add_prompt`]: disable, enable, update or
    /// remove it, each change announced as `notifications/prompts/list_changed`.
    PromptHandle,
    RegisteredPrompt,
    PromptDef,
    "name of the prompt"
);
handle!(
    /// A fixed resource registered with [`Server::add_resource`]: disable, enable,
    /// update or remove it, each change announced as
    /// `notifications/resources/list_changed`.
    ResourceHandle,
    RegisteredResource,
    ResourceDef,
    "URI of the resource"
);
handle!(
    /// A resource template registered with [`Server::add_resource_template`], handled
    /// like a [`ResourceHandle`].
    TemplateHandle,
    RegisteredTemplate,
    TemplateDef,
    "URI template"
);
