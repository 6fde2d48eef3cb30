//! Client extensions (SEP-2133): an identifier with settings the client advertises, the
//! result types it claims (protocol 2026-07-28's `resultType` is extensible: a declared
//! extension may add values, and the client finishes a result of such a type with the
//! extension's resolver), and the vendor notifications it binds.
//!
//! At `connect`, `declare` builds two capability ads: the era's per-request one
//! (`clientCapabilities.extensions` in `_meta`: every extension with its settings) and the
//! handshake's `initialize` one, which leaves out every extension that claims a result
//! type, since no claim can activate there (2025 results have no `resultType`) and
//! advertising one would invite shapes the client then rejects. `Client::capabilities()` is
//! the ad of the negotiated era. A claimed type on `tools/call` goes to its resolver with
//! the whole answer, the extension's settings and a `Client` clone, and the resolver's
//! `CallToolResult` is what `call_tool` returns (validated as usual); a claimed type on
//! another method is an invalid result. The resolver gets a `Client` rather than a `Peer`
//! because follow-ups need the envelope and rounds like any request of the era, and a typed
//! `request::<M>` for vendor methods. Bindings are ordinary notification handlers: parsed
//! as their params type (a misfit is dropped) and run on the session's ordered notification
//! path, one at a time in arrival order.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use modelctx_session::{Peer, SessionError};
use modelctx_types::{CallToolResult, ClientCapabilities, JsonObject, NotificationMethod};
use serde_json::Value;

use crate::{Client, NotificationFn};

/// A resolver of claimed results: finishes a claimed answer into the call's result.
pub(crate) type ResolveFn =
    dyn Fn(Claimed) -> BoxFuture<'static, Result<CallToolResult, SessionError>> + Send + Sync;

/// An extension the client takes part in (SEP-2133), registered with
/// [`ClientBuilder::extension`](crate::ClientBuilder::extension).
///
/// - Its identifier and settings go into the capability ad: in protocol 2026-07-28 the
///   `extensions` of every request's `_meta` client capabilities; in a session of an
///   earlier revision the `initialize` capabilities — but only for an extension that
///   claims no result type, since no claim can activate there (results of that era have
///   no `resultType`), and advertising one would invite shapes the client rejects.
/// - [`claim`](Self::claim): a `tools/call` answered with a claimed `resultType` is
///   handed to the resolver, whose ordinary [`CallToolResult`] is what the call returns
///   ([`Client::call_tool`] and friends). A `resultType` neither core (`complete`,
///   `input_required`) nor claimed by a declared extension makes the answer invalid.
/// - [`bind`](Self::bind): a vendor server notification, decoded as the binding's
///   params type and handed to its handler.
///
/// ```
/// use modelctx_client::{Client, ClientExtension, NotificationBinding};
/// use modelctx_types::{CallToolResult, JsonObject};
///
/// let mut settings = JsonObject::new();
/// settings.insert("flavour".into(), "mint".into());
/// let tickets = ClientExtension::new("com.example/tickets")
///     .settings(settings)
///     .claim("com.example/ticket", |claimed| async move {
///         // Redeem the ticket with a follow-up request through `claimed.client`.
///         let _ticket = claimed.result["ticket"].clone();
///         Ok(CallToolResult::text("redeemed"))
///     });
/// let builder = Client::builder("demo", "1.0.0").extension(tickets);
/// # let _ = builder;
/// ```
pub struct ClientExtension {
    pub(crate) id: String,
    pub(crate) settings: JsonObject,
    pub(crate) claims: Vec<(String, Arc<ResolveFn>)>,
    pub(crate) bindings: Vec<NotificationBinding>,
}

impl fmt::Debug for ClientExtension {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientExtension")
            .field("id", &self.id)
            .field("settings", &self.settings)
            .field(
                "claims",
                &self.claims.iter().map(|(t, _)| t).collect::<Vec<_>>(),
            )
            .field("bindings", &self.bindings)
            .finish()
    }
}

/// A claimed answer handed to its extension's resolver.
#[derive(Debug)]
#[non_exhaustive]
pub struct Claimed {
    /// The answer's `resultType` (one the extension claimed).
    pub result_type: String,
    /// The whole answer, as the server sent it.
    pub result: Value,
    /// The settings the extension was declared with.
    pub settings: JsonObject,
    /// The client, for follow-up requests: they carry its envelope (capability ad
    /// included) like any other request of the client.
    pub client: Client,
}

