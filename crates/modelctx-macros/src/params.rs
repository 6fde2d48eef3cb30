//! A macro function's signature, analysed: which parameter is `&self`, which the
//! `Context`, which the arguments (or template variables); and the closure that calls
//! the function from a definition's handler.
//!
//! Send: each call's future goes through `__private::tool_future_must_be_send`, spanned on
//! the function's name, and a `#[tools]` type through `tools_type_must_be_send_and_sync`,
//! spanned on the type, so rustc reports one readable error ("future cannot be sent between
//! threads safely", naming the value held across the `.await`) instead of one deep in
//! `ToolDef::new`'s bounds. The helper returns a boxed `dyn Future + Send`, so the handler
//! is `Send` by its signature and the failure is not reported twice, at one allocation per
//! call. Trap: `#[diagnostic::on_unimplemented]` does not help here: on a trait
//! blanket-implemented for `F: Future + Send`, rustc reports the failing `Send` obligation
//! with its own text, never the outer trait's message.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Attribute, FnArg, Ident, LitStr, Meta, Pat, ReturnType, Signature, Type};

use crate::options::CommonOptions;
use crate::util::{context_type, header_case, is_header_token, take_attr, unfit_return, unraw};

/// Which attribute a function carries.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Tool,
    Prompt,
    Resource,
    Template,
}

impl Kind {
    /// The attribute's name.
    pub(crate) fn attr(self) -> &'static str {
        match self {
            Self::Tool => "tool",
            Self::Prompt => "prompt",
            Self::Resource => "resource",
            Self::Template => "resource_template",
        }
    }

    /// What the function defines, in messages.
    pub(crate) fn noun(self) -> &'static str {
        match self {
            Self::Tool => "tool",
            Self::Prompt => "prompt",
            Self::Resource => "resource",
            Self::Template => "resource template",
        }
    }

    /// The attribute a kind is found by on a method.
    pub(crate) fn of(attr: &Attribute) -> Option<Self> {
        [Self::Tool, Self::Prompt, Self::Resource, Self::Template]
            .into_iter()
            .find(|kind| crate::util::is_attr(attr, kind.attr()))
    }
}

/// One parameter of a macro function, as the generated handler passes it.
pub(crate) enum Param {
    /// `&self`: the value of the `impl` block.
    Receiver,
    /// The request's `Context`, by value or by reference.
    Context { by_ref: bool },
    /// A field of the generated arguments (or variables) struct.
    Field {
        ident: Ident,
        ty: Type,
        attrs: Vec<Attribute>,
    },
    /// `#[args]`: the whole arguments object, decoded into the parameter's own type.
    Whole { ty: Type },
}

/// A macro function, analysed.
pub(crate) struct Function {
    pub(crate) ident: Ident,
    pub(crate) params: Vec<Param>,
    /// Whether the function is `async` (else it is called inside the handler's future).
    is_async: bool,
    /// The written return type, checked where it is written.
    pub(crate) output: Option<Type>,
}

/// A tool, prompt, resource or template function, analysed: its signature, its
/// attribute's options, and the definition's name and description.
pub(crate) struct Analysed<O> {
    pub(crate) function: Function,
    pub(crate) options: O,
    pub(crate) name: LitStr,
    pub(crate) description: Option<LitStr>,
}

impl<O> Analysed<O> {
    /// Reads `sig` as a function of `kind`; the name and description are the ones
    /// `common` picks from the options, else the function's own name and doc comment.
    pub(crate) fn new(
        sig: &mut Signature,
        attrs: &[Attribute],
        kind: Kind,
        in_impl: bool,
        options: O,
        common: impl FnOnce(&O) -> &CommonOptions,
    ) -> syn::Result<Self> {
        let function = Function::analyse(sig, kind, in_impl)?;
        let (name, description) = common(&options).name_and_description(&sig.ident, attrs);
        Ok(Self {
            function,
            options,
            name,
            description,
        })
    }
}

