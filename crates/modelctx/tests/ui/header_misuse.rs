use modelctx::macros::{prompt, tool};

/// The context is no argument.
#[tool]
fn on_context(#[header] cx: modelctx::server::Context) -> String {
    cx.request_id().to_string()
}

/// Not a header token.
#[tool]
fn bad_name(#[header("Two Words")] region: String) -> String {
    region
}

/// Two arguments in one header.
#[tool]
fn same_header(#[header] region: String, #[header("region")] zone: String) -> String {
    region + &zone
}

/// Prompts have no headers.
#[prompt]
fn in_a_prompt(#[header] region: String) -> String {
    region
}

fn main() {}
