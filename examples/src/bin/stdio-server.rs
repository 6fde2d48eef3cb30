//! A stdio MCP server, for a desktop host (or any MCP client) to launch as a child
//! process: it speaks MCP on stdin/stdout, logs to stderr, and exits when stdin closes.
//!
//! Build it with `cargo build --release -p modelctx-examples --bin stdio-server`, then
//! register it with the host. Hosts that read an `mcpServers` JSON file take:
//!
//! ```json
//! {
//!   "mcpServers": {
//!     "modelctx-example": {
//!       "command": "/absolute/path/to/target/release/stdio-server",
//!       "args": [],
//!       "env": { "STDIO_SERVER_GREETING": "Hello" }
//!     }
//!   }
//! }
//! ```
//!
//! Try it without a host: `cargo run -p modelctx-examples --bin stdio-client` spawns it
//! and calls its tools.
//!
//! Tools: `greet` (`{"name": "..."}`), `countdown` (`{"from": 3}`, reports progress) and
//! `introduce` (no arguments: asks the user for their name mid-call, with a form —
//! the same code in both protocol eras: a 2025-11-25 session sends
//! `elicitation/create`, a 2026-07-28 call answers `input_required` and finishes when
//! the client sends it again with the answer),
//! written with `#[tools]`: each `#[tool]` method's parameters are its arguments (schema
//! generated, checked before it runs), its doc comment its description.
//! Nothing but protocol messages may reach stdout, so every log line here goes to
//! stderr (with `tracing_subscriber`, build it with `.with_writer(std::io::stderr)`).

use modelctx::macros::tools;
use modelctx::schemars::{self, JsonSchema};
use modelctx::server::{ClientRequestError, Context, Server};
use modelctx::session::{Progress, SessionError};
use modelctx::stdio::StdioOptions;

/// What `introduce` asks the user for.
#[derive(serde::Deserialize, JsonSchema)]
struct Introduction {
    /// Your name.
    name: String,
}

/// The tools, sharing the greeting read from the environment.
struct Tools {
    greeting: String,
}

#[tools]
impl Tools {
    /// Greets someone by name.
    #[tool]
    async fn greet(
        &self,
        /// Who to greet.
        name: String,
    ) -> String {
        eprintln!("stdio-server: greeting {name}");
        format!("{}, {name}!", self.greeting)
    }

    /// Asks who you are (a form), then greets you.
    #[tool]
    async fn introduce(&self, cx: &Context) -> Result<String, ClientRequestError> {
        let answer = cx.elicit_form::<Introduction>("Who are you?").await?;
        Ok(match answer.accepted() {
            Some(you) => format!("{}, {}!", self.greeting, you.name),
            None => "Nice to meet you anyway.".to_owned(),
        })
    }

    /// Counts from 1 up to `from`, reporting each step as progress, then says "liftoff".
    #[tool]
    async fn countdown(
        /// How many steps, from 1 to 100.
        #[schemars(range(min = 1, max = 100))]
        from: u32,
        cx: &Context,
    ) -> Result<&'static str, SessionError> {
        for step in 1..=from {
            let progress = Progress::new(f64::from(step)).with_total(f64::from(from));
            cx.report_progress(progress).await?;
        }
        Ok("liftoff")
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let greeting = std::env::var("STDIO_SERVER_GREETING").unwrap_or_else(|_| "Hello".into());
    let server = Server::builder("modelctx-stdio-example", env!("CARGO_PKG_VERSION"))
        .instructions("Call `greet` with a name, or `countdown` with a starting number.")
        .tools(Tools { greeting })?
        .build();

    let options = StdioOptions::new().on_diagnostic(|d| eprintln!("stdio-server: {d}"));
    let session = server.serve(modelctx::stdio::stdio_with(options));
    eprintln!("stdio-server: serving on stdin/stdout");
    session.closed().await;
    // The session ended with stdin; let the writer finish what it was writing.
    session.close().await;
    eprintln!("stdio-server: session ended, exiting");
    Ok(())
}
