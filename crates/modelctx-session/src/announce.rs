//! The seam through which a server's change announcements reach other processes.
//!
//! A server tells its own sessions and `subscriptions/listen` streams when a list
//! changes or a resource is updated. When several processes serve one endpoint (behind
//! a load balancer), a change made in one of them must reach the clients of all of
//! them: give each server the same [`AnnouncementBus`] (modelctx-redis has one on Redis
//! pub/sub). Without one (the default) nothing is published and nothing is waited for.
//!
//! The server publishes what it raised itself: a list change once per debounce window
//! and kind (after the window, whatever number of changes it gathered), a resource
//! update at once. Every other process's server receives it and tells its own sessions
//! and listeners after its own debounce. A bus never hands a process its own
//! announcements back: they were delivered locally already.
//!
//! The items' home is modelctx-store, with the other seams a multi-process deployment
//! implements.
//!
//! The seam lives here, not in `modelctx-server`, because a backend crate implements it and
//! may not depend on the server role; the server's side is `registry::Announcer`.

pub use modelctx_store::{Announcement, AnnouncementBus, AnnouncementReceiver};
