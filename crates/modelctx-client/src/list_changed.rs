//! Reacting to `notifications/{tools,resources,prompts}/list_changed`: signal-only (the
//! application is told) or auto-refresh (the client re-fetches the whole list and hands
//! the fresh one over). A reaction is wired only for the kinds whose `listChanged` the
//! server advertised; notifications of other kinds are ignored.

use std::fmt;
use std::sync::{Arc, OnceLock};

use modelctx_session::{Peer, RequestOptions, SessionError};
use modelctx_types::{
    Cursor, ListPromptsRequest, ListResourcesRequest, ListToolsRequest, Meta,
    PaginatedRequestParams, Prompt, PromptListChangedNotification, RawValue, Resource,
    ResourceListChangedNotification, ServerCapabilities, Tool, ToolListChangedNotification,
};

use crate::features::PagedMethod;
use crate::{ClientBuilder, NotificationFn};

/// A kind of list the server can announce changes of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ListKind {
    /// `tools/list`.
    Tools,
    /// `resources/list`.
    Resources,
    /// `prompts/list`.
    Prompts,
}

impl ListKind {
    /// Every kind.
    pub const ALL: [ListKind; 3] = [Self::Tools, Self::Resources, Self::Prompts];

    /// The notification announcing a change of this kind.
    pub fn notification(self) -> &'static str {
        match self {
            Self::Tools => ToolListChangedNotification::METHOD,
            Self::Resources => ResourceListChangedNotification::METHOD,
            Self::Prompts => PromptListChangedNotification::METHOD,
        }
    }

    /// Whether the server advertised `listChanged: true` for this kind.
    pub fn advertised(self, caps: &ServerCapabilities) -> bool {
        let flag = match self {
            Self::Tools => caps.tools.as_ref().and_then(|c| c.list_changed),
            Self::Resources => caps.resources.as_ref().and_then(|c| c.list_changed),
            Self::Prompts => caps.prompts.as_ref().and_then(|c| c.list_changed),
        };
        flag == Some(true)
    }
}

/// A freshly fetched list, delivered in auto-refresh mode.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ListUpdate {
    /// Every tool.
    Tools(Vec<Tool>),
    /// Every resource.
    Resources(Vec<Resource>),
    /// Every prompt.
    Prompts(Vec<Prompt>),
}

type Signal = Arc<dyn Fn(ListKind) + Send + Sync>;
type Refreshed = Arc<dyn Fn(Result<ListUpdate, SessionError>) + Send + Sync>;

#[derive(Clone)]
enum Reaction {
    Signal(Signal),
    Refresh(Refreshed),
}

/// The reactions registered on a builder, installed at connect.
#[derive(Default)]
pub(crate) struct Reactions {
    reactions: Vec<(ListKind, Reaction)>,
}

impl fmt::Debug for Reactions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kinds: Vec<_> = self.reactions.iter().map(|(k, _)| k).collect();
        f.debug_struct("Reactions").field("kinds", &kinds).finish()
    }
}

/// Opens once the server's capabilities are known; until then (and for kinds it did
/// not advertise) the reactions stay silent.
#[derive(Debug, Clone, Default)]
pub(crate) struct Gate(Arc<OnceLock<(ServerCapabilities, Option<Meta>)>>);

impl Gate {
    /// Opens the gate with the server's capabilities and, in the stateless era, the
    /// envelope a refresh's requests carry.
    pub(crate) fn open(&self, caps: &ServerCapabilities, envelope: Option<&Meta>) {
        let _ = self.0.set((caps.clone(), envelope.cloned()));
    }

    fn allows(&self, kind: ListKind) -> bool {
        self.0.get().is_some_and(|(caps, _)| kind.advertised(caps))
    }

    fn envelope(&self) -> Option<Meta> {
        self.0.get().and_then(|(_, envelope)| envelope.clone())
    }
}

impl Reactions {
    /// Wires the reactions into the notification handlers (chaining any handler the
    /// application registered for the same notification) behind a gate.
    pub(crate) fn install(
        &mut self,
        notifications: &mut std::collections::HashMap<
            std::borrow::Cow<'static, str>,
            Arc<NotificationFn>,
        >,
    ) -> Gate {
        let gate = Gate::default();
        for (kind, reaction) in std::mem::take(&mut self.reactions) {
            let key = std::borrow::Cow::Borrowed(kind.notification());
            let previous = notifications.get(&key).cloned();
            let gate = gate.clone();
            let handler: Arc<NotificationFn> =
                Arc::new(move |params: Option<Box<RawValue>>, peer: Peer| {
                    let previous = previous.clone();
                    let reaction = reaction.clone();
                    let allowed = gate.allows(kind);
                    let envelope = gate.envelope();
                    Box::pin(async move {
                        if let Some(previous) = previous {
                            previous(params, peer.clone()).await;
                        }
                        if !allowed {
                            return;
                        }
                        match reaction {
                            Reaction::Signal(signal) => signal(kind),
                            Reaction::Refresh(refreshed) => {
                                refreshed(refresh(kind, &peer, envelope.as_ref()).await)
                            }
                        }
                    })
                });
            notifications.insert(key, handler);
        }
        gate
    }
}

/// Fetches the whole list of `kind`, following cursors opaquely; each request carries
/// `envelope` in the stateless era.
async fn refresh(
    kind: ListKind,
    peer: &Peer,
    envelope: Option<&Meta>,
) -> Result<ListUpdate, SessionError> {
    Ok(match kind {
        ListKind::Tools => ListUpdate::Tools(fetch_all::<ListToolsRequest>(peer, envelope).await?),
        ListKind::Resources => {
            ListUpdate::Resources(fetch_all::<ListResourcesRequest>(peer, envelope).await?)
        }
        ListKind::Prompts => {
            ListUpdate::Prompts(fetch_all::<ListPromptsRequest>(peer, envelope).await?)
        }
    })
}

async fn fetch_all<M: PagedMethod>(
    peer: &Peer,
    envelope: Option<&Meta>,
) -> Result<Vec<M::Item>, SessionError> {
    let mut items = Vec::new();
    let mut cursor: Option<Cursor> = None;
    loop {
        let mut options = RequestOptions::default();
        if let Some(envelope) = envelope {
            options = crate::stateless::with_envelope(options, envelope);
        }
        let page = peer
            .request_with::<M>(cursor.take().map(PaginatedRequestParams::after), options)
            .await?;
        let next = M::next_cursor(&page).cloned();
        items.extend(M::into_items(page));
        match next {
            Some(next) => cursor = Some(next),
            None => return Ok(items),
        }
    }
}

impl ClientBuilder {
    /// Signal-only: calls `callback` when the server announces that the `kind` list
    /// changed, without re-requesting anything. Active only if the server advertised
    /// `listChanged` for that kind.
    #[must_use]
    pub fn on_list_changed(
        mut self,
        kind: ListKind,
        callback: impl Fn(ListKind) + Send + Sync + 'static,
    ) -> Self {
        self.list_changed
            .reactions
            .push((kind, Reaction::Signal(Arc::new(callback))));
        self
    }

    /// Auto-refresh: when the server announces that the `kind` list changed, the client
    /// fetches the whole list again (every page) and passes it — or the error — to
    /// `callback`. Active only if the server advertised `listChanged` for that kind.
    #[must_use]
    pub fn on_list_refreshed(
        mut self,
        kind: ListKind,
        callback: impl Fn(Result<ListUpdate, SessionError>) + Send + Sync + 'static,
    ) -> Self {
        self.list_changed
            .reactions
            .push((kind, Reaction::Refresh(Arc::new(callback))));
        self
    }
}
