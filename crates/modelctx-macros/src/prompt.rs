//! `#[prompt]`: from a function to the `PromptDef` expression that registers it, its
//! parameters the prompt's arguments, with completions attached.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Attribute, Ident, LitStr, Path, Signature};

use crate::options::PromptOptions;
use crate::params::{Analysed, Kind, idents};
use crate::util::unraw;

/// A prompt function, analysed.
pub(crate) type PromptFn = Analysed<PromptOptions>;

impl PromptFn {
    /// Reads a prompt function's signature, docs and options; each completion must name
    /// one of its arguments.
    pub(crate) fn analyse(
        sig: &mut Signature,
        attrs: &[Attribute],
        options: PromptOptions,
        in_impl: bool,
    ) -> syn::Result<Self> {
        let prompt = Analysed::new(sig, attrs, Kind::Prompt, in_impl, options, |o| &o.common)?;
        if prompt.function.whole().is_none() {
            let names: Vec<String> = prompt.function.fields().map(|(i, _, _)| unraw(i)).collect();
            check_completed(&prompt.options.complete, &names, "argument", "prompt")?;
        }
        Ok(prompt)
    }

    /// The expression building this prompt's `PromptDef`.
    pub(crate) fn def(&self, in_impl: bool) -> TokenStream {
        let krate = quote!(::modelctx::server);
        let (args, cx, _) = idents();
        let (struct_def, args_ty) = self.function.args_struct("PromptArguments", |ty, attrs| {
            (quote!(#(#attrs)*), quote!(#ty))
        });
        let call = self.function.call(in_impl, |ident| quote!(#args.#ident));
        let body = quote!(::modelctx::__macros::PromptOutcome::into_prompt_outcome(#call));
        let closure = self
            .function
            .handler(quote!(#args: #args_ty, #cx: #krate::Context), body);
        let name = &self.name;
        let common = self.options.common.builder_calls(self.description.as_ref());
        let complete = completions(&self.options.complete);
        let output_check = self.function.output.as_ref().map(|ty| {
            quote_spanned! {ty.span()=> ::modelctx::__macros::prompt_output_must_be_an_outcome::<#ty>();}
        });
        quote! {{
            #output_check
            #struct_def
            let def = #krate::PromptDef::new(#name, #closure);
            #common
            #(#complete)*
            def
        }}
    }
}

/// Checks that each completion names one of `names` (the arguments or variables).
pub(crate) fn check_completed(
    complete: &[(Ident, Path)],
    names: &[String],
    what: &str,
    noun: &str,
) -> syn::Result<()> {
    for (ident, _) in complete {
        let name = unraw(ident);
        if !names.contains(&name) {
            let list = if names.is_empty() {
                format!("this {noun} has none")
            } else {
                format!("its {what}s are {}", names.join(", "))
            };
            return Err(syn::Error::new(
                ident.span(),
                format!(
                    "`{name}` is not {} {what} of this {noun} to complete: {list}",
                    article(what)
                ),
            ));
        }
    }
    Ok(())
}

fn article(word: &str) -> &'static str {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

/// `let def = def.complete("name", path);` for each completion, spanned on the path so
/// that a function of the wrong type is reported there.
pub(crate) fn completions(complete: &[(Ident, Path)]) -> Vec<TokenStream> {
    complete
        .iter()
        .map(|(ident, path)| {
            let name = LitStr::new(&unraw(ident), ident.span());
            quote_spanned!(path.span()=> let def = def.complete(#name, #path);)
        })
        .collect()
}
