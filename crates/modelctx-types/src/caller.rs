//! Who sends a message and what they may use, as a layer in front of a server decided:
//! values an authorization layer puts in a message's extensions (modelctx-transport's
//! `Extensions`) and the server reads. Not wire types: nothing here is serialized.

use std::fmt;
use std::sync::Arc;

/// The authenticated caller of a message, as a layer in front of the transport
/// identified it (`modelctx-oauth`'s resource server inserts one: the token's issuer
/// with its subject, or its client when it has no subject). State bound to a caller —
/// tasks — is bound to this. Never logged.
///
/// ```
/// use modelctx_types::Principal;
///
/// let alice = Principal::new("https://id.example|alice");
/// assert_eq!(alice.id(), "https://id.example|alice");
/// assert_eq!(format!("{alice:?}"), "Principal(..)");
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Principal(Arc<str>);

impl Principal {
    /// A caller known by `id`, unique across the identity providers the server trusts.
    pub fn new(id: impl Into<Arc<str>>) -> Self {
        Self(id.into())
    }

    /// The caller's id.
    pub fn id(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Principal(..)")
    }
}

/// Something a server offers that a caller may or may not be allowed to use: what
/// [`Permissions`] is asked about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Offering<'a> {
    /// The tool with this name (`tools/call`).
    Tool(&'a str),
    /// The resource with this URI (`resources/read`, `resources/subscribe`).
    Resource(&'a str),
    /// The resource template with this URI template.
    ResourceTemplate(&'a str),
    /// The prompt with this name (`prompts/get`).
    Prompt(&'a str),
}

/// What the caller of a message may use, as a layer in front of the transport decided
/// (`modelctx-oauth`'s resource server inserts one from the token's scopes when it is
/// configured to filter listings). A server that finds one in a request's extensions
/// leaves out of its listings (`tools/list`, `resources/list`,
/// `resources/templates/list`, `prompts/list`) whatever it does not allow; without one,
/// listings show everything. It only shapes listings: calls are refused (or not) by the
/// layer itself.
///
/// ```
/// use modelctx_types::{Offering, Permissions};
///
/// let permissions = Permissions::new(|offering| offering != Offering::Tool("admin"));
/// assert!(permissions.allows(Offering::Tool("add")));
/// assert!(!permissions.allows(Offering::Tool("admin")));
/// ```
#[derive(Clone)]
pub struct Permissions(Arc<dyn Fn(Offering<'_>) -> bool + Send + Sync>);

impl Permissions {
    /// Permissions that allow what `allows` says yes to.
    pub fn new(allows: impl Fn(Offering<'_>) -> bool + Send + Sync + 'static) -> Self {
        Self(Arc::new(allows))
    }

    /// Whether the caller may use `offering`.
    pub fn allows(&self, offering: Offering<'_>) -> bool {
        (self.0)(offering)
    }
}

impl fmt::Debug for Permissions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Permissions(..)")
    }
}
