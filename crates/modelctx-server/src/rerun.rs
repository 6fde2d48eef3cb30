//! Which requests of a shared session may run again in another process, when the one
//! running them stopped before answering (see [`SharedSession::on_rerun`]).
//!
//! [`SharedSession::on_rerun`]: modelctx_store::SharedSession::on_rerun
//!
//! Yes for a `tools/call` (not task-augmented) of a tool annotated `readOnlyHint` or
//! `idempotentHint`, and for the built-in reads and idempotent settings; no for a method
//! with an application handler, and for anything else.

use std::sync::Weak;

use modelctx_types::JsonRpcRequest;

use crate::inner::Inner;
use crate::registry::lookup;

/// Methods whose built-in answer only reads, or sets what is set again unchanged:
/// running one twice has no effect beyond running it once.
const REPEATABLE: &[&str] = &[
    "ping",
    "tools/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
    "tasks/get",
    "tasks/list",
    "tasks/result",
];

/// Whether `request` may run again: a `tools/call` (not task-augmented) of a tool whose
/// annotations say it is read-only or idempotent, or one of the [`REPEATABLE`] methods
/// answered by the server itself. A method with a handler of the application's is not
/// (nothing says what it does), nor is anything else.
pub(crate) fn may_rerun(server: &Weak<Inner>, request: &JsonRpcRequest) -> bool {
    let Some(server) = server.upgrade() else {
        return false;
    };
    let method = request.method.as_ref();
    if server.requests.contains_key(method) {
        return false;
    }
    if method != "tools/call" {
        return REPEATABLE.contains(&method);
    }
    #[derive(serde::Deserialize)]
    struct Call {
        name: String,
        task: Option<serde::de::IgnoredAny>,
    }
    let Some(call) = request
        .params
        .as_deref()
        .and_then(|p| serde_json::from_str::<Call>(p.get()).ok())
    else {
        return false;
    };
    if call.task.is_some() {
        return false;
    }
    lookup(&server.registry.tools, &call.name)
        .and_then(|tool| tool.tool.annotations.clone())
        .is_some_and(|a| a.read_only_hint == Some(true) || a.idempotent_hint == Some(true))
}
