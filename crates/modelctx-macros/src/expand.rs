//! From a `#[tool]` function to the `ToolDef` expression that registers it.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{
    Attribute, Expr, FnArg, Ident, Lit, LitStr, Meta, Pat, ReturnType, Signature, Type,
    TypeReference,
};

/// The options of `#[tool(...)]`.
#[derive(Default)]
pub(crate) struct ToolOptions {
    name: Option<LitStr>,
    description: Option<LitStr>,
    title: Option<LitStr>,
}

impl ToolOptions {
    /// Parses `name = "..", description = "..", title = ".."` (all optional).
    pub(crate) fn parse(tokens: TokenStream) -> syn::Result<Self> {
        let mut options = Self::default();
        let parser = syn::meta::parser(|meta| {
            let slot = if meta.path.is_ident("name") {
                &mut options.name
            } else if meta.path.is_ident("description") {
                &mut options.description
            } else if meta.path.is_ident("title") {
                &mut options.title
            } else {
                return Err(meta
                    .error("unknown `#[tool]` option; expected `name`, `description` or `title`"));
            };
            if slot.is_some() {
                return Err(meta.error("this option is given twice"));
            }
            *slot = Some(meta.value()?.parse()?);
            Ok(())
        });
        syn::parse::Parser::parse2(parser, tokens)?;
        Ok(options)
    }

    /// The options of a `#[tool]` / `#[tool(...)]` attribute found on a method.
    pub(crate) fn from_attribute(attr: &Attribute) -> syn::Result<Self> {
        match &attr.meta {
            Meta::Path(_) => Ok(Self::default()),
            Meta::List(list) => Self::parse(list.tokens.clone()),
            Meta::NameValue(nv) => Err(syn::Error::new(
                nv.span(),
                "write `#[tool]` or `#[tool(name = \"...\")]`",
            )),
        }
    }
}

/// One parameter of a tool function, as the generated handler passes it.
enum Param {
    /// `&self`: the `#[tools]` value.
    Receiver,
    /// The request's `Context`, by value or by reference.
    Context { by_ref: bool },
    /// A field of the generated arguments struct.
    Field {
        ident: Ident,
        ty: Type,
        attrs: Vec<Attribute>,
    },
    /// `#[args]`: the whole arguments object, decoded into the parameter's own type.
    Whole { ty: Type },
}

/// A tool function, analysed.
pub(crate) struct ToolFn {
    fn_ident: Ident,
    params: Vec<Param>,
    /// Whether the function is `async` (else it is called inside the tool's future).
    is_async: bool,
    /// The written return type, checked to be a tool's outcome where it is written.
    output: Option<Type>,
    name: LitStr,
    description: Option<LitStr>,
    title: Option<LitStr>,
}

