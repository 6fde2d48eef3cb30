//! What the `#[prompt]`, `#[resource]` and `#[resource_template]` macros expand to: the
//! plain-or-`Result` answers of their functions, and a template variable parsed from the
//! URI. Not a public API: its items may change in any release.

use std::fmt::Display;
use std::str::FromStr;

use crate::server::{Blob, BoxError, IntoContents, IntoPromptResult};
use crate::types::{
    BlobResourceContents, ErrorData, GetPromptResult, PromptMessage, TextOrBlobResourceContents,
    TextResourceContents,
};

/// What a `#[prompt]` function may return: messages, one message, text (one user
/// message), a whole `GetPromptResult`, or a `Result` of one of them whose error
/// converts into a `BoxError` (an `ErrorData` is sent as is).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not something a prompt can return",
    label = "a prompt's function returns this",
    note = "return text (`String`, `&'static str`), a `PromptMessage`, a `Vec<PromptMessage>` or a `GetPromptResult`, or a `Result` of one of them whose error converts into a `BoxError` (an `ErrorData` fails the request with that error)"
)]
pub trait PromptOutcome: Send + 'static {
    /// The answer's type.
    type Value: IntoPromptResult;

    /// The answer, or the error that fails `prompts/get`.
    fn into_prompt_outcome(self) -> Result<Self::Value, BoxError>;
}

macro_rules! prompt_values {
    ($($ty:ty),* $(,)?) => {$(
        impl PromptOutcome for $ty {
            type Value = $ty;
            fn into_prompt_outcome(self) -> Result<$ty, BoxError> {
                Ok(self)
            }
        }
    )*};
}

prompt_values!(String, PromptMessage, Vec<PromptMessage>, GetPromptResult);

impl PromptOutcome for &'static str {
    type Value = String;
    fn into_prompt_outcome(self) -> Result<String, BoxError> {
        Ok(self.to_owned())
    }
}

impl<R: IntoPromptResult, E: Into<BoxError> + Send + 'static> PromptOutcome for Result<R, E> {
    type Value = R;
    fn into_prompt_outcome(self) -> Result<R, BoxError> {
        self.map_err(Into::into)
    }
}

/// What a `#[resource]` or `#[resource_template]` function may return: text, bytes
/// (`Blob`), contents spelled out, or a `Result` of one of them whose error converts
/// into a `BoxError` (an `ErrorData` is sent as is).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not something a resource can return",
    label = "a resource's function returns this",
    note = "return text (`String`, `&'static str`), bytes (`Blob`), `TextResourceContents`, `BlobResourceContents`, `TextOrBlobResourceContents` or a `Vec` of them, or a `Result` of one of them whose error converts into a `BoxError` (an `ErrorData` fails the read with that error)"
)]
pub trait ResourceOutcome: Send + 'static {
    /// The contents' type.
    type Value: IntoContents;

    /// The contents, or the error that fails `resources/read`.
    fn into_resource_outcome(self) -> Result<Self::Value, BoxError>;
}

macro_rules! resource_values {
    ($($ty:ty),* $(,)?) => {$(
        impl ResourceOutcome for $ty {
            type Value = $ty;
            fn into_resource_outcome(self) -> Result<$ty, BoxError> {
                Ok(self)
            }
        }
    )*};
}

resource_values!(
    String,
    &'static str,
    Blob,
    TextResourceContents,
    BlobResourceContents,
    TextOrBlobResourceContents,
    Vec<TextOrBlobResourceContents>,
);

impl<R: IntoContents, E: Into<BoxError> + Send + 'static> ResourceOutcome for Result<R, E> {
    type Value = R;
    fn into_resource_outcome(self) -> Result<R, BoxError> {
        self.map_err(Into::into)
    }
}

/// What a `#[prompt]` function returns must be a prompt's answer: checked on the
/// written return type, so that the error points there.
pub fn prompt_output_must_be_an_outcome<T: PromptOutcome>() {}

/// What a `#[resource]` or `#[resource_template]` function returns must be contents:
/// checked on the written return type, so that the error points there.
pub fn resource_output_must_be_contents<T: ResourceOutcome>() {}

/// A type a template variable is parsed into, from the text the URI matched.
#[diagnostic::on_unimplemented(
    message = "a template variable cannot be of type `{Self}`",
    label = "its value is parsed from the URI",
    note = "a template variable's type implements `FromStr` with an error that implements `Display` (`String`, numbers, `bool`, your own parsed type), or is an `Option` of one for a variable the URI may leave out"
)]
pub trait TemplateVariable: Sized {
    /// Parses the variable `name` from `text`.
    fn parse_variable(name: &str, text: String) -> Result<Self, BoxError>;
}

// Not recommended in errors: a type that is not `FromStr` gets the trait's own message,
// not the compiler's list of every `FromStr` type in the build (which varies with it).
#[diagnostic::do_not_recommend]
impl<T> TemplateVariable for T
where
    T: FromStr,
    T::Err: Display,
{
    fn parse_variable(name: &str, text: String) -> Result<Self, BoxError> {
        text.parse().map_err(|error: T::Err| {
            let ty = std::any::type_name::<T>();
            let ty = ty.rsplit("::").next().unwrap_or(ty);
            ErrorData::invalid_params(format!(
                "Invalid variable {name}: {text:?} is not a valid {ty}: {error}"
            ))
            .into()
        })
    }
}

/// The variable `name` of a `#[resource_template]`, parsed from the matched `text`.
pub fn template_variable<T: TemplateVariable>(name: &str, text: String) -> Result<T, BoxError> {
    T::parse_variable(name, text)
}
