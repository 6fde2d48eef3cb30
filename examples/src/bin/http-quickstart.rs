//! The README's HTTP server: a tool, a resource template and a prompt whose argument
//! completes, served over streamable HTTP at `http://ADDR/mcp` (`ADDR` is its argument,
//! `127.0.0.1:8080` without one).
//!
//! `cargo run -p modelctx-examples --bin http-quickstart -- 127.0.0.1:8080`

use modelctx::prelude::*;

/// Adds two numbers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// A greeting for someone.
#[resource_template(uri_template = "greeting://{name}")]
fn greeting(name: String) -> String {
    format!("Hello, {name}!")
}

async fn languages(input: CompletionInput, _: Context) -> Result<Vec<&'static str>, String> {
    let mut all = vec!["python", "ruby", "rust"];
    all.retain(|language| language.starts_with(&input.value));
    Ok(all)
}

/// Asks for a code review.
#[prompt(complete(language = languages))]
fn review(language: String) -> String {
    format!("Review this {language} code.")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args().nth(1).unwrap_or("127.0.0.1:8080".into());
    let server = Server::builder("quickstart", "1.0.0")
        .tool(add_tool())?
        .resource_template(greeting_template())?
        .prompt(review_prompt())?
        .build();
    Ok(server.serve_http(addr).await?)
}
