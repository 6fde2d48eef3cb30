//! Tools, prompts, resources and resource templates registered together: a type whose
//! `impl` block carries `#[primitives]` ([`Primitives`]), added to a server builder in
//! one call ([`RegisterPrimitives::primitives`]).

use crate::server::{RegistrationError, ServerBuilder};

/// Definitions registered together by [`RegisterPrimitives::primitives`]: implemented
/// by `#[primitives]` (feature `macros`) for a type whose `impl` block has `#[tool]`,
/// `#[prompt]`, `#[resource]` and `#[resource_template]` methods, which share the value
/// as `&self`.
///
/// ```
/// use modelctx::prelude::*;
///
/// struct Library {
///     motto: String,
/// }
///
/// #[primitives]
/// impl Library {
///     /// Says the library's motto.
///     #[tool(read_only)]
///     fn motto(&self) -> String {
///         self.motto.clone()
///     }
///
///     /// Asks for a summary of a topic.
///     #[prompt]
///     fn summarise(&self, topic: String) -> String {
///         format!("{}: summarise {topic}", self.motto)
///     }
///
///     /// The opening hours.
///     #[resource(uri = "library://hours", mime_type = "text/plain")]
///     fn hours(&self) -> &'static str {
///         "9 to 5"
///     }
///
///     /// One shelf.
///     #[resource_template(uri_template = "library://shelves/{number}")]
///     fn shelf(&self, number: u32) -> String {
///         format!("shelf {number}")
///     }
/// }
///
/// let library = Library { motto: "Read more".into() };
/// let server = Server::builder("library", "1.0.0").primitives(library)?.build();
/// assert!(server.capabilities().tools.is_some());
/// assert!(server.capabilities().prompts.is_some());
/// assert!(server.capabilities().resources.is_some());
/// # Ok::<(), RegistrationError>(())
/// ```
pub trait Primitives {
    /// Registers every definition on `builder`, refused at the first one its
    /// `ServerBuilder` method would refuse.
    fn add_to(self, builder: ServerBuilder) -> Result<ServerBuilder, RegistrationError>;
}

mod sealed {
    /// Only [`ServerBuilder`](crate::server::ServerBuilder) registers primitives this way.
    pub trait Sealed {}
    impl Sealed for crate::server::ServerBuilder {}
}

/// Registers [`Primitives`] on a [`ServerBuilder`] (in the [`prelude`](crate::prelude)).
pub trait RegisterPrimitives: sealed::Sealed + Sized {
    /// Registers every tool, prompt, resource and template of `primitives` (a
    /// `#[primitives]` value), as [`ServerBuilder::tool`], [`ServerBuilder::prompt`],
    /// [`ServerBuilder::resource`] and [`ServerBuilder::resource_template`] would.
    fn primitives(self, primitives: impl Primitives) -> Result<Self, RegistrationError>;
}

impl RegisterPrimitives for ServerBuilder {
    fn primitives(self, primitives: impl Primitives) -> Result<Self, RegistrationError> {
        primitives.add_to(self)
    }
}
