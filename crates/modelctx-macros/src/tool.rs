//! `#[tool]`: from a function to the `ToolDef` expression that registers it, with its
//! annotations, icons, `_meta`, output schema, task support and mirrored headers.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Attribute, Signature};

use crate::options::ToolOptions;
use crate::params::{Analysed, Kind, idents};

/// A tool function, analysed.
pub(crate) type ToolFn = Analysed<ToolOptions>;

impl ToolFn {
    /// Reads a tool function's signature, docs and options.
    pub(crate) fn analyse(
        sig: &mut Signature,
        attrs: &[Attribute],
        options: ToolOptions,
        in_impl: bool,
    ) -> syn::Result<Self> {
        Analysed::new(sig, attrs, Kind::Tool, in_impl, options, |o| &o.common)
    }

    /// The expression building this tool's `ToolDef`. In an `impl` block, `__this` is
    /// the `Arc` of the value and the function is called as `Self::name`.
    pub(crate) fn def(&self, in_impl: bool) -> TokenStream {
        let krate = quote!(::modelctx::server);
        let (args, cx, _) = idents();
        let (struct_def, args_ty) = self
            .function
            .args_struct("Arguments", |ty, attrs| (quote!(#(#attrs)*), quote!(#ty)));
        let call = self.function.call(in_impl, |ident| quote!(#args.#ident));
        // Whatever the function returns is the call's outcome (`IntoToolOutcome`),
        // unless `output_schema` names the schema: then a wrapper says it.
        let (wrapper, body) = match &self.options.output_schema {
            Some(schema) => {
                let with_schema = quote_spanned! {schema.span()=>
                    fn output_schema() -> ::std::option::Option<::modelctx::types::JsonObject> {
                        ::std::option::Option::Some(#schema())
                    }
                };
                (
                    quote! {
                        struct __WithOutputSchema<T>(T);
                        impl<T: #krate::IntoToolOutcome> #krate::IntoToolOutcome for __WithOutputSchema<T> {
                            #with_schema
                            fn into_outcome(
                                self,
                                wrap: bool,
                            ) -> ::std::result::Result<::modelctx::types::CallToolResult, #krate::ToolError> {
                                self.0.into_outcome(wrap)
                            }
                        }
                    },
                    quote!(__WithOutputSchema(#call)),
                )
            }
            None => (quote!(), call),
        };
        let closure = self
            .function
            .handler(quote!(#args: #args_ty, #cx: #krate::Context), body);
        let name = &self.name;
        let common = self.options.common.builder_calls(self.description.as_ref());
        let annotations = self.annotations();
        let task_support = self.options.task_support.as_ref().map(
            |variant| quote!(let def = def.task_support(::modelctx::types::TaskSupport::#variant);),
        );
        // Spanned on the return type: one that is not a tool's outcome is reported
        // there, with what a tool may return.
        let output_check = self.function.output.as_ref().map(|ty| {
            quote_spanned! {ty.span()=> #krate::__private::tool_output_must_be_an_outcome::<#ty>();}
        });
        quote! {{
            #output_check
            #struct_def
            #wrapper
            let def = #krate::ToolDef::new(#name, #closure);
            #common
            #annotations
            #task_support
            def
        }}
    }

    /// `.annotations(..)` with the hints given, if any.
    fn annotations(&self) -> Option<TokenStream> {
        let options = &self.options;
        let hints: Vec<TokenStream> = [
            (&options.read_only, quote!(with_read_only_hint)),
            (&options.destructive, quote!(with_destructive_hint)),
            (&options.idempotent, quote!(with_idempotent_hint)),
            (&options.open_world, quote!(with_open_world_hint)),
        ]
        .into_iter()
        .filter_map(|(value, setter)| value.as_ref().map(|v| quote!(.#setter(#v))))
        .collect();
        (!hints.is_empty()).then(|| {
            quote!(let def = def.annotations(::modelctx::types::ToolAnnotations::new() #(#hints)*);)
        })
    }
}
