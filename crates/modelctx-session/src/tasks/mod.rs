//! Tasks (protocol 2025-11-25, experimental): both sides of task-augmented requests,
//! shared by the server and client roles, since either may be the requestor or the
//! receiver.
//!
//! - The receiver (feature `tasks`): a `TaskHost` creates tasks in a [`TaskStore`] (the
//!   bounded [`InMemoryTaskStore`] here; a shared one for several processes implements
//!   the same trait), hands the work a `TaskRun` to report through, and answers
//!   `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel` for the requestor that
//!   owns the task ([`TaskOwner`]).
//! - The side channel: a request the work makes of its requestor (`TaskRun::ask`) is
//!   tagged with the task, waits in arrival order while no `tasks/result` is open, and
//!   travels on the next one; the task is `input_required` meanwhile. Cancelling the
//!   task drops what still waits.
//! - The requestor: [`start_task`] sends a request augmented with `task` and returns a
//!   [`TaskHandle`] to poll, await and cancel.
//!
//! The status machine is one function, `TaskUpdate::apply`, that every store calls, so no
//! store can allow an illegal transition (terminal is final; a cancelled task stays
//! cancelled whatever its work does later). The in-memory store is bounded: capacity,
//! expiry from `ttl`, the oldest terminal task evicted first, and `-32603` when it is full
//! of running tasks.
//!
//! Who reaches a task is [`TaskOwner`]'s rule, the same in every store: its principal when
//! it has one (a layer put it in the message's `Extensions`, as `modelctx-oauth` does),
//! else its session, else (unauthenticated stateless-era requests, sessions that are not
//! lasting ones: `Peer::is_sessionless`) only a requestor without either, through the
//! unguessable id. `tasks/list` never shows an ownerless task and an anonymous requestor
//! lists nothing; a task the requestor may not reach answers as an unknown id. The HTTP
//! endpoint says which of its sessions are not lasting ones in `TransportInfo`.

mod handle;
#[cfg(feature = "tasks")]
mod host;

pub use handle::{TaskHandle, start_task};
#[cfg(feature = "tasks")]
#[cfg_attr(docsrs, doc(cfg(feature = "tasks")))]
pub use host::{TASK_METHODS, TaskConfig, TaskHost, TaskRun};
// Their home is modelctx-store, with the other seams a multi-process deployment
// implements.
pub use modelctx_store::{
    InMemoryTaskStore, TaskOutcome, TaskOwner, TaskPage, TaskRecord, TaskStore, TaskUpdate,
    UpdateError, timestamp,
};