impl ClientExtension {
    /// An extension with this identifier (`{vendor-prefix}/{name}`) and no settings.
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            settings: JsonObject::new(),
            claims: Vec::new(),
            bindings: Vec::new(),
        }
    }

    modelctx_types::__setters! {
        /// The settings advertised with the identifier (an empty object by default).
        settings(settings: JsonObject) { settings = settings }
    }

    /// Claims result type `result_type` for `tools/call` answers: such an answer is
    /// finished by `resolver`, which may send follow-up requests through
    /// [`Claimed::client`], and whose result the call returns. A later claim of the same
    /// type replaces an earlier one.
    #[must_use]
    pub fn claim<F, Fut>(mut self, result_type: impl Into<String>, resolver: F) -> Self
    where
        F: Fn(Claimed) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CallToolResult, SessionError>> + Send + 'static,
    {
        let resolver: Arc<ResolveFn> = Arc::new(move |claimed| Box::pin(resolver(claimed)));
        let result_type = result_type.into();
        self.claims.retain(|(t, _)| *t != result_type);
        self.claims.push((result_type, resolver));
        self
    }

    /// Binds a vendor server notification to a handler.
    #[must_use]
    pub fn bind(mut self, binding: NotificationBinding) -> Self {
        self.bindings.push(binding);
        self
    }

    /// The identifier.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether it claims any result type (and so stays out of a handshake-era ad).
    pub fn claims_results(&self) -> bool {
        !self.claims.is_empty()
    }
}

/// A vendor server notification bound to a handler by a [`ClientExtension`]: method
/// `N::METHOD`, params decoded as `N::Params` — a notification whose params do not
/// decode is dropped, never handed over — and the handler run like any notification
/// handler of the client: one at a time, in the order the notifications arrived.
pub struct NotificationBinding {
    pub(crate) method: Cow<'static, str>,
    pub(crate) handler: Arc<NotificationFn>,
}

modelctx_types::__debug_shows!(NotificationBinding, |v| { method: &v.method, .. });

impl NotificationBinding {
    /// Binds notification `N` to `handler`.
    pub fn new<N, F, Fut>(handler: F) -> Self
    where
        N: NotificationMethod,
        F: Fn(N::Params, Peer) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        // Validated against the binding's type: what does not decode is dropped.
        Self {
            method: Cow::Borrowed(N::METHOD),
            handler: modelctx_session::notification_fn::<N, _, _>(handler),
        }
    }

    /// The bound method.
    pub fn method(&self) -> &str {
        &self.method
    }
}

/// The claims of the declared extensions, by result type.
#[derive(Default)]
pub(crate) struct Claims(HashMap<String, (Arc<ResolveFn>, JsonObject)>);

impl fmt::Debug for Claims {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

impl Claims {
    /// The resolver of `result_type` and its extension's settings, if a declared
    /// extension claims it.
    pub(crate) fn get(&self, result_type: &str) -> Option<(Arc<ResolveFn>, JsonObject)> {
        self.0.get(result_type).cloned()
    }
}

/// What the declared extensions amount to: the capability ads of both eras, their
/// claims, and their bindings (installed as notification handlers).
pub(crate) struct Declared {
    /// The handshake era's `initialize` capabilities: claim-less extensions only.
    pub(crate) legacy: ClientCapabilities,
    /// The capabilities of 2026-07-28's per-request ad: every extension.
    pub(crate) modern: ClientCapabilities,
    pub(crate) claims: Claims,
}

/// Adds `extensions` to `capabilities` (each era its own way) and installs their
/// bindings among the client's notification handlers.
pub(crate) fn declare(
    capabilities: ClientCapabilities,
    extensions: Vec<ClientExtension>,
    notifications: &mut HashMap<Cow<'static, str>, Arc<NotificationFn>>,
) -> Declared {
    let mut legacy = capabilities.clone();
    let mut modern = capabilities;
    let mut claims = Claims::default();
    for extension in extensions {
        if extension.claims.is_empty() {
            legacy = legacy.with_extension(extension.id.clone(), extension.settings.clone());
        }
        modern = modern.with_extension(extension.id.clone(), extension.settings.clone());
        for (result_type, resolver) in extension.claims {
            claims
                .0
                .insert(result_type, (resolver, extension.settings.clone()));
        }
        for binding in extension.bindings {
            notifications.insert(binding.method, binding.handler);
        }
    }
    Declared {
        legacy,
        modern,
        claims,
    }
}
