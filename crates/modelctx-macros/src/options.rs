//! The options of each attribute (`#[tool(name = "...", read_only)]`, ...), parsed with
//! errors that say what to write instead.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::meta::ParseNestedMeta;
use syn::parse::Parser;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, Ident, Lit, LitBool, LitStr, Meta, Path, Token};

/// The options of `#[tool(...)]`.
#[derive(Default)]
pub(crate) struct ToolOptions {
    pub(crate) common: CommonOptions,
    pub(crate) read_only: Option<LitBool>,
    pub(crate) destructive: Option<LitBool>,
    pub(crate) idempotent: Option<LitBool>,
    pub(crate) open_world: Option<LitBool>,
    pub(crate) output_schema: Option<Path>,
    /// The `TaskSupport` variant.
    pub(crate) task_support: Option<Ident>,
}

/// The options of `#[prompt(...)]`.
#[derive(Default)]
pub(crate) struct PromptOptions {
    pub(crate) common: CommonOptions,
    pub(crate) complete: Vec<(Ident, Path)>,
}

/// The options of `#[resource(...)]`.
#[derive(Default)]
pub(crate) struct ResourceOptions {
    pub(crate) uri: Option<LitStr>,
    pub(crate) mime_type: Option<LitStr>,
    pub(crate) common: CommonOptions,
}

/// The options of `#[resource_template(...)]`.
#[derive(Default)]
pub(crate) struct TemplateOptions {
    pub(crate) uri_template: Option<LitStr>,
    pub(crate) mime_type: Option<LitStr>,
    pub(crate) common: CommonOptions,
    pub(crate) complete: Vec<(Ident, Path)>,
    /// The function listing the template's resources.
    pub(crate) list: Option<Path>,
}

/// What every definition may set: its name, description, title, icons and `_meta`.
#[derive(Default)]
pub(crate) struct CommonOptions {
    pub(crate) name: Option<LitStr>,
    pub(crate) description: Option<LitStr>,
    pub(crate) title: Option<LitStr>,
    pub(crate) icons: Vec<LitStr>,
    pub(crate) meta: Option<Path>,
}

impl CommonOptions {
    /// The definition's name (the option, else the function's own) and description (the
    /// option, else the doc comment).
    pub(crate) fn name_and_description(
        &self,
        function: &Ident,
        attrs: &[Attribute],
    ) -> (LitStr, Option<LitStr>) {
        let name = self
            .name
            .clone()
            .unwrap_or_else(|| LitStr::new(&crate::util::unraw(function), function.span()));
        let description = self
            .description
            .clone()
            .or_else(|| crate::util::doc_text(attrs));
        (name, description)
    }

