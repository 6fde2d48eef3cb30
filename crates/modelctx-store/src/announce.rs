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

use std::fmt;
use std::sync::Weak;

/// A change worth telling clients about.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Announcement {
    /// The tool list changed (`notifications/tools/list_changed`).
    ToolsListChanged,
    /// The resource or template list changed (`notifications/resources/list_changed`).
    ResourcesListChanged,
    /// The prompt list changed (`notifications/prompts/list_changed`).
    PromptsListChanged,
    /// The resource at this URI changed (`notifications/resources/updated`, to the
    /// sessions and listeners subscribed to it).
    ResourceUpdated(String),
}

/// Carries announcements between the processes that serve one endpoint.
///
/// Delivery is at most once: an announcement published while the bus is disconnected
/// may be lost (a bus should make up for lost list changes by delivering them again
/// when it reconnects: a spurious `list_changed` costs a client one list request).
pub trait AnnouncementBus: Send + Sync + fmt::Debug {
    /// Sends an announcement raised in this process to every other process on the bus.
    /// Must not block: called from synchronous code, sometimes under no runtime.
    fn publish(&self, announcement: Announcement);

    /// Hands `receiver` every announcement raised by other processes, until the
    /// receiver is dropped. [`AnnouncementReceiver::receive`] is called from within a
    /// tokio runtime.
    fn subscribe(&self, receiver: Weak<dyn AnnouncementReceiver>);
}

/// What a bus hands announcements of other processes to (a server implements it).
pub trait AnnouncementReceiver: Send + Sync {
    /// Tells this process's sessions and listeners about `announcement`. Must not block.
    fn receive(&self, announcement: Announcement);
}