impl Function {
    /// Reads a function's signature. Attributes the generated struct takes over
    /// (`#[args]`, `#[header]`, and `doc`, `serde`, `schemars` on parameters) are
    /// removed from `sig`, which is then emitted as the function the user wrote.
    pub(crate) fn analyse(sig: &mut Signature, kind: Kind, in_impl: bool) -> syn::Result<Self> {
        let attr = kind.attr();
        let noun = kind.noun();
        if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
            return Err(syn::Error::new_spanned(
                &sig.generics,
                format!(
                    "a `#[{attr}]` function cannot be generic: its parameter types say what it accepts"
                ),
            ));
        }
        if let Some(variadic) = &sig.variadic {
            return Err(syn::Error::new(
                variadic.span(),
                "variadic functions cannot be registered",
            ));
        }
        let mut params = Vec::new();
        let mut seen_context = false;
        let mut whole = false;
        let mut fields = false;
        let mut headers: Vec<String> = Vec::new();
        for input in sig.inputs.iter_mut() {
            let typed = match input {
                FnArg::Receiver(receiver) => {
                    if !in_impl {
                        return Err(syn::Error::new_spanned(
                            &*receiver,
                            format!(
                                "a `#[{attr}]` method needs `#[primitives]` on its `impl` block (or `#[tools]`, for tools only)"
                            ),
                        ));
                    }
                    if receiver.reference.is_none() || receiver.mutability.is_some() {
                        return Err(syn::Error::new_spanned(
                            &*receiver,
                            format!(
                                "a {noun} method takes `&self`: every call shares the value (keep what changes behind a `Mutex` or an atomic)"
                            ),
                        ));
                    }
                    params.push(Param::Receiver);
                    continue;
                }
                FnArg::Typed(typed) => typed,
            };
            let args_attr = take_attr(&mut typed.attrs, "args");
            let header_attr = take_attr(&mut typed.attrs, "header");
            if let Some(by_ref) = context_type(&typed.ty) {
                if let Some(extra) = args_attr.as_ref().or(header_attr.as_ref()) {
                    return Err(syn::Error::new_spanned(
                        extra,
                        "the `Context` is not an argument: `#[args]` and `#[header]` do not apply to it",
                    ));
                }
                if seen_context {
                    return Err(syn::Error::new_spanned(
                        &*typed,
                        format!("a {noun} takes at most one `Context`"),
                    ));
                }
                seen_context = true;
                params.push(Param::Context { by_ref });
                continue;
            }
            if kind == Kind::Resource {
                return Err(syn::Error::new_spanned(
                    &*typed,
                    "a `#[resource]` has a fixed URI, so its function takes no arguments besides `&self` and the `Context`; for a URI with variables, use `#[resource_template(uri_template = \"...\")]` with one parameter per variable",
                ));
            }
            if let Type::Reference(reference) = &*typed.ty {
                return Err(syn::Error::new_spanned(
                    reference,
                    format!(
                        "{noun} arguments are taken by value (they are decoded from the request); only the `Context` may be a reference"
                    ),
                ));
            }
            if let Some(header) = &header_attr
                && kind != Kind::Tool
            {
                return Err(syn::Error::new_spanned(
                    header,
                    "`#[header]` mirrors a tool argument into an `Mcp-Param-*` header; it applies to `#[tool]` parameters only",
                ));
            }
            let only =
                "an `#[args]` parameter is the only argument (besides `&self` and the `Context`)";
            if let Some(args) = &args_attr {
                if kind == Kind::Template {
                    return Err(syn::Error::new_spanned(
                        args,
                        "a template's parameters are its URI variables, one parameter each: `#[args]` does not apply",
                    ));
                }
                if let Some(header) = &header_attr {
                    return Err(syn::Error::new_spanned(
                        header,
                        "`#[header]` marks one argument; on an `#[args]` struct, mark its field with `#[schemars(extend(\"x-mcp-header\" = \"Name\"))]`",
                    ));
                }
                if whole || fields {
                    return Err(syn::Error::new_spanned(&*typed, only));
                }
                whole = true;
                params.push(Param::Whole {
                    ty: (*typed.ty).clone(),
                });
                continue;
            }
            if whole {
                return Err(syn::Error::new_spanned(&*typed, only));
            }
            let Pat::Ident(pat) = &*typed.pat else {
                return Err(syn::Error::new_spanned(
                    &typed.pat,
                    format!(
                        "a {noun} parameter must be a plain name (it names the argument){}",
                        if kind == Kind::Template {
                            ""
                        } else {
                            "; take a struct with `#[args]` to destructure"
                        }
                    ),
                ));
            };
            if pat.by_ref.is_some() || pat.subpat.is_some() {
                return Err(syn::Error::new_spanned(
                    pat,
                    format!("a {noun} parameter must be a plain name (it names the argument)"),
                ));
            }
            fields = true;
            let mut moved = Vec::new();
            let mut misplaced = None;
            typed.attrs.retain(|attr| {
                let path = attr.path();
                if path.is_ident("doc") {
                    moved.push(attr.clone());
                    false
                } else if path.is_ident("serde") || path.is_ident("schemars") {
                    if kind == Kind::Template {
                        misplaced.get_or_insert(attr.clone());
                    }
                    moved.push(attr.clone());
                    false
                } else {
                    true
                }
            });
            if let Some(attr) = misplaced {
                return Err(syn::Error::new_spanned(
                    attr,
                    "a template variable is named by the URI template and parsed with `FromStr`: `#[serde]` and `#[schemars]` do not apply",
                ));
            }
            if let Some(header) = header_attr {
                let name = header_name(&header, &pat.ident)?;
                let lower = name.value().to_ascii_lowercase();
                if headers.contains(&lower) {
                    return Err(syn::Error::new_spanned(
                        &header,
                        format!(
                            "two arguments are mirrored into `Mcp-Param-{}`; give one another name: `#[header(\"Other\")]`",
                            name.value()
                        ),
                    ));
                }
                headers.push(lower);
                moved.push(syn::parse_quote!(#[schemars(extend("x-mcp-header" = #name))]));
            }
            params.push(Param::Field {
                ident: pat.ident.clone(),
                ty: (*typed.ty).clone(),
                attrs: moved,
            });
        }
        if let ReturnType::Type(_, ty) = &sig.output
            && let Some(problem) = unfit_return(ty, noun)
        {
            return Err(syn::Error::new_spanned(ty, problem));
        }
        Ok(Self {
            ident: sig.ident.clone(),
            params,
            is_async: sig.asyncness.is_some(),
            output: match &sig.output {
                ReturnType::Type(_, ty) if !matches!(**ty, Type::ImplTrait(_)) => {
                    Some((**ty).clone())
                }
                _ => None,
            },
        })
    }

    /// The argument fields: name, type and the attributes that go to the struct field.
    pub(crate) fn fields(&self) -> impl Iterator<Item = (&Ident, &Type, &[Attribute])> {
        self.params.iter().filter_map(|p| match p {
            Param::Field { ident, ty, attrs } => Some((ident, ty, attrs.as_slice())),
            _ => None,
        })
    }

    /// The type of an `#[args]` parameter, if there is one.
    pub(crate) fn whole(&self) -> Option<&Type> {
        self.params.iter().find_map(|p| match p {
            Param::Whole { ty } => Some(ty),
            _ => None,
        })
    }

    /// The struct the arguments are decoded into and its name: the `#[args]` type, or
    /// one generated from the fields (`fields` gives each field's type and attributes).
    pub(crate) fn args_struct(
        &self,
        suffix: &str,
        field: impl Fn(&Type, &[Attribute]) -> (TokenStream, TokenStream),
    ) -> (TokenStream, TokenStream) {
        if let Some(ty) = self.whole() {
            return (quote!(), quote!(#ty));
        }
        let ident = format_ident!("{}{suffix}", crate::util::camel(&unraw(&self.ident)));
        let fields = self.fields().map(|(name, ty, attrs)| {
            let (attrs, ty) = field(ty, attrs);
            quote!(#attrs #name: #ty)
        });
        let def = quote! {
            #[derive(::modelctx::server::__private::serde::Deserialize, ::modelctx::server::schemars::JsonSchema)]
            #[serde(crate = "::modelctx::server::__private::serde")]
            #[schemars(crate = "::modelctx::server::schemars")]
            struct #ident {
                #(#fields,)*
            }
        };
        (def, quote!(#ident))
    }

    /// The call of the function (awaited when `async`), each argument field passed as
    /// `field(name)`; in an `impl` block it is called as `Self::name` on `__this`.
    pub(crate) fn call(&self, in_impl: bool, field: impl Fn(&Ident) -> TokenStream) -> TokenStream {
        let (args, cx, this) = idents();
        let exprs = self.params.iter().map(|param| match param {
            Param::Receiver => quote!(&*#this),
            Param::Context { by_ref: true } => quote!(&#cx),
            Param::Context { by_ref: false } => quote!(#cx),
            Param::Field { ident, .. } => field(ident),
            Param::Whole { .. } => quote!(#args),
        });
        let ident = &self.ident;
        let callee = if in_impl {
            quote!(Self::#ident)
        } else {
            quote!(#ident)
        };
        if self.is_async {
            quote!(#callee(#(#exprs),*).await)
        } else {
            quote!(#callee(#(#exprs),*))
        }
    }

    /// The handler closure: takes `inputs` (`__args: T, __cx: Context`, or `__cx:
    /// Context`), and returns `body`'s future, checked to be `Send` and boxed. In an
    /// `impl` block it holds a clone of `__this`, the `Arc` of the value.
    pub(crate) fn handler(&self, inputs: TokenStream, body: TokenStream) -> TokenStream {
        let span = self.ident.span();
        let (_, _, this) = idents();
        let krate = quote!(::modelctx::server);
        let must_be_send = quote_spanned!(span=> #krate::__private::tool_future_must_be_send);
        // Spanned on the function's name: a future that is not `Send` is reported at
        // the function (rustc shows the attribute's line), with the value held across an
        // `.await` pointed at in its body.
        let future = quote_spanned!(span=> async move { #body });
        if self.params.iter().any(|p| matches!(p, Param::Receiver)) {
            quote_spanned! {span=> {
                let #this = ::std::sync::Arc::clone(&#this);
                move |#inputs| {
                    let #this = ::std::sync::Arc::clone(&#this);
                    #must_be_send(#future)
                }
            }}
        } else {
            quote_spanned! {span=>
                |#inputs| {
                    #must_be_send(#future)
                }
            }
        }
    }
}

/// The names the generated handler binds: the decoded arguments, the `Context`, and the
/// `Arc` of an `impl` block's value.
pub(crate) fn idents() -> (Ident, Ident, Ident) {
    (
        Ident::new("__args", Span::call_site()),
        Ident::new("__cx", Span::call_site()),
        Ident::new("__this", Span::call_site()),
    )
}

/// The header name part of `#[header]` (the parameter's name, `Header-Case`),
/// `#[header("Name")]` or `#[header = "Name"]`.
fn header_name(attr: &Attribute, param: &Ident) -> syn::Result<LitStr> {
    let wanted = "write `#[header]` (the header named after the parameter) or `#[header(\"Name\")]` for `Mcp-Param-Name`";
    let name = match &attr.meta {
        Meta::Path(_) => LitStr::new(&header_case(&unraw(param)), attr.span()),
        Meta::List(list) => list
            .parse_args::<LitStr>()
            .map_err(|e| syn::Error::new(e.span(), wanted))?,
        Meta::NameValue(nv) => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => s.clone(),
            other => return Err(syn::Error::new(other.span(), wanted)),
        },
    };
    if !is_header_token(&name.value()) {
        return Err(syn::Error::new(
            name.span(),
            format!(
                "{:?} cannot be part of a header name: use letters, digits and `-` (`Mcp-Param-{}`)",
                name.value(),
                header_case(&unraw(param))
            ),
        ));
    }
    Ok(name)
}