    /// Sets `key` if it is one of the common options; `Ok(false)` if it is not.
    fn set(&mut self, key: &str, meta: &ParseNestedMeta) -> syn::Result<bool> {
        match key {
            "name" => string(meta, &mut self.name)?,
            "description" => string(meta, &mut self.description)?,
            "title" => string(meta, &mut self.title)?,
            "icon" => self.icons.push(string_value(meta)?),
            "meta" => path(
                meta,
                &mut self.meta,
                "the path of a function returning the `_meta` (`modelctx::types::Meta`): `meta = my_meta`",
            )?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The builder calls for the title, description, icons and `_meta` of a definition
    /// bound to `def` (`description` being the option or the doc comment).
    pub(crate) fn builder_calls(&self, description: Option<&LitStr>) -> TokenStream {
        let description = description.map(|d| quote!(let def = def.description(#d);));
        let title = self
            .title
            .as_ref()
            .map(|t| quote!(let def = def.title(#t);));
        let icons = (!self.icons.is_empty()).then(|| {
            let icons = &self.icons;
            quote! {
                let def = def.icons(::std::vec![#(::modelctx::types::Icon::new(#icons)),*]);
            }
        });
        // Spanned on the path: a function of the wrong type is reported on the option.
        let meta = self
            .meta
            .as_ref()
            .map(|path| quote_spanned!(path.span()=> let def = def.meta(#path());));
        quote! { #description #title #icons #meta }
    }
}

const COMMON: &[&str] = &["name", "description", "title", "icon", "meta"];

impl ToolOptions {
    /// Parses the options of `#[tool(...)]`.
    pub(crate) fn parse(tokens: TokenStream) -> syn::Result<Self> {
        let mut options = Self::default();
        let known = [
            COMMON,
            &[
                "read_only",
                "destructive",
                "idempotent",
                "open_world",
                "output_schema",
                "task_support",
            ],
        ]
        .concat();
        parse_with(tokens, "tool", &known, TOOL_HINTS, |key, meta| {
            if options.common.set(key, meta)? {
                return Ok(());
            }
            match key {
                "read_only" => flag(meta, &mut options.read_only),
                "destructive" => flag(meta, &mut options.destructive),
                "idempotent" => flag(meta, &mut options.idempotent),
                "open_world" => flag(meta, &mut options.open_world),
                "output_schema" => path(
                    meta,
                    &mut options.output_schema,
                    "the path of a function returning the schema (a `modelctx::types::JsonObject`): `output_schema = my_schema`",
                ),
                _ => {
                    let value = string_value(meta)?;
                    let variant = match value.value().as_str() {
                        "optional" => "Optional",
                        "required" => "Required",
                        "forbidden" => "Forbidden",
                        _ => {
                            return Err(syn::Error::new(
                                value.span(),
                                "`task_support` is \"optional\", \"required\" or \"forbidden\"",
                            ));
                        }
                    };
                    once(meta, &options.task_support)?;
                    options.task_support = Some(Ident::new(variant, value.span()));
                    Ok(())
                }
            }
        })?;
        Ok(options)
    }
}

impl PromptOptions {
    /// Parses the options of `#[prompt(...)]`.
    pub(crate) fn parse(tokens: TokenStream) -> syn::Result<Self> {
        let mut options = Self::default();
        let known = [COMMON, &["complete"]].concat();
        parse_with(tokens, "prompt", &known, PROMPT_HINTS, |key, meta| {
            if options.common.set(key, meta)? {
                return Ok(());
            }
            completions(meta, &mut options.complete, "argument")
        })?;
        Ok(options)
    }
}

impl ResourceOptions {
    /// Parses the options of `#[resource(...)]`; `at` is where a missing `uri` is
    /// reported.
    pub(crate) fn parse(tokens: TokenStream, at: Span) -> syn::Result<Self> {
        let mut options = Self::default();
        let known = [&["uri", "mime_type"], COMMON].concat();
        parse_with(tokens, "resource", &known, RESOURCE_HINTS, |key, meta| {
            if options.common.set(key, meta)? {
                return Ok(());
            }
            match key {
                "uri" => string(meta, &mut options.uri),
                _ => string(meta, &mut options.mime_type),
            }
        })?;
        if options.uri.is_none() {
            return Err(syn::Error::new(
                at,
                "a `#[resource]` needs its URI: `#[resource(uri = \"file:///notes.txt\")]` (for a URI with variables, use `#[resource_template(uri_template = \"...\")]`)",
            ));
        }
        Ok(options)
    }
}

impl TemplateOptions {
    /// Parses the options of `#[resource_template(...)]`; `at` is where a missing
    /// `uri_template` is reported.
    pub(crate) fn parse(tokens: TokenStream, at: Span) -> syn::Result<Self> {
        let mut options = Self::default();
        let known = [
            &["uri_template", "mime_type", "list"],
            &["name", "description", "title", "meta", "complete"][..],
        ]
        .concat();
        parse_with(
            tokens,
            "resource_template",
            &known,
            TEMPLATE_HINTS,
            |key, meta| {
                if key != "icon" && options.common.set(key, meta)? {
                    return Ok(());
                }
                match key {
                    "uri_template" => string(meta, &mut options.uri_template),
                    "mime_type" => string(meta, &mut options.mime_type),
                    "list" => path(
                        meta,
                        &mut options.list,
                        "the function listing the template's resources: `list = function`, the function taking the `Context` and returning a `Result` of a `Vec<Resource>`",
                    ),
                    _ => completions(meta, &mut options.complete, "variable"),
                }
            },
        )?;
        if options.uri_template.is_none() {
            return Err(syn::Error::new(
                at,
                "a `#[resource_template]` needs its URI template: `#[resource_template(uri_template = \"users://{id}/profile\")]`",
            ));
        }
        Ok(options)
    }
}

/// Keys that are a known mistake, and what to write instead.
type Hints = &'static [(&'static str, &'static str)];

const TOOL_HINTS: Hints = &[
    (
        "read_only_hint",
        "write `read_only` (or `read_only = false`)",
    ),
    (
        "destructive_hint",
        "write `destructive` (or `destructive = false`)",
    ),
    (
        "idempotent_hint",
        "write `idempotent` (or `idempotent = false`)",
    ),
    (
        "open_world_hint",
        "write `open_world` (or `open_world = false`)",
    ),
    ("readonly", "write `read_only`"),
    ("icons", "write one `icon = \"https://...\"` per icon"),
    (
        "header",
        "mark the parameter instead: `#[header] region: String`",
    ),
    (
        "annotations",
        "write the hints as flags: `read_only`, `destructive`, `idempotent`, `open_world`",
    ),
];
const PROMPT_HINTS: Hints = &[
    ("icons", "write one `icon = \"https://...\"` per icon"),
    ("completions", "write `complete(argument = function)`"),
];
const RESOURCE_HINTS: Hints = &[
    (
        "uri_template",
        "a resource with URI variables is a `#[resource_template(uri_template = \"...\")]`",
    ),
    ("mime", "write `mime_type = \"text/plain\"`"),
    ("icons", "write one `icon = \"https://...\"` per icon"),
];
const TEMPLATE_HINTS: Hints = &[
    (
        "uri",
        "a template's URI is written `uri_template = \"users://{id}/profile\"`",
    ),
    ("mime", "write `mime_type = \"text/plain\"`"),
    ("icon", "a resource template has no icons"),
    ("completions", "write `complete(variable = function)`"),
    (
        "list_with",
        "write `list = function`, the function taking the `Context`",
    ),
    (
        "instances",
        "write `list = function`, the function taking the `Context`",
    ),
];

/// Parses `tokens` as `key = value, flag, key(...)` options of `#[attr]`, calling `set`
/// for each known key; an unknown one is an error naming the known ones.
fn parse_with(
    tokens: TokenStream,
    attr: &str,
    known: &[&str],
    hints: Hints,
    mut set: impl FnMut(&str, &ParseNestedMeta) -> syn::Result<()>,
) -> syn::Result<()> {
    let parser = syn::meta::parser(|meta| {
        let key = meta
            .path
            .get_ident()
            .map(Ident::to_string)
            .unwrap_or_default();
        if !known.contains(&key.as_str()) {
            return Err(meta.error(unknown_message(attr, &key, known, hints)));
        }
        set(&key, &meta)
    });
    parser.parse2(tokens)
}

fn unknown_message(attr: &str, key: &str, known: &[&str], hints: Hints) -> String {
    let head = format!("unknown `#[{attr}]` option `{key}`");
    if let Some((_, hint)) = hints.iter().find(|(k, _)| *k == key) {
        return format!("{head}: {hint}");
    }
    let list = known.join(", ");
    match known.iter().find(|k| close(k, key)) {
        Some(near) => format!("{head}: did you mean `{near}`? (the options are {list})"),
        None => format!("{head}; the options are {list}"),
    }
}

/// Whether two keys differ by at most two edits (a typo).
fn close(a: &str, b: &str) -> bool {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (prev + usize::from(ca != cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()] <= 2
}

fn key(meta: &ParseNestedMeta) -> String {
    meta.path
        .get_ident()
        .map(Ident::to_string)
        .unwrap_or_default()
}

fn once<T>(meta: &ParseNestedMeta, slot: &Option<T>) -> syn::Result<()> {
    match slot {
        Some(_) => Err(meta.error(format!("`{}` is given twice", key(meta)))),
        None => Ok(()),
    }
}

/// `key = "text"`.
fn string_value(meta: &ParseNestedMeta) -> syn::Result<LitStr> {
    let key = key(meta);
    let wanted = format!("`{key}` takes a string: `{key} = \"...\"`");
    if !meta.input.peek(Token![=]) {
        return Err(meta.error(wanted));
    }
    match meta.value()?.parse::<Expr>()? {
        Expr::Lit(lit) if matches!(lit.lit, Lit::Str(_)) => match lit.lit {
            Lit::Str(s) => Ok(s),
            _ => unreachable!(),
        },
        other => Err(syn::Error::new(other.span(), wanted)),
    }
}

fn string(meta: &ParseNestedMeta, slot: &mut Option<LitStr>) -> syn::Result<()> {
    once(meta, slot)?;
    *slot = Some(string_value(meta)?);
    Ok(())
}

/// `key` (true) or `key = true/false`.
fn flag(meta: &ParseNestedMeta, slot: &mut Option<LitBool>) -> syn::Result<()> {
    once(meta, slot)?;
    if !meta.input.peek(Token![=]) {
        *slot = Some(LitBool::new(true, meta.path.span()));
        return Ok(());
    }
    let key = key(meta);
    match meta.value()?.parse::<Expr>()? {
        Expr::Lit(lit) if matches!(lit.lit, Lit::Bool(_)) => {
            if let Lit::Bool(b) = lit.lit {
                *slot = Some(b);
            }
            Ok(())
        }
        other => Err(syn::Error::new(
            other.span(),
            format!("`{key}` is a flag: write `{key}` or `{key} = false`"),
        )),
    }
}

/// `key = path::to::function`.
fn path(meta: &ParseNestedMeta, slot: &mut Option<Path>, wanted: &str) -> syn::Result<()> {
    once(meta, slot)?;
    let key = key(meta);
    let message = format!("`{key}` takes {wanted}");
    if !meta.input.peek(Token![=]) {
        return Err(meta.error(message));
    }
    match meta.value()?.parse::<Expr>()? {
        Expr::Path(p) if p.qself.is_none() => {
            *slot = Some(p.path);
            Ok(())
        }
        other => Err(syn::Error::new(other.span(), message)),
    }
}

/// `complete(name = path::to::function, ...)`.
fn completions(
    meta: &ParseNestedMeta,
    out: &mut Vec<(Ident, Path)>,
    what: &str,
) -> syn::Result<()> {
    let wanted = format!(
        "write `complete({what} = function)`, the function taking a `CompletionInput` and the `Context` and returning the values"
    );
    if !meta.input.peek(syn::token::Paren) {
        return Err(meta.error(wanted));
    }
    meta.parse_nested_meta(|inner| {
        let Some(name) = inner.path.get_ident().cloned() else {
            return Err(inner.error(&wanted));
        };
        if out.iter().any(|(n, _)| *n == name) {
            return Err(inner.error(format!("`{name}` is completed twice")));
        }
        if !inner.input.peek(Token![=]) {
            return Err(inner.error(&wanted));
        }
        match inner.value()?.parse::<Expr>()? {
            Expr::Path(p) if p.qself.is_none() => {
                out.push((name, p.path));
                Ok(())
            }
            other => Err(syn::Error::new(other.span(), &wanted)),
        }
    })
}

/// The tokens inside `#[attr(...)]` found on a method: none for `#[attr]`.
pub(crate) fn attribute_tokens(attr: &Attribute, name: &str) -> syn::Result<TokenStream> {
    match &attr.meta {
        Meta::Path(_) => Ok(TokenStream::new()),
        Meta::List(list) => Ok(list.tokens.clone()),
        Meta::NameValue(nv) => Err(syn::Error::new(
            nv.span(),
            format!("write `#[{name}]` or `#[{name}(option = ...)]`"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_are_close() {
        assert!(close("name", "nme"));
        assert!(close("read_only", "readonly"));
        assert!(!close("title", "description"));
    }

    #[test]
    fn tool_options_parse() {
        let options = ToolOptions::parse(quote!(
            name = "x",
            read_only,
            destructive = false,
            icon = "a",
            icon = "b",
            task_support = "optional",
            output_schema = schema::out
        ))
        .unwrap();
        assert_eq!(options.common.name.unwrap().value(), "x");
        assert!(options.read_only.unwrap().value);
        assert!(!options.destructive.unwrap().value);
        assert_eq!(options.common.icons.len(), 2);
        assert_eq!(options.task_support.unwrap(), "Optional");
        assert!(options.output_schema.is_some());
    }

    #[test]
    fn mistakes_say_what_to_write() {
        let error = |tokens| ToolOptions::parse(tokens).err().unwrap().to_string();
        assert!(error(quote!(nme = "x")).contains("did you mean `name`"));
        assert!(error(quote!(read_only = "yes")).contains("write `read_only` or"));
        assert!(error(quote!(name = 3)).contains("takes a string"));
        assert!(error(quote!(task_support = "maybe")).contains("\"optional\""));
        assert!(error(quote!(name = "a", name = "b")).contains("twice"));
    }
}