impl ToolFn {
    /// Reads a tool function's signature and docs. Attributes the generated struct
    /// takes over (`#[args]`, and `doc`, `serde`, `schemars` on parameters) are
    /// removed from `sig`, which is then emitted as the function the user wrote.
    pub(crate) fn analyse(
        sig: &mut Signature,
        attrs: &[Attribute],
        options: ToolOptions,
        in_tools_impl: bool,
    ) -> syn::Result<Self> {
        if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
            return Err(syn::Error::new(
                sig.generics.span(),
                "a `#[tool]` function cannot be generic: its argument types give its schema",
            ));
        }
        if let Some(variadic) = &sig.variadic {
            return Err(syn::Error::new(
                variadic.span(),
                "variadic tools do not exist",
            ));
        }
        let mut params = Vec::new();
        let mut seen_context = false;
        let mut whole = false;
        let mut fields = false;
        for input in sig.inputs.iter_mut() {
            match input {
                FnArg::Receiver(receiver) => {
                    if !in_tools_impl {
                        return Err(syn::Error::new(
                            receiver.span(),
                            "a `#[tool]` method needs `#[tools]` on its `impl` block",
                        ));
                    }
                    if receiver.reference.is_none() || receiver.mutability.is_some() {
                        return Err(syn::Error::new(
                            receiver.span(),
                            "a tool method takes `&self`: every call shares the value",
                        ));
                    }
                    params.push(Param::Receiver);
                }
                FnArg::Typed(typed) => {
                    let args_attr = take_attr(&mut typed.attrs, "args");
                    if let Some(by_ref) = context_type(&typed.ty) {
                        if args_attr.is_some() {
                            return Err(syn::Error::new(
                                typed.span(),
                                "`#[args]` marks the arguments struct, not the `Context`",
                            ));
                        }
                        if seen_context {
                            return Err(syn::Error::new(
                                typed.span(),
                                "a tool takes at most one `Context`",
                            ));
                        }
                        seen_context = true;
                        params.push(Param::Context { by_ref });
                        continue;
                    }
                    if let Type::Reference(reference) = &*typed.ty {
                        return Err(syn::Error::new(
                            reference.span(),
                            "tool arguments are taken by value (they are decoded from JSON); only the `Context` may be a reference",
                        ));
                    }
                    if args_attr.is_some() {
                        if whole || fields {
                            return Err(syn::Error::new(
                                typed.span(),
                                "an `#[args]` parameter is the tool's only argument (besides `&self` and the `Context`)",
                            ));
                        }
                        whole = true;
                        params.push(Param::Whole {
                            ty: (*typed.ty).clone(),
                        });
                        continue;
                    }
                    if whole {
                        return Err(syn::Error::new(
                            typed.span(),
                            "an `#[args]` parameter is the tool's only argument (besides `&self` and the `Context`)",
                        ));
                    }
                    let Pat::Ident(pat) = &*typed.pat else {
                        return Err(syn::Error::new(
                            typed.pat.span(),
                            "a tool parameter must be a plain name (it names the JSON argument); take a struct with `#[args]` to destructure",
                        ));
                    };
                    if pat.by_ref.is_some() || pat.subpat.is_some() {
                        return Err(syn::Error::new(
                            pat.span(),
                            "a tool parameter must be a plain name (it names the JSON argument)",
                        ));
                    }
                    fields = true;
                    let mut moved = Vec::new();
                    typed.attrs.retain(|attr| {
                        let path = attr.path();
                        if path.is_ident("doc")
                            || path.is_ident("serde")
                            || path.is_ident("schemars")
                        {
                            moved.push(attr.clone());
                            false
                        } else {
                            true
                        }
                    });
                    params.push(Param::Field {
                        ident: pat.ident.clone(),
                        ty: (*typed.ty).clone(),
                        attrs: moved,
                    });
                }
            }
        }
        if let ReturnType::Type(_, ty) = &sig.output
            && let Some(problem) = unfit_return(ty)
        {
            return Err(syn::Error::new(ty.span(), problem));
        }
        let name = options
            .name
            .unwrap_or_else(|| LitStr::new(&unraw(&sig.ident), sig.ident.span()));
        let description = options.description.or_else(|| doc_text(attrs));
        Ok(Self {
            fn_ident: sig.ident.clone(),
            params,
            is_async: sig.asyncness.is_some(),
            output: match &sig.output {
                ReturnType::Type(_, ty) if !matches!(**ty, Type::ImplTrait(_)) => {
                    Some((**ty).clone())
                }
                _ => None,
            },
            name,
            description,
            title: options.title,
        })
    }

    /// The expression building this tool's `ToolDef`. In a `#[tools]` impl, `__this`
    /// is the `Arc` of the value and the function is called as `Self::name`.
    pub(crate) fn tool_def(&self, in_tools_impl: bool) -> TokenStream {
        let krate = quote!(::modelctx::server);
        let fn_ident = &self.fn_ident;
        let span = fn_ident.span();
        let args = Ident::new("__args", Span::call_site());
        let cx = Ident::new("__cx", Span::call_site());
        let this = Ident::new("__this", Span::call_site());

        let mut arg_exprs = Vec::new();
        let mut struct_fields = Vec::new();
        let mut whole_ty = None;
        let uses_self = self.params.iter().any(|p| matches!(p, Param::Receiver));
        for param in &self.params {
            match param {
                Param::Receiver => arg_exprs.push(quote!(&*#this)),
                Param::Context { by_ref: true } => arg_exprs.push(quote!(&#cx)),
                Param::Context { by_ref: false } => arg_exprs.push(quote!(#cx)),
                Param::Field { ident, ty, attrs } => {
                    arg_exprs.push(quote!(#args.#ident));
                    struct_fields.push(quote!(#(#attrs)* #ident: #ty));
                }
                Param::Whole { ty } => {
                    arg_exprs.push(quote!(#args));
                    whole_ty = Some(ty.clone());
                }
            }
        }

        let callee = if in_tools_impl {
            quote!(Self::#fn_ident)
        } else {
            quote!(#fn_ident)
        };
        // Whatever the function returns is the call's outcome (`IntoToolOutcome`); a
        // sync function runs inside the tool's future, on the runtime's thread.
        let body = if self.is_async {
            quote!(#callee(#(#arg_exprs),*).await)
        } else {
            quote!(#callee(#(#arg_exprs),*))
        };
        let must_be_send = quote_spanned!(span=> #krate::__private::tool_future_must_be_send);

        let (struct_def, args_ty) = match whole_ty {
            Some(ty) => (quote!(), quote!(#ty)),
            None => {
                let struct_ident = format_ident!("{}Arguments", camel(&unraw(fn_ident)));
                let def = quote! {
                    #[derive(#krate::__private::serde::Deserialize, #krate::schemars::JsonSchema)]
                    #[serde(crate = "::modelctx::server::__private::serde")]
                    #[schemars(crate = "::modelctx::server::schemars")]
                    struct #struct_ident {
                        #(#struct_fields,)*
                    }
                };
                (def, quote!(#struct_ident))
            }
        };

        // Spanned on the function's name: a future that is not `Send` is reported at
        // the tool (rustc shows the `#[tool]` line), with the value held across an
        // `.await` pointed at in its body.
        let future = quote_spanned!(span=> async move { #body });
        let closure = if uses_self {
            quote_spanned! {span=> {
                let #this = ::std::sync::Arc::clone(&#this);
                move |#args: #args_ty, #cx: #krate::Context| {
                    let #this = ::std::sync::Arc::clone(&#this);
                    #must_be_send(#future)
                }
            }}
        } else {
            quote_spanned! {span=>
                |#args: #args_ty, #cx: #krate::Context| {
                    #must_be_send(#future)
                }
            }
        };
        let name = &self.name;
        let description = self
            .description
            .as_ref()
            .map(|d| quote!(let def = def.description(#d);));
        let title = self
            .title
            .as_ref()
            .map(|t| quote!(let def = def.title(#t);));
        // Spanned on the return type: one that is not a tool's outcome is reported
        // there, with what a tool may return.
        let output_check = self.output.as_ref().map(|ty| {
            quote_spanned! {ty.span()=> #krate::__private::tool_output_must_be_an_outcome::<#ty>();}
        });
        quote! {{
            #output_check
            #struct_def
            let def = #krate::ToolDef::new(#name, #closure);
            #description
            #title
            def
        }}
    }
}

/// Removes the attribute named `name` from `attrs`, returning it.
fn take_attr(attrs: &mut Vec<Attribute>, name: &str) -> Option<Attribute> {
    let index = attrs.iter().position(|a| a.path().is_ident(name))?;
    Some(attrs.remove(index))
}

/// Whether `ty` is the request context: `Context` or `&Context` under any path
/// (`Some(by_ref)`).
fn context_type(ty: &Type) -> Option<bool> {
    let (ty, by_ref) = match ty {
        Type::Reference(TypeReference {
            elem, mutability, ..
        }) if mutability.is_none() => (&**elem, true),
        other => (other, false),
    };
    match ty {
        Type::Path(path) if path.qself.is_none() => {
            let last = path.path.segments.last()?;
            (last.ident == "Context" && last.arguments.is_empty()).then_some(by_ref)
        }
        _ => None,
    }
}

/// Why a return type cannot be a tool's outcome, for the types that are a mistake
/// whatever they hold: a borrowed value other than `&'static str` (the outcome is
/// sent after the call).
fn unfit_return(ty: &Type) -> Option<&'static str> {
    match ty {
        Type::Reference(reference) => match &*reference.elem {
            Type::Path(path)
                if reference
                    .lifetime
                    .as_ref()
                    .is_some_and(|l| l.ident == "static")
                    && path.path.is_ident("str") =>
            {
                None
            }
            _ => Some(
                "a tool returns an owned value (it is sent after the call): `String` rather than `&str`, or `&'static str`",
            ),
        },
        Type::Group(group) => unfit_return(&group.elem),
        Type::Paren(paren) => unfit_return(&paren.elem),
        _ => None,
    }
}

/// The text of the `///` comments among `attrs`: one leading space of each line
/// dropped, lines joined, the whole trimmed; `None` when there is none.
fn doc_text(attrs: &[Attribute]) -> Option<LitStr> {
    let mut lines = Vec::new();
    let mut span = None;
    for attr in attrs {
        if let Meta::NameValue(nv) = &attr.meta
            && nv.path.is_ident("doc")
            && let Expr::Lit(lit) = &nv.value
            && let Lit::Str(text) = &lit.lit
        {
            span.get_or_insert(text.span());
            let line = text.value();
            lines.push(
                line.strip_prefix(' ')
                    .unwrap_or(&line)
                    .trim_end()
                    .to_owned(),
            );
        }
    }
    let text = lines.join("\n");
    let text = text.trim();
    (!text.is_empty()).then(|| LitStr::new(text, span.unwrap_or_else(Span::call_site)))
}

/// An identifier without its `r#` prefix.
fn unraw(ident: &Ident) -> String {
    let text = ident.to_string();
    text.strip_prefix("r#").map(str::to_owned).unwrap_or(text)
}

/// `snake_case` → `SnakeCase`.
fn camel(name: &str) -> String {
    name.split('_')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .map(|first| first.to_uppercase().chain(chars).collect::<String>())
                .unwrap_or_default()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_struct_names() {
        assert_eq!(camel("get_weather"), "GetWeather");
        assert_eq!(camel("add"), "Add");
        assert_eq!(camel("_x__y"), "XY");
    }

    #[test]
    fn doc_comments_become_the_description() {
        let item: syn::ItemFn = syn::parse_quote! {
            /// Adds two numbers.
            ///
            ///  Indented.
            async fn add() -> String { String::new() }
        };
        let text = doc_text(&item.attrs).map(|l| l.value());
        assert_eq!(text.as_deref(), Some("Adds two numbers.\n\n Indented."));
    }

    #[test]
    fn the_context_is_found_by_type() {
        let by_value: Type = syn::parse_quote!(modelctx::server::Context);
        let by_ref: Type = syn::parse_quote!(&Context);
        let other: Type = syn::parse_quote!(Contexts);
        assert_eq!(context_type(&by_value), Some(false));
        assert_eq!(context_type(&by_ref), Some(true));
        assert_eq!(context_type(&other), None);
    }
}
