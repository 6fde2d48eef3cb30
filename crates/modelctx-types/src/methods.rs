//! The marker type of each method of the protocol: the `M` of [`Request<M>`] and
//! [`Notification<M>`].
//!
//! A marker is never built; it implements [`RequestMethod`] or
//! [`NotificationMethod`], which name the method, its parameters and (for a request)
//! its result. The schema's names are aliases over them
//! ([`ListPromptsRequest`](crate::ListPromptsRequest) is
//! `Request<ListPrompts>`), so code can name either.
//!
//! [`Request<M>`]: crate::Request
//! [`Notification<M>`]: crate::Notification
//! [`RequestMethod`]: crate::RequestMethod
//! [`NotificationMethod`]: crate::NotificationMethod

pub use crate::completion::Complete;
pub use crate::elicitation::{Elicit, ElicitationComplete};
pub use crate::lifecycle::{Initialize, Initialized, Ping};
pub use crate::logging::{LoggingMessage, SetLevel};
pub use crate::notifications::{Cancelled, Progress};
pub use crate::prompts::{GetPrompt, ListPrompts, PromptListChanged};
pub use crate::resources::{
    ListResourceTemplates, ListResources, ReadResource, ResourceListChanged, ResourceUpdated,
    Subscribe, Unsubscribe,
};
pub use crate::roots::{ListRoots, RootsListChanged};
pub use crate::sampling::CreateMessage;
pub use crate::tasks::{CancelTask, GetTask, GetTaskPayload, ListTasks, TaskStatusChanged};
pub use crate::tools::{CallTool, ListTools, ToolListChanged};
