//! Resumability: SSE event ids and the store that replays missed events. Their home
//! is modelctx-store, with the other seams a multi-process deployment implements.

pub use modelctx_store::{EventId, EventStore, InMemoryEventStore, InvalidEventId, Replay};
