//! What the processes of one modelctx deployment share: every trait a server run as
//! several processes (behind one load balancer, or across restarts) implements to
//! share its state, with the data those traits carry and an in-memory default where
//! one process needs one.
//!
//! | seam | used by | in-memory default |
//! |---|---|---|
//! | [`EventStore`]: the SSE events a `Last-Event-ID` replays | modelctx-http's server | [`InMemoryEventStore`] |
//! | [`SessionRegistry`]: 2025-era sessions served by any process, and relays between them | modelctx-http's server | — (a session stays with its process) |
//! | [`RunStore`]: requests running on shared sessions' streams, taken over when their process stops | modelctx-http's server, through [`EventStore::runs`] | — |
//! | [`TaskStore`]: tasks, their status and results | modelctx-session's task host | [`InMemoryTaskStore`] |
//! | [`AnnouncementBus`]: list changes and resource updates raised in one process | modelctx-server | — (nothing is published) |
//! | [`SharedSession`]: one 2025-era session's state, as the server role saves and restores it | modelctx-http's server, for modelctx-server | — |
//! | [`SingleUseIds`]: single-use rounds of multi round-trip requests | modelctx-server | [`InMemorySingleUseIds`] |
//! | [`SingleUseStore`]: `jti`s of OAuth assertions and DPoP proofs | modelctx-oauth | every `AuthorizationStore` (feature `authorization`) |
//! | `AuthorizationStore` (feature `authorization`): clients and grants | modelctx-oauth's authorization server | `InMemoryStore` |
//!
//! [`SessionSnapshot`] is what a registry records per session. The crates that use
//! these seams re-export them where their users look for them (`modelctx_http::EventStore`
//! is [`EventStore`]); this crate is their home, and the one a backend such as
//! `modelctx-redis` implements. It has no HTTP stack and no runtime.
//!
//! | feature | what |
//! |---|---|
//! | — | every seam but the authorization store |
//! | `authorization` | `AuthorizationStore`, `RegisteredClient`, `Grant`, `GrantKind`, `InMemoryStore` (sha2, base64) |
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]

mod announce;
#[cfg(feature = "authorization")]
mod authorization;
mod events;
mod registry;
mod runs;
mod shared;
mod single_use;
mod snapshot;
#[doc(hidden)]
pub mod table;
mod tasks;

pub use announce::{Announcement, AnnouncementBus, AnnouncementReceiver};
#[cfg(feature = "authorization")]
pub use authorization::{AuthorizationStore, Grant, GrantKind, InMemoryStore, RegisteredClient};
pub use events::{EventId, EventStore, InMemoryEventStore, InvalidEventId, Replay};
pub use registry::{Lookup, RegistryError, Relayed, RelayedKind, SessionRegistry, StreamHold};
pub use runs::{RunState, RunStore, TakenRun};
pub use shared::{ApplySnapshot, RerunCheck, SharedSession};
pub use single_use::{
    InMemorySingleUseIds, SingleUseError, SingleUseIds, SingleUseStore, StoreError,
};
pub use snapshot::SessionSnapshot;
pub use tasks::{
    InMemoryTaskStore, TaskOutcome, TaskOwner, TaskPage, TaskRecord, TaskStore, TaskUpdate,
    UpdateError, timestamp,
};
