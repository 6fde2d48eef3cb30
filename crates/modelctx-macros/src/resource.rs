//! `#[resource]` and `#[resource_template]`: from a function to the `ResourceDef` or
//! `TemplateDef` expression that registers it; a template's variables checked against
//! its parameters and parsed with `FromStr`.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Attribute, LitStr, Signature};

use crate::options::{ResourceOptions, TemplateOptions};
use crate::params::{Analysed, Function, Kind, idents};
use crate::prompt::{check_completed, completions};
use crate::util::{option_inner, unraw};

/// A resource function, analysed.
pub(crate) type ResourceFn = Analysed<ResourceOptions>;

impl ResourceFn {
    /// Reads a resource function's signature, docs and options.
    pub(crate) fn analyse(
        sig: &mut Signature,
        attrs: &[Attribute],
        options: ResourceOptions,
        in_impl: bool,
    ) -> syn::Result<Self> {
        Analysed::new(sig, attrs, Kind::Resource, in_impl, options, |o| &o.common)
    }

    /// The expression building this resource's `ResourceDef`.
    pub(crate) fn def(&self, in_impl: bool) -> TokenStream {
        let krate = quote!(::modelctx::server);
        let (_, cx, _) = idents();
        let call = self.function.call(in_impl, |_| quote!());
        let body = quote!(::modelctx::__macros::ResourceOutcome::into_resource_outcome(#call));
        let closure = self.function.handler(quote!(#cx: #krate::Context), body);
        let name = &self.name;
        let uri = &self.options.uri;
        let common = self.options.common.builder_calls(self.description.as_ref());
        let mime_type = mime_type(self.options.mime_type.as_ref());
        let output_check = output_check(&self.function);
        quote! {{
            #output_check
            let def = #krate::ResourceDef::new(#uri, #name, #closure);
            #common
            #mime_type
            def
        }}
    }
}

/// A resource template function, analysed.
pub(crate) type TemplateFn = Analysed<TemplateOptions>;

impl TemplateFn {
    /// Reads a template function's signature, docs and options; its parameters (besides
    /// `&self` and the `Context`) must be the template's variables, one each.
    pub(crate) fn analyse(
        sig: &mut Signature,
        attrs: &[Attribute],
        options: TemplateOptions,
        in_impl: bool,
    ) -> syn::Result<Self> {
        let analysed = Analysed::new(sig, attrs, Kind::Template, in_impl, options, |o| &o.common)?;
        let (function, options) = (&analysed.function, &analysed.options);
        let template = options
            .uri_template
            .as_ref()
            .expect("checked by TemplateOptions::parse");
        let variables = variables(template)?;
        if variables.is_empty() {
            return Err(syn::Error::new(
                template.span(),
                "this URI template has no variables (`{name}`): a fixed URI is a `#[resource(uri = \"...\")]`",
            ));
        }
        let params: Vec<String> = function.fields().map(|(i, _, _)| unraw(i)).collect();
        for variable in &variables {
            if !params.contains(variable) {
                return Err(syn::Error::new(
                    template.span(),
                    format!(
                        "the URI template's variable `{variable}` has no parameter: add `{variable}: String` (or any type that implements `FromStr`) to the function"
                    ),
                ));
            }
        }
        for (ident, _, _) in function.fields() {
            if !variables.contains(&unraw(ident)) {
                return Err(syn::Error::new(
                    ident.span(),
                    format!(
                        "`{}` is not a variable of the URI template {:?} (its variables are {}): a template function takes one parameter per variable, besides `&self` and the `Context`",
                        unraw(ident),
                        template.value(),
                        variables.join(", ")
                    ),
                ));
            }
        }
        check_completed(&options.complete, &variables, "variable", "template")?;
        Ok(analysed)
    }

    /// The expression building this template's `TemplateDef`: the variables arrive as
    /// strings and are parsed into the parameters' types before the call.
    pub(crate) fn def(&self, in_impl: bool) -> TokenStream {
        let krate = quote!(::modelctx::server);
        let (args, cx, _) = idents();
        let (struct_def, vars_ty) = self.function.args_struct("Variables", |ty, attrs| {
            let text = if option_inner(ty).is_some() {
                quote!(::std::option::Option<::std::string::String>)
            } else {
                quote!(::std::string::String)
            };
            (quote!(#(#attrs)*), text)
        });
        // Bound under names of their own: a parameter named like the function would
        // shadow it.
        let local = |ident: &syn::Ident| format_ident!("__var_{}", unraw(ident));
        let parses = self.function.fields().map(|(ident, ty, _)| {
            let name = LitStr::new(&unraw(ident), ident.span());
            let var = local(ident);
            // Spanned on the type: one that cannot be parsed is reported there.
            match option_inner(ty) {
                Some(inner) => quote_spanned! {ty.span()=>
                    let #var: #ty = match #args.#ident {
                        ::std::option::Option::Some(text) => ::std::option::Option::Some(
                            ::modelctx::__macros::template_variable::<#inner>(#name, text)?,
                        ),
                        ::std::option::Option::None => ::std::option::Option::None,
                    };
                },
                None => quote_spanned! {ty.span()=>
                    let #var: #ty = ::modelctx::__macros::template_variable::<#ty>(#name, #args.#ident)?;
                },
            }
        });
        let call = self.function.call(in_impl, |ident| {
            let var = local(ident);
            quote!(#var)
        });
        let body = quote! {
            #(#parses)*
            ::modelctx::__macros::ResourceOutcome::into_resource_outcome(#call)
        };
        let closure = self
            .function
            .handler(quote!(#args: #vars_ty, #cx: #krate::Context), body);
        let name = &self.name;
        let template = &self.options.uri_template;
        let common = self.options.common.builder_calls(self.description.as_ref());
        let mime_type = mime_type(self.options.mime_type.as_ref());
        let complete = completions(&self.options.complete);
        // Spanned on the path, so that a function of the wrong shape is reported there.
        let list = self
            .options
            .list
            .as_ref()
            .map(|path| quote_spanned!(path.span()=> let def = def.list(#path);));
        let output_check = output_check(&self.function);
        quote! {{
            #output_check
            #struct_def
            let def = #krate::TemplateDef::new(#template, #name, #closure);
            #common
            #mime_type
            #(#complete)*
            #list
            def
        }}
    }
}

/// The builder call setting the MIME type, when the options give one.
fn mime_type(mime_type: Option<&LitStr>) -> Option<TokenStream> {
    mime_type.map(|m| quote!(let def = def.mime_type(#m);))
}

/// The check that a resource function returns contents, spanned on its return type.
fn output_check(function: &Function) -> Option<TokenStream> {
    function.output.as_ref().map(|ty| {
        quote_spanned! {ty.span()=> ::modelctx::__macros::resource_output_must_be_contents::<#ty>();}
    })
}

/// The names of an RFC 6570 template's variables, in order, each once: the names in
/// its `{...}` expressions, without operator, prefix (`:3`) or explode (`*`).
fn variables(template: &LitStr) -> syn::Result<Vec<String>> {
    let text = template.value();
    let mut names = Vec::new();
    let mut rest = text.as_str();
    while let Some(open) = rest.find(['{', '}']) {
        if rest[open..].starts_with('}') {
            return Err(syn::Error::new(
                template.span(),
                "this URI template has a `}` without its `{`",
            ));
        }
        let Some(close) = rest[open..].find('}') else {
            return Err(syn::Error::new(
                template.span(),
                "this URI template has a `{` without its `}`",
            ));
        };
        let expression = &rest[open + 1..open + close];
        let expression = expression.trim_start_matches(['+', '#', '.', '/', ';', '?', '&']);
        for spec in expression.split(',') {
            let name = spec
                .split(':')
                .next()
                .unwrap_or_default()
                .trim_end_matches('*');
            if syn::parse_str::<syn::Ident>(name).is_err() || name.starts_with("r#") {
                return Err(syn::Error::new(
                    template.span(),
                    format!(
                        "the URI template's variable {name:?} cannot name a parameter: use a Rust identifier (`user_id`)"
                    ),
                ));
            }
            if !names.iter().any(|n| n == name) {
                names.push(name.to_owned());
            }
        }
        rest = &rest[open + close + 1..];
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(text: &str) -> Result<Vec<String>, String> {
        variables(&LitStr::new(text, proc_macro2::Span::call_site())).map_err(|e| e.to_string())
    }

    #[test]
    fn template_variables_are_read() {
        assert_eq!(vars("users://{id}/profile").unwrap(), ["id"]);
        assert_eq!(
            vars("search://{+base}{/path*}{?q,limit:3}").unwrap(),
            ["base", "path", "q", "limit"]
        );
        assert_eq!(vars("a://{x}/{x}").unwrap(), ["x"]);
        assert!(vars("a://{x").unwrap_err().contains("without its `}`"));
        assert!(vars("a://x}").unwrap_err().contains("without its `{`"));
        assert!(vars("a://{user.id}").unwrap_err().contains("identifier"));
    }
}
