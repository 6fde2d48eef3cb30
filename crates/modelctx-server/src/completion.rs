//! Completion sources for prompt arguments and URI template variables.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use futures_core::future::BoxFuture;
use modelctx_types::{Completion, ErrorData};

use crate::error::{BoxError, into_error_data};
use crate::request::Context;

/// The most values one completion result may carry (the spec's bound).
pub const MAX_COMPLETION_VALUES: usize = 100;

pub(crate) type CompleteFn = dyn Fn(CompletionInput, Context) -> BoxFuture<'static, Result<Completion, ErrorData>>
    + Send
    + Sync;

/// What a completion source is asked: which argument, its partial value, and the values
/// of the other arguments the client already resolved (`context.arguments`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompletionInput {
    /// The argument (or template variable) being completed.
    pub argument: String,
    /// What the user typed so far.
    pub value: String,
    /// Values already chosen for other arguments.
    pub arguments: BTreeMap<String, String>,
}

impl CompletionInput {
    /// A completion request for `argument` with partial `value` and no context.
    pub fn new(argument: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            argument: argument.into(),
            value: value.into(),
            arguments: BTreeMap::new(),
        }
    }
}

/// What a completion source may return: candidate values (more than
/// [`MAX_COMPLETION_VALUES`] are cut, with `total` and `hasMore` set), or a
/// [`Completion`] spelled out (cut the same way).
pub trait IntoCompletion: Send + 'static {
    /// Converts into a completion.
    fn into_completion(self) -> Completion;
}

impl IntoCompletion for Vec<String> {
    fn into_completion(self) -> Completion {
        Completion::new(self)
    }
}

impl IntoCompletion for Vec<&'static str> {
    fn into_completion(self) -> Completion {
        Completion::new(self.into_iter().map(str::to_owned).collect())
    }
}

impl IntoCompletion for Completion {
    fn into_completion(self) -> Completion {
        self
    }
}

/// Bounds a completion to [`MAX_COMPLETION_VALUES`] values.
pub(crate) fn bounded(mut completion: Completion) -> Completion {
    let len = completion.values.len();
    if len > MAX_COMPLETION_VALUES {
        completion.values.truncate(MAX_COMPLETION_VALUES);
        completion.total = Some(completion.total.unwrap_or(len as u64).max(len as u64));
        completion.has_more = Some(true);
    }
    completion
}

pub(crate) fn completer<F, Fut, V, E>(f: F) -> Arc<CompleteFn>
where
    F: Fn(CompletionInput, Context) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<V, E>> + Send + 'static,
    V: IntoCompletion,
    E: Into<BoxError>,
{
    let f = Arc::new(f);
    Arc::new(move |input, cx| {
        let f = f.clone();
        Box::pin(async move {
            match f(input, cx).await {
                Ok(values) => Ok(bounded(values.into_completion())),
                Err(e) => Err(into_error_data(e.into(), "Completion failed")),
            }
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_than_a_hundred_values_are_cut() {
        let many: Vec<String> = (0..250).map(|i| i.to_string()).collect();
        let c = bounded(many.into_completion());
        assert_eq!(c.values.len(), 100);
        assert_eq!((c.total, c.has_more), (Some(250), Some(true)));
        let few = bounded(vec!["a"].into_completion());
        assert_eq!((few.values.len(), few.total, few.has_more), (1, None, None));
    }
}
