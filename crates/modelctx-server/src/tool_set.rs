//! Registering several tools at once ([`ToolSet`]), and the support code the
//! `#[tool]`/`#[tools]` macros of `modelctx-macros` expand to.

use crate::tool::ToolDef;

/// Tools registered together by [`ServerBuilder::tools`](crate::ServerBuilder::tools):
/// one [`ToolDef`], a `Vec` or an array of them, or a type whose `impl` block carries
/// `#[modelctx::macros::tools]` (its `#[tool]` methods, sharing the value as `&self`).
pub trait ToolSet {
    /// The tools, in registration order.
    fn into_tool_defs(self) -> Vec<ToolDef>;
}

impl ToolSet for ToolDef {
    fn into_tool_defs(self) -> Vec<ToolDef> {
        vec![self]
    }
}

impl ToolSet for Vec<ToolDef> {
    fn into_tool_defs(self) -> Vec<ToolDef> {
        self
    }
}

impl<const N: usize> ToolSet for [ToolDef; N] {
    fn into_tool_defs(self) -> Vec<ToolDef> {
        self.into()
    }
}

/// What the macros of `modelctx-macros` expand to. Not a public API: its items may
/// change in any release.
#[doc(hidden)]
pub mod __private {
    use std::future::Future;
    use std::pin::Pin;

    pub use serde;

    /// The future of one tool call, checked to be `Send` here, spanned on the tool
    /// function, so that rustc's "future cannot be sent between threads safely" names
    /// the function and the value it holds across an `.await` (rather than failing
    /// deep inside `ToolDef::new`'s bounds). Boxed so that the handler's type is `Send`
    /// by its signature and the failure is reported once.
    pub fn tool_future_must_be_send<F>(
        future: F,
    ) -> Pin<Box<dyn Future<Output = F::Output> + Send + 'static>>
    where
        F: Future + Send + 'static,
    {
        Box::pin(future)
    }

    /// What a `#[tool]` function returns must be a tool's outcome: checked on the
    /// written return type, so that the error points there.
    pub fn tool_output_must_be_an_outcome<T: crate::IntoToolOutcome>() {}

    /// A `#[tools]` type is shared by every call, across threads.
    pub fn tools_type_must_be_send_and_sync<T: Send + Sync + 'static>() {}
}
