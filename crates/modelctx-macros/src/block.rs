//! `#[tools]` and `#[primitives]` on an `impl` block: its marked methods registered
//! together, sharing the value as `&self`.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{ImplItem, ItemImpl};

use crate::options::attribute_tokens;
use crate::params::Kind;
use crate::primitive::Primitive;

/// `#[tools]`: implements `ToolSet` with the block's `#[tool]` methods.
pub(crate) fn expand_tools(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let (block, found) = collect(attr, item, "tools")?;
    if let Some((kind, attr)) = found.iter().find(|(p, _)| !matches!(p, Primitive::Tool(_))) {
        let kind = match kind {
            Primitive::Prompt(_) => "prompt",
            Primitive::Resource(_) => "resource",
            _ => "resource_template",
        };
        return Err(syn::Error::new_spanned(
            attr,
            format!(
                "`#[tools]` registers tools only: for a `#[{kind}]` method, write `#[primitives]` on the `impl` block and register it with `ServerBuilder::primitives(value)`"
            ),
        ));
    }
    let self_ty = &block.self_ty;
    let defs = found.iter().map(|(p, _)| p.def(true));
    let shared = shared_check(self_ty);
    Ok(quote! {
        #block

        impl ::modelctx::server::ToolSet for #self_ty {
            fn into_tool_defs(self) -> ::std::vec::Vec<::modelctx::server::ToolDef> {
                #shared
                let __this = ::std::sync::Arc::new(self);
                ::std::vec![#(#defs),*]
            }
        }
    })
}

/// `#[primitives]`: implements `modelctx::Primitives` with the block's `#[tool]`,
/// `#[prompt]`, `#[resource]` and `#[resource_template]` methods.
pub(crate) fn expand_primitives(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let (block, found) = collect(attr, item, "primitives")?;
    let self_ty = &block.self_ty;
    let registrations = found.iter().map(|(p, _)| {
        let method = p.builder_method();
        let def = p.def(true);
        quote!(let builder = builder.#method(#def)?;)
    });
    let shared = shared_check(self_ty);
    Ok(quote! {
        #block

        impl ::modelctx::Primitives for #self_ty {
            fn add_to(
                self,
                builder: ::modelctx::server::ServerBuilder,
            ) -> ::std::result::Result<::modelctx::server::ServerBuilder, ::modelctx::server::RegistrationError> {
                #shared
                let __this = ::std::sync::Arc::new(self);
                #(#registrations)*
                ::std::result::Result::Ok(builder)
            }
        }
    })
}

/// Checked first, on the type: every call shares the value across threads.
fn shared_check(self_ty: &syn::Type) -> TokenStream {
    quote_spanned! {self_ty.span()=>
        ::modelctx::server::__private::tools_type_must_be_send_and_sync::<#self_ty>();
    }
}

/// Parses the block, takes the attribute off each marked method and analyses it.
fn collect(
    attr: TokenStream,
    item: TokenStream,
    name: &str,
) -> syn::Result<(ItemImpl, Vec<(Primitive, syn::Attribute)>)> {
    if !attr.is_empty() {
        return Err(syn::Error::new_spanned(
            attr,
            format!("`#[{name}]` takes no options"),
        ));
    }
    let mut block: ItemImpl = syn::parse2(item)?;
    if let Some((_, path, _)) = &block.trait_ {
        return Err(syn::Error::new_spanned(
            path,
            format!("`#[{name}]` goes on an inherent `impl` block, not a trait impl"),
        ));
    }
    if !block.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &block.generics,
            format!("`#[{name}]` does not support generic `impl` blocks"),
        ));
    }
    let mut found = Vec::new();
    for item in &mut block.items {
        let ImplItem::Fn(method) = item else { continue };
        let Some(index) = method.attrs.iter().position(|a| Kind::of(a).is_some()) else {
            continue;
        };
        let attr = method.attrs.remove(index);
        let kind = Kind::of(&attr).expect("found by kind");
        if let Some(second) = method.attrs.iter().find(|a| Kind::of(a).is_some()) {
            return Err(syn::Error::new_spanned(
                second,
                "a method is one tool, prompt, resource or template: keep one of these attributes",
            ));
        }
        let tokens = attribute_tokens(&attr, kind.attr())?;
        let primitive = Primitive::analyse(
            kind,
            tokens,
            &mut method.sig,
            &method.attrs,
            true,
            attr.span(),
        )?;
        found.push((primitive, attr));
    }
    if found.is_empty() {
        let wanted = if name == "tools" {
            "`#[tools]` found no `#[tool]` method in this `impl` block"
        } else {
            "`#[primitives]` found no `#[tool]`, `#[prompt]`, `#[resource]` or `#[resource_template]` method in this `impl` block"
        };
        return Err(syn::Error::new_spanned(&block.self_ty, wanted));
    }
    Ok((block, found))
}
