//! Small syntax helpers shared by every attribute: attributes taken off a parameter,
//! the `Context` found by its type, doc comments read as text, names rewritten.

use proc_macro2::Span;
use syn::{
    Attribute, Expr, GenericArgument, Ident, Lit, LitStr, Meta, PathArguments, Type, TypeReference,
};

/// Removes the attribute named `name` from `attrs`, returning it.
pub(crate) fn take_attr(attrs: &mut Vec<Attribute>, name: &str) -> Option<Attribute> {
    let index = attrs.iter().position(|a| a.path().is_ident(name))?;
    Some(attrs.remove(index))
}

/// Whether the attribute's path ends in `name` (`#[tool]`, `#[modelctx::macros::tool]`).
pub(crate) fn is_attr(attr: &Attribute, name: &str) -> bool {
    attr.path()
        .segments
        .last()
        .is_some_and(|segment| segment.ident == name)
}

/// Whether `ty` is the request context: `Context` or `&Context` under any path
/// (`Some(by_ref)`).
pub(crate) fn context_type(ty: &Type) -> Option<bool> {
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

/// `T` when `ty` is written `Option<T>` (under any path).
pub(crate) fn option_inner(ty: &Type) -> Option<&Type> {
    let Type::Path(path) = ty else { return None };
    let last = path.path.segments.last()?;
    if last.ident != "Option" {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    match args.args.first() {
        Some(GenericArgument::Type(inner)) if args.args.len() == 1 => Some(inner),
        _ => None,
    }
}

/// Why a return type cannot be what the function answers with, for the types that are a
/// mistake whatever they hold: a borrowed value other than `&'static str` (the answer
/// is sent after the call).
pub(crate) fn unfit_return(ty: &Type, noun: &str) -> Option<String> {
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
            _ => Some(format!(
                "a {noun} returns an owned value (it is sent after the call): `String` rather than `&str`, or `&'static str`"
            )),
        },
        Type::Group(group) => unfit_return(&group.elem, noun),
        Type::Paren(paren) => unfit_return(&paren.elem, noun),
        _ => None,
    }
}

/// The text of the `///` comments among `attrs`: one leading space of each line
/// dropped, lines joined, the whole trimmed; `None` when there is none.
pub(crate) fn doc_text(attrs: &[Attribute]) -> Option<LitStr> {
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
pub(crate) fn unraw(ident: &Ident) -> String {
    let text = ident.to_string();
    text.strip_prefix("r#").map(str::to_owned).unwrap_or(text)
}

/// `snake_case` → `SnakeCase`.
pub(crate) fn camel(name: &str) -> String {
    capitalised_words(name).collect()
}

/// `snake_case` → `Snake-Case`: a parameter's name as the `Mcp-Param-*` header part
/// (a hyphen where the name has an underscore, which some proxies drop from headers).
pub(crate) fn header_case(name: &str) -> String {
    capitalised_words(name).collect::<Vec<_>>().join("-")
}

fn capitalised_words(name: &str) -> impl Iterator<Item = String> + '_ {
    name.split('_').filter(|part| !part.is_empty()).map(|part| {
        let mut chars = part.chars();
        chars
            .next()
            .map(|first| first.to_uppercase().chain(chars).collect::<String>())
            .unwrap_or_default()
    })
}

/// Whether `name` is an HTTP header token (what an `Mcp-Param-*` name part must be).
pub(crate) fn is_header_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_struct_and_header_names() {
        assert_eq!(camel("get_weather"), "GetWeather");
        assert_eq!(camel("add"), "Add");
        assert_eq!(camel("_x__y"), "XY");
        assert_eq!(header_case("region"), "Region");
        assert_eq!(header_case("user_id"), "User-Id");
        assert!(is_header_token("User-Id"));
        assert!(!is_header_token("a b"));
        assert!(!is_header_token(""));
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

    #[test]
    fn options_are_unwrapped() {
        let ty: Type = syn::parse_quote!(std::option::Option<u32>);
        let inner = option_inner(&ty).map(|t| quote::quote!(#t).to_string());
        assert_eq!(inner.as_deref(), Some("u32"));
        let ty: Type = syn::parse_quote!(Vec<u32>);
        assert!(option_inner(&ty).is_none());
    }
}
