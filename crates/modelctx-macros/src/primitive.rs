//! One macro function of any kind, read from its attribute's tokens: the dispatch the
//! free-function attributes and the `impl`-block attributes share.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::{Attribute, Ident, Signature};

use crate::options::{PromptOptions, ResourceOptions, TemplateOptions, ToolOptions};
use crate::params::Kind;
use crate::prompt::PromptFn;
use crate::resource::{ResourceFn, TemplateFn};
use crate::tool::ToolFn;

/// A tool, prompt, resource or resource template function, analysed.
pub(crate) enum Primitive {
    Tool(ToolFn),
    Prompt(PromptFn),
    Resource(ResourceFn),
    Template(TemplateFn),
}

impl Primitive {
    /// Reads a function carrying the attribute of `kind` with options `tokens`
    /// (`at` is where a missing required option is reported).
    pub(crate) fn analyse(
        kind: Kind,
        tokens: TokenStream,
        sig: &mut Signature,
        attrs: &[Attribute],
        in_impl: bool,
        at: Span,
    ) -> syn::Result<Self> {
        Ok(match kind {
            Kind::Tool => Self::Tool(ToolFn::analyse(
                sig,
                attrs,
                ToolOptions::parse(tokens)?,
                in_impl,
            )?),
            Kind::Prompt => Self::Prompt(PromptFn::analyse(
                sig,
                attrs,
                PromptOptions::parse(tokens)?,
                in_impl,
            )?),
            Kind::Resource => Self::Resource(ResourceFn::analyse(
                sig,
                attrs,
                ResourceOptions::parse(tokens, at)?,
                in_impl,
            )?),
            Kind::Template => Self::Template(TemplateFn::analyse(
                sig,
                attrs,
                TemplateOptions::parse(tokens, at)?,
                in_impl,
            )?),
        })
    }

    /// The expression building the definition.
    pub(crate) fn def(&self, in_impl: bool) -> TokenStream {
        match self {
            Self::Tool(f) => f.def(in_impl),
            Self::Prompt(f) => f.def(in_impl),
            Self::Resource(f) => f.def(in_impl),
            Self::Template(f) => f.def(in_impl),
        }
    }

    /// The definition's type, in `modelctx::server`.
    pub(crate) fn def_type(kind: Kind) -> TokenStream {
        match kind {
            Kind::Tool => quote!(::modelctx::server::ToolDef),
            Kind::Prompt => quote!(::modelctx::server::PromptDef),
            Kind::Resource => quote!(::modelctx::server::ResourceDef),
            Kind::Template => quote!(::modelctx::server::TemplateDef),
        }
    }

    /// The suffix of the function returning a free function's definition
    /// (`add_tool`, `review_prompt`, ...).
    pub(crate) fn suffix(kind: Kind) -> &'static str {
        match kind {
            Kind::Tool => "tool",
            Kind::Prompt => "prompt",
            Kind::Resource => "resource",
            Kind::Template => "template",
        }
    }

    /// The `ServerBuilder` method registering the definition.
    pub(crate) fn builder_method(&self) -> Ident {
        let name = match self {
            Self::Tool(_) => "tool",
            Self::Prompt(_) => "prompt",
            Self::Resource(_) => "resource",
            Self::Template(_) => "resource_template",
        };
        Ident::new(name, Span::call_site())
    }
}
